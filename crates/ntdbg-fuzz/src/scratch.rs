//! A per-thread scratch file: the dump and PDB readers take a path (they memory-map or open
//! the file), so each input is written to a file first.

use std::cell::RefCell;
use std::io::{Seek, SeekFrom, Write};
use std::path::Path;

thread_local! {
    static SCRATCH: RefCell<Option<tempfile::NamedTempFile>> = const { RefCell::new(None) };
}

/// Writes `data` to this thread's scratch file and calls `f` with its path.
///
/// # Panics
/// When the temporary folder cannot be written (the harness cannot run at all then).
pub(crate) fn with_file<R>(data: &[u8], f: impl FnOnce(&Path) -> R) -> R {
    SCRATCH.with(|cell| {
        let mut slot = cell.borrow_mut();
        let file = slot.get_or_insert_with(|| {
            tempfile::Builder::new()
                .prefix("ntdbg-fuzz-")
                .tempfile()
                .expect("create the fuzz scratch file")
        });
        let handle = file.as_file_mut();
        handle.set_len(0).expect("truncate the fuzz scratch file");
        handle.seek(SeekFrom::Start(0)).expect("rewind");
        handle.write_all(data).expect("write the fuzz scratch file");
        handle.flush().expect("flush");
        f(file.path())
    })
}
