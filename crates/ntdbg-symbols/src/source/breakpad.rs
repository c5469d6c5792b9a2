//! Breakpad `.sym` and `.sym.xz` files parsed whole.

use std::path::Path;
use std::sync::Arc;

use breakpad_symbols::SymbolFile;

use super::io;
use super::panic_guard::guarded;
use crate::{SharedBytes, SymbolError};

/// Largest `.sym.xz` decompressed size accepted.
pub(crate) const MAX_SYM_SIZE: u64 = 1 << 30;

/// A Breakpad file made for another build is refused.
pub(crate) fn check_module_id(path: &Path, found: &str, key: &str) -> Result<(), SymbolError> {
    if found.eq_ignore_ascii_case(key) {
        return Ok(());
    }
    Err(SymbolError::Mismatch {
        path: path.to_path_buf(),
        what: "debug id",
        expected: key.to_string(),
        found: found.to_string(),
    })
}

/// Reads the Breakpad `.sym`/`.sym.xz` at `source` whole, checked to be for debug id `key`
/// (what a detached index writer parses).
pub(crate) fn read_whole(source: &Path, key: &str) -> Result<Arc<SymbolFile>, SymbolError> {
    let sym = parse_whole(source)?;
    check_module_id(source, &sym.module_id, key)?;
    Ok(sym)
}

/// Parses the `.sym` at `path` whole, or a `.sym.xz` streamed from the decoder into the parser
/// (through its decompressed copy in the cache).
pub(crate) fn parse_whole(path: &Path) -> Result<Arc<SymbolFile>, SymbolError> {
    let raw = SharedBytes::of_file(path).map_err(|e| io(path, e))?;
    let source = raw.clone();
    let is_xz = path
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("xz"));
    let sym = guarded(path, "Breakpad parser", || {
        if !is_xz {
            return parse_text(path, &raw);
        }
        let cache = crate::default_cache_dir();
        let (sym, from) = crate::unpacked::parse_xz(&raw, Some(&cache), MAX_SYM_SIZE)
            .map_err(|message| bad(path, message))?;
        tracing::debug!(file = %path.display(), source = ?from, "Breakpad symbols from .xz");
        Ok(Arc::new(sym))
    })?;
    // Parsed from a mapping: a file cut or rewritten meanwhile gave zeros or other bytes.
    source.check()?;
    Ok(sym)
}

/// Parses Breakpad symbol text read from `path`.
pub(crate) fn parse_text(path: &Path, text: &[u8]) -> Result<Arc<SymbolFile>, SymbolError> {
    SymbolFile::from_bytes(text)
        .map(Arc::new)
        .map_err(|e| bad(path, e.to_string()))
}

/// A Breakpad file that does not parse.
pub(crate) fn bad(path: &Path, message: String) -> SymbolError {
    SymbolError::Breakpad {
        path: path.to_path_buf(),
        message,
    }
}
