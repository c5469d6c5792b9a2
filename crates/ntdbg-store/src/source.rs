//! Where a queued dump's bytes come from: a file path (`ntdbg enqueue` of a shared folder), or
//! an object URL in a store (`ntdbg collect`, `ntdbg enqueue --store`), fetched into a
//! temporary file when the store is not a local folder. A dump from a store is analysed with
//! the symbols uploaded to that store.

use ntdbg_objects::{ObjectUrl, Objects, StoreUrl};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

/// The largest dump fetched from a store (full kernel dumps reach tens of GiB).
const MAX_DUMP: u64 = 64 << 30;

/// A queued dump, readable as a local file.
pub(crate) struct Source {
    /// The file to analyse.
    pub(crate) file: PathBuf,
    /// The store it came from (its symbols join the symbol path).
    pub(crate) store: Option<StoreUrl>,
    /// Whether `file` is a temporary copy, deleted on drop.
    temporary: bool,
}

impl Drop for Source {
    fn drop(&mut self) {
        if self.temporary {
            let _ = std::fs::remove_file(&self.file);
        }
    }
}

/// Why a queued dump could not be made readable.
pub(crate) enum Unavailable {
    /// It is gone (no such file or object): nothing to retry.
    Missing(String),
    /// The store could not be asked now (unreachable, refused): worth trying again later.
    Failed(String),
}

/// The stores a worker has opened, by URL.
#[derive(Default)]
pub(crate) struct Sources {
    stores: HashMap<StoreUrl, Objects>,
}

impl Sources {
    /// The dump queued as `entry`, as a local file.
    pub(crate) fn open(&mut self, entry: &str) -> Result<Source, Unavailable> {
        let Some(object) = ObjectUrl::parse(entry) else {
            let file = PathBuf::from(entry);
            return if file.is_file() {
                Ok(Source {
                    file,
                    store: None,
                    temporary: false,
                })
            } else {
                Err(Unavailable::Missing(format!("{entry}: no such file")))
            };
        };
        if let Some(dir) = object.store.local_dir() {
            let file = dir.join(&object.key);
            return if file.is_file() {
                Ok(Source {
                    file,
                    store: Some(object.store),
                    temporary: false,
                })
            } else {
                Err(Unavailable::Missing(format!("{entry}: no such object")))
            };
        }
        let objects = match self.stores.get(&object.store) {
            Some(o) => o.clone(),
            None => {
                let o = Objects::open(&object.store).map_err(|e| Unavailable::Failed(e.message))?;
                self.stores.insert(object.store.clone(), o.clone());
                o
            }
        };
        let temp = temporary_file();
        match objects.download_blocking(&object.key, &temp, MAX_DUMP) {
            Ok(Some(_)) => Ok(Source {
                file: temp,
                store: Some(object.store),
                temporary: true,
            }),
            Ok(None) => Err(Unavailable::Missing(format!("{entry}: no such object"))),
            Err(e) => Err(Unavailable::Failed(e.message)),
        }
    }
}

/// A new file name in the temporary folder.
fn temporary_file() -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    std::env::temp_dir().join(format!(
        "ntdbg-worker-{}-{}.dmp",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ))
}

/// The symbol path for a dump from `store`: `base` (the worker's `--symbols`, else
/// `_NT_SYMBOL_PATH`), then the symbols uploaded to the store.
pub fn symbol_path(base: Option<&str>, store: &StoreUrl) -> String {
    let base = base
        .map(str::to_string)
        .or_else(|| std::env::var("_NT_SYMBOL_PATH").ok())
        .filter(|b| !b.trim().is_empty());
    let entry = store.symbol_path_entry();
    match base {
        Some(b) => format!("{b};{entry}"),
        None => entry,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn store_symbols_follow_the_workers_own() {
        let store = StoreUrl::parse(Some("s3://b/p")).unwrap();
        assert_eq!(
            symbol_path(Some("/syms"), &store),
            "/syms;srv*s3://b/p/symbols"
        );
    }

    #[test]
    fn local_objects_and_paths_are_read_in_place() {
        let temp = ntdbg_testutil::corrupt::TempDir::new("store-source");
        let dir = temp.path().to_path_buf();
        std::fs::create_dir_all(dir.join("dumps/ab")).unwrap();
        std::fs::write(dir.join("dumps/ab/ab.dmp"), b"MDMP").unwrap();
        let mut sources = Sources::default();
        let url = StoreUrl::Local(dir.clone()).object_url("dumps/ab/ab.dmp");
        let source = sources.open(&url).ok().expect("readable");
        assert_eq!(source.file, dir.join("dumps/ab/ab.dmp"));
        assert_eq!(source.store, Some(StoreUrl::Local(dir.clone())));
        drop(source);
        assert!(dir.join("dumps/ab/ab.dmp").is_file(), "not deleted");
        let gone = StoreUrl::Local(dir.clone()).object_url("dumps/cd/cd.dmp");
        assert!(matches!(sources.open(&gone), Err(Unavailable::Missing(_))));
        assert!(matches!(
            sources.open(&dir.join("nothing.dmp").display().to_string()),
            Err(Unavailable::Missing(_))
        ));
    }
}
