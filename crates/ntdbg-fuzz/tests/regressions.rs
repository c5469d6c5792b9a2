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
