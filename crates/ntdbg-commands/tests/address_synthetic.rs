//! `!address` and `s` on a minidump built with chosen values (`ntdbg_testutil::minidump_builder`):
//! every region's state, protection, type and usage comes back exactly; the stack, TEB, PEB
//! and heaps are recognised from the thread list, the TEB and the PEB's heap list.

use ntdbg_commands::{run_command, RegionRow, TypedResult};
use ntdbg_engine::Session;
use ntdbg_testutil::corrupt::TempDir;
use ntdbg_testutil::minidump_builder::{
    Context, Cpu, MemoryInfo, MinidumpBuilder, MiscInfo, Module, Thread, X64Context, MEM_COMMIT,
    MEM_FREE, MEM_IMAGE, MEM_PRIVATE, MEM_RESERVE, PAGE_EXECUTE_READ, PAGE_GUARD, PAGE_NOACCESS,
    PAGE_READONLY, PAGE_READWRITE,
};

const APP: u64 = 0x7ff6_1234_0000;
const STACK_ALLOCATION: u64 = 0xc4_5670_0000;
const STACK_GUARD: u64 = 0xc4_5678_e000;
const STACK: u64 = 0xc4_5678_f000;
const STACK_END: u64 = 0xc4_5679_0000;
const TEB: u64 = 0xc4_5600_0000;
const PEB: u64 = 0xc4_5500_0000;
const HEAPS: u64 = PEB + 0x800;
const HEAP: u64 = 0x1d0_0000_0000;
const PAGE_EXECUTE_WRITECOPY: u32 = 0x80;

/// A region as compared: base, size, state, protect, type, usage, thread.
type Row = (
    String,
    String,
    Option<String>,
    Option<String>,
    Option<String>,
    String,
    Option<usize>,
);

fn region(
    base: u64,
    size: u64,
    allocation: u64,
    state: u32,
    protect: u32,
    kind: u32,
) -> MemoryInfo {
    MemoryInfo {
        base,
        allocation_base: allocation,
        allocation_protect: if kind == MEM_IMAGE {
            PAGE_EXECUTE_WRITECOPY
        } else {
            PAGE_READWRITE
        },
        region_size: size,
        state,
        protect,
        kind,
    }
}

fn dump() -> MinidumpBuilder {
    // The TEB: NT_TIB StackBase/StackLimit, and the PEB pointer at +0x60.
    let mut teb = vec![0u8; 0x70];
    teb[8..16].copy_from_slice(&STACK_END.to_le_bytes());
    teb[0x10..0x18].copy_from_slice(&STACK_GUARD.to_le_bytes());
    teb[0x60..0x68].copy_from_slice(&PEB.to_le_bytes());
    // The PEB: NumberOfHeaps at +0xe8, ProcessHeaps at +0xf0, the list at HEAPS.
    let mut peb = vec![0u8; 0x810];
    peb[0xe8..0xec].copy_from_slice(&1u32.to_le_bytes());
    peb[0xf0..0xf8].copy_from_slice(&HEAPS.to_le_bytes());
    peb[0x800..0x808].copy_from_slice(&HEAP.to_le_bytes());
    let mut dump = MinidumpBuilder::new(Cpu::X64);
    dump.misc_info(MiscInfo {
        process_id: Some(0x1f4),
        process_times: None,
    })
    .thread(Thread {
        id: 0x1a4,
        teb: TEB,
        context: Some(Context::X64(X64Context {
            rsp: STACK + 0x20,
            rip: APP + 0x1010,
            ..X64Context::default()
        })),
        stack_base: STACK,
        stack: b"stack text: hello from the stack\0".repeat(4),
        ..Thread::default()
    })
    .module(Module::new(r"C:\app\app.exe", APP, 0x3000))
    .memory(TEB, teb)
    .memory(PEB, peb)
    .memory(HEAP, b"heap bytes".to_vec());
    for r in [
        region(0x1_0000, 0xc4_54ff_0000, 0, MEM_FREE, PAGE_NOACCESS, 0),
        region(PEB, 0x1000, PEB, MEM_COMMIT, PAGE_READWRITE, MEM_PRIVATE),
        region(TEB, 0x2000, TEB, MEM_COMMIT, PAGE_READWRITE, MEM_PRIVATE),
        region(
            STACK_ALLOCATION,
            STACK_GUARD - STACK_ALLOCATION,
            STACK_ALLOCATION,
            MEM_RESERVE,
            0,
            MEM_PRIVATE,
        ),
        region(
            STACK_GUARD,
            0x1000,
            STACK_ALLOCATION,
            MEM_COMMIT,
            PAGE_READWRITE | PAGE_GUARD,
            MEM_PRIVATE,
        ),
        region(
            STACK,
            STACK_END - STACK,
            STACK_ALLOCATION,
            MEM_COMMIT,
            PAGE_READWRITE,
            MEM_PRIVATE,
        ),
        region(
            HEAP,
            0x1_0000,
            HEAP,
            MEM_COMMIT,
            PAGE_READWRITE,
            MEM_PRIVATE,
        ),
        region(HEAP + 0x1_0000, 0xf_0000, HEAP, MEM_RESERVE, 0, MEM_PRIVATE),
        region(APP, 0x1000, APP, MEM_COMMIT, PAGE_READONLY, MEM_IMAGE),
        region(
            APP + 0x1000,
            0x2000,
            APP,
            MEM_COMMIT,
            PAGE_EXECUTE_READ,
            MEM_IMAGE,
        ),
    ] {
        dump.memory_info(r);
    }
    dump
}

fn open(dir: &TempDir) -> Session {
    ntdbg_testutil::open_built(dir.path(), "address.dmp", &dump())
}

fn regions(session: &mut Session, command: &str) -> Vec<RegionRow> {
    match run_command(session, command).unwrap().typed {
        Some(TypedResult::Regions { regions }) => regions,
        other => panic!("{command}: {other:?}"),
    }
}

#[test]
fn every_region_reads_back_with_its_usage() {
    let dir = TempDir::new("address-synthetic");
    let mut s = open(&dir);
    let rows = regions(&mut s, "!address");
    let got: Vec<Row> = rows
        .iter()
        .map(|r| {
            (
                r.base.clone(),
                r.size.clone(),
                r.state.clone(),
                r.protect.clone(),
                r.kind.clone(),
                r.usage.clone(),
                r.thread,
            )
        })
        .collect();
    let row = |base: u64,
               size: u64,
               state: &str,
               protect: Option<&str>,
               kind: &str,
               usage: &str,
               thread: Option<usize>| {
        (
            format!("{base:#x}"),
            format!("{size:#x}"),
            Some(state.to_string()),
            protect.map(str::to_string),
            Some(kind.to_string()),
            usage.to_string(),
            thread,
        )
    };
    assert_eq!(
        got,
        vec![
            row(
                0x1_0000,
                0xc4_54ff_0000,
                "MEM_FREE",
                Some("PAGE_NOACCESS"),
                "",
                "Free",
                None
            ),
            row(
                PEB,
                0x1000,
                "MEM_COMMIT",
                Some("PAGE_READWRITE"),
                "MEM_PRIVATE",
                "PEB",
                None
            ),
            row(
                TEB,
                0x2000,
                "MEM_COMMIT",
                Some("PAGE_READWRITE"),
                "MEM_PRIVATE",
                "TEB",
                Some(0)
            ),
            row(
                STACK_ALLOCATION,
                STACK_GUARD - STACK_ALLOCATION,
                "MEM_RESERVE",
                None,
                "MEM_PRIVATE",
                "Stack",
                Some(0)
            ),
            row(
                STACK_GUARD,
                0x1000,
                "MEM_COMMIT",
                Some("PAGE_READWRITE | PAGE_GUARD"),
                "MEM_PRIVATE",
                "Stack",
                Some(0)
            ),
            row(
                STACK,
                0x1000,
                "MEM_COMMIT",
                Some("PAGE_READWRITE"),
                "MEM_PRIVATE",
                "Stack",
                Some(0)
            ),
            row(
                HEAP,
                0x1_0000,
                "MEM_COMMIT",
                Some("PAGE_READWRITE"),
                "MEM_PRIVATE",
                "Heap",
                None
            ),
            row(
                HEAP + 0x1_0000,
                0xf_0000,
                "MEM_RESERVE",
                None,
                "MEM_PRIVATE",
                "Heap",
                None
            ),
            row(
                APP,
                0x1000,
                "MEM_COMMIT",
                Some("PAGE_READONLY"),
                "MEM_IMAGE",
                "Image",
                None
            ),
            row(
                APP + 0x1000,
                0x2000,
                "MEM_COMMIT",
                Some("PAGE_EXECUTE_READ"),
                "MEM_IMAGE",
                "Image",
                None
            ),
        ]
    );
    assert!(rows.iter().all(|r| r.source == "memory_info"));
    assert_eq!(rows[8].module.as_deref(), Some("app"));

    let stack = run_command(&mut s, &format!("!address {:#x}", STACK + 0x10))
        .unwrap()
        .text;
    assert_eq!(
        stack,
        "Usage:                  Stack\n\
         Base Address:           000000c4`5678f000\n\
         End Address:            000000c4`56790000\n\
         Region Size:            00000000`00001000 (   4.000 kB)\n\
         State:                  00001000          MEM_COMMIT\n\
         Protect:                00000004          PAGE_READWRITE\n\
         Type:                   00020000          MEM_PRIVATE\n\
         Allocation Base:        000000c4`56700000\n\
         Allocation Protect:     00000004          PAGE_READWRITE\n\
         Additional info:        [~0; 1f4.1a4]\n\
         More info:              ~0k\n\
         \n\n\
         Content source: 1 (target), length: 74\n"
    );
    let heap = run_command(&mut s, &format!("!address {:#x}", HEAP + 0x2_0000))
        .unwrap()
        .text;
    assert!(
        heap.contains("Additional info:        [ID: 0; Handle: 000001d0`00000000]"),
        "{heap}"
    );
    assert!(
        heap.ends_with("Content source: 0 (invalid), length: e0000\n"),
        "{heap}"
    );
    insta::assert_snapshot!(
        "synthetic__summary",
        run_command(&mut s, "!address -summary").unwrap().text
    );
}

#[test]
fn search_hits_have_exact_addresses() {
    let dir = TempDir::new("address-search");
    let mut s = open(&dir);
    let out = run_command(&mut s, &format!("s -a {STACK:#x} L100 \"hello\"")).unwrap();
    let Some(TypedResult::SearchHits { hits, truncated }) = out.typed else {
        panic!("typed hits")
    };
    assert!(!truncated);
    let want: Vec<String> = (0..4)
        .map(|i| format!("{:#x}", STACK + 12 + 33 * i))
        .collect();
    assert_eq!(
        hits.iter().map(|h| h.address.clone()).collect::<Vec<_>>(),
        want
    );
    let out = run_command(&mut s, &format!("s -sa {STACK:#x} L100")).unwrap();
    let Some(TypedResult::SearchHits { hits, .. }) = out.typed else {
        panic!("typed hits")
    };
    assert_eq!(hits.len(), 4);
    assert_eq!(
        hits[0].text.as_deref(),
        Some("stack text: hello from the stack")
    );
    assert_eq!(
        out.text.lines().next(),
        Some("000000c4`5678f000  \"stack text: hello from the stack\"")
    );
    let out = run_command(&mut s, &format!("s -[1]q {TEB:#x} L70 {PEB:x}")).unwrap();
    assert_eq!(out.text, "000000c4`56000060\n");
    // The PEB page has no image: a search that finds nothing says nothing.
    let out = run_command(&mut s, &format!("s -b {PEB:#x} L10 ff")).unwrap();
    assert_eq!(out.text, "");
}
