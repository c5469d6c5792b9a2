//! What the protocol server needs from a debugger: the [`Backend`] trait, the stops it
//! reports and the register file it exchanges.

use std::time::Duration;

/// The registers of an x64 thread in the order of the stub's target description: GDB's
/// x86-64 core names, then `fs_base`/`gs_base` (the TEB on Windows x64) — the names
/// `ntdbg_targets`' `amd64_context` and the TEB lookup read.
pub(crate) const REGISTERS: [(&str, u32); 26] = [
    ("rax", 64),
    ("rbx", 64),
    ("rcx", 64),
    ("rdx", 64),
    ("rsi", 64),
    ("rdi", 64),
    ("rbp", 64),
    ("rsp", 64),
    ("r8", 64),
    ("r9", 64),
    ("r10", 64),
    ("r11", 64),
    ("r12", 64),
    ("r13", 64),
    ("r14", 64),
    ("r15", 64),
    ("rip", 64),
    ("eflags", 32),
    ("cs", 32),
    ("ss", 32),
    ("ds", 32),
    ("es", 32),
    ("fs", 32),
    ("gs", 32),
    ("fs_base", 64),
    ("gs_base", 64),
];

/// Index of `rip` in [`REGISTERS`].
pub(crate) const RIP: usize = 16;
/// Index of `eflags` in [`REGISTERS`].
pub(crate) const EFLAGS: usize = 17;
/// Index of `gs_base` in [`REGISTERS`].
pub(crate) const GS_BASE: usize = 25;

/// One thread's registers, in [`REGISTERS`] order.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Registers(pub [u64; REGISTERS.len()]);

impl Registers {
    /// The `g` bytes: each register little-endian in its size.
    pub fn to_bytes(self) -> Vec<u8> {
        let mut out = Vec::new();
        for (value, (_, bits)) in self.0.iter().zip(REGISTERS) {
            out.extend_from_slice(&value.to_le_bytes()[..bits as usize / 8]);
        }
        out
    }

    /// Reads `G` bytes; `None` when the length is wrong.
    pub fn from_bytes(bytes: &[u8]) -> Option<Registers> {
        let mut regs = Registers::default();
        let mut at = 0;
        for (slot, (_, bits)) in regs.0.iter_mut().zip(REGISTERS) {
            let n = bits as usize / 8;
            let mut buf = [0u8; 8];
            buf[..n].copy_from_slice(bytes.get(at..at + n)?);
            *slot = u64::from_le_bytes(buf);
            at += n;
        }
        (at == bytes.len()).then_some(regs)
    }
}

/// The target description served for `qXfer:features:read:target.xml`.
pub(crate) fn target_xml() -> String {
    let mut xml = String::from(
        "<?xml version=\"1.0\"?><!DOCTYPE target SYSTEM \"gdb-target.dtd\"><target>\
         <architecture>i386:x86-64</architecture><osabi>Windows</osabi>\
         <feature name=\"org.gnu.gdb.i386.core\">",
    );
    for (i, (name, bits)) in REGISTERS.iter().enumerate() {
        if *name == "fs_base" {
            xml.push_str("</feature><feature name=\"org.gnu.gdb.i386.segments\">");
        }
        xml.push_str(&format!(
            "<reg name=\"{name}\" bitsize=\"{bits}\" regnum=\"{i}\" group=\"general\"/>"
        ));
    }
    xml.push_str("</feature></target>");
    xml
}

/// The kind of a Windows debug event (the `ntdbg-event:` pair), as the client parses it.
pub(crate) use ntdbg_gdbremote::WindowsEventKind as EventKind;

/// What a breakpoint or watchpoint hit was, for the standard `T` pairs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Hit {
    /// A software breakpoint the stub inserted (`swbreak:`).
    Software,
    /// A hardware execution breakpoint (`hwbreak:`).
    Hardware,
    /// A write watchpoint at this address (`watch:`).
    Write(u64),
    /// A read watchpoint (`rwatch:`).
    Read(u64),
    /// An access watchpoint (`awatch:`).
    Access(u64),
}

/// An exception record, as reported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ExceptionInfo {
    /// The NTSTATUS code.
    pub code: u32,
    /// First chance (`true`) or second chance.
    pub first_chance: bool,
    /// Where it happened.
    pub address: u64,
    /// `ExceptionInformation` (at most 15).
    pub params: Vec<u64>,
}

/// One debug event the client is told about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Stop {
    /// The GDB signal (see [`signal_for`]).
    pub signal: u8,
    /// The thread of the event.
    pub tid: u32,
    /// What happened.
    pub event: EventKind,
    /// A breakpoint or watchpoint hit.
    pub hit: Option<Hit>,
    /// The exception, for exception events.
    pub exception: Option<ExceptionInfo>,
    /// The module base and path, for load and unload events.
    pub module: Option<(u64, String)>,
    /// The text of a debug string.
    pub text: Option<String>,
}

impl Stop {
    /// A stop that is not an exception (`load`, `unload`, thread events, `output`).
    pub fn event(tid: u32, event: EventKind) -> Stop {
        Stop {
            signal: signal::TRAP,
            tid,
            event,
            hit: None,
            exception: None,
            module: None,
            text: None,
        }
    }
}

/// Where the debuggee is, as far as the protocol goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Halt {
    /// Stopped at a debug event.
    Stopped(Stop),
    /// The process ended with this exit code.
    Exited(u32),
}

/// GDB signal numbers used in stop replies.
pub(crate) mod signal {
    /// Break-in.
    pub const INT: u8 = 0x02;
    /// Illegal instruction.
    pub const ILL: u8 = 0x04;
    /// Breakpoints, single steps, non-exception events.
    pub const TRAP: u8 = 0x05;
    /// Every other exception.
    pub const ABRT: u8 = 0x06;
    /// Integer divide.
    pub const FPE: u8 = 0x08;
    /// Access violation.
    pub const SEGV: u8 = 0x0b;
}

/// The GDB signal for an exception code.
pub(crate) fn signal_for(code: u32) -> u8 {
    match code {
        0xc000_0005 => signal::SEGV,
        0xc000_0094 => signal::FPE,
        0xc000_001d => signal::ILL,
        // Breakpoint, single step, the WOW64 breakpoint and single step.
        0x8000_0003 | 0x8000_0004 | 0x4000_001f | 0x4000_001e => signal::TRAP,
        _ => signal::ABRT,
    }
}

/// A `Z`/`z` type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BreakType {
    /// `Z0`.
    Software,
    /// `Z1`.
    Hardware,
    /// `Z2`.
    Write,
    /// `Z3`.
    Read,
    /// `Z4`.
    Access,
}

/// How to resume.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Resume {
    /// Single-step this thread alone (the others are held until the next event).
    pub step: Option<u32>,
    /// Pass the exception on (`DBG_EXCEPTION_NOT_HANDLED`, `gn`) instead of handling it.
    pub pass_exception: bool,
}

/// A dump kind for `Qntdbg.dump`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DumpKind {
    /// `/ma`: full memory.
    Full,
    /// `/m`: a minidump.
    Mini,
}

/// A debugger the protocol server drives. Every method runs on the server's thread (the one
/// that attached) and returns quickly; errors are messages for an `E.` reply.
pub(crate) trait Backend {
    /// The process id.
    fn pid(&self) -> u32;
    /// The current halt (the latest stop or the exit).
    fn halt(&self) -> &Halt;
    /// Live thread ids.
    fn threads(&self) -> Vec<u32>;
    /// A thread's registers.
    fn read_registers(&mut self, tid: u32) -> Result<Registers, String>;
    /// Writes a thread's registers.
    fn write_registers(&mut self, tid: u32, regs: &Registers) -> Result<(), String>;
    /// Up to `len` bytes at `addr`: the readable prefix (the program's own bytes under
    /// breakpoints the stub inserted).
    fn read_memory(&mut self, addr: u64, len: usize) -> Vec<u8>;
    /// Writes memory (and flushes the instruction cache).
    fn write_memory(&mut self, addr: u64, data: &[u8]) -> Result<(), String>;
    /// Inserts a breakpoint or watchpoint of `len` bytes.
    fn insert_breakpoint(&mut self, kind: BreakType, addr: u64, len: u64) -> Result<(), String>;
    /// Removes one.
    fn remove_breakpoint(&mut self, kind: BreakType, addr: u64, len: u64) -> Result<(), String>;
    /// Resumes from the current halt.
    fn resume(&mut self, how: Resume) -> Result<(), String>;
    /// While running: waits up to `wait` for the next stop.
    fn wait(&mut self, wait: Duration) -> Result<Option<Halt>, String>;
    /// While running: asks the process to break in (the stop comes through [`Backend::wait`]).
    fn interrupt(&mut self) -> Result<(), String>;
    /// Removes every breakpoint and detaches, leaving the threads suspended when asked.
    fn detach(&mut self, leave_suspended: bool) -> Result<(), String>;
    /// Terminates the process.
    fn kill(&mut self) -> Result<(), String>;
    /// Writes a dump of the process to `path` (a path on this machine).
    fn write_dump(&mut self, kind: DumpKind, path: &str) -> Result<(), String>;
    /// A thread's TEB.
    fn teb(&self, tid: u32) -> Option<u64>;
}
