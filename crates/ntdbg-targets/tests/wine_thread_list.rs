//! A thread list stream longer than its count needs, as Wine's `MiniDumpWriteDump` writes it
//! when a callback leaves threads out (a watchdog writing the dump without itself): the
//! threads it counts are read, the slack is ignored.

use ntdbg_targets::{Target, UserDump};
use ntdbg_testutil::corrupt::TempDir;
use ntdbg_testutil::minidump_builder::{Context, Cpu, MinidumpBuilder, Thread, X64Context};

const THREAD_LIST: u32 = 3;
const THREAD_ENTRY: u32 = 48;

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]])
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
    let streams = u32_at(&bytes, 8) as usize;
    let directory = u32_at(&bytes, 12) as usize;
    let entry = (0..streams)
        .map(|i| directory + 12 * i)
        .find(|&e| u32_at(&bytes, e) == THREAD_LIST)
        .expect("a thread list");
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
