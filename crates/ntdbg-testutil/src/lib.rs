//! Test helpers shared by the ntdbg crates.
//!
//! [`testdata`] finds a file in the shared corpus of real Windows dumps (`../shared/testdata`
//! beside the repository, or `$NTDBG_TESTDATA`); [`sample`] finds a file in the repository's own
//! `testdata/` folder, made by `tools/crashgen/generate.sh`.
#![warn(missing_docs)]

use std::path::{Path, PathBuf};

pub mod gdbserver;
pub mod kernel_synth;

/// The repository root (two levels above this crate's manifest).
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")))
}

/// The shared test corpus folder, if it can be found.
///
/// Looks at `$NTDBG_TESTDATA` first, then for `shared/testdata` in every ancestor of the
/// repository root.
pub fn testdata_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("NTDBG_TESTDATA") {
        let dir = PathBuf::from(dir);
        if dir.is_dir() {
            return Some(dir);
        }
    }
    repo_root()
        .ancestors()
        .map(|a| a.join("shared").join("testdata"))
        .find(|p| p.is_dir())
}

/// A file in the shared test corpus, by its path relative to `testdata/`.
///
/// # Panics
/// When the corpus or the file cannot be found, listing where it looked: tests need it.
pub fn testdata(rel: &str) -> PathBuf {
    let Some(dir) = testdata_dir() else {
        panic!(
            "shared test data not found: set NTDBG_TESTDATA or place shared/testdata beside {} (looked in its ancestors)",
            repo_root().display()
        );
    };
    let path = dir.join(rel);
    assert!(path.exists(), "test data file missing: {}", path.display());
    path
}

/// A file in the repository's own `testdata/` folder (the generated samples).
///
/// # Panics
/// When the file does not exist.
pub fn sample(rel: &str) -> PathBuf {
    let path = repo_root().join("testdata").join(rel);
    assert!(
        path.exists(),
        "sample missing: {} (run tools/crashgen/generate.sh)",
        path.display()
    );
    path
}
