//! Opening a dump as an engine [`Session`] whose symbol path is the dump's own folder, where
//! the repository's samples and the corpus keep their PDBs and images (feature `session`).

use std::path::Path;

use ntdbg_engine::Session;

/// Opens `dump` with its own folder, then each of `more` (folders or symbol-path elements),
/// as the symbol path.
///
/// # Panics
/// When the dump does not open, naming it: tests need it.
pub fn open_beside(dump: &Path, more: &[&str]) -> Session {
    let folder = dump
        .parent()
        .unwrap_or(Path::new("."))
        .display()
        .to_string();
    let symbol_path = std::iter::once(folder.as_str())
        .chain(more.iter().copied())
        .collect::<Vec<_>>()
        .join(";");
    match Session::open_dump(dump, Some(&symbol_path)) {
        Ok(session) => session,
        Err(e) => panic!("{} does not open: {e}", dump.display()),
    }
}

/// Opens the repository sample `rel` (see [`crate::sample`]) with its folder as the symbol path.
pub fn open_sample(rel: &str) -> Session {
    open_beside(&crate::sample(rel), &[])
}

/// Opens the shared corpus's dump `rel` (see [`crate::testdata`]) with its folder as the symbol
/// path.
pub fn open_corpus(rel: &str) -> Session {
    open_beside(&crate::testdata(rel), &[])
}

/// Writes the built `dump` to `dir/name` and opens it with `dir` as the symbol path (where a
/// test puts any symbols it built beside it), offline.
///
/// # Panics
/// When the dump cannot be written or does not open: tests need it.
pub fn open_built(
    dir: &Path,
    name: &str,
    dump: &crate::minidump_builder::MinidumpBuilder,
) -> Session {
    let path = dir.join(name);
    dump.write(&path);
    let symbols = dir.display().to_string();
    let session = Session::open_dump(&path, Some(&symbols))
        .unwrap_or_else(|e| panic!("{} does not open: {e}", path.display()));
    session.symbols().set_offline(true);
    session
}
