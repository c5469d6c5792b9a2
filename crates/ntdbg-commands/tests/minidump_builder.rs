//! The synthetic minidump builder (`ntdbg_testutil::minidump_builder`) read back through
//! ntdbg: each test writes a dump with values it chose, opens it with `Session` (or
//! `UserDump`, or the `minidump` crate for streams no command shows yet) and expects exactly
//! those values back.

use minidump::{
    Minidump, MinidumpHandleDataStream, MinidumpMemoryInfoList, MinidumpThreadInfoList,
    MinidumpUnloadedModuleList, Module as _,
};
use ntdbg_engine::Session;
use ntdbg_targets::{Target, UserDump};
use ntdbg_testutil::corrupt::TempDir;
use ntdbg_testutil::minidump_builder::{
    Arm64Context, CodeView, Context, Cpu, Exception, Guid, Handle, MemoryInfo, MemoryStream,
    MinidumpBuilder, MiscInfo, Module, Thread, ThreadInfo, UnloadedModule, X64Context, X86Context,
    MEM_COMMIT, MEM_IMAGE, MEM_PRIVATE, MEM_RESERVE, PAGE_EXECUTE_READ, PAGE_READWRITE,
};
use std::path::PathBuf;

const APP_BASE: u64 = 0x7ff6_1234_0000;
const NTDLL_BASE: u64 = 0x7ffa_5550_0000;
const STACK: u64 = 0x0000_00c4_5678_f000;
const DATA: u64 = 0x0000_0200_0000_1000;
const RIP: u64 = APP_BASE + 0x1010;

fn app_guid() -> Guid {
    Guid {
        data1: 0x1234_5678,
        data2: 0x9abc,
        data3: 0xdef0,
        data4: [1, 2, 3, 4, 5, 6, 7, 8],
    }
}

fn x64_context() -> X64Context {
    X64Context {
        rax: 0x1111_2222_3333_4444,
        rcx: 0x10,
        rsp: STACK + 0x20,
        rbp: STACK + 0x40,
        rip: RIP,
        ..X64Context::default()
    }
}

/// An x64 dump with two named threads, two modules, data memory and an access violation.
fn x64_dump(memory: MemoryStream) -> MinidumpBuilder {
    let stack: Vec<u8> = (0..16u64)
        .flat_map(|i| (0x5100_0000_0000_0000 + i).to_le_bytes())
        .collect();
    let data: Vec<u8> = [0x0123_4567_89ab_cdefu64, 0xfedc_ba98_7654_3210]
        .into_iter()
        .flat_map(u64::to_le_bytes)
        .collect();
    let mut dump = MinidumpBuilder::new(Cpu::X64);
    dump.memory_stream(memory)
        .time_date_stamp(1_700_000_000)
        .misc_info(MiscInfo {
            process_id: Some(0x1f4),
            process_times: Some((1_699_999_000, 3, 2)),
        })
        .thread(Thread {
            id: 0x1a4,
            teb: 0x0000_00c4_5600_0000,
            context: Some(Context::X64(x64_context())),
            stack_base: STACK,
            stack,
            ..Thread::default()
        })
        .thread(Thread {
            id: 0x2b8,
            suspend_count: 1,
            teb: 0x0000_00c4_5600_2000,
            context: Some(Context::X64(X64Context {
                rip: NTDLL_BASE + 0x9_a0c4,
                rsp: 0x0000_00c4_5700_0000,
                ..X64Context::default()
            })),
            ..Thread::default()
        })
        .thread_name(0x1a4, "main")
        .thread_name(0x2b8, "worker")
        .module(Module {
            time_date_stamp: 0x6553_f100,
            checksum: 0x2_a1b2,
            file_version: Some([1, 2, 3, 4]),
            product_version: Some([1, 2, 0, 0]),
            codeview: Some(CodeView::Pdb70 {
                guid: app_guid(),
                age: 3,
                pdb: r"C:\build\app.pdb".into(),
            }),
            ..Module::new(r"C:\app\app.exe", APP_BASE, 0x2_0000)
        })
        .module(Module::new(
            r"C:\Windows\System32\ntdll.dll",
            NTDLL_BASE,
            0x1f_8000,
        ))
        .memory(DATA, data)
        .exception(Exception {
            parameters: vec![1, 0x10],
            context: Some(Context::X64(x64_context())),
            ..Exception::new(0x1a4, 0xc000_0005, RIP)
        });
    dump
}

fn open(dir: &TempDir, name: &str, dump: &MinidumpBuilder) -> (PathBuf, Session) {
    let session = ntdbg_testutil::open_built(dir.path(), name, dump);
    (dir.path().join(name), session)
}

fn run(session: &mut Session, command: &str) -> String {
    match ntdbg_commands::run_command(session, command) {
        Ok(out) => out.text,
        Err(e) => panic!("{command}: {} {}", e.code, e.message),
    }
}

#[test]
fn x64_threads_modules_memory_and_event_read_back() {
    for memory in [MemoryStream::List, MemoryStream::List64] {
        let dir = TempDir::new("builder-x64");
        let (_, mut s) = open(&dir, "x64.dmp", &x64_dump(memory));
        assert_eq!(
            run(&mut s, "~"),
            ".  0  Id: 1f4.1a4 Suspend: 0 Teb: 000000c4`56000000 Unfrozen \"main\"\n   \
             1  Id: 1f4.2b8 Suspend: 1 Teb: 000000c4`56002000 Unfrozen \"worker\"\n",
            "{memory:?}"
        );
        let lm = run(&mut s, "lm");
        assert!(
            lm.contains("00007ff6`12340000 00007ff6`12360000   app "),
            "{lm}"
        );
        assert!(
            lm.contains("00007ffa`55500000 00007ffa`556f8000   ntdll "),
            "{lm}"
        );
        assert_eq!(
            run(&mut s, "dq 00000200`00001000 L2"),
            "00000200`00001000  01234567`89abcdef fedcba98`76543210\n"
        );
        // The thread's stack is memory too: 16 qwords 0x51000000_0000000N from STACK.
        assert_eq!(
            run(&mut s, "dq @rsp L2"),
            "000000c4`5678f020  51000000`00000004 51000000`00000005\n"
        );
        assert_eq!(
            run(&mut s, "r rax, rcx, rsp, rip"),
            "rax=1111222233334444\nrcx=0000000000000010\nrsp=000000c45678f020\nrip=00007ff612341010\n"
        );
        assert_eq!(
            run(&mut s, "|"),
            ".  0\tid: 1f4\texamine\tname: C:\\app\\app.exe\n"
        );
        let event = run(&mut s, ".lastevent");
        assert!(
            event.starts_with("Last event: 1f4.1a4: Access violation - code c0000005"),
            "{event}"
        );
        let exr = run(&mut s, ".exr -1");
        assert!(exr.contains("ExceptionAddress: 00007ff612341010"), "{exr}");
        assert!(exr.contains("NumberParameters: 2"), "{exr}");
        assert!(exr.contains("Parameter[1]: 0000000000000010"), "{exr}");
        let ver = run(&mut s, "vertarget");
        assert!(
            ver.starts_with("Windows 10 Version 19041 MP (4 procs) Free x64\n"),
            "{ver}"
        );
        assert!(ver.contains("Debug session time: Tue Nov 14 22:13:20.000 2023"));
        // The second thread's context.
        run(&mut s, "~1s");
        assert_eq!(run(&mut s, "r rip"), "rip=00007ffa5559a0c4\n");
    }
}

#[test]
fn x64_module_facts_read_back() {
    let dir = TempDir::new("builder-modules");
    let path = dir.path().join("modules.dmp");
    x64_dump(MemoryStream::List).write(&path);
    let dump = UserDump::open(&path).expect("opens");
    let modules: Vec<_> = dump.modules().iter().collect();
    assert_eq!(modules.len(), 2);
    let app = modules[0];
    assert_eq!(app.name, r"C:\app\app.exe");
    assert_eq!(app.raw.base_of_image, APP_BASE);
    assert_eq!(app.raw.size_of_image, 0x2_0000);
    assert_eq!(app.raw.checksum, 0x2_a1b2);
    assert_eq!(app.raw.time_date_stamp, 0x6553_f100);
    assert_eq!(app.version().as_deref(), Some("1.2.3.4"));
    assert_eq!(app.debug_file().as_deref(), Some(r"C:\build\app.pdb"));
    assert_eq!(
        app.debug_identifier().map(|id| id.breakpad().to_string()),
        Some("123456789ABCDEF001020304050607083".to_string())
    );
    assert_eq!(modules[1].debug_file(), None);
    assert_eq!(dump.system().process_id, Some(0x1f4));
    assert_eq!(dump.system().process_create_time, Some(1_699_999_000));
    assert_eq!(dump.system().process_user_time, Some(3));
    assert_eq!(dump.system().process_kernel_time, Some(2));
    assert_eq!(dump.system().os_version, "10.0.19041");
    assert_eq!(dump.system().cpu_count, 4);
    let event = dump.event().expect("exception");
    assert_eq!(
        (event.thread_id, event.code, event.address),
        (0x1a4, 0xc000_0005, RIP)
    );
    assert_eq!(event.parameters, [1, 0x10]);
}

#[test]
fn x86_context_and_memory64_read_back() {
    let dir = TempDir::new("builder-x86");
    let mut dump = MinidumpBuilder::new(Cpu::X86);
    dump.memory_stream(MemoryStream::List64)
        .thread(Thread {
            id: 0x10,
            teb: 0x7ffd_e000,
            context: Some(Context::X86(X86Context {
                eax: 0xdead_beef,
                ebp: 0x0019_ff80,
                esp: 0x0019_ff40,
                eip: 0x0040_1234,
                ..X86Context::default()
            })),
            stack_base: 0x0019_ff40,
            stack: [0x1111_1111u32, 0x2222_2222, 0x3333_3333, 0x4444_4444]
                .into_iter()
                .flat_map(u32::to_le_bytes)
                .collect(),
            ..Thread::default()
        })
        .module(Module::new(r"C:\x86\app32.exe", 0x0040_0000, 0x1_0000))
        .memory(0x0050_0000, b"synthetic bytes!".to_vec());
    let (_, mut s) = open(&dir, "x86.dmp", &dump);
    assert_eq!(
        run(&mut s, "~"),
        ".  0  Id: 0.10 Suspend: 0 Teb: 7ffde000 Unfrozen\n"
    );
    assert_eq!(
        run(&mut s, "r eax, esp, ebp, eip"),
        "eax=deadbeef\nesp=0019ff40\nebp=0019ff80\neip=00401234\n"
    );
    assert_eq!(
        run(&mut s, "dd @esp L4"),
        "0019ff40  11111111 22222222 33333333 44444444\n"
    );
    let db = run(&mut s, "db 0x500000 L10");
    assert!(db.ends_with("synthetic bytes!\n"), "{db}");
    let lm = run(&mut s, "lm");
    assert!(lm.contains("00400000 00410000   app32 "), "{lm}");
}

#[test]
fn arm64_context_reads_back() {
    let dir = TempDir::new("builder-arm64");
    let mut x = [0u64; 31];
    x[0] = 0xa0;
    x[29] = 0x0000_0055_0000_ff00;
    x[30] = 0x7ff7_0000_1234;
    let mut dump = MinidumpBuilder::new(Cpu::Arm64);
    dump.thread(Thread {
        id: 0x99,
        context: Some(Context::Arm64(Arm64Context {
            x,
            sp: 0x0000_0055_0000_fe00,
            pc: 0x7ff7_0000_1000,
            cpsr: 0x6000_0000,
            ..Arm64Context::default()
        })),
        ..Thread::default()
    })
    .module(Module::new(r"C:\arm\app.exe", 0x7ff7_0000_0000, 0x8000));
    let (_, mut s) = open(&dir, "arm64.dmp", &dump);
    assert_eq!(
        run(&mut s, "r x0, fp, lr, sp, pc"),
        "x0=00000000000000a0\nfp=000000550000ff00\nlr=00007ff700001234\nsp=000000550000fe00\npc=00007ff700001000\n"
    );
}

#[test]
fn streams_no_command_shows_yet_read_back() {
    let mut dump = MinidumpBuilder::new(Cpu::X64);
    dump.memory_info(MemoryInfo {
        base: APP_BASE,
        allocation_base: APP_BASE,
        allocation_protect: 0x80,
        region_size: 0x1000,
        state: MEM_COMMIT,
        protect: PAGE_EXECUTE_READ,
        kind: MEM_IMAGE,
    })
    .memory_info(MemoryInfo {
        base: STACK,
        allocation_base: STACK - 0xf_0000,
        allocation_protect: PAGE_READWRITE,
        region_size: 0x3000,
        state: MEM_RESERVE,
        protect: 0,
        kind: MEM_PRIVATE,
    })
    .handle(Handle {
        handle: 0x44,
        type_name: Some("Event".into()),
        object_name: Some(r"\BaseNamedObjects\ready".into()),
        attributes: 0,
        granted_access: 0x1f_0003,
        handle_count: 2,
        pointer_count: 65_537,
    })
    .handle(Handle {
        handle: 0x48,
        type_name: Some("File".into()),
        ..Handle::default()
    })
    .thread_info(ThreadInfo {
        thread_id: 0x1a4,
        create_time: 0x01da_0000_0000_0000,
        kernel_time: 15_625_000,
        user_time: 31_250_000,
        start_address: APP_BASE + 0x1400,
        affinity: 0xf,
        ..ThreadInfo::default()
    })
    .unloaded_module(UnloadedModule {
        base: 0x7ffb_0000_0000,
        size: 0x2_5000,
        checksum: 0x1234,
        time_date_stamp: 0x5e00_0000,
        name: "gone.dll".into(),
    });
    let bytes = dump.build();
    let md = Minidump::read(&bytes[..]).expect("parses");

    let info = md
        .get_stream::<MinidumpMemoryInfoList>()
        .expect("memory info");
    let regions: Vec<_> = info.iter().map(|r| r.raw.clone()).collect();
    assert_eq!(regions.len(), 2);
    assert_eq!(
        (
            regions[0].base_address,
            regions[0].allocation_base,
            regions[0].allocation_protection,
            regions[0].region_size,
            regions[0].state,
            regions[0].protection,
            regions[0]._type
        ),
        (APP_BASE, APP_BASE, 0x80, 0x1000, 0x1000, 0x20, 0x100_0000)
    );
    assert_eq!(
        (regions[1].base_address, regions[1].state, regions[1]._type),
        (STACK, 0x2000, 0x2_0000)
    );

    let handles = md
        .get_stream::<MinidumpHandleDataStream>()
        .expect("handles");
    assert_eq!(handles.handles.len(), 2);
    let event = &handles.handles[0];
    assert_eq!(event.raw.handle(), Some(&0x44));
    assert_eq!(event.type_name.as_deref(), Some("Event"));
    assert_eq!(
        event.object_name.as_deref(),
        Some(r"\BaseNamedObjects\ready")
    );
    assert_eq!(event.raw.granted_access(), Some(&0x1f_0003));
    assert_eq!(event.raw.handle_count(), Some(&2));
    assert_eq!(event.raw.pointer_count(), Some(&65_537));
    assert_eq!(handles.handles[1].object_name, None);

    let infos = md
        .get_stream::<MinidumpThreadInfoList>()
        .expect("thread info");
    let t = &infos.thread_infos[0].raw;
    assert_eq!(
        (
            t.thread_id,
            t.create_time,
            t.kernel_time,
            t.user_time,
            t.start_address,
            t.affinity
        ),
        (
            0x1a4,
            0x01da_0000_0000_0000,
            15_625_000,
            31_250_000,
            APP_BASE + 0x1400,
            0xf
        )
    );

    let unloaded = md
        .get_stream::<MinidumpUnloadedModuleList>()
        .expect("unloaded modules");
    let gone: Vec<_> = unloaded.iter().collect();
    assert_eq!(gone.len(), 1);
    assert_eq!(gone[0].name, "gone.dll");
    assert_eq!(
        (
            gone[0].raw.base_of_image,
            gone[0].raw.size_of_image,
            gone[0].raw.checksum,
            gone[0].raw.time_date_stamp
        ),
        (0x7ffb_0000_0000, 0x2_5000, 0x1234, 0x5e00_0000)
    );
}

#[test]
fn the_corrupt_input_helpers_find_the_builders_streams() {
    let bytes = x64_dump(MemoryStream::List).build();
    let layout = ntdbg_testutil::corrupt::parse_layout(&bytes).expect("an MDMP");
    assert_eq!(layout.claimed_streams, 7);
    let kinds: Vec<u32> = layout.streams.iter().map(|s| s.kind).collect();
    assert_eq!(kinds, [7, 3, 4, 5, 15, 24, 6]);
}
