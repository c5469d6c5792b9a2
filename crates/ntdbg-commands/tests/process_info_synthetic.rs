//! Handles, thread times, last errors, unloaded modules, thread names, unique stacks and ARM64
//! disassembly on dumps written by the synthetic builder, with values the test chose: every
//! line is known exactly.

use ntdbg_commands::{run_command, TypedResult};
use ntdbg_engine::Session;
use ntdbg_testutil::corrupt::TempDir;
use ntdbg_testutil::minidump_builder::{
    Arm64Context, Context, Cpu, Handle, MinidumpBuilder, MiscInfo, Module, Thread, ThreadInfo,
    UnloadedModule, X64Context,
};

const APP_BASE: u64 = 0x7ff6_1234_0000;
const TEB0: u64 = 0x0000_00c4_5600_0000;
const GONE_BASE: u64 = 0x7ffa_0000_0000;
/// When the dump was written (Unix seconds).
const DUMP_TIME: u32 = 1_700_000_000;
/// The dump time as a FILETIME (100 ns units since 1601).
const DUMP_FILETIME: u64 = (DUMP_TIME as u64 + 11_644_473_600) * 10_000_000;

fn open(dir: &TempDir, name: &str, dump: &MinidumpBuilder) -> Session {
    ntdbg_testutil::open_built(dir.path(), name, dump)
}

fn run(session: &mut Session, command: &str) -> String {
    match run_command(session, command) {
        Ok(out) => out.text,
        Err(e) => format!("ERROR {}: {}", e.code, e.message),
    }
}

fn x64_thread(id: u32, teb: u64, rip: u64) -> Thread {
    Thread {
        id,
        teb,
        context: Some(Context::X64(X64Context {
            rip,
            rsp: 0x0000_00c4_5700_0000,
            ..X64Context::default()
        })),
        ..Thread::default()
    }
}

/// Three threads (two with the same registers), a TEB with a last error and status, three
/// handles, thread times for two threads and one unloaded module.
fn x64_process() -> MinidumpBuilder {
    let mut teb = vec![0u8; 0x1258];
    teb[0x68..0x6c].copy_from_slice(&5u32.to_le_bytes());
    teb[0x1250..0x1254].copy_from_slice(&0xc000_0034u32.to_le_bytes());
    let mut dump = MinidumpBuilder::new(Cpu::X64);
    dump.time_date_stamp(DUMP_TIME)
        .misc_info(MiscInfo {
            process_id: Some(0x1f4),
            process_times: None,
        })
        .thread(x64_thread(0x1a4, TEB0, APP_BASE + 0x1010))
        .thread(x64_thread(0x2b8, TEB0 + 0x2000, APP_BASE + 0x1080))
        .thread(x64_thread(0x3cc, TEB0 + 0x4000, APP_BASE + 0x1080))
        .thread_name(0x1a4, "main")
        .thread_name(0x2b8, "worker")
        .module(Module::new(r"C:\app\app.exe", APP_BASE, 0x2_0000))
        .memory(TEB0, teb)
        .handle(Handle {
            handle: 4,
            type_name: Some("Event".into()),
            object_name: Some(r"\BaseNamedObjects\ready".into()),
            attributes: 2,
            granted_access: 0x1f_0003,
            handle_count: 2,
            pointer_count: 3,
        })
        .handle(Handle {
            handle: 8,
            type_name: Some("File".into()),
            object_name: None,
            attributes: 0,
            granted_access: 0x12_019f,
            handle_count: 1,
            pointer_count: 32_769,
        })
        .handle(Handle {
            handle: 0xc,
            ..Handle::default()
        })
        .thread_info(ThreadInfo {
            thread_id: 0x1a4,
            exit_status: 0x103,
            create_time: DUMP_FILETIME - 435_330_000,
            kernel_time: 1_400_000,
            user_time: 930_000,
            start_address: APP_BASE + 0x1000,
            affinity: 0xf,
            ..ThreadInfo::default()
        })
        .thread_info(ThreadInfo {
            thread_id: 0x2b8,
            exit_status: 0x103,
            create_time: DUMP_FILETIME - 256_350_000,
            kernel_time: 310_000,
            user_time: 0,
            affinity: 0xf,
            ..ThreadInfo::default()
        })
        .unloaded_module(UnloadedModule {
            base: GONE_BASE,
            size: 0x1_0000,
            checksum: 0x1_2345,
            time_date_stamp: 0x6553_f100,
            name: "gone.dll".into(),
        });
    dump
}

#[test]
fn handles_read_back_exactly() {
    let dir = TempDir::new("process-info-handles");
    let mut s = open(&dir, "handles.dmp", &x64_process());
    assert_eq!(
        run(&mut s, "!handle"),
        "Handle 4\n  Type         \tEvent\nHandle 8\n  Type         \tFile\nHandle c\n  \
         Type         \t\n3 Handles\nType           \tCount\nEvent          \t1\n\
         File           \t1\nNone           \t1\n"
    );
    assert_eq!(
        run(&mut s, "!handle 4 f"),
        "Handle 4\n  Type         \tEvent\n  Attributes   \t0x2\n  GrantedAccess\t0x1f0003:\n         \
         Delete,ReadControl,WriteDac,WriteOwner,Synch\n  HandleCount  \t2\n  PointerCount \t3\n  \
         Name         \t\\BaseNamedObjects\\ready\n  No object specific information available\n"
    );
    assert_eq!(
        run(&mut s, "!handle 0 4 file"),
        "Handle 8\n  Name         \t<none>\n1 Handles\nType           \tCount\nFile           \t1\n"
    );
    let out = run_command(&mut s, "!handle 8 2").expect("!handle 8 2");
    let json = serde_json::to_value(out.typed.expect("typed")).expect("json");
    assert_eq!(
        json,
        serde_json::json!({
            "kind": "handles",
            "handles": [{
                "handle": "0x8", "type": "File", "name": null, "attributes": "0x0",
                "granted_access": "0x12019f", "handle_count": 1, "pointer_count": 32769,
                "object_info_records": 0
            }],
            "by_type": [{ "type": "File", "count": 1 }]
        })
    );
}

#[test]
fn thread_times_read_back_exactly() {
    let dir = TempDir::new("process-info-times");
    let mut s = open(&dir, "times.dmp", &x64_process());
    assert_eq!(
        run(&mut s, "!runaway 7"),
        " User Mode Time\n  Thread       Time\n   0:1a4       0 days 0:00:00.093 \"main\"\n   \
         1:2b8       0 days 0:00:00.000 \"worker\"\n Kernel Mode Time\n  Thread       Time\n   \
         0:1a4       0 days 0:00:00.140 \"main\"\n   1:2b8       0 days 0:00:00.031 \"worker\"\n \
         Elapsed Time\n  Thread       Time\n   0:1a4       0 days 0:00:43.533 \"main\"\n   \
         1:2b8       0 days 0:00:25.635 \"worker\"\n"
    );
    assert_eq!(
        run(&mut s, "!runaway 2"),
        " Kernel Mode Time\n  Thread       Time\n   0:1a4       0 days 0:00:00.140 \"main\"\n   \
         1:2b8       0 days 0:00:00.031 \"worker\"\n"
    );
    let Some(TypedResult::ThreadTimes { threads }) =
        run_command(&mut s, "!runaway").expect("!runaway").typed
    else {
        panic!("typed thread times expected");
    };
    assert_eq!(threads.len(), 2);
    assert_eq!(
        (
            threads[0].user_ms,
            threads[0].kernel_ms,
            threads[0].elapsed_ms
        ),
        (93, 140, Some(43_533))
    );
    assert_eq!(threads[0].start_address, "0x7ff612341000");
    assert_eq!(threads[0].affinity, "0xf");
}

#[test]
fn last_error_and_status_come_from_the_teb() {
    let dir = TempDir::new("process-info-gle");
    let mut s = open(&dir, "gle.dmp", &x64_process());
    assert_eq!(
        run(&mut s, "!gle"),
        "LastErrorValue: (Win32) 0x5 (5) - Access is denied.\n\
         LastStatusValue: (NTSTATUS) 0xc0000034 - Object Name not found.\n"
    );
    let all = run(&mut s, "!gle -all");
    assert!(all.starts_with("Last error for thread 0:\nLastErrorValue: (Win32) 0x5 (5)"));
    assert!(all.contains(
        "Last error for thread 1:\nLastErrorValue: <TEB at 000000c4`56002000 is not in the dump>\n"
    ));
}

#[test]
fn unloaded_modules_in_lm_and_ln() {
    let dir = TempDir::new("process-info-unloaded");
    let mut s = open(&dir, "unloaded.dmp", &x64_process());
    let lm = run(&mut s, "lm");
    assert!(
        lm.ends_with("\nUnloaded modules:\n00007ffa`00000000 00007ffa`00010000   gone.dll\n"),
        "{lm}"
    );
    assert_eq!(
        run(&mut s, "lmv m gone"),
        "start             end                 module name\n\nUnloaded modules:\n\
         00007ffa`00000000 00007ffa`00010000   gone.dll\n    Timestamp: Tue Nov 14 22:13:20.000 2023 \
         (UTC + 0:00) (6553F100)\n    Checksum:  00012345\n    ImageSize:  00010000\n"
    );
    assert_eq!(
        run(&mut s, "ln 7ffa`00000100"),
        "(00007ffa`00000000)   <Unloaded_gone.dll>+0x100\n"
    );
}

#[test]
fn identical_stacks_are_shown_once() {
    let dir = TempDir::new("process-info-uniq");
    let mut s = open(&dir, "uniq.dmp", &x64_process());
    let out = run_command(&mut s, "!uniqstack").expect("!uniqstack");
    let Some(TypedResult::UniqueStacks {
        stacks,
        total_threads,
        duplicate_threads,
    }) = out.typed
    else {
        panic!("typed unique stacks expected");
    };
    assert_eq!((total_threads, duplicate_threads), (3, 1));
    let groups: Vec<Vec<usize>> = stacks.iter().map(|s| s.threads.clone()).collect();
    assert_eq!(groups, [vec![0], vec![1, 2]]);
    assert!(out
        .text
        .contains("   1  Id: 1f4.2b8 Suspend: 0 Teb: 000000c4`56002000 Unfrozen \"worker\"\n"));
    assert!(out
        .text
        .contains("    2 threads have this stack; the others: 2\n"));
    assert!(out
        .text
        .ends_with("Total threads: 3\nDuplicate callstacks: 1 (windbg thread #s follow):\n2\n"));
}

#[test]
fn arm64_code_in_microsoft_syntax() {
    let code: Vec<u8> = [
        0xa9be_7bfdu32, // stp fp,lr,[sp,#-0x20]!
        0x9100_03fd,    // mov fp,sp
        0x9400_0004,    // bl +0x10
        0x5400_0061,    // b.ne +0xc
        0xa8c2_7bfd,    // ldp fp,lr,[sp],#0x20
        0xd65f_03c0,    // ret
        0x5280_0500,    // mov w0,#0x28
        0xd65f_03c0,    // ret
    ]
    .into_iter()
    .flat_map(u32::to_le_bytes)
    .collect();
    let mut dump = MinidumpBuilder::new(Cpu::Arm64);
    dump.thread(Thread {
        id: 0x10,
        context: Some(Context::Arm64(Arm64Context {
            pc: APP_BASE + 0x1008,
            sp: 0x0000_00c4_5700_0000,
            ..Arm64Context::default()
        })),
        ..Thread::default()
    })
    .module(Module::new(r"C:\app\app.exe", APP_BASE, 0x2_0000))
    .memory(APP_BASE + 0x1000, code);
    let dir = TempDir::new("process-info-arm64");
    let mut s = open(&dir, "arm64.dmp", &dump);
    assert_eq!(
        run(&mut s, "u app+0x1000 L6"),
        "app+0x1000:\n\
         00007ff6`12341000 a9be7bfd stp         fp,lr,[sp,#-0x20]!\n\
         00007ff6`12341004 910003fd mov         fp,sp\n\
         00007ff6`12341008 94000004 bl          app+0x1018 (00007ff6`12341018)\n\
         00007ff6`1234100c 54000061 bne         app+0x1018 (00007ff6`12341018)\n\
         00007ff6`12341010 a8c27bfd ldp         fp,lr,[sp],#0x20\n\
         00007ff6`12341014 d65f03c0 ret\n"
    );
    assert_eq!(
        run(&mut s, "ub app+0x1010 L2"),
        "app+0x1008:\n\
         00007ff6`12341008 94000004 bl          app+0x1018 (00007ff6`12341018)\n\
         00007ff6`1234100c 54000061 bne         app+0x1018 (00007ff6`12341018)\n"
    );
    // uf follows the conditional branch to the block at +0x18.
    let uf = run(&mut s, "uf app+0x1000");
    assert!(
        uf.contains("bne         app+0x1018 (00007ff6`12341018)  Branch\n"),
        "{uf}"
    );
    assert!(uf.ends_with("app+0x1018:\n00007ff6`12341018 52800500 mov         w0,#0x28\n00007ff6`1234101c d65f03c0 ret\n"), "{uf}");
    // The current instruction under `r`, as WinDbg shows it.
    assert!(run(&mut s, "r").ends_with(
        "app+0x1008:\n00007ff6`12341008 94000004 bl          app+0x1018 (00007ff6`12341018)\n"
    ));
    // Words missing from the dump: one `???` line per word.
    assert_eq!(
        run(&mut s, "u app+0x2000 L1"),
        "app+0x2000:\n00007ff6`12342000 ???????? ???\n"
    );
}
