//! [`Backend`] on a SQLite file (`rusqlite`, SQLite built from its bundled source).

use crate::backend::{Backend, Cell, Dialect, Param, Row};
use crate::StoreError;
use rusqlite::types::{ToSqlOutput, ValueRef};
use rusqlite::{Connection, ToSql};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// How long a statement waits for another process's write lock before failing.
const BUSY_TIMEOUT: Duration = Duration::from_secs(60);

/// A SQLite connection in WAL mode.
pub(crate) struct SqliteBackend {
    conn: Connection,
    path: PathBuf,
}

impl SqliteBackend {
    /// Opens (creating it and its folder when missing) the database file at `path`.
    pub(crate) fn open(path: &Path) -> Result<SqliteBackend, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| {
                StoreError::new(format!("cannot create folder {}: {e}", dir.display()))
            })?;
        }
        let fail = |e: rusqlite::Error| {
            StoreError::new(format!("cannot open database {}: {e}", path.display()))
        };
        // SQLite would wait forever on a FIFO named as the database or one of its files.
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let mut file = path.as_os_str().to_owned();
            file.push(suffix);
            ntdbg_files::require_regular_or_missing(Path::new(&file))
                .map_err(|e| StoreError::new(format!("cannot open database: {e}")))?;
        }
        let conn = Connection::open(path).map_err(fail)?;
        conn.busy_timeout(BUSY_TIMEOUT).map_err(fail)?;
        // WAL: readers never block the writer; NORMAL sync is durable at each checkpoint and
        // consistent after a crash.
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(fail)?;
        conn.pragma_update(None, "synchronous", "NORMAL")
            .map_err(fail)?;
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(fail)?;
        Ok(SqliteBackend {
            conn,
            path: path.to_path_buf(),
        })
    }

    fn error(&self, e: rusqlite::Error) -> StoreError {
        StoreError::new(format!("database {}: {e}", self.path.display()))
    }
}

/// `$1` placeholders as SQLite's `?1`.
fn placeholders(sql: &str) -> String {
    sql.replace('$', "?")
}

struct Bound<'a>(&'a Param);

impl ToSql for Bound<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        match self.0 {
            Param::Int(v) => v.to_sql(),
            Param::Text(v) => v.to_sql(),
        }
    }
}

impl Backend for SqliteBackend {
    fn dialect(&self) -> Dialect {
        Dialect::Sqlite
    }

    fn batch(&mut self, sql: &str) -> Result<(), StoreError> {
        self.conn.execute_batch(sql).map_err(|e| self.error(e))
    }

    fn execute(&mut self, sql: &str, params: &[Param]) -> Result<u64, StoreError> {
        let bound: Vec<Bound> = params.iter().map(Bound).collect();
        self.conn
            .execute(&placeholders(sql), rusqlite::params_from_iter(bound.iter()))
            .map(|n| n as u64)
            .map_err(|e| self.error(e))
    }

    fn query(&mut self, sql: &str, params: &[Param]) -> Result<Vec<Row>, StoreError> {
        let bound: Vec<Bound> = params.iter().map(Bound).collect();
        let run = |conn: &Connection| -> rusqlite::Result<Vec<Row>> {
            let mut stmt = conn.prepare(&placeholders(sql))?;
            let columns = stmt.column_count();
            let mut rows = stmt.query(rusqlite::params_from_iter(bound.iter()))?;
            let mut out = Vec::new();
            while let Some(row) = rows.next()? {
                let mut cells = Vec::with_capacity(columns);
                for i in 0..columns {
                    cells.push(match row.get_ref(i)? {
                        ValueRef::Null => Cell::Null,
                        ValueRef::Integer(v) => Cell::Int(v),
                        ValueRef::Text(t) => Cell::Text(String::from_utf8_lossy(t).into_owned()),
                        ValueRef::Real(_) | ValueRef::Blob(_) => {
                            return Err(rusqlite::Error::InvalidColumnType(
                                i,
                                "real or blob".into(),
                                row.get_ref(i)?.data_type(),
                            ))
                        }
                    });
                }
                out.push(Row(cells));
            }
            Ok(out)
        };
        run(&self.conn).map_err(|e| self.error(e))
    }
}
