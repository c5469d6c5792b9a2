//! Where objects are kept (`--store URL`) and how one object is named in full (a queued dump,
//! a recorded dump's location).

use crate::ObjectError;
use std::fmt;
use std::path::{Path, PathBuf};

/// The scheme of an S3-compatible store.
const S3: &str = "s3://";
/// The scheme of a local store given as a URL.
const FILE: &str = "file://";

/// An object store named by `--store`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum StoreUrl {
    /// A local folder (a path, or `file:///path`), created when missing.
    Local(PathBuf),
    /// A bucket of an S3-compatible service and a key prefix (`s3://BUCKET/PREFIX`). The
    /// endpoint, region and credentials come from the usual `AWS_*` environment variables
    /// (`AWS_ENDPOINT_URL`, `AWS_REGION`, `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
    /// `AWS_ALLOW_HTTP=true` for a plain-HTTP endpoint).
    S3 {
        /// The bucket.
        bucket: String,
        /// Keys start with it (no leading or trailing `/`; empty: the bucket's root).
        prefix: String,
    },
}

impl StoreUrl {
    /// `--store URL`: `s3://BUCKET[/PREFIX]`, `file:///DIR` or a folder; without it the
    /// user's data folder's `ntdbg/store` (beside the default crash database).
    pub fn parse(text: Option<&str>) -> Result<StoreUrl, ObjectError> {
        let Some(text) = text.map(str::trim) else {
            return dirs::data_dir()
                .map(|d| StoreUrl::Local(d.join("ntdbg").join("store")))
                .ok_or_else(|| {
                    ObjectError::new("no user data folder is known here: give --store DIR or URL")
                });
        };
        if let Some(rest) = strip_scheme(text, S3) {
            let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            if bucket.is_empty() {
                return Err(ObjectError::new(format!(
                    "--store {text}: no bucket name (s3://BUCKET/PREFIX)"
                )));
            }
            return Ok(StoreUrl::S3 {
                bucket: bucket.to_string(),
                prefix: prefix.trim_matches('/').to_string(),
            });
        }
        if let Some(path) = strip_scheme(text, FILE) {
            return Ok(StoreUrl::Local(PathBuf::from(path)));
        }
        if text.is_empty() {
            return Err(ObjectError::new("--store: empty"));
        }
        if text.contains("://") {
            return Err(ObjectError::new(format!(
                "--store {text}: not an s3:// or file:// URL nor a folder"
            )));
        }
        Ok(StoreUrl::Local(PathBuf::from(text)))
    }

    /// The same store with a local folder made absolute, so its object URLs can be read
    /// from any working folder.
    pub fn absolute(self) -> StoreUrl {
        match self {
            StoreUrl::Local(p) => StoreUrl::Local(std::path::absolute(&p).unwrap_or(p)),
            other => other,
        }
    }

    /// The full name of the object at `key`: `file://DIR/KEY` or `s3://BUCKET/PREFIX/KEY`.
    pub fn object_url(&self, key: &str) -> String {
        match self {
            StoreUrl::Local(dir) => format!("{FILE}{}", dir.join(key).display()),
            StoreUrl::S3 { bucket, prefix } if prefix.is_empty() => format!("{S3}{bucket}/{key}"),
            StoreUrl::S3 { bucket, prefix } => format!("{S3}{bucket}/{prefix}/{key}"),
        }
    }

    /// The symbol path element that reads the symbols uploaded to this store: the folder
    /// itself (symbol-store layout), or `srv*s3://BUCKET/PREFIX/symbols` (downloaded into the
    /// default symbol cache).
    pub fn symbol_path_entry(&self) -> String {
        match self {
            StoreUrl::Local(dir) => dir.join(crate::keys::SYMBOLS).display().to_string(),
            StoreUrl::S3 { .. } => format!("srv*{}", self.object_url(crate::keys::SYMBOLS)),
        }
    }

    /// The local folder, when the store is one.
    pub fn local_dir(&self) -> Option<&Path> {
        match self {
            StoreUrl::Local(dir) => Some(dir),
            StoreUrl::S3 { .. } => None,
        }
    }
}

impl fmt::Display for StoreUrl {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreUrl::Local(dir) => write!(f, "{}", dir.display()),
            StoreUrl::S3 { bucket, prefix } if prefix.is_empty() => write!(f, "{S3}{bucket}"),
            StoreUrl::S3 { bucket, prefix } => write!(f, "{S3}{bucket}/{prefix}"),
        }
    }
}

/// One object named in full: a store and a key in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectUrl {
    /// The store it is in.
    pub store: StoreUrl,
    /// Its key there (`dumps/ab/ab12….dmp`).
    pub key: String,
}

impl ObjectUrl {
    /// An object URL made by [`StoreUrl::object_url`] for a key under one of the store's
    /// folders (`dumps/`, `symbols/`): the store is what comes before the last such folder.
    /// `None` for anything else (a plain file path).
    pub fn parse(text: &str) -> Option<ObjectUrl> {
        let (scheme_len, local) = if strip_scheme(text, S3).is_some() {
            (S3.len(), false)
        } else if strip_scheme(text, FILE).is_some() {
            (FILE.len(), true)
        } else {
            return None;
        };
        let split = crate::keys::FOLDERS
            .iter()
            .filter_map(|folder| text.rfind(&format!("/{folder}/")))
            .max()
            .filter(|&at| at > scheme_len)?;
        let (root, key) = (&text[..split], &text[split + 1..]);
        let store = if local {
            StoreUrl::Local(PathBuf::from(&root[scheme_len..]))
        } else {
            StoreUrl::parse(Some(root)).ok()?
        };
        Some(ObjectUrl {
            store,
            key: key.to_string(),
        })
    }
}

/// `text` without `scheme` (compared ignoring case).
fn strip_scheme<'a>(text: &'a str, scheme: &str) -> Option<&'a str> {
    text.get(..scheme.len())
        .filter(|s| s.eq_ignore_ascii_case(scheme))
        .map(|_| &text[scheme.len()..])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stores_are_folders_files_or_buckets() {
        assert_eq!(
            StoreUrl::parse(Some("s3://crashes/prod/")).unwrap(),
            StoreUrl::S3 {
                bucket: "crashes".into(),
                prefix: "prod".into()
            }
        );
        assert_eq!(
            StoreUrl::parse(Some("S3://crashes")).unwrap().to_string(),
            "s3://crashes"
        );
        assert_eq!(
            StoreUrl::parse(Some("file:///srv/store")).unwrap(),
            StoreUrl::Local("/srv/store".into())
        );
        assert_eq!(
            StoreUrl::parse(Some("store")).unwrap(),
            StoreUrl::Local("store".into())
        );
        assert!(StoreUrl::parse(Some("s3:///x")).is_err());
        assert!(StoreUrl::parse(Some("gs://b")).is_err());
        assert!(StoreUrl::parse(Some(" ")).is_err());
    }

    #[test]
    fn object_urls_name_their_store_and_key() {
        let s3 = StoreUrl::parse(Some("s3://b/p/q")).unwrap();
        let url = s3.object_url("dumps/ab/ab.dmp");
        assert_eq!(url, "s3://b/p/q/dumps/ab/ab.dmp");
        assert_eq!(
            ObjectUrl::parse(&url),
            Some(ObjectUrl {
                store: s3,
                key: "dumps/ab/ab.dmp".into()
            })
        );
        let local = StoreUrl::Local("/srv/my store".into());
        let url = local.object_url("dumps/cd/cd.dmp");
        assert_eq!(url, "file:///srv/my store/dumps/cd/cd.dmp");
        assert_eq!(ObjectUrl::parse(&url).unwrap().store, local);
        assert_eq!(ObjectUrl::parse("/srv/store/dumps/cd/cd.dmp"), None);
        assert_eq!(ObjectUrl::parse("s3://b/other/x.dmp"), None);
        assert_eq!(ObjectUrl::parse("s3:///dumps/x"), None);
    }

    #[test]
    fn symbols_are_a_symbol_path_entry() {
        let s3 = StoreUrl::parse(Some("s3://b/p")).unwrap();
        assert_eq!(s3.symbol_path_entry(), "srv*s3://b/p/symbols");
        let local = StoreUrl::Local("/srv/store".into());
        assert_eq!(local.symbol_path_entry(), "/srv/store/symbols");
    }
}
