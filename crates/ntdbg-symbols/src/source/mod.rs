//! Reading one symbol file as it is: a PDB converted whole after its identity is checked, a
//! Breakpad `.sym`/`.sym.xz` parsed whole, and the guard around the third-party readers. No
//! search, index or lazy reader: the loader (`load.rs`) chooses among those, and the index and
//! the lazy PDB reader fall back on these when they must read a file again.

pub(crate) mod breakpad;
pub(crate) mod panic_guard;
pub(crate) mod pdb;

use crate::SymbolError;
use std::path::Path;

/// The error of a symbol file that could not be opened or read.
pub(crate) fn io(path: &Path, source: std::io::Error) -> SymbolError {
    SymbolError::Io {
        path: path.to_path_buf(),
        source,
    }
}
