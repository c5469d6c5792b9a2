//! Where the database is: `--db postgres://…`, `--db FILE`, or the default SQLite file.

use crate::StoreError;
use std::fmt;
use std::path::PathBuf;

/// A database named by `--db`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DbLocation {
    /// A SQLite file (created with its folder when missing).
    Sqlite(PathBuf),
    /// A PostgreSQL connection URL (`postgres://` or `postgresql://`).
    Postgres(String),
}

impl DbLocation {
    /// `--db URL|FILE`, or without it the user's data folder's `ntdbg/crashes.db`
    /// (`$XDG_DATA_HOME`, `~/.local/share`, `%APPDATA%`, `~/Library/Application Support`).
    pub fn parse(db: Option<&str>) -> Result<DbLocation, StoreError> {
        match db {
            Some(url) if url.starts_with("postgres://") || url.starts_with("postgresql://") => {
                Ok(DbLocation::Postgres(url.to_string()))
            }
            Some(url) if url.contains("://") => Err(StoreError::new(format!(
                "--db {}: not a postgres:// URL nor a file name",
                redacted(url)
            ))),
            Some(file) => Ok(DbLocation::Sqlite(PathBuf::from(file))),
            None => dirs::data_dir()
                .map(|d| DbLocation::Sqlite(d.join("ntdbg").join("crashes.db")))
                .ok_or_else(|| {
                    StoreError::new("no user data folder is known here: give --db FILE or URL")
                }),
        }
    }
}

impl fmt::Display for DbLocation {
    /// The file, or the URL without its password.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DbLocation::Sqlite(p) => write!(f, "{}", p.display()),
            DbLocation::Postgres(url) => f.write_str(&redacted(url)),
        }
    }
}

/// `url` with the password of its `user:password@` part replaced by `***`.
fn redacted(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_string();
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => match rest[..at].split_once(':') {
            Some((user, _)) => format!("{scheme}://{user}:***{}", &rest[at..]),
            None => url.to_string(),
        },
        None => url.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_files() {
        assert_eq!(
            DbLocation::parse(Some("postgres://u@h/db")).unwrap(),
            DbLocation::Postgres("postgres://u@h/db".into())
        );
        assert_eq!(
            DbLocation::parse(Some("c.db")).unwrap(),
            DbLocation::Sqlite("c.db".into())
        );
        assert!(DbLocation::parse(Some("mysql://h/db")).is_err());
    }

    #[test]
    fn passwords_are_never_shown() {
        let db = DbLocation::parse(Some("postgres://me:secret@h:5432/db")).unwrap();
        assert_eq!(db.to_string(), "postgres://me:***@h:5432/db");
    }
}
