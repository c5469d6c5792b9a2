//! Files that change under an open session: a dump or a mapped Breakpad `.sym` truncated, or
//! copied over in place (`cp new.dmp crash.dmp` truncates first), gives the session that has
//! it open a clear error — never a signal that takes the process and every other session
//! down — and sessions on other files go on.
//!
//! The reads past the cut below really touch pages that vanished from the mapping (on Linux
//! they raise SIGBUS); the test process surviving them is half of what is tested.

use ntdbg_commands::{run_command, ErrorCode};
use ntdbg_engine::Session;
use ntdbg_testutil::corrupt::TempDir;
use std::path::Path;

/// A 1 MiB sample dump (a stack overflow): most of it lies past the first page.
fn big_sample() -> Vec<u8> {
    std::fs::read(ntdbg_testutil::sample("crashy-x64-stack.dmp")).unwrap()
}

fn cut(path: &Path, len: u64) {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .unwrap()
        .set_len(len)
        .unwrap();
}

/// Every captured byte of the session's dump, read through the target without any check
/// (zeros or holes past a cut, never a signal).
fn read_all_memory(session: &Session) -> usize {
    let target = session.target();
    target
        .regions()
        .iter()
        .map(|r| {
            target
                .read_virtual(r.base, r.size.min(1 << 20) as usize)
                .iter()
                .flatten()
                .count()
        })
        .sum()
}

#[test]
fn a_dump_cut_under_its_session_fails_that_session_only() {
    let bytes = big_sample();
    let dir = TempDir::new("dump-cut-under-session");
    let (a, b) = (dir.write("a.dmp", &bytes), dir.write("b.dmp", &bytes));
    let mut cut_one = Session::open_dump(&a, Some("")).unwrap();
    let mut other = Session::open_dump(&b, Some("")).unwrap();
    let stack = run_command(&mut cut_one, "k").unwrap().text;
    assert_eq!(run_command(&mut other, "k").unwrap().text, stack);

    cut(&a, 4096);
    // The engine reads past the cut as it would mid-command: no signal.
    read_all_memory(&cut_one);
    let _ = cut_one.event_stack();
    for command in ["k", "r", "db @rsp"] {
        let e = run_command(&mut cut_one, command).unwrap_err();
        assert_eq!(e.code, ErrorCode::DumpChanged, "{command}: {e}");
        assert!(
            e.message.contains(&format!(
                "a.dmp changed on disk while it was open: its size went from {} to 4096 bytes",
                bytes.len()
            )),
            "{e}"
        );
        assert!(e
            .hint
            .as_deref()
            .unwrap_or("")
            .contains("open the dump again"));
    }
    let e = ntdbg_analysis::analyze_checked(&cut_one, &Default::default()).unwrap_err();
    assert_eq!(e.code(), ErrorCode::DumpChanged);

    // The other session, on its own copy, answers as before.
    assert_eq!(run_command(&mut other, "k").unwrap().text, stack);
    assert!(ntdbg_analysis::analyze_checked(&other, &Default::default()).is_ok());
}

#[test]
fn a_dump_copied_over_in_place_fails_its_session() {
    let bytes = big_sample();
    let dir = TempDir::new("dump-copied-over");
    let path = dir.write("crash.dmp", &bytes);
    let replacement = dir.write(
        "new.dmp",
        &std::fs::read(ntdbg_testutil::sample("crashy-x64-null.dmp")).unwrap(),
    );
    let mut session = Session::open_dump(&path, Some("")).unwrap();
    run_command(&mut session, "k").unwrap();
    // What `cp new.dmp crash.dmp` does: truncate, then write the new bytes.
    std::fs::copy(&replacement, &path).unwrap();
    read_all_memory(&session);
    let e = run_command(&mut session, "lm").unwrap_err();
    assert_eq!(e.code, ErrorCode::DumpChanged, "{e}");

    // Same length, other bytes: the modification time tells.
    let path = dir.write("same.dmp", &bytes);
    let mut session = Session::open_dump(&path, Some("")).unwrap();
    run_command(&mut session, "k").unwrap();
    let mut other = bytes.clone();
    other[bytes.len() / 2..].fill(0xcc);
    let later =
        std::fs::metadata(&path).unwrap().modified().unwrap() + std::time::Duration::from_secs(2);
    std::fs::write(&path, &other).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&path)
        .unwrap()
        .set_modified(later)
        .unwrap();
    let e = run_command(&mut session, "k").unwrap_err();
    assert_eq!(e.code, ErrorCode::DumpChanged, "{e}");
    assert!(
        e.message.contains("it was written to since it was opened"),
        "{e}"
    );
}

/// A Breakpad `.sym` of 818 KiB (read lazily from its mapping) cut while the session uses it:
/// the next command fails with `symbol_file_changed`, the module's symbols are dropped, and
/// the command after it reads them again from what the file holds.
#[test]
fn a_symbol_file_cut_under_its_session_is_reported_then_read_again() {
    ntdbg_testutil::require_testdata!();
    let data = ntdbg_testutil::testdata("google-breakpad/src/processor/testdata");
    let sym = std::fs::read(
        data.join("symbols/test_app.pdb/5A9832E5287241C1838ED98914E9B7FF1/test_app.sym"),
    )
    .unwrap();
    let dir = TempDir::new("sym-cut-under-session");
    let store = dir.path().join("symbols");
    let sym_dir = store.join("test_app.pdb/5A9832E5287241C1838ED98914E9B7FF1");
    std::fs::create_dir_all(&sym_dir).unwrap();
    let sym_path = sym_dir.join("test_app.sym");
    std::fs::write(&sym_path, &sym).unwrap();
    let dump = data.join("minidump2.dmp");
    let mut session = Session::open_dump(&dump, Some(store.to_str().unwrap())).unwrap();
    let with_symbols = run_command(&mut session, "k").unwrap().text;
    assert!(with_symbols.contains("test_app!"), "{with_symbols}");

    cut(&sym_path, 4096);
    // A lookup through the mapping past the cut: zeros, never a signal.
    let pc = session.target().event().unwrap().address;
    let _ = session.symbolize(pc);
    let e = run_command(&mut session, "k").unwrap_err();
    assert_eq!(e.code, ErrorCode::SymbolFileChanged, "{e}");
    assert!(e.message.contains("test_app.sym changed on disk"), "{e}");
    // Dropped: read again from the cut file, which no longer names these functions.
    let after_cut = run_command(&mut session, "k").unwrap().text;
    assert!(!after_cut.contains("test_app!crash"), "{after_cut}");

    // The cut file was small enough to be parsed whole: nothing of it stays mapped, and the
    // whole file put back is read after `.reload`.
    std::fs::write(&sym_path, &sym).unwrap();
    run_command(&mut session, ".reload").unwrap();
    assert_eq!(run_command(&mut session, "k").unwrap().text, with_symbols);
}
