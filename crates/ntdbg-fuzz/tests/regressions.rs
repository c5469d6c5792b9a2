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
/// the symbol loader's guards contain each panic, so every entry point returns normally, with
/// an error or with what the damage left readable.
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
        let converted = std::panic::catch_unwind(|| ntdbg_symbols::pdb_to_breakpad(&path));
        assert!(
            converted.is_ok_and(|r| r.is_err() || r.is_ok_and(|t| t.starts_with("MODULE "))),
            "{}",
            path.display()
        );
        assert!(std::panic::catch_unwind(|| ntdbg_symbols::TypeDb::open(&path)).is_ok());
        seen += 1;
    }
    assert!(
        seen >= 3,
        "regression inputs missing from {}",
        dir.display()
    );
}

/// A C13 line block that claims more lines than it holds (`fuzz/regressions/pdb-lines/`, made
/// from the repository's `crashy.pdb` by `make.py` there) makes `pdb2` panic while it reads
/// the block. The panic is contained to the procedure being converted: it loses its lines, and
/// every function keeps its name, the other procedures their lines.
#[test]
fn a_damaged_line_block_costs_its_procedure_the_lines_only() {
    let path =
        ntdbg_testutil::repo_root().join("fuzz/regressions/pdb-lines/crashy-c13-line-count.pdb");
    let text = ntdbg_symbols::pdb_to_breakpad(&path).expect("the PDB converts");
    let func = |name: &str| {
        text.lines()
            .position(|l| l.starts_with("FUNC ") && l.contains(&format!(" {name}(")))
            .unwrap_or_else(|| panic!("no FUNC {name}"))
    };
    let has_lines = |at: usize| {
        text.lines()
            .nth(at + 1)
            // A line record: address, size, line, file (four hex or decimal numbers).
            .is_some_and(|l| !l.starts_with("FUNC") && l.split(' ').count() == 4)
    };
    assert!(
        !has_lines(func("write_null")),
        "the damaged block's procedure has no lines"
    );
    assert!(
        has_lines(func("mode_null")),
        "the next procedure keeps its lines"
    );
    assert!(has_lines(func("main")));
}
