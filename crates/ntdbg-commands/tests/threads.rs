//! `~*CMD` as WinDbg runs it: on every thread, each block headed by the thread's `~` line with
//! the listing's marks (`.` current, `#` event), a failing thread's error inside its own block,
//! and the current thread and prompt unchanged by the walk.

use ntdbg_commands::{run_batch, run_command, Status};
use ntdbg_engine::Session;
use std::path::{Path, PathBuf};

/// Opens a dump with the repository's samples folder as the symbol path.
fn open(path: &Path) -> Session {
    let samples = ntdbg_testutil::sample("crashy.pdb");
    let dir = samples.parent().unwrap_or(Path::new(".")).display();
    match Session::open_dump(path, Some(&dir.to_string())) {
        Ok(s) => s,
        Err(e) => panic!("{}: {e}", path.display()),
    }
}

fn text(session: &mut Session, command: &str) -> String {
    match run_command(session, command) {
        Ok(out) => out.text,
        Err(e) => format!("ERROR {}: {}", e.code, e.message),
    }
}

fn u32_at(bytes: &[u8], at: usize) -> usize {
    let mut word = [0u8; 4];
    word.copy_from_slice(&bytes[at..at + 4]);
    u32::from_le_bytes(word) as usize
}

/// `crashy-x64-thread.dmp` with the first thread's context location zeroed: a dump in which
/// thread 0 has no register context (a tiny local patch: no shared dump has such a thread).
fn dump_without_thread0_context() -> PathBuf {
    let mut bytes = std::fs::read(ntdbg_testutil::sample("crashy-x64-thread.dmp")).expect("sample");
    let (streams, directory) = (u32_at(&bytes, 8), u32_at(&bytes, 12));
    let thread_list = (0..streams)
        .map(|i| directory + 12 * i)
        .find(|&entry| u32_at(&bytes, entry) == 3)
        .map(|entry| u32_at(&bytes, entry + 8))
        .expect("thread list stream");
    // MINIDUMP_THREAD: 48 bytes after the count; ThreadContext (size, rva) at +40.
    let context = thread_list + 4 + 40;
    bytes[context..context + 8].fill(0);
    let dir = ntdbg_testutil::fresh_dir("threads");
    let path = dir.join("thread0-without-context.dmp");
    std::fs::write(&path, bytes).expect("write the patched dump");
    path
}

#[test]
fn every_thread_runs_when_one_has_no_context() {
    let path = dump_without_thread0_context();
    let mut s = open(&path);
    let all = text(&mut s, "~*k");
    insta::assert_snapshot!("all_stacks_thread0_without_context", all, "~*k");
    // On that thread alone the command fails, as before.
    let one = run_command(&mut s, "~0 k").expect_err("no context");
    assert_eq!(one.code, "no_context", "{one}");
    let _ = std::fs::remove_file(&path);
}

#[test]
fn a_one_thread_dump_still_shows_the_thread_header() {
    let mut s = open(&ntdbg_testutil::sample("crashy-x64-null.dmp"));
    let all = text(&mut s, "~*k 2");
    insta::assert_snapshot!("all_stacks_one_thread", all, "~*k 2");
}

#[test]
fn marks_and_prompts_stay_consistent_in_a_batch() {
    let mut s = open(&ntdbg_testutil::sample("crashy-x64-thread.dmp"));
    let results = run_batch(&mut s, "~0s; ~*k 1; ~; ~1s; ~").expect("batch");
    assert!(results.iter().all(|r| r.status == Status::Succeeded));
    let prompts: Vec<usize> = results.iter().map(|r| r.thread).collect();
    assert_eq!(prompts, [1, 0, 0, 0, 1]);
    let marks = |out: &str| -> Vec<char> {
        out.lines()
            .filter(|l| l.contains("  Id: "))
            .filter_map(|l| l.chars().next())
            .collect()
    };
    // After `~0s` thread 0 is current and thread 1 (the exception's) is the event thread,
    // in the `~*` headers as in the listing.
    assert_eq!(marks(&results[1].output), ['.', '#']);
    assert_eq!(marks(&results[2].output), ['.', '#']);
    assert_eq!(marks(&results[4].output), [' ', '.']);
}

/// The typed result of `CMD` as JSON, or `null` when it has none.
fn typed_json(session: &mut Session, command: &str) -> serde_json::Value {
    match run_command(session, command) {
        Ok(out) => serde_json::to_value(&out.typed).expect("typed result as JSON"),
        Err(e) => panic!("{command}: {e}"),
    }
}

/// `~*CMD` keeps what the command gives on each thread: for every kind of per-thread result
/// (registers, frames, memory, disassembly, symbols, thread blocks, expressions…) the entry of
/// each thread equals `~N CMD`'s typed result, and stack walks stay one `stacks` list.
#[test]
fn every_thread_keeps_its_typed_result() {
    let mut s = open(&ntdbg_testutil::sample("crashy-x64-thread.dmp"));
    let threads = s.target().threads().len();
    assert!(threads >= 2, "the sample has a worker thread");
    let commands = [
        "r",
        "r rip",
        "dq @rsp L2",
        "dps @rsp L2",
        "u @rip L1",
        "ln @rip",
        "? @rsp",
        "!teb",
        "!gle",
        "!address @rsp",
        "dv",
    ];
    for command in commands {
        let all = typed_json(&mut s, &format!("~*{command}"));
        assert_eq!(all["kind"], "per_thread", "~*{command}: {all}");
        let entries = all["threads"].as_array().expect("threads array");
        assert_eq!(entries.len(), threads, "~*{command}");
        for (index, entry) in entries.iter().enumerate() {
            assert_eq!(entry["thread"], index, "~*{command}");
            assert!(entry["thread_id"]
                .as_str()
                .is_some_and(|id| id.starts_with("0x")));
            match run_command(&mut s, &format!("~{index} {command}")) {
                Ok(one) => {
                    let one = serde_json::to_value(&one.typed).expect("JSON");
                    assert_eq!(entry["result"], one, "~*{command} on thread {index}");
                    assert!(entry["error"].is_null(), "~*{command} on thread {index}");
                }
                Err(e) => {
                    assert!(entry["result"].is_null(), "~*{command} on thread {index}");
                    assert_eq!(entry["error"]["code"], e.code.name(), "~*{command}");
                    assert_eq!(entry["error"]["message"], e.message, "~*{command}");
                }
            }
        }
    }
    // Stack walks keep their one list, a stack per thread.
    let stacks = typed_json(&mut s, "~*k");
    assert_eq!(stacks["kind"], "stacks");
    assert_eq!(stacks["stacks"].as_array().map(Vec::len), Some(threads));
}

/// When the exception context's stack pointer lies in another thread's stack than the one
/// the dump names (testdata/faults/context_thread.dmp: the dump names ~0, the context is
/// ~1's), the session starts on ~1 and `.ecxr` switches to ~1 from anywhere; the listing
/// still marks the named thread `#`.
#[test]
fn the_thread_follows_the_exception_context() {
    let mut s = open(&ntdbg_testutil::sample("faults/context_thread.dmp"));
    assert_eq!(s.event_thread_index(), Some(0));
    assert_eq!(
        s.current_thread_index(),
        1,
        "the session starts on the context's thread"
    );
    let results = run_batch(&mut s, "~0s; .ecxr; kn 2; ~").expect("batch");
    let threads: Vec<usize> = results.iter().map(|r| r.thread).collect();
    assert_eq!(threads, [1, 0, 1, 1], "the prompts of the batch");
    assert!(results.iter().all(|r| r.status == Status::Succeeded));
    assert!(
        results[2].output.contains("00000000`0149fe08"),
        "{}",
        results[2].output
    );
    assert!(
        results[3].output.contains("#  0  Id:"),
        "{}",
        results[3].output
    );
    assert!(
        results[3].output.contains(".  1  Id:"),
        "{}",
        results[3].output
    );
    let owner = s.exception_context_owner().expect("owner");
    assert_eq!((owner.index, owner.register), (1, "rsp"));

    // A dump whose context fits the thread it names keeps that thread.
    let mut plain = open(&ntdbg_testutil::sample("crashy-x64-thread.dmp"));
    let named = plain.event_thread_index();
    assert_eq!(Some(plain.current_thread_index()), named);
    assert_eq!(plain.exception_context_owner(), None);
    run_command(&mut plain, "~0s").expect("~0s");
    run_command(&mut plain, ".ecxr").expect(".ecxr");
    assert_eq!(Some(plain.current_thread_index()), named);
}
