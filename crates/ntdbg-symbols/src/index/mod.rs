//! The warm symbol index: the first load of a module's Breakpad or PDB symbols writes the
//! parsed tables, as sorted fixed-size records and one string blob, into the symbol cache
//! (`index/` under [`crate::default_cache_dir`]); later loads, in this process or the next,
//! map that file and answer lookups by binary search instead of parsing text again.
//!
//! An index is named after the module (debug file, debug id) and the symbol file it was made
//! from (path, length, modification time), and holds that whole identity in its strings: a
//! replaced symbol file gets a new index, never a stale one. It starts with a header holding a
//! magic, the format version and the CRC-32 of everything after it; any mismatch, truncation
//! or damage means it is dropped and rebuilt, and every read inside it is bounds-checked. It
//! is written to a temporary file and renamed into place; the folder is kept under
//! [`MAX_INDEX_BYTES`] by deleting the least recently used. `NTDBG_SYMBOL_INDEX=off` turns
//! the index off (neither read nor written); a cache folder that cannot be written only means
//! no index.

mod format;
mod read;
mod tables;
mod write;

#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{SystemTime, UNIX_EPOCH};

use breakpad_symbols::SymbolFile;
use ntdbg_formats::store::{parse_debug_id, PdbIdentity, PdbSignature};

pub(crate) use read::SymbolIndex;
pub(crate) use tables::Tables;

/// The cache subfolder that holds the indexes.
const FOLDER: &str = "index";
/// Most bytes the folder may hold; older indexes are evicted past it.
pub(crate) const MAX_INDEX_BYTES: u64 = 4 << 30;
/// The environment variable that turns the index off (`off`, `0`, `no` or `false`).
pub const INDEX_ENV: &str = "NTDBG_SYMBOL_INDEX";

/// Whether the index is used ([`INDEX_ENV`] is not `off`, `0`, `no` or `false`).
pub(crate) fn enabled() -> bool {
    let value = std::env::var(INDEX_ENV).unwrap_or_default();
    !matches!(
        value.trim().to_ascii_lowercase().as_str(),
        "off" | "0" | "no" | "false"
    )
}

/// Where one symbol file's index lives and the identity it must have been made for.
pub(crate) struct IndexSlot {
    path: PathBuf,
    identity: String,
}

impl IndexSlot {
    /// The slot in `cache` for the symbol file at `source` (`kind`: `breakpad` or `pdb`)
    /// answering for the module `name` with debug id `key`; `None` when the index is off or
    /// the file's length and modification time cannot be read.
    pub(crate) fn new(
        cache: &Path,
        kind: &str,
        source: &Path,
        name: &str,
        key: &str,
    ) -> Option<IndexSlot> {
        if !enabled() {
            return None;
        }
        let meta = std::fs::metadata(source).ok()?;
        let modified = meta.modified().ok()?;
        let nanos = modified
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let full = std::fs::canonicalize(source).unwrap_or_else(|_| source.to_path_buf());
        let identity = format!(
            "{kind}\n{name}\n{key}\n{}\n{}\n{nanos}",
            full.display(),
            meta.len()
        );
        let safe: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                    c
                } else {
                    '_'
                }
            })
            .take(64)
            .collect();
        let file = format!(
            "{safe}-{}-{kind}-{:08x}.idx",
            key.to_ascii_uppercase(),
            crc32fast::hash(identity.as_bytes())
        );
        Some(IndexSlot {
            path: cache.join(FOLDER).join(file),
            identity,
        })
    }

    /// The index, when a sound one made for this identity is there. A damaged or foreign one
    /// is deleted (it is rebuilt after the symbols are parsed).
    pub(crate) fn open(&self) -> Option<SymbolIndex> {
        match SymbolIndex::open(&self.path, &self.identity) {
            Some(index) => {
                // The modification time marks the index as recently used, for eviction.
                if let Ok(f) = std::fs::File::options().write(true).open(&self.path) {
                    let _ = f.set_modified(SystemTime::now());
                }
                Some(index)
            }
            None => {
                if self.path.exists() {
                    tracing::debug!(index = %self.path.display(), "unusable symbol index dropped");
                    let _ = std::fs::remove_file(&self.path);
                }
                None
            }
        }
    }

    /// Writes the index of `symbols` (and PDB `data` symbols) on a thread of its own, so the
    /// load that parsed them goes on at once; [`finish_index_writes`] waits for it.
    pub(crate) fn write_in_background(self, symbols: Arc<SymbolFile>, data: Vec<(String, u64)>) {
        let spawned = std::thread::Builder::new()
            .name("symbol-index".into())
            .spawn(move || self.write(&symbols, &data));
        match spawned {
            Ok(handle) => pending().push(handle),
            Err(e) => tracing::debug!("symbol index not written: no thread: {e}"),
        }
    }

    /// Writes the index of `symbols` (and PDB `data` symbols). Failures only mean no index.
    pub(crate) fn write(&self, symbols: &SymbolFile, data: &[(String, u64)]) {
        match write::build(&self.identity, symbols, data) {
            Some(bytes) => write::persist(&self.path, &bytes, MAX_INDEX_BYTES),
            None => tracing::debug!(index = %self.path.display(), "symbols too large to index"),
        }
    }
}

/// The lazily loaded PDBs whose index is still to be written: (PDB path, debug file, debug
/// id). A short process leaves them to a helper ([`deferred_pdb_indexes`]).
fn deferred() -> std::sync::MutexGuard<'static, Vec<(PathBuf, String, String)>> {
    static DEFERRED: Mutex<Vec<(PathBuf, String, String)>> = Mutex::new(Vec::new());
    DEFERRED.lock().unwrap_or_else(|e| e.into_inner())
}

/// Notes that the PDB at `path` (for `name`, debug id `key`) was loaded lazily without an
/// index: converting it whole to write one would make the first lookups wait.
pub(crate) fn defer_pdb_index(path: &Path, name: &str, key: &str) {
    deferred().push((path.to_path_buf(), name.to_string(), key.to_string()));
}

/// The lazily loaded PDBs whose warm index no one has written yet, as (PDB path, debug file,
/// debug id), and forgets them: a front end about to exit hands each to a detached helper
/// process that calls [`write_pdb_index`], so the next run maps the index without this one
/// waiting for the whole conversion.
pub fn deferred_pdb_indexes() -> Vec<(PathBuf, String, String)> {
    let mut jobs = std::mem::take(&mut *deferred());
    jobs.sort();
    jobs.dedup();
    jobs
}

/// Converts the PDB at `path` whole (checking it is `name` with debug id `key`) and writes its
/// warm index into the symbol cache, in the foreground. Nothing to do when the index is off or
/// already sound.
///
/// # Errors
/// The PDB cannot be read, or is not that build.
pub fn write_pdb_index(path: &Path, name: &str, key: &str) -> Result<(), crate::SymbolError> {
    let Some(slot) = IndexSlot::new(&crate::default_cache_dir(), "pdb", path, name, key) else {
        return Ok(());
    };
    if slot.open().is_some() {
        return Ok(());
    }
    let want = pdb_identity(name, key).ok_or_else(|| crate::SymbolError::Mismatch {
        path: path.to_path_buf(),
        what: "debug id",
        expected: "a PDB debug id".to_string(),
        found: key.to_string(),
    })?;
    let (symbols, data) = crate::load::convert_pdb(path, &want, None)?;
    slot.write(&symbols, &data);
    Ok(())
}

/// The PDB identity a debug id names: a PDB 7.0 key (GUID and age), else a PDB 2.0 one
/// (8 hex digits of signature and the age).
fn pdb_identity(name: &str, key: &str) -> Option<PdbIdentity> {
    let signature = match parse_debug_id(key) {
        Ok((guid, age)) => PdbSignature::Pdb70 { guid, age },
        Err(_) => {
            let (signature, age) = (key.get(..8)?, key.get(8..)?);
            PdbSignature::Pdb20 {
                signature: u32::from_str_radix(signature, 16).ok()?,
                age: u32::from_str_radix(age, 16).ok()?,
            }
        }
    };
    Some(PdbIdentity::new(name, signature))
}

/// The index writes still running.
fn pending() -> std::sync::MutexGuard<'static, Vec<JoinHandle<()>>> {
    static PENDING: Mutex<Vec<JoinHandle<()>>> = Mutex::new(Vec::new());
    PENDING.lock().unwrap_or_else(|e| e.into_inner())
}

/// Waits for the symbol indexes this process is still writing (call before exiting, or the
/// next run parses those symbols again).
pub fn finish_index_writes() {
    let handles = std::mem::take(&mut *pending());
    for handle in handles {
        let _ = handle.join();
    }
}
