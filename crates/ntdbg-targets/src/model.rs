//! Owned facts about a target: architecture, system, threads, the last event.

use crate::memory::MemoryRegion;
use minidump::MinidumpContext;

/// What sort of target a session is attached to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetKind {
    /// A Windows user-mode minidump (MDMP).
    UserDump,
    /// A kernel small memory dump (`PAGEDU64`/`PAGEDUMP`, DumpType 4) written at a bugcheck.
    KernelSmall,
    /// A kernel triage dump (DumpType 4) written without a bugcheck (a live triage dump).
    KernelTriage,
    /// A kernel memory dump: kernel pages only (DumpType 2, or 8 and 9 on Windows 10+).
    Kernel,
    /// A complete memory dump: all physical memory as runs (DumpType 1, or 10).
    KernelFull,
    /// A bitmap dump (DumpType 5 full or 6 kernel): physical pages listed by a bitmap.
    KernelBitmap,
    /// A live user-mode process behind a GDB remote stub (gdbserver, `winedbg --gdb`).
    Live,
}

impl TargetKind {
    /// Stable key, as used in JSON (`"user"`, `"kernel-small"`, `"kernel-triage"`, `"kernel"`,
    /// `"kernel-full"`, `"kernel-bitmap"`, `"live"`).
    pub fn name(self) -> &'static str {
        match self {
            TargetKind::UserDump => "user",
            TargetKind::KernelSmall => "kernel-small",
            TargetKind::KernelTriage => "kernel-triage",
            TargetKind::Kernel => "kernel",
            TargetKind::KernelFull => "kernel-full",
            TargetKind::KernelBitmap => "kernel-bitmap",
            TargetKind::Live => "live",
        }
    }

    /// How messages say that bytes are missing: `not in the dump`, or `not readable in the
    /// live target` (a live target holds all its memory; the stub could not read these).
    pub fn missing_memory(self) -> &'static str {
        if self == TargetKind::Live {
            "not readable in the live target"
        } else {
            "not in the dump"
        }
    }

    /// How messages name the target: `the dump` or `the live target`.
    pub fn noun(self) -> &'static str {
        if self == TargetKind::Live {
            "the live target"
        } else {
            "the dump"
        }
    }

    /// Whether this is a kernel-mode target.
    pub fn is_kernel(self) -> bool {
        !matches!(self, TargetKind::UserDump | TargetKind::Live)
    }
}

/// CPU architecture of the debuggee.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arch {
    /// 32-bit x86.
    X86,
    /// x86-64 (AMD64).
    X64,
    /// 64-bit ARM.
    Arm64,
    /// Anything else, by its MINIDUMP_SYSTEM_INFO processor architecture.
    Other(u16),
}

/// `PROCESSOR_ARCHITECTURE_ARM`: 32-bit ARM (ARMNT), known by name and pointer size only
/// (dumps of it are read for their facts; no stack or disassembly).
pub const PROCESSOR_ARCHITECTURE_ARM: u16 = 5;

impl Arch {
    /// Stable key, as used in JSON (`"x86"`, `"x64"`, `"arm64"`, `"arm"`).
    pub fn name(self) -> &'static str {
        match self {
            Arch::X86 => "x86",
            Arch::X64 => "x64",
            Arch::Arm64 => "arm64",
            Arch::Other(PROCESSOR_ARCHITECTURE_ARM) => "arm",
            Arch::Other(_) => "unknown",
        }
    }
    /// Size of a pointer in bytes.
    pub fn pointer_size(self) -> usize {
        match self {
            Arch::X86 | Arch::Other(PROCESSOR_ARCHITECTURE_ARM) => 4,
            _ => 8,
        }
    }
}

/// Operating system, CPU and process facts.
#[derive(Debug, Clone, Default)]
pub struct SystemFacts {
    /// `major.minor.build`, e.g. `10.0.19041`.
    pub os_version: String,
    /// The build number alone.
    pub os_build: u32,
    /// Service pack / CSD text, when present.
    pub csd_version: Option<String>,
    /// `VER_NT_WORKSTATION` (1), domain controller (2) or server (3).
    pub product_type: u8,
    /// Number of processors.
    pub cpu_count: u32,
    /// CPU vendor / description, when present.
    pub cpu_info: Option<String>,
    /// Process id, when the dump records it.
    pub process_id: Option<u32>,
    /// When the dump was written (seconds since the Unix epoch).
    pub dump_time: Option<u32>,
    /// When the process started (seconds since the Unix epoch).
    pub process_create_time: Option<u32>,
    /// Seconds the process spent in user mode.
    pub process_user_time: Option<u32>,
    /// Seconds the process spent in kernel mode.
    pub process_kernel_time: Option<u32>,
}

/// One thread of the target.
#[derive(Debug, Clone)]
pub struct ThreadInfo {
    /// The OS thread id.
    pub id: u32,
    /// The thread's name, when the dump records one.
    pub name: Option<String>,
    /// Suspend count.
    pub suspend_count: u32,
    /// Priority.
    pub priority: u32,
    /// Address of the thread environment block.
    pub teb: u64,
    /// The thread's register context, when present.
    pub context: Option<MinidumpContext>,
    /// Where the dump captured the thread's stack.
    pub stack: Option<MemoryRegion>,
}

/// The last event of the target: the exception that caused the dump.
#[derive(Debug, Clone)]
pub struct ExceptionEvent {
    /// The thread that raised it.
    pub thread_id: u32,
    /// The NTSTATUS / exception code.
    pub code: u32,
    /// EXCEPTION_RECORD flags (1 = non-continuable).
    pub flags: u32,
    /// Where it was raised.
    pub address: u64,
    /// The exception parameters (ExceptionInformation).
    pub parameters: Vec<u64>,
    /// Address of a chained exception record, or 0.
    pub nested_record: u64,
    /// The context at the time of the exception (what `.ecxr` selects).
    pub context: Option<MinidumpContext>,
}

/// The bugcheck (blue screen) that caused a kernel dump.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bugcheck {
    /// The bugcheck code (`0x1000007e`).
    pub code: u32,
    /// The four bugcheck parameters.
    pub parameters: [u64; 4],
    /// The thread (id as listed by [`crate::Target::threads`]) that called `KeBugCheckEx`.
    pub thread_id: u32,
    /// The processor that bugchecked, when the dump records it.
    pub processor: Option<u32>,
}

/// One region of the process's address space as the dump's MemoryInfoList stream records it
/// (`MINIDUMP_MEMORY_INFO`, the `VirtualQuery` answer at dump time). Flags keep their Windows
/// values (`MEM_COMMIT`, `PAGE_READONLY`, `MEM_IMAGE`, …).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryInfo {
    /// First address of the region.
    pub base: u64,
    /// Base of the allocation the region belongs to.
    pub allocation_base: u64,
    /// Protection the allocation was made with.
    pub allocation_protect: u32,
    /// Size in bytes.
    pub size: u64,
    /// `MEM_COMMIT` (0x1000), `MEM_RESERVE` (0x2000) or `MEM_FREE` (0x10000).
    pub state: u32,
    /// Current page protection (`PAGE_*`); 0 for reserved and free regions.
    pub protect: u32,
    /// `MEM_IMAGE` (0x1000000), `MEM_MAPPED` (0x40000), `MEM_PRIVATE` (0x20000), or 0.
    pub kind: u32,
}

/// The Windows values of [`MemoryInfo`]'s `state`, `kind` and `protect` fields.
pub mod memory_flags {
    /// `MEM_COMMIT`.
    pub const MEM_COMMIT: u32 = 0x1000;
    /// `MEM_RESERVE`.
    pub const MEM_RESERVE: u32 = 0x2000;
    /// `MEM_FREE`.
    pub const MEM_FREE: u32 = 0x1_0000;
    /// `MEM_IMAGE`.
    pub const MEM_IMAGE: u32 = 0x100_0000;
    /// `MEM_MAPPED`.
    pub const MEM_MAPPED: u32 = 0x4_0000;
    /// `MEM_PRIVATE`.
    pub const MEM_PRIVATE: u32 = 0x2_0000;
    /// `PAGE_NOACCESS`.
    pub const PAGE_NOACCESS: u32 = 0x01;
    /// `PAGE_GUARD`.
    pub const PAGE_GUARD: u32 = 0x100;
    /// The protection bits proper (without `PAGE_GUARD`, `PAGE_NOCACHE`, `PAGE_WRITECOMBINE`).
    pub const PAGE_PROTECTION: u32 = 0xff;
    /// `PAGE_EXECUTE`, `PAGE_EXECUTE_READ`, `PAGE_EXECUTE_READWRITE`, `PAGE_EXECUTE_WRITECOPY`.
    pub const PAGE_EXECUTE_ANY: u32 = 0xf0;
    /// The protections that can be read: `PAGE_READONLY`, `PAGE_READWRITE`,
    /// `PAGE_WRITECOPY` and the three executable ones that read.
    pub const PAGE_READABLE: u32 = 0x02 | 0x04 | 0x08 | 0x20 | 0x40 | 0x80;
}

impl MemoryInfo {
    /// One past the last address (saturating).
    pub fn end(&self) -> u64 {
        self.base.saturating_add(self.size)
    }

    /// Whether the region is committed memory (`MEM_COMMIT`).
    pub fn is_committed(&self) -> bool {
        self.state == memory_flags::MEM_COMMIT
    }

    /// Whether the process could execute the region: committed, with an executable protection.
    pub fn is_executable(&self) -> bool {
        use memory_flags::{PAGE_EXECUTE_ANY, PAGE_PROTECTION};
        self.is_committed() && self.protect & PAGE_PROTECTION & PAGE_EXECUTE_ANY != 0
    }

    /// Whether the process could read the region: committed, with a readable protection.
    pub fn is_readable(&self) -> bool {
        self.is_committed() && self.protect & memory_flags::PAGE_READABLE != 0
    }
}

/// The region of `regions` (sorted by base, as [`crate::Target::memory_info`] gives them) that
/// holds `addr`.
pub fn memory_info_at(regions: &[MemoryInfo], addr: u64) -> Option<&MemoryInfo> {
    let at = regions.partition_point(|r| r.base <= addr);
    regions.get(at.checked_sub(1)?).filter(|r| addr < r.end())
}
