//! A thread list stream longer than its count needs, as Wine's `MiniDumpWriteDump` writes it
//! when a callback leaves threads out (a watchdog writing the dump without itself): the
//! threads it counts are read, the slack is ignored.

use ntdbg_targets::{MemoryView, Target, UserDump};
use ntdbg_testutil::corrupt::TempDir;
use ntdbg_testutil::minidump_builder::{
    Context, Cpu, MemoryStream, MinidumpBuilder, Thread, X64Context,
};

const THREAD_LIST: u32 = 3;
const THREAD_ENTRY: u32 = 48;

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
}

/// The offset of the thread list's entry in the stream directory.
fn thread_list_entry(bytes: &[u8]) -> usize {
    let streams = u32_at(bytes, 8) as usize;
    let directory = u32_at(bytes, 12) as usize;
    (0..streams)
        .map(|i| directory + 12 * i)
        .find(|&e| u32_at(bytes, e) == THREAD_LIST)
        .expect("a thread list")
}

#[test]
fn thread_list_with_slack_reads_its_counted_threads() {
    let mut dump = MinidumpBuilder::new(Cpu::X64);
    for id in [0x24, 0xd4] {
        dump.thread(Thread {
            id,
            context: Some(Context::X64(X64Context {
                rip: 0x1_4000_1000,
                rsp: 0x11_f000,
                ..X64Context::default()
            })),
            ..Thread::default()
        });
    }
    let mut bytes = dump.build();
    let entry = thread_list_entry(&bytes);
    let size = u32_at(&bytes, entry + 4);
    let rva = u32_at(&bytes, entry + 8);
    // Room for the slack (unused bytes after the last counted entry).
    let end = (rva + size + THREAD_ENTRY) as usize;
    if bytes.len() < end {
        bytes.resize(end, 0);
    }
    bytes[entry + 4..entry + 8].copy_from_slice(&(size + THREAD_ENTRY).to_le_bytes());

    let dir = TempDir::new("wine-thread-list");
    let path = dir.path().join("slack.dmp");
    std::fs::write(&path, &bytes).expect("writes");
    let target = UserDump::open(&path).expect("opens");
    let ids: Vec<u32> = target.threads().iter().map(|t| t.id).collect();
    assert_eq!(ids, [0x24, 0xd4]);
}

/// A full-memory dump whose thread stack descriptor has RVA 0, as Wine's `MiniDumpWriteDump`
/// writes it (the stack lives in the Memory64List): the stack reads as the Memory64List's
/// bytes, never as the file header that RVA 0 points at.
#[test]
fn stack_descriptor_with_rva_zero_reads_the_full_memory_copy() {
    const STACK_BASE: u64 = 0x10_9fda8;
    let stack: Vec<u8> = (0u8..0x40).map(|b| b ^ 0x5a).collect();
    let mut dump = MinidumpBuilder::new(Cpu::X64);
    dump.memory_stream(MemoryStream::List64).thread(Thread {
        id: 0x154,
        context: Some(Context::X64(X64Context {
            rip: 0x1_4000_1549,
            rsp: STACK_BASE + 8,
            ..X64Context::default()
        })),
        stack_base: STACK_BASE,
        stack: stack.clone(),
        ..Thread::default()
    });
    let mut bytes = dump.build();
    let entry = thread_list_entry(&bytes);
    // The first thread's Stack descriptor (after the count): as Wine writes it, from the
    // stack pointer (inside the Memory64List range, not at its start), with RVA 0.
    let thread = u32_at(&bytes, entry + 8) as usize + 4;
    bytes[thread + 24..thread + 32].copy_from_slice(&(STACK_BASE + 8).to_le_bytes());
    bytes[thread + 32..thread + 36].copy_from_slice(&0x10u32.to_le_bytes());
    bytes[thread + 36..thread + 40].copy_from_slice(&0u32.to_le_bytes());

    let dir = TempDir::new("wine-stack-rva-zero");
    let path = dir.path().join("full.dmp");
    std::fs::write(&path, &bytes).expect("writes");
    let target = UserDump::open(&path).expect("opens");
    let got = target.read_virtual(STACK_BASE + 8, 8);
    let want: Vec<Option<u8>> = stack[8..16].iter().copied().map(Some).collect();
    assert_eq!(
        got, want,
        "the stack comes from the Memory64List, not the header"
    );
}
