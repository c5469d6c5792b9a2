//! `!peb` and `!teb`, typed, on dumps written by the synthetic builder with the process's own
//! structures at addresses and with values the test chose, for both layouts (64-bit and
//! 32-bit): every field is known exactly.

use ntdbg_commands::{run_command, TypedResult};
use ntdbg_engine::process_blocks::Peb;
use ntdbg_engine::Session;
use ntdbg_targets::{Arch, UserLayout};
use ntdbg_testutil::corrupt::TempDir;
use ntdbg_testutil::minidump_builder::{
    Context, Cpu, MinidumpBuilder, Thread, X64Context, X86Context,
};

/// Where the test puts the TEB, the PEB, the process parameters and their strings (each in
/// its own page), for a process whose pointers fit in 32 bits.
const TEB: u64 = 0x7ffd_e000;
const PEB: u64 = 0x7ffd_b000;
const PARAMS: u64 = 0x0040_0000;
const STRINGS: u64 = 0x0040_1000;
const HEAPS: u64 = 0x0040_2000;
const STACK_BASE: u64 = 0x0013_0000;
const STACK_LIMIT: u64 = 0x0012_d000;

struct Bytes(Vec<u8>, usize);

impl Bytes {
    fn put(&mut self, at: u64, value: u64) {
        let at = at as usize;
        self.0[at..at + self.1].copy_from_slice(&value.to_le_bytes()[..self.1]);
    }
    fn put32(&mut self, at: u64, value: u32) {
        let at = at as usize;
        self.0[at..at + 4].copy_from_slice(&value.to_le_bytes());
    }
}

/// A dump of one thread of a process of `cpu`, whose TEB, PEB and parameters the layout of
/// that bitness places, with an image path, a command line and a current directory.
fn dump(cpu: Cpu, arch: Arch) -> MinidumpBuilder {
    let l = UserLayout::of(arch);
    let p = l.pointer_size;
    let mut teb = Bytes(vec![0; 0x2000], p);
    teb.put(l.teb.stack_base, STACK_BASE);
    teb.put(l.teb.stack_limit, STACK_LIMIT);
    teb.put(6 * p as u64, TEB);
    teb.put(l.teb.client_id, 0x1f4);
    teb.put(l.teb.client_id + p as u64, 0x1a4);
    teb.put(l.teb.peb, PEB);
    teb.put32(l.teb.last_error, 5);
    teb.put32(l.teb.last_status, 0xc000_0034);
    let mut peb = Bytes(vec![0; 0x1000], p);
    peb.0[l.peb.being_debugged as usize] = 1;
    peb.put(l.peb.image_base, 0x0040_0000_u64 + 0x10_0000);
    peb.put(l.peb.ldr, 0x7780_0000);
    peb.put(l.peb.process_parameters, PARAMS);
    peb.put(l.peb.process_heap, 0x0060_0000);
    peb.put32(l.peb.number_of_heaps, 2);
    peb.put(l.peb.process_heaps, HEAPS);
    let mut heaps = Bytes(vec![0; 0x10], p);
    heaps.put(0, 0x0060_0000);
    heaps.put(p as u64, 0x0070_0000);
    let mut params = Bytes(vec![0; 0x100], p);
    let mut strings = Vec::new();
    for (offset, text) in [
        (l.params.current_directory, r"C:\work\"),
        (l.params.image_path, r"C:\work\app.exe"),
        (l.params.command_line, r"app.exe --crash"),
    ] {
        let units: Vec<u8> = text.encode_utf16().flat_map(u16::to_le_bytes).collect();
        let len = units.len() as u64;
        params.put32(offset, (len | (len << 16)) as u32);
        params.put(offset + l.unicode_buffer, STRINGS + strings.len() as u64);
        strings.extend(units);
        strings.extend([0, 0]);
    }
    let context = match cpu {
        Cpu::X86 => Context::X86(X86Context {
            eip: 0x0050_1000,
            esp: STACK_LIMIT as u32 + 0x100,
            ..X86Context::default()
        }),
        _ => Context::X64(X64Context {
            rip: 0x0050_1000,
            rsp: STACK_LIMIT + 0x100,
            ..X64Context::default()
        }),
    };
    let mut dump = MinidumpBuilder::new(cpu);
    dump.thread(Thread {
        id: 0x1a4,
        teb: TEB,
        context: Some(context),
        ..Thread::default()
    })
    .memory(TEB, teb.0)
    .memory(PEB, peb.0)
    .memory(PARAMS, params.0)
    .memory(STRINGS, strings)
    .memory(HEAPS, heaps.0);
    dump
}

fn open(dir: &TempDir, name: &str, dump: &MinidumpBuilder) -> Session {
    ntdbg_testutil::open_built(dir.path(), name, dump)
}

fn typed(session: &mut Session, command: &str) -> (String, TypedResult) {
    let out = run_command(session, command).unwrap_or_else(|e| panic!("{command}: {e}"));
    (out.text, out.typed.expect("a typed result"))
}

#[test]
fn peb_and_teb_are_read_by_the_layout_of_each_bitness() {
    let dir = TempDir::new("process-blocks");
    for (cpu, arch, name) in [
        (Cpu::X64, Arch::X64, "x64.dmp"),
        (Cpu::X86, Arch::X86, "x86.dmp"),
    ] {
        let mut s = open(&dir, name, &dump(cpu, arch));
        let (text, result) = typed(&mut s, "!peb");
        let TypedResult::Peb(peb) = result else {
            panic!("{name}: !peb gave {result:?}")
        };
        assert_eq!(
            *peb,
            Peb {
                address: PEB,
                inherited_address_space: Some(false),
                read_image_file_exec_options: Some(false),
                being_debugged: Some(true),
                image_base: Some(0x0050_0000),
                ldr: Some(0x7780_0000),
                process_heap: Some(0x0060_0000),
                heaps: vec![0x0060_0000, 0x0070_0000],
                process_parameters: Some(PARAMS),
                current_directory: Some(r"C:\work\".into()),
                image_path: Some(r"C:\work\app.exe".into()),
                command_line: Some("app.exe --crash".into()),
            },
            "{name}"
        );
        assert!(
            text.contains("    BeingDebugged:            Yes\n"),
            "{name}: {text}"
        );
        assert!(
            text.contains("    CommandLine:  'app.exe --crash'\n"),
            "{name}: {text}"
        );

        let (text, result) = typed(&mut s, "!teb");
        let TypedResult::Teb(teb) = result else {
            panic!("{name}: !teb gave {result:?}")
        };
        assert_eq!(
            (
                teb.address,
                teb.stack_base,
                teb.stack_limit,
                teb.self_pointer
            ),
            (TEB, Some(STACK_BASE), Some(STACK_LIMIT), Some(TEB)),
            "{name}"
        );
        assert_eq!(
            (teb.process_id, teb.thread_id, teb.peb),
            (Some(0x1f4), Some(0x1a4), Some(PEB)),
            "{name}"
        );
        assert_eq!(
            (teb.last_error, teb.last_status),
            (Some(5), Some(0xc000_0034)),
            "{name}"
        );
        assert!(
            text.contains("    LastErrorValue:       5\n"),
            "{name}: {text}"
        );
        let gle = run_command(&mut s, "!gle").expect("!gle").text;
        assert!(
            gle.starts_with("LastErrorValue: (Win32) 0x5 (5)"),
            "{name}: {gle}"
        );
        assert_eq!(s.evaluate("$peb").ok(), Some(PEB), "{name}");
    }
}

#[test]
fn a_dump_without_the_structures_says_which_is_missing() {
    let dir = TempDir::new("process-blocks-missing");
    let mut dump = MinidumpBuilder::new(Cpu::X64);
    dump.thread(Thread {
        id: 0x10,
        teb: TEB,
        context: Some(Context::X64(X64Context::default())),
        ..Thread::default()
    });
    let mut s = open(&dir, "bare.dmp", &dump);
    let peb = run_command(&mut s, "!peb").unwrap_err();
    assert_eq!(peb.code.name(), "memory_unavailable");
    assert!(
        peb.message.starts_with("PEB address not available"),
        "{}",
        peb.message
    );
    let teb = run_command(&mut s, "!teb").unwrap_err();
    assert!(teb.message.starts_with("TEB at "), "{}", teb.message);
}
