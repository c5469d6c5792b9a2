//! `!cs`, `!locks` and the hang analysis on synthetic minidumps: critical sections whose fields
//! check out are listed, corrupt ones are not, both `LockCount` encodings decode, and the stack
//! scan stays bounded.

use ntdbg_engine::Session;
use ntdbg_testutil::corrupt::TempDir;
use ntdbg_testutil::minidump_builder::{
    CodeView, Context, Cpu, Guid, MinidumpBuilder, Module, Thread, X64Context,
};

const STACK: u64 = 0x0000_00c4_5678_0000;
const MAIN: u32 = 0x1a4;
const WORKER: u32 = 0x2b8;

/// An x64 `RTL_CRITICAL_SECTION`: DebugInfo, LockCount, RecursionCount, OwningThread,
/// LockSemaphore, SpinCount.
fn section(debug_info: u64, lock: i32, recursion: i32, owner: u64) -> Vec<u8> {
    let mut b = Vec::new();
    b.extend(debug_info.to_le_bytes());
    b.extend(lock.to_le_bytes());
    b.extend(recursion.to_le_bytes());
    b.extend(owner.to_le_bytes());
    b.extend(0u64.to_le_bytes());
    b.extend(0u64.to_le_bytes());
    b
}

/// Offsets of the sections in the main thread's stack.
const COUNTED: u64 = 0x40;
const BIT_FIELD: u64 = 0x80;
const CORRUPT: u64 = 0xc0;
const FREE: u64 = 0x100;

fn dump(worker_stack: Vec<u8>) -> MinidumpBuilder {
    let mut stack = vec![0u8; 0x200];
    let mut put = |at: u64, bytes: Vec<u8>| {
        stack[at as usize..at as usize + bytes.len()].copy_from_slice(&bytes);
    };
    // Wine / XP encoding: held by the worker, one waiter.
    put(
        COUNTED,
        section(0x0000_0200_0000_1000, 1, 1, u64::from(WORKER)),
    );
    // Bit field: -6 = held, no waiter woken, one waiter; owned by main.
    put(BIT_FIELD, section(u64::MAX, -6, 1, u64::from(MAIN)));
    // Owner is no thread of the dump.
    put(CORRUPT, section(0, 0, 1, 0x9999));
    // Free: not held, so not listed.
    put(FREE, section(0, -1, 0, 0));
    let context = |rsp: u64| {
        Some(Context::X64(X64Context {
            rip: 0x7ff6_1234_1010,
            rsp,
            ..X64Context::default()
        }))
    };
    let mut dump = MinidumpBuilder::new(Cpu::X64);
    dump.thread(Thread {
        id: MAIN,
        context: context(STACK),
        stack_base: STACK,
        stack,
        ..Thread::default()
    })
    .thread(Thread {
        id: WORKER,
        context: context(STACK + 0x10_0000),
        stack_base: STACK + 0x10_0000,
        stack: worker_stack,
        ..Thread::default()
    });
    dump
}

fn open(dir: &TempDir, dump: &MinidumpBuilder) -> Session {
    ntdbg_testutil::open_built(dir.path(), "locks.dmp", dump)
}

fn run(session: &mut Session, command: &str) -> String {
    match ntdbg_commands::run_command(session, command) {
        Ok(out) => out.text,
        Err(e) => format!("ERROR {}: {}", e.code, e.message),
    }
}

#[test]
fn locks_lists_the_sections_whose_fields_check_out() {
    let dir = TempDir::new("locks-synthetic");
    let mut s = open(&dir, &dump(vec![0u8; 0x100]));
    let text = run(&mut s, "!locks");
    insta::assert_snapshot!("synthetic_locks", text, "!locks");
    assert!(text.contains(&format!("CritSec +{:x} at", STACK + COUNTED)));
    assert!(text.contains(&format!("CritSec +{:x} at", STACK + BIT_FIELD)));
    assert!(!text.contains(&format!("{:x}", STACK + CORRUPT)), "{text}");
    assert!(!text.contains(&format!("{:x}", STACK + FREE)), "{text}");
    assert!(text.contains("Scanned 2 critical sections"), "{text}");
    let out = ntdbg_commands::run_command(&mut s, "!locks").expect("runs");
    let json = serde_json::to_value(out.typed.expect("typed")).expect("serialises");
    assert_eq!(json["kind"], "critical_sections");
    assert_eq!(json["sections"][0]["owning_thread"], "0x2b8");
    assert_eq!(json["sections"][0]["encoding"], "counted");
    assert_eq!(json["sections"][1]["encoding"], "bit_field");
    assert_eq!(json["sections"][1]["waiters"], 1);
    assert_eq!(json["sections"][1]["found_by"], "stack_scan");
}

#[test]
fn cs_decodes_both_encodings_and_names_what_does_not_check_out() {
    let dir = TempDir::new("cs-synthetic");
    let mut s = open(&dir, &dump(vec![0u8; 0x100]));
    for (name, offset) in [
        ("counted", COUNTED),
        ("bit_field", BIT_FIELD),
        ("corrupt", CORRUPT),
        ("free", FREE),
    ] {
        let command = format!("!cs {:#x}", STACK + offset);
        insta::assert_snapshot!(
            format!("synthetic_cs_{name}"),
            run(&mut s, &command),
            &command
        );
    }
    let corrupt = run(&mut s, &format!("!cs {:#x}", STACK + CORRUPT));
    assert!(
        corrupt.contains(
            "*** Not taken for a critical section: OwningThread 0x9999 is not a thread of the dump"
        ),
        "{corrupt}"
    );
    assert!(!corrupt.contains("LOCKED"), "{corrupt}");
    assert_eq!(
        run(&mut s, "!cs 0x5000"),
        "ERROR memory_unavailable: Cannot read the critical section at 0000000000005000: its memory is not in the dump"
    );
    assert!(run(&mut s, "!cs 1 2").starts_with("ERROR syntax"));
    assert!(run(&mut s, "!locks -q").starts_with("ERROR syntax"));
}

#[test]
fn analysis_reports_contention_without_naming_unknown_waiters() {
    let dir = TempDir::new("hang-synthetic");
    let s = open(&dir, &dump(vec![0u8; 0x100]));
    let report = ntdbg_analysis::analyze(&s);
    let texts: Vec<&str> = report.inferences.iter().map(|i| i.text.as_str()).collect();
    assert_eq!(
        texts,
        [
            format!("contention: critical section {:#x} is held by thread 0x2b8 and 1 thread waits for it (the waiters are not identified)", STACK + COUNTED),
            format!("contention: critical section {:#x} is held by thread 0x1a4 and 1 thread waits for it (the waiters are not identified)", STACK + BIT_FIELD),
        ]
    );
    assert!(!texts.iter().any(|t| t.starts_with("deadlock")));
    assert_eq!(report.waits.len(), 2);
    assert!(report.waits.iter().all(|w| w.waits_on.is_none()));
    assert!(report
        .limitations
        .iter()
        .any(|l| l.starts_with("what the threads wait on is unknown")));
}

#[test]
fn stack_scan_is_bounded() {
    // 64 KiB of held sections on the worker's stack: far more than the scan reports.
    let one = section(0, 0, 1, u64::from(MAIN));
    let worker_stack: Vec<u8> = one.iter().copied().cycle().take(0x1_0000).collect();
    let dir = TempDir::new("locks-bounded");
    let mut s = open(&dir, &dump(worker_stack));
    let text = run(&mut s, "!locks");
    assert!(
        text.contains("Scanned 256 critical sections"),
        "{}",
        &text[text.len().saturating_sub(300)..]
    );
}

const NTDLL: u64 = 0x7ffa_0000_0000;
/// The RVA the test's ntdll symbols give `RtlCriticalSectionList`.
const LIST_RVA: u64 = 0x1000;
const DEBUG_RECORDS: u64 = 0x0000_0200_0000_0000;

fn ntdll_guid() -> Guid {
    Guid {
        data1: 0x1111_1111,
        data2: 0x2222,
        data3: 0x3333,
        data4: [1, 2, 3, 4, 5, 6, 7, 8],
    }
}

/// Breakpad symbols naming `RtlCriticalSectionList`, in store layout under `dir`.
fn write_ntdll_symbols(dir: &std::path::Path) {
    let id = "111111112222333301020304050607081";
    let folder = dir.join("ntdll.pdb").join(id);
    std::fs::create_dir_all(&folder).expect("creates");
    std::fs::write(
        folder.join("ntdll.sym"),
        format!(
            "MODULE windows x86_64 {id} ntdll.pdb\nPUBLIC {LIST_RVA:x} 0 RtlCriticalSectionList\n"
        ),
    )
    .expect("writes");
}

/// An x64 `RTL_CRITICAL_SECTION_DEBUG`: Type, CreatorBackTraceIndex, CriticalSection,
/// ProcessLocksList (Flink, Blink), EntryCount, ContentionCount.
fn debug_record(section: u64, flink: u64, entries: u32, contentions: u32) -> Vec<u8> {
    let mut b = vec![0u8; 8];
    b.extend(section.to_le_bytes());
    b.extend(flink.to_le_bytes());
    b.extend(0u64.to_le_bytes());
    b.extend(entries.to_le_bytes());
    b.extend(contentions.to_le_bytes());
    b.resize(0x30, 0);
    b
}

/// A "full" dump: ntdll's list head, two debug records and their two sections. `last_flink`
/// is where the second record's entry leads (the head, or back to the first: a loop).
fn listed_dump(last_flink: Option<u64>) -> MinidumpBuilder {
    let head = NTDLL + LIST_RVA;
    let first = DEBUG_RECORDS;
    let second = DEBUG_RECORDS + 0x40;
    let held = DEBUG_RECORDS + 0x100;
    let free = DEBUG_RECORDS + 0x140;
    let mut records = vec![0u8; 0x180];
    let mut put = |at: u64, bytes: Vec<u8>| {
        let at = (at - DEBUG_RECORDS) as usize;
        records[at..at + bytes.len()].copy_from_slice(&bytes);
    };
    put(first, debug_record(held, second + 0x10, 3, 2));
    put(second, debug_record(free, last_flink.unwrap_or(head), 0, 0));
    put(held, section(first, 1, 1, u64::from(WORKER)));
    put(free, section(second, -1, 0, 0));
    let mut dump = dump(vec![0u8; 0x100]);
    dump.module(Module {
        codeview: Some(CodeView::Pdb70 {
            guid: ntdll_guid(),
            age: 1,
            pdb: "ntdll.pdb".into(),
        }),
        ..Module::new(r"C:\Windows\System32\ntdll.dll", NTDLL, 0x20_0000)
    })
    .memory(head, (first + 0x10).to_le_bytes().to_vec())
    .memory(DEBUG_RECORDS, records);
    dump
}

#[test]
fn locks_walks_the_process_wide_list_when_it_can() {
    let dir = TempDir::new("locks-process-list");
    write_ntdll_symbols(dir.path());
    let mut s = open(&dir, &listed_dump(None));
    let text = run(&mut s, "!locks");
    insta::assert_snapshot!("synthetic_process_list_locks", text, "!locks");
    assert!(
        text.contains("EntryCount         3\nContentionCount    2\n"),
        "{text}"
    );
    assert!(text.contains("Scanned 1 critical sections"), "{text}");
    let all = run(&mut s, "!locks -v");
    assert!(all.contains("Scanned 2 critical sections"), "{all}");
    assert!(all.contains("Note: the process-wide list (ntdll!RtlCriticalSectionList): 2 sections whose fields check out\n"), "{all}");
    // The analysis takes its held sections from the list too, not from a stack scan.
    let report = ntdbg_analysis::analyze(&s);
    let texts: Vec<(&str, &str)> = report
        .inferences
        .iter()
        .map(|i| (i.text.as_str(), i.basis.as_str()))
        .collect();
    assert_eq!(texts.len(), 1, "{texts:?}");
    assert_eq!(
        texts[0].0,
        format!("contention: critical section {:#x} is held by thread 0x2b8 and 1 thread waits for it (the waiters are not identified)", DEBUG_RECORDS + 0x100)
    );
    assert!(
        texts[0]
            .1
            .starts_with("listed in ntdll!RtlCriticalSectionList: "),
        "{texts:?}"
    );
}

#[test]
fn a_looping_process_list_stops() {
    let dir = TempDir::new("locks-process-loop");
    write_ntdll_symbols(dir.path());
    let mut s = open(&dir, &listed_dump(Some(DEBUG_RECORDS + 0x10)));
    let all = run(&mut s, "!locks -v");
    assert!(all.contains("Scanned 2 critical sections"), "{all}");
    assert!(
        all.contains(&format!(
            "the walk stopped: the list loops back to {:#x} without reaching its head",
            DEBUG_RECORDS + 0x10
        )),
        "{all}"
    );
}
