//! Handles, thread times, unique stacks, last errors, unloaded modules, thread names and ARM64
//! disassembly on the real dumps of the shared corpus that hold the streams they read
//! (insta snapshots in `tests/snapshots/`).

use ntdbg_commands::{run_command, TypedResult};
use ntdbg_engine::Session;

/// x64, crashpad-made: HandleData (147 handles) and UnloadedModuleList (shcore.dll).
const HANDLES_DUMP: &str = "google-breakpad/src/processor/testdata/tiny-exe-with-cet-xsave.dmp";
/// x86 (WoW64), Visual Studio-made: ThreadInfoList for its one thread.
const THREAD_INFO_DUMP: &str =
    "llvm-lldb/packages/Python/lldbsuite/test/functionalities/postmortem/minidump/fizzbuzz_no_heap.dmp";
/// ARM64 Firefox: ThreadNames (104 threads) and UnloadedModuleList.
const ARM64_DUMP: &str = "mozilla-minidump-stackwalk-pgo/pgo_data/minidumps/windows-aarch64.dmp";
/// x64 Firefox: ThreadNames (103 threads) and UnloadedModuleList.
const X64_FIREFOX_DUMP: &str =
    "mozilla-minidump-stackwalk-pgo/pgo_data/minidumps/windows-x86_64.dmp";

fn open(rel: &str) -> Session {
    Session::open_dump(&ntdbg_testutil::testdata(rel), Some("")).expect("dump opens")
}

fn text(session: &mut Session, command: &str) -> String {
    match run_command(session, command) {
        Ok(out) => out.text,
        Err(e) => format!("ERROR {}: {}", e.code, e.message),
    }
}

#[test]
fn handles_on_a_dump_with_handle_data() {
    ntdbg_testutil::require_testdata!();
    let mut session = open(HANDLES_DUMP);
    for (name, command) in [
        ("handle_one_all_flags", "!handle 10 f"),
        ("handle_sections", "!handle 0 3 Section"),
        ("handle_missing", "!handle 9999"),
        ("lm_unloaded", "lm"),
        ("lmv_unloaded", "lmv m shcore"),
        ("ln_unloaded", "ln 7ff9`0f450010"),
        ("gle", "!gle"),
        ("runaway_missing", "!runaway"),
    ] {
        insta::assert_snapshot!(name.to_string(), text(&mut session, command), command);
    }
    let out = run_command(&mut session, "!handle").expect("!handle");
    assert!(out
        .text
        .starts_with("Handle 4\n  Type         \tFile\nHandle 8\n"));
    assert!(out.text.contains("\n147 Handles\nType           \tCount\n"));
    let Some(TypedResult::Handles { handles, by_type }) = out.typed else {
        panic!("typed handles expected");
    };
    assert_eq!(handles.len(), 147);
    assert_eq!(by_type.iter().map(|t| t.count).sum::<usize>(), 147);
    let sections = by_type
        .iter()
        .find(|t| t.type_name == "Section")
        .expect("sections");
    assert_eq!(sections.count, 31);
}

#[test]
fn thread_times_on_a_dump_with_thread_info() {
    ntdbg_testutil::require_testdata!();
    let mut session = open(THREAD_INFO_DUMP);
    for (name, command) in [
        ("runaway_all", "!runaway 7"),
        ("gle_x86", "!gle -all"),
        ("handle_missing_stream", "!handle"),
    ] {
        insta::assert_snapshot!(name.to_string(), text(&mut session, command), command);
    }
}

#[test]
fn error_texts_and_formats() {
    ntdbg_testutil::require_testdata!();
    let mut session = open(THREAD_INFO_DUMP);
    for (name, command) in [
        ("error_win32", "!error 2"),
        ("error_ntstatus_guessed", "!error c0000005"),
        ("error_ntstatus_flag", "!error 0xc0000034 1"),
        ("error_unknown", "!error 0n12345"),
        ("formats_x86", ".formats 0x41424344"),
    ] {
        insta::assert_snapshot!(name.to_string(), text(&mut session, command), command);
    }
    let mut x64 = open(HANDLES_DUMP);
    insta::assert_snapshot!(
        "formats_x64",
        text(&mut x64, ".formats 0x1234"),
        ".formats 0x1234"
    );
}

#[test]
fn unique_stacks_collapse_identical_threads() {
    ntdbg_testutil::require_testdata!();
    let mut session = open(X64_FIREFOX_DUMP);
    let out = run_command(&mut session, "!uniqstack").expect("!uniqstack");
    let Some(TypedResult::UniqueStacks {
        stacks,
        total_threads,
        duplicate_threads,
    }) = out.typed
    else {
        panic!("typed unique stacks expected");
    };
    assert_eq!(total_threads, 103);
    assert_eq!(
        stacks.iter().map(|s| s.threads.len()).sum::<usize>(),
        total_threads
    );
    assert_eq!(stacks.len() + duplicate_threads, total_threads);
    assert!(duplicate_threads > 0, "a 103-thread browser has idle twins");
    assert!(out
        .text
        .starts_with("Processing 103 threads, please wait\n\n"));
    assert!(out.text.contains(&format!(
        "Total threads: 103\nDuplicate callstacks: {duplicate_threads} (windbg thread #s follow):\n"
    )));
    // Thread names appear in the headers, as in `~`.
    assert!(
        out.text.contains("Unfrozen \""),
        "named threads show their names"
    );
}

#[test]
fn arm64_disassembly_and_names() {
    ntdbg_testutil::require_testdata!();
    let mut session = open(ARM64_DUMP);
    for (name, command) in [
        // The breakpoint in xul.dll: its code is in the dump (no xul symbols here).
        ("arm64_u", "u 7ffe`d46446e0 L10"),
        ("arm64_ub", "ub 7ffe`d46446f8 L4"),
        ("arm64_uf", "uf 7ffe`d46444c0"),
        ("arm64_u_missing", "u @pc L2"),
        ("arm64_threads_head", "~0"),
    ] {
        insta::assert_snapshot!(name.to_string(), text(&mut session, command), command);
    }
    let lm = text(&mut session, "lm");
    assert!(lm.contains("\nUnloaded modules:\n"), "{lm}");
    let threads = text(&mut session, "~");
    assert_eq!(threads.lines().count(), 104);
}

#[test]
fn dumps_without_the_streams_keep_their_lm() {
    ntdbg_testutil::require_testdata!();
    let mut session = open("winelab/x64/null.inproc.dmp");
    let lm = text(&mut session, "lm");
    assert!(!lm.contains("Unloaded modules:"));
    let out = run_command(&mut session, "lm").expect("lm");
    let json = serde_json::to_value(out.typed.expect("typed")).expect("json");
    assert!(
        json.get("unloaded").is_none(),
        "no unloaded key without the stream"
    );
}
