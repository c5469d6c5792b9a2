//! Inputs the fuzzers once crashed on, and what ntdbg answers now. Each file also stays in its
//! target's corpus, so the corpus replay runs it through the whole entry point too.

use std::path::PathBuf;

fn corpus_file(target: &str, name: &str) -> PathBuf {
    ntdbg_testutil::repo_root()
        .join("fuzz/corpus")
        .join(target)
        .join(name)
}

/// DBI substream sizes that overflow a `u32` when pdb2 adds them up (an overflow panic in
/// debug builds, a misread in release) are refused before pdb2 sees them.
#[test]
fn pdb_with_overflowing_dbi_sizes_is_an_error() {
    let path = corpus_file("pdb", "regression-dbi-size-overflow.pdb");
    let error = ntdbg_symbols::pdb_to_breakpad(&path).unwrap_err();
    let message = error.to_string();
    assert!(message.contains("DBI substream sizes"), "{message}");
    assert!(!message.contains("panicked"), "{message}");
}

/// A stream-name table entry pointing past the name buffer (pdb2 slices there and panics) is
/// refused when the PDB's identity is read.
#[test]
fn pdb_with_stream_name_past_its_buffer_is_an_error() {
    let path = corpus_file("pdb", "regression-stream-name-offset.pdb");
    let error = ntdbg_symbols::pdb_to_breakpad(&path).unwrap_err();
    let message = error.to_string();
    assert!(message.contains("PDB stream-name table"), "{message}");
    assert!(!message.contains("panicked"), "{message}");
}

/// Inputs on which the `pdb2` crate itself panics deep in its type and module parsers
/// (`fuzz/regressions/pdb/`, kept out of the corpus because the replay fails on any panic):
/// the symbol loader's guards turn each into an error, so the entry point returns normally.
#[test]
fn pdb2_panics_stay_inside_the_symbol_loader() {
    let dir = ntdbg_testutil::repo_root().join("fuzz/regressions/pdb");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).expect("list fuzz/regressions/pdb") {
        let path = entry.expect("list fuzz/regressions/pdb").path();
        let data = std::fs::read(&path).expect("read a regression input");
        assert!(
            std::panic::catch_unwind(|| ntdbg_fuzz::pdb(&data)).is_ok(),
            "{} escaped the guard",
            path.display()
        );
        assert!(
            ntdbg_symbols::pdb_to_breakpad(&path).is_err()
                || ntdbg_symbols::TypeDb::open(&path).is_err()
        );
        seen += 1;
    }
    assert!(
        seen >= 3,
        "regression inputs missing from {}",
        dir.display()
    );
}
