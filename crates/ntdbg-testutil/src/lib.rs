//! Test helpers shared by the ntdbg crates.
//!
//! [`testdata`] finds a file in the shared corpus of real Windows dumps (`../shared/testdata`
//! beside the repository, or `$NTDBG_TESTDATA`); a test that needs the corpus starts with
//! [`require_testdata!`], which skips it where the corpus is absent (at its end, each test
//! process says how many of its tests skipped), unless `NTDBG_REQUIRE_TESTDATA=1` (set by CI)
//! makes that a failure. [`sample`] finds a file in the repository's own `testdata/` folder,
//! made by `tools/crashgen/generate.sh`. [`minidump_builder`] and [`kernel_synth`] write
//! synthetic dumps with chosen contents; [`corrupt`] damages dumps for the bad-input tests;
//! [`child`] runs a test alone in a child process; [`at_exit`] runs work when the process
//! ends; `open_sample` (feature `session`) opens a sample with its folder as the symbol path.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

pub mod at_exit;
pub mod child;
pub mod corrupt;
pub mod gdbserver;
pub mod kernel_synth;
pub mod minidump_builder;
#[cfg(feature = "session")]
pub mod session;

#[cfg(feature = "session")]
pub use session::{open_beside, open_built, open_corpus, open_sample};

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
/// `$NTDBG_TESTDATA` when it is set (`None` if that is not a folder: set it to a missing path
/// to run the tests as a fresh clone would), else `shared/testdata` in the nearest ancestor of
/// the repository root that has one.
pub fn testdata_dir() -> Option<PathBuf> {
    if let Some(dir) = std::env::var_os("NTDBG_TESTDATA") {
        let dir = PathBuf::from(dir);
        return dir.is_dir().then_some(dir);
    }
    repo_root()
        .ancestors()
        .map(|a| a.join("shared").join("testdata"))
        .find(|p| p.is_dir())
}

/// Where the shared corpus comes from, for the skip tally.
const CORPUS_ORIGIN: &str = "real Windows dumps, PDBs and binaries copied from public \
repositories (rust-minidump, Google Breakpad, rizin, getsentry/symbolic, LLVM, Mozilla, \
ClusterFuzz, and other projects' crash reports) plus dumps made under Wine, 64 MB that the \
repository does not ship: it is handed out beside a clone as ../shared/testdata, whose \
README.md names every file's upstream";

/// How many tests of this process skipped for want of the shared corpus.
static SKIPPED_FOR_CORPUS: AtomicUsize = AtomicUsize::new(0);

/// Whether the shared corpus is there for a test that needs it. When it is absent it counts
/// the test as skipped and returns `false`; when the process ends, one line says how many of
/// its tests skipped, what they need and where it comes from (after the harness's "test
/// result" line, which counts them as passed). With `NTDBG_REQUIRE_TESTDATA=1` (CI) it panics
/// instead, so that no test is skipped unnoticed. Tests call it through [`require_testdata!`].
pub fn testdata_available() -> bool {
    if testdata_dir().is_some() {
        return true;
    }
    let where_ = format!(
        "set NTDBG_TESTDATA or place shared/testdata beside {} (looked in its ancestors)",
        repo_root().display()
    );
    if std::env::var_os("NTDBG_REQUIRE_TESTDATA").is_some_and(|v| v == "1") {
        panic!("shared test data not found and NTDBG_REQUIRE_TESTDATA=1: {where_}");
    }
    if SKIPPED_FOR_CORPUS.fetch_add(1, Ordering::Relaxed) == 0 {
        at_exit::at_exit(move || {
            let skipped = SKIPPED_FOR_CORPUS.load(Ordering::Relaxed);
            let binary = std::env::args()
                .next()
                .and_then(|a| Some(Path::new(&a).file_name()?.to_string_lossy().into_owned()))
                .unwrap_or_default();
            let _ = writeln!(
                std::io::stderr(),
                "\n!!! {skipped} tests of {binary} skipped (counted as passed above): the shared \
                 test corpus was not found; {where_}. It holds {CORPUS_ORIGIN}. !!!\n"
            );
        });
    }
    false
}

/// Returns from the enclosing test when the shared corpus is absent (see
/// [`testdata_available`]): the first line of every test that reads [`testdata`].
///
/// ```
/// fn reads_a_real_dump() {
///     ntdbg_testutil::require_testdata!();
///     let path = ntdbg_testutil::testdata("winelab/x64/null.inproc.dmp");
///     assert!(path.exists());
/// }
/// # reads_a_real_dump();
/// ```
#[macro_export]
macro_rules! require_testdata {
    () => {
        if !$crate::testdata_available() {
            return;
        }
    };
}

/// A new, empty folder for one test: `ntdbg-test-<pid>/<tag>-<n>` under the system's temporary
/// folder, unique within the process (two tests never share it) and removed, with the whole
/// `ntdbg-test-<pid>`, when the test process exits.
///
/// # Panics
/// When the folder cannot be made.
pub fn fresh_dir(tag: &str) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let root = std::env::temp_dir().join(format!("ntdbg-test-{}", std::process::id()));
    if NEXT.fetch_add(1, Ordering::Relaxed) == 0 {
        let root = root.clone();
        at_exit::at_exit(move || {
            let _ = std::fs::remove_dir_all(root);
        });
    }
    let dir = root.join(format!("{tag}-{}", NEXT.fetch_add(1, Ordering::Relaxed)));
    if let Err(e) = std::fs::create_dir_all(&dir) {
        panic!("{}: {e}", dir.display());
    }
    dir
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

/// Checks that `tests/main.rs` of the crate at `manifest_dir` declares every other file of its
/// `tests/` folder (`NAME.rs` and `NAME/mod.rs`) as `mod NAME;`: with `autotests = false` (one
/// test binary per crate), cargo would silently leave an undeclared file out.
///
/// # Panics
/// Listing the files that are not declared.
pub fn assert_test_files_are_modules(manifest_dir: &str) {
    let tests = Path::new(manifest_dir).join("tests");
    let main = std::fs::read_to_string(tests.join("main.rs")).expect("tests/main.rs");
    let declared: Vec<&str> = main
        .lines()
        .filter_map(|l| l.trim().strip_prefix("mod ")?.strip_suffix(';'))
        .collect();
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&tests).expect("tests/") {
        let path = entry.expect("tests/ entry").path();
        let name = if path.is_dir() && path.join("mod.rs").is_file() {
            path.file_name()
        } else if path.extension().is_some_and(|e| e == "rs") {
            path.file_stem()
        } else {
            None
        };
        let Some(name) = name.and_then(|n| n.to_str()) else {
            continue;
        };
        if name != "main" && !declared.contains(&name) {
            missing.push(name.to_string());
        }
    }
    assert!(
        missing.is_empty(),
        "{}/main.rs does not declare these test files as modules (add `mod NAME;`): {missing:?}",
        tests.display()
    );
}

/// Copies the `.sym.xz` store at `from` to `to` with every file decompressed (`NAME.sym`),
/// for tools that read plain Breakpad files only (minidump-stackwalk) and for comparisons.
///
/// # Panics
/// When a file cannot be read, decompressed or written: tests need the copy.
pub fn decompressed_sym_store(from: &Path, to: &Path) {
    use std::io::Read;
    for entry in std::fs::read_dir(from).unwrap() {
        let path = entry.unwrap().path();
        let target = to.join(path.file_name().unwrap());
        if path.is_dir() {
            std::fs::create_dir_all(&target).unwrap();
            decompressed_sym_store(&path, &target);
        } else if let Some(name) = path.to_str().and_then(|p| p.strip_suffix(".xz")) {
            let mut text = Vec::new();
            liblzma::read::XzDecoder::new(std::fs::File::open(&path).unwrap())
                .read_to_end(&mut text)
                .unwrap();
            let name = Path::new(name).file_name().unwrap();
            std::fs::write(to.join(name), text).unwrap();
        }
    }
}
