//! A crafted dump with 100,000 threads (issue 35, item 11): they share one register context
//! and one small stack, so the file is about 4.8 MB, but `~*k` walked and kept every thread's
//! stack, text and typed frames, and took the process to 2 GB. `~*` now stops at an output
//! budget with a note that says where and what to use instead.

use ntdbg_engine::Session;
use ntdbg_testutil::corrupt::TempDir;
use ntdbg_testutil::minidump_builder::{Context, Cpu, MinidumpBuilder, Module, Thread, X64Context};

const THREADS: u32 = 100_000;
const APP_BASE: u64 = 0x7ff6_1234_0000;
const STACK: u64 = 0x0000_00c4_5678_f000;

/// 100,000 threads, all at the same instruction with the same stack: a chain of frame
/// pointers, so every walk finds several frames.
fn many_threads() -> MinidumpBuilder {
    let mut stack = Vec::new();
    for i in 0..8u64 {
        // [rbp] = next rbp, [rbp+8] = return address.
        stack.extend_from_slice(&(STACK + 0x10 * (i + 1)).to_le_bytes());
        stack.extend_from_slice(&(APP_BASE + 0x1100 + i * 0x10).to_le_bytes());
    }
    let context = Context::X64(X64Context {
        rip: APP_BASE + 0x1010,
        rsp: STACK,
        rbp: STACK,
        ..X64Context::default()
    });
    let mut dump = MinidumpBuilder::new(Cpu::X64);
    dump.share_thread_data()
        .module(Module::new(r"C:\app\app.exe", APP_BASE, 0x2_0000));
    for n in 0..THREADS {
        dump.thread(Thread {
            id: 0x1000 + n,
            teb: 0x0000_00ab_cdef_0000,
            context: Some(context.clone()),
            stack_base: STACK,
            stack: stack.clone(),
            ..Thread::default()
        });
    }
    dump
}

#[test]
fn all_threads_k_stops_at_its_output_budget() {
    let dir = TempDir::new("many-threads");
    let path = dir.path().join("many-threads.dmp");
    many_threads().write(&path);
    if let Some(keep) = std::env::var_os("NTDBG_KEEP_MANY_THREADS_DUMP") {
        std::fs::copy(&path, keep).expect("copy the dump");
    }
    let size = std::fs::metadata(&path).expect("the dump").len();
    assert!(size < 6_000_000, "the crafted dump is small: {size} bytes");
    let symbols = dir.path().display().to_string();
    let mut session = Session::open_dump(&path, Some(&symbols)).expect("the dump opens");
    session.symbols().set_offline(true);
    assert_eq!(session.target().threads().len(), THREADS as usize);

    let out = ntdbg_commands::run_command(&mut session, "~*k").expect("~*k runs");
    let last = out.text.lines().last().expect("some output");
    assert!(
        last.starts_with("~*k: stopped after ")
            && last.contains(" of 100000 threads: output budget of ")
            && last.ends_with("reached; use ~N k for one thread"),
        "the note at the end: {last}"
    );
    // The budget is 16 MiB: the walk stops after the thread that crossed it.
    assert!(
        out.text.len() < (16 << 20) + (64 << 10),
        "{} bytes of text",
        out.text.len()
    );
    let walked: usize = last["~*k: stopped after ".len()..]
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .expect("the number of threads walked");
    assert!(
        walked > 1000 && walked < THREADS as usize,
        "{walked} threads walked"
    );
    assert_eq!(out.text.matches("  Id: 0.").count(), walked);
    assert!(out.text.starts_with(".  0  Id: "), "{}", &out.text[..200]);

    // One thread's stack is all there, and the session goes on.
    let one = ntdbg_commands::run_command(&mut session, "~99999 k").expect("~99999 k");
    assert!(one.text.contains("app+0x1010"), "{}", one.text);
}
