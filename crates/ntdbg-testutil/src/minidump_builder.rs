//! A synthetic user-mode minidump (`MDMP`) writer for tests.
//!
//! [`MinidumpBuilder`] writes the streams a Windows user-mode dump carries — system info, misc
//! info, threads with x86/x64/ARM64 register contexts, modules with CodeView records and
//! version resources, memory (as a `MemoryListStream` or a `Memory64ListStream`), the memory
//! info list, handle data, the thread info list, thread names, unloaded modules and the
//! exception — so a command can be tested against values the test itself chose.
//!
//! Every record is laid out here from the documented Windows format (`minidumpapiset.h`:
//! `MINIDUMP_HEADER`, `MINIDUMP_DIRECTORY`, `MINIDUMP_THREAD`, …, and `winnt.h` for the
//! `CONTEXT` records), field by field at fixed offsets, deliberately without the parser's
//! structs: a wrong struct in the reader cannot make its own test pass. Everything it writes is
//! synthetic.
//!
//! ```
//! use ntdbg_testutil::minidump_builder::{
//!     Context, Cpu, Exception, MinidumpBuilder, Module, Thread, X64Context,
//! };
//! let mut dump = MinidumpBuilder::new(Cpu::X64);
//! dump.thread(Thread {
//!     id: 0x1a4,
//!     teb: 0x0000_00ab_cdef_0000,
//!     context: Some(Context::X64(X64Context {
//!         rip: 0x7ff6_1234_1010,
//!         rsp: 0x0000_0010_0000_0f00,
//!         ..X64Context::default()
//!     })),
//!     stack_base: 0x0000_0010_0000_0f00,
//!     stack: 0x1122_3344_5566_7788u64.to_le_bytes().to_vec(),
//!     ..Thread::default()
//! })
//! .module(Module::new(r"C:\app\app.exe", 0x7ff6_1234_0000, 0x2_0000))
//! .memory(0x7ff6_1234_1000, vec![0xcc; 0x40])
//! .exception(Exception::new(0x1a4, 0xc000_0005, 0x7ff6_1234_1010));
//! let bytes = dump.build();
//! assert!(bytes.starts_with(b"MDMP"));
//! ```

use std::path::Path;

// ---------------------------------------------------------------------------------------------
// Constants from minidumpapiset.h and winnt.h.

/// `MINIDUMP_SIGNATURE` (`'MDMP'`).
const SIGNATURE: u32 = 0x504d_444d;
/// `MINIDUMP_VERSION` (the implementation-specific high word is left 0).
const VERSION: u32 = 0xa793;
/// `sizeof(MINIDUMP_HEADER)`.
const HEADER_SIZE: usize = 32;
/// `sizeof(MINIDUMP_DIRECTORY)`.
const DIRECTORY_ENTRY_SIZE: usize = 12;

/// `MINIDUMP_STREAM_TYPE` values this builder writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum StreamType {
    /// `ThreadListStream`.
    ThreadList = 3,
    /// `ModuleListStream`.
    ModuleList = 4,
    /// `MemoryListStream`.
    MemoryList = 5,
    /// `ExceptionStream`.
    Exception = 6,
    /// `SystemInfoStream`.
    SystemInfo = 7,
    /// `Memory64ListStream`.
    Memory64List = 9,
    /// `HandleDataStream`.
    HandleData = 12,
    /// `UnloadedModuleListStream`.
    UnloadedModuleList = 14,
    /// `MiscInfoStream`.
    MiscInfo = 15,
    /// `MemoryInfoListStream`.
    MemoryInfoList = 16,
    /// `ThreadInfoListStream`.
    ThreadInfoList = 17,
    /// `ThreadNamesStream`.
    ThreadNames = 24,
}

/// `MEM_COMMIT` (a `MINIDUMP_MEMORY_INFO::State`).
pub const MEM_COMMIT: u32 = 0x1000;
/// `MEM_RESERVE`.
pub const MEM_RESERVE: u32 = 0x2000;
/// `MEM_FREE`.
pub const MEM_FREE: u32 = 0x1_0000;
/// `MEM_PRIVATE` (a `MINIDUMP_MEMORY_INFO::Type`).
pub const MEM_PRIVATE: u32 = 0x2_0000;
/// `MEM_MAPPED`.
pub const MEM_MAPPED: u32 = 0x4_0000;
/// `MEM_IMAGE`.
pub const MEM_IMAGE: u32 = 0x100_0000;
/// `PAGE_NOACCESS` (a protection).
pub const PAGE_NOACCESS: u32 = 0x01;
/// `PAGE_READONLY`.
pub const PAGE_READONLY: u32 = 0x02;
/// `PAGE_READWRITE`.
pub const PAGE_READWRITE: u32 = 0x04;
/// `PAGE_EXECUTE_READ`.
pub const PAGE_EXECUTE_READ: u32 = 0x20;
/// `PAGE_EXECUTE_READWRITE`.
pub const PAGE_EXECUTE_READWRITE: u32 = 0x40;
/// `PAGE_GUARD` (a modifier).
pub const PAGE_GUARD: u32 = 0x100;

/// The processor the dump is for (`MINIDUMP_SYSTEM_INFO::ProcessorArchitecture`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cpu {
    /// `PROCESSOR_ARCHITECTURE_INTEL` (0).
    X86,
    /// `PROCESSOR_ARCHITECTURE_AMD64` (9).
    X64,
    /// `PROCESSOR_ARCHITECTURE_ARM64` (12).
    Arm64,
}

impl Cpu {
    fn processor_architecture(self) -> u16 {
        match self {
            Cpu::X86 => 0,
            Cpu::X64 => 9,
            Cpu::Arm64 => 12,
        }
    }
}

/// Which stream holds the captured memory (and the thread stacks).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MemoryStream {
    /// `MemoryListStream`: one `MINIDUMP_MEMORY_DESCRIPTOR` (32-bit size and RVA) per range,
    /// as in a `MiniDumpNormal` dump.
    #[default]
    List,
    /// `Memory64ListStream`: 64-bit sizes, the data of every range back to back from one base
    /// RVA, as in a `MiniDumpWithFullMemory` dump.
    List64,
}

// ---------------------------------------------------------------------------------------------
// Register contexts (winnt.h).

/// A thread's register context, written as the `CONTEXT` record of its architecture.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Context {
    /// A 716-byte x86 `CONTEXT`.
    X86(X86Context),
    /// A 1232-byte x64 `CONTEXT` (`CONTEXT_AMD64`).
    X64(X64Context),
    /// A 912-byte ARM64 `CONTEXT` (`ARM64_NT_CONTEXT`).
    Arm64(Arm64Context),
}

impl Context {
    /// The `CONTEXT` record's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        match self {
            Context::X86(c) => c.to_bytes(),
            Context::X64(c) => c.to_bytes(),
            Context::Arm64(c) => c.to_bytes(),
        }
    }
}

/// The x64 registers a test sets. `Default` gives zeroed general registers with Windows'
/// user-mode selectors (`cs` 0x33, `ss`/`ds`/`es`/`gs` 0x2b, `fs` 0x53), `eflags` 0x246 and
/// `mxcsr` 0x1f80.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)] // the fields are the registers they name
pub struct X64Context {
    pub rax: u64,
    pub rcx: u64,
    pub rdx: u64,
    pub rbx: u64,
    pub rsp: u64,
    pub rbp: u64,
    pub rsi: u64,
    pub rdi: u64,
    pub r8: u64,
    pub r9: u64,
    pub r10: u64,
    pub r11: u64,
    pub r12: u64,
    pub r13: u64,
    pub r14: u64,
    pub r15: u64,
    pub rip: u64,
    pub eflags: u32,
    pub mxcsr: u32,
    pub cs: u16,
    pub ds: u16,
    pub es: u16,
    pub fs: u16,
    pub gs: u16,
    pub ss: u16,
}

impl Default for X64Context {
    fn default() -> X64Context {
        X64Context {
            rax: 0,
            rcx: 0,
            rdx: 0,
            rbx: 0,
            rsp: 0,
            rbp: 0,
            rsi: 0,
            rdi: 0,
            r8: 0,
            r9: 0,
            r10: 0,
            r11: 0,
            r12: 0,
            r13: 0,
            r14: 0,
            r15: 0,
            rip: 0,
            eflags: 0x246,
            mxcsr: 0x1f80,
            cs: 0x33,
            ds: 0x2b,
            es: 0x2b,
            fs: 0x53,
            gs: 0x2b,
            ss: 0x2b,
        }
    }
}

impl X64Context {
    /// `sizeof(CONTEXT)` on x64.
    pub const SIZE: usize = 0x4d0;
    /// `CONTEXT_AMD64 | CONTROL | INTEGER | SEGMENTS | FLOATING_POINT`.
    pub const FLAGS: u32 = 0x0010_000f;

    /// The `CONTEXT` record: `P1Home`…`P6Home` at 0x00, `ContextFlags` 0x30, `MxCsr` 0x34,
    /// `SegCs`…`SegSs` 0x38, `EFlags` 0x44, `Dr0`…`Dr7` 0x48, `Rax` 0x78 … `R15` 0xf0,
    /// `Rip` 0xf8, `FltSave` (`XMM_SAVE_AREA32`) 0x100, vector registers 0x300.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut b = vec![0u8; Self::SIZE];
        put32(&mut b, 0x30, Self::FLAGS);
        put32(&mut b, 0x34, self.mxcsr);
        for (i, seg) in [self.cs, self.ds, self.es, self.fs, self.gs, self.ss]
            .into_iter()
            .enumerate()
        {
            put16(&mut b, 0x38 + 2 * i, seg);
        }
        put32(&mut b, 0x44, self.eflags);
        let integer = [
            self.rax, self.rcx, self.rdx, self.rbx, self.rsp, self.rbp, self.rsi, self.rdi,
            self.r8, self.r9, self.r10, self.r11, self.r12, self.r13, self.r14, self.r15, self.rip,
        ];
        for (i, value) in integer.into_iter().enumerate() {
            put64(&mut b, 0x78 + 8 * i, value);
        }
        // XMM_SAVE_AREA32: ControlWord at +0, MxCsr at +0x18.
        put16(&mut b, 0x100, 0x27f);
        put32(&mut b, 0x118, self.mxcsr);
        b
    }
}

/// The x86 registers a test sets. `Default` gives zeroed general registers with Windows'
/// user-mode selectors (`cs` 0x23, `ss`/`ds`/`es` 0x2b, `fs` 0x53, `gs` 0x2b) and `eflags`
/// 0x246.
#[derive(Debug, Clone, PartialEq, Eq)]
#[allow(missing_docs)] // the fields are the registers they name
pub struct X86Context {
    pub eax: u32,
    pub ecx: u32,
    pub edx: u32,
    pub ebx: u32,
    pub esp: u32,
    pub ebp: u32,
    pub esi: u32,
    pub edi: u32,
    pub eip: u32,
    pub eflags: u32,
    pub cs: u32,
    pub ds: u32,
    pub es: u32,
    pub fs: u32,
    pub gs: u32,
    pub ss: u32,
}

impl Default for X86Context {
    fn default() -> X86Context {
        X86Context {
            eax: 0,
            ecx: 0,
            edx: 0,
            ebx: 0,
            esp: 0,
            ebp: 0,
            esi: 0,
            edi: 0,
            eip: 0,
            eflags: 0x246,
            cs: 0x23,
            ds: 0x2b,
            es: 0x2b,
            fs: 0x53,
            gs: 0x2b,
            ss: 0x2b,
        }
    }
}

impl X86Context {
    /// `sizeof(CONTEXT)` on x86.
    pub const SIZE: usize = 0x2cc;
    /// `CONTEXT_i386 | CONTROL | INTEGER | SEGMENTS` (`CONTEXT_FULL`).
    pub const FLAGS: u32 = 0x0001_0007;

    /// The `CONTEXT` record: `ContextFlags` at 0x00, `Dr0`…`Dr7` 0x04, `FloatSave` 0x1c,
    /// `SegGs` 0x8c, `SegFs` 0x90, `SegEs` 0x94, `SegDs` 0x98, `Edi` 0x9c, `Esi` 0xa0,
    /// `Ebx` 0xa4, `Edx` 0xa8, `Ecx` 0xac, `Eax` 0xb0, `Ebp` 0xb4, `Eip` 0xb8, `SegCs` 0xbc,
    /// `EFlags` 0xc0, `Esp` 0xc4, `SegSs` 0xc8, `ExtendedRegisters` 0xcc.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut b = vec![0u8; Self::SIZE];
        put32(&mut b, 0, Self::FLAGS);
        let from_gs = [
            self.gs,
            self.fs,
            self.es,
            self.ds,
            self.edi,
            self.esi,
            self.ebx,
            self.edx,
            self.ecx,
            self.eax,
            self.ebp,
            self.eip,
            self.cs,
            self.eflags,
            self.esp,
            self.ss,
        ];
        for (i, value) in from_gs.into_iter().enumerate() {
            put32(&mut b, 0x8c + 4 * i, value);
        }
        b
    }
}

/// The ARM64 registers a test sets (`x[29]` is `fp`, `x[30]` is `lr`). `Default` is all zero.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Arm64Context {
    /// `X0`…`X28`, `Fp` (x29) and `Lr` (x30).
    pub x: [u64; 31],
    /// The stack pointer.
    pub sp: u64,
    /// The program counter.
    pub pc: u64,
    /// The processor state.
    pub cpsr: u32,
    /// The floating-point control register.
    pub fpcr: u32,
    /// The floating-point status register.
    pub fpsr: u32,
}

impl Arm64Context {
    /// `sizeof(ARM64_NT_CONTEXT)`.
    pub const SIZE: usize = 0x390;
    /// `CONTEXT_ARM64 | CONTROL | INTEGER | FLOATING_POINT` (`CONTEXT_FULL`).
    pub const FLAGS: u32 = 0x0040_0007;

    /// The `CONTEXT` record: `ContextFlags` at 0x00, `Cpsr` 0x04, `X0`…`X30` 0x08, `Sp` 0x100,
    /// `Pc` 0x108, `V0`…`V31` 0x110, `Fpcr` 0x310, `Fpsr` 0x314, debug registers 0x318.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut b = vec![0u8; Self::SIZE];
        put32(&mut b, 0, Self::FLAGS);
        put32(&mut b, 4, self.cpsr);
        for (i, value) in self.x.into_iter().enumerate() {
            put64(&mut b, 8 + 8 * i, value);
        }
        put64(&mut b, 0x100, self.sp);
        put64(&mut b, 0x108, self.pc);
        put32(&mut b, 0x310, self.fpcr);
        put32(&mut b, 0x314, self.fpsr);
        b
    }
}

// ---------------------------------------------------------------------------------------------
// Stream contents.

/// `MINIDUMP_SYSTEM_INFO`. `Default` is Windows 10.0.19041, a workstation with 4 processors
/// and a `GenuineIntel` CPU, no service pack.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SystemInfo {
    /// `MajorVersion`.
    pub major_version: u32,
    /// `MinorVersion`.
    pub minor_version: u32,
    /// `BuildNumber`.
    pub build_number: u32,
    /// `PlatformId` (`VER_PLATFORM_WIN32_NT` is 2).
    pub platform_id: u32,
    /// `ProductType` (`VER_NT_WORKSTATION` 1, domain controller 2, server 3).
    pub product_type: u8,
    /// `NumberOfProcessors`.
    pub number_of_processors: u8,
    /// `ProcessorLevel`.
    pub processor_level: u16,
    /// `ProcessorRevision`.
    pub processor_revision: u16,
    /// `SuiteMask`.
    pub suite_mask: u16,
    /// The service-pack text the `CSDVersionRva` string holds (written even when empty, as
    /// Windows does).
    pub csd_version: String,
    /// `Cpu.X86CpuInfo.VendorId` (x86 and x64 only; 12 ASCII bytes, cut or zero-padded).
    pub cpu_vendor: String,
    /// `Cpu.X86CpuInfo.VersionInformation` (CPUID 1 EAX; x86 and x64 only).
    pub cpu_version_information: u32,
    /// `Cpu.X86CpuInfo.FeatureInformation` (CPUID 1 EDX; x86 and x64 only).
    pub cpu_feature_information: u32,
}

impl Default for SystemInfo {
    fn default() -> SystemInfo {
        SystemInfo {
            major_version: 10,
            minor_version: 0,
            build_number: 19041,
            platform_id: 2,
            product_type: 1,
            number_of_processors: 4,
            processor_level: 6,
            processor_revision: 0,
            suite_mask: 0x100,
            csd_version: String::new(),
            cpu_vendor: "GenuineIntel".into(),
            cpu_version_information: 0,
            cpu_feature_information: 0,
        }
    }
}

/// The `MINIDUMP_MISC_INFO` fields (the 24-byte first version; `Flags1` says which are set).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MiscInfo {
    /// `ProcessId` (`MINIDUMP_MISC1_PROCESS_ID`).
    pub process_id: Option<u32>,
    /// `ProcessCreateTime` (Unix seconds), `ProcessUserTime` and `ProcessKernelTime`
    /// (seconds), all three under `MINIDUMP_MISC1_PROCESS_TIMES`.
    pub process_times: Option<(u32, u32, u32)>,
}

/// One `MINIDUMP_THREAD` with its context and stack.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Thread {
    /// `ThreadId`.
    pub id: u32,
    /// `SuspendCount`.
    pub suspend_count: u32,
    /// `PriorityClass`.
    pub priority_class: u32,
    /// `Priority`.
    pub priority: u32,
    /// `Teb`.
    pub teb: u64,
    /// The register context (`ThreadContext`), or none (an empty location).
    pub context: Option<Context>,
    /// `Stack.StartOfMemoryRange`.
    pub stack_base: u64,
    /// The captured stack bytes, also listed in the dump's memory stream as Windows does
    /// (empty: no stack).
    pub stack: Vec<u8>,
}

/// A CodeView record of a module (`CvRecord`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CodeView {
    /// A PDB 7.0 record: `'RSDS'`, the GUID, the age and the PDB path (UTF-8, NUL-ended).
    Pdb70 {
        /// The PDB's signature GUID.
        guid: Guid,
        /// The PDB's age.
        age: u32,
        /// The PDB file name or path.
        pdb: String,
    },
    /// Any bytes, written as they are (an `NB10` record, or a hostile one).
    Raw(Vec<u8>),
}

impl CodeView {
    /// The record's bytes.
    pub fn to_bytes(&self) -> Vec<u8> {
        match self {
            CodeView::Pdb70 { guid, age, pdb } => {
                let mut b = b"RSDS".to_vec();
                b.extend_from_slice(&guid.to_bytes());
                b.extend_from_slice(&age.to_le_bytes());
                b.extend_from_slice(pdb.as_bytes());
                b.push(0);
                b
            }
            CodeView::Raw(bytes) => bytes.clone(),
        }
    }
}

/// A Windows `GUID`, by its fields (written little-endian, `data4` as is).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[allow(missing_docs)] // the fields are the GUID's own
pub struct Guid {
    pub data1: u32,
    pub data2: u16,
    pub data3: u16,
    pub data4: [u8; 8],
}

impl Guid {
    /// The 16 bytes as a `GUID` is stored.
    pub fn to_bytes(self) -> [u8; 16] {
        let mut b = [0u8; 16];
        b[..4].copy_from_slice(&self.data1.to_le_bytes());
        b[4..6].copy_from_slice(&self.data2.to_le_bytes());
        b[6..8].copy_from_slice(&self.data3.to_le_bytes());
        b[8..].copy_from_slice(&self.data4);
        b
    }
}

/// One `MINIDUMP_MODULE`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Module {
    /// `BaseOfImage`.
    pub base: u64,
    /// `SizeOfImage`.
    pub size: u32,
    /// `CheckSum`.
    pub checksum: u32,
    /// `TimeDateStamp`.
    pub time_date_stamp: u32,
    /// The full path the `ModuleNameRva` string holds.
    pub name: String,
    /// `VersionInfo.dwFileVersionMS/LS` as `a.b.c.d`; with [`Module::product_version`] this
    /// writes a `VS_FIXEDFILEINFO` with its signature. `None` for both: an all-zero one.
    pub file_version: Option<[u16; 4]>,
    /// `VersionInfo.dwProductVersionMS/LS` as `a.b.c.d`.
    pub product_version: Option<[u16; 4]>,
    /// The `CvRecord`, if any.
    pub codeview: Option<CodeView>,
}

impl Module {
    /// A module with a name, base and size and nothing else.
    pub fn new(name: &str, base: u64, size: u32) -> Module {
        Module {
            name: name.into(),
            base,
            size,
            ..Module::default()
        }
    }

    /// The 52-byte `VS_FIXEDFILEINFO`.
    fn version_info(&self) -> [u8; 52] {
        let mut b = [0u8; 52];
        if self.file_version.is_none() && self.product_version.is_none() {
            return b;
        }
        let split = |v: Option<[u16; 4]>| {
            let [a, b, c, d] = v.unwrap_or_default();
            (
                u32::from(a) << 16 | u32::from(b),
                u32::from(c) << 16 | u32::from(d),
            )
        };
        let (file_ms, file_ls) = split(self.file_version);
        let (product_ms, product_ls) = split(self.product_version);
        // dwSignature, dwStrucVersion, file MS/LS, product MS/LS, FileFlagsMask, FileFlags,
        // FileOS (VOS_NT_WINDOWS32), FileType (VFT_APP), subtype, date MS/LS.
        let fields = [
            0xfeef_04bd,
            0x0001_0000,
            file_ms,
            file_ls,
            product_ms,
            product_ls,
            0x3f,
            0,
            0x0004_0004,
            1,
            0,
            0,
            0,
        ];
        for (i, value) in fields.into_iter().enumerate() {
            put32(&mut b, 4 * i, value);
        }
        b
    }
}

/// One `MINIDUMP_UNLOADED_MODULE`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UnloadedModule {
    /// `BaseOfImage`.
    pub base: u64,
    /// `SizeOfImage`.
    pub size: u32,
    /// `CheckSum`.
    pub checksum: u32,
    /// `TimeDateStamp`.
    pub time_date_stamp: u32,
    /// The name the `ModuleNameRva` string holds.
    pub name: String,
}

/// One `MINIDUMP_MEMORY_INFO` (a `VirtualQuery` region).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MemoryInfo {
    /// `BaseAddress`.
    pub base: u64,
    /// `AllocationBase`.
    pub allocation_base: u64,
    /// `AllocationProtect` (`PAGE_*`).
    pub allocation_protect: u32,
    /// `RegionSize`.
    pub region_size: u64,
    /// `State` ([`MEM_COMMIT`], [`MEM_RESERVE`], [`MEM_FREE`]).
    pub state: u32,
    /// `Protect` (`PAGE_*`).
    pub protect: u32,
    /// `Type` ([`MEM_PRIVATE`], [`MEM_MAPPED`], [`MEM_IMAGE`]).
    pub kind: u32,
}

/// One handle, written as a `MINIDUMP_HANDLE_DESCRIPTOR_2` (its `ObjectInfoRva` is 0).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Handle {
    /// `Handle`.
    pub handle: u64,
    /// The object type the `TypeNameRva` string holds (`"Event"`, `"File"`…); `None`: RVA 0.
    pub type_name: Option<String>,
    /// The object name the `ObjectNameRva` string holds; `None`: RVA 0.
    pub object_name: Option<String>,
    /// `Attributes`.
    pub attributes: u32,
    /// `GrantedAccess`.
    pub granted_access: u32,
    /// `HandleCount`.
    pub handle_count: u32,
    /// `PointerCount`.
    pub pointer_count: u32,
}

/// One `MINIDUMP_THREAD_INFO`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ThreadInfo {
    /// `ThreadId`.
    pub thread_id: u32,
    /// `DumpFlags` (`MINIDUMP_THREAD_INFO_*`).
    pub dump_flags: u32,
    /// `DumpError` (an HRESULT).
    pub dump_error: u32,
    /// `ExitStatus`.
    pub exit_status: u32,
    /// `CreateTime` (FILETIME).
    pub create_time: u64,
    /// `ExitTime` (FILETIME).
    pub exit_time: u64,
    /// `KernelTime` (100 ns units).
    pub kernel_time: u64,
    /// `UserTime` (100 ns units).
    pub user_time: u64,
    /// `StartAddress`.
    pub start_address: u64,
    /// `Affinity`.
    pub affinity: u64,
}

/// The `MINIDUMP_EXCEPTION_STREAM`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exception {
    /// `ThreadId`.
    pub thread_id: u32,
    /// `ExceptionRecord.ExceptionCode`.
    pub code: u32,
    /// `ExceptionRecord.ExceptionFlags`.
    pub flags: u32,
    /// `ExceptionRecord.ExceptionRecord` (a chained record's address, or 0).
    pub record: u64,
    /// `ExceptionRecord.ExceptionAddress`.
    pub address: u64,
    /// `ExceptionRecord.ExceptionInformation`; `NumberParameters` is its length (at most 15
    /// are stored; the count is written as given, so a test can make it lie).
    pub parameters: Vec<u64>,
    /// The context `ThreadContext` points at (what `.ecxr` selects).
    pub context: Option<Context>,
}

impl Exception {
    /// An exception with no parameters, flags or context.
    pub fn new(thread_id: u32, code: u32, address: u64) -> Exception {
        Exception {
            thread_id,
            code,
            flags: 0,
            record: 0,
            address,
            parameters: Vec::new(),
            context: None,
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The builder.

/// Collects the contents of a user-mode minidump and writes it ([`MinidumpBuilder::build`]).
///
/// Streams are written in a fixed order after the header and the directory: memory data,
/// system info, misc info, threads, modules, unloaded modules, the memory stream, memory info,
/// handles, thread info, thread names, exception. System info, the thread list, the module
/// list and the memory stream are always present (possibly empty); the others only when
/// something was added to them.
#[derive(Debug, Clone)]
pub struct MinidumpBuilder {
    cpu: Cpu,
    time_date_stamp: u32,
    flags: u64,
    memory_stream: MemoryStream,
    system: SystemInfo,
    misc: Option<MiscInfo>,
    threads: Vec<Thread>,
    modules: Vec<Module>,
    unloaded: Vec<UnloadedModule>,
    memory: Vec<(u64, Vec<u8>)>,
    memory_info: Vec<MemoryInfo>,
    handles: Vec<Handle>,
    thread_infos: Vec<ThreadInfo>,
    thread_names: Vec<(u32, String)>,
    exception: Option<Exception>,
    share_thread_data: bool,
}

impl MinidumpBuilder {
    /// An empty dump for `cpu`, with the default [`SystemInfo`] and a `MemoryListStream`.
    pub fn new(cpu: Cpu) -> MinidumpBuilder {
        MinidumpBuilder {
            cpu,
            time_date_stamp: 0,
            flags: 0,
            memory_stream: MemoryStream::default(),
            system: SystemInfo::default(),
            misc: None,
            threads: Vec::new(),
            modules: Vec::new(),
            unloaded: Vec::new(),
            memory: Vec::new(),
            memory_info: Vec::new(),
            handles: Vec::new(),
            thread_infos: Vec::new(),
            thread_names: Vec::new(),
            exception: None,
            share_thread_data: false,
        }
    }

    /// Writes a register context that several threads have once, every such thread's
    /// `ThreadContext` pointing at it, and a stack (same base, same bytes) once, listed once
    /// in the memory stream: a dump with very many alike threads stays small, as a crafted
    /// one can (100,000 threads in 4.8 MB).
    pub fn share_thread_data(&mut self) -> &mut Self {
        self.share_thread_data = true;
        self
    }

    /// The header's `TimeDateStamp` (when the dump was written, Unix seconds).
    pub fn time_date_stamp(&mut self, stamp: u32) -> &mut Self {
        self.time_date_stamp = stamp;
        self
    }

    /// The header's `Flags` (`MINIDUMP_TYPE`).
    pub fn flags(&mut self, flags: u64) -> &mut Self {
        self.flags = flags;
        self
    }

    /// Which stream holds memory and stacks.
    pub fn memory_stream(&mut self, stream: MemoryStream) -> &mut Self {
        self.memory_stream = stream;
        self
    }

    /// Replaces the system info.
    pub fn system_info(&mut self, system: SystemInfo) -> &mut Self {
        self.system = system;
        self
    }

    /// Writes a `MiscInfoStream`.
    pub fn misc_info(&mut self, misc: MiscInfo) -> &mut Self {
        self.misc = Some(misc);
        self
    }

    /// Adds a thread (its stack also becomes a memory range).
    pub fn thread(&mut self, thread: Thread) -> &mut Self {
        self.threads.push(thread);
        self
    }

    /// Adds a module.
    pub fn module(&mut self, module: Module) -> &mut Self {
        self.modules.push(module);
        self
    }

    /// Adds an unloaded module.
    pub fn unloaded_module(&mut self, module: UnloadedModule) -> &mut Self {
        self.unloaded.push(module);
        self
    }

    /// Adds captured memory at `base`.
    pub fn memory(&mut self, base: u64, bytes: Vec<u8>) -> &mut Self {
        self.memory.push((base, bytes));
        self
    }

    /// Adds a region to the memory info list.
    pub fn memory_info(&mut self, info: MemoryInfo) -> &mut Self {
        self.memory_info.push(info);
        self
    }

    /// Adds a handle.
    pub fn handle(&mut self, handle: Handle) -> &mut Self {
        self.handles.push(handle);
        self
    }

    /// Adds a thread info entry.
    pub fn thread_info(&mut self, info: ThreadInfo) -> &mut Self {
        self.thread_infos.push(info);
        self
    }

    /// Names a thread (`ThreadNamesStream`).
    pub fn thread_name(&mut self, thread_id: u32, name: &str) -> &mut Self {
        self.thread_names.push((thread_id, name.into()));
        self
    }

    /// Sets the exception stream.
    pub fn exception(&mut self, exception: Exception) -> &mut Self {
        self.exception = Some(exception);
        self
    }

    /// Writes the dump to `path`.
    ///
    /// # Panics
    /// When the file cannot be written (a test helper).
    pub fn write(&self, path: &Path) {
        std::fs::write(path, self.build())
            .unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    }

    /// The dump's bytes.
    pub fn build(&self) -> Vec<u8> {
        let mut streams: Vec<StreamType> = vec![
            StreamType::SystemInfo,
            StreamType::ThreadList,
            StreamType::ModuleList,
            match self.memory_stream {
                MemoryStream::List => StreamType::MemoryList,
                MemoryStream::List64 => StreamType::Memory64List,
            },
        ];
        let optional = [
            (self.misc.is_some(), StreamType::MiscInfo),
            (!self.unloaded.is_empty(), StreamType::UnloadedModuleList),
            (!self.memory_info.is_empty(), StreamType::MemoryInfoList),
            (!self.handles.is_empty(), StreamType::HandleData),
            (!self.thread_infos.is_empty(), StreamType::ThreadInfoList),
            (!self.thread_names.is_empty(), StreamType::ThreadNames),
            (self.exception.is_some(), StreamType::Exception),
        ];
        streams.extend(optional.into_iter().filter(|(on, _)| *on).map(|(_, s)| s));

        let mut w = Writer::default();
        w.bytes
            .resize(HEADER_SIZE + DIRECTORY_ENTRY_SIZE * streams.len(), 0);
        let memory = self.write_memory_data(&mut w);
        let mut directory = Vec::new();
        for stream in streams {
            let body = match stream {
                StreamType::SystemInfo => self.system_info_stream(&mut w),
                StreamType::MiscInfo => self.misc_info_stream(),
                StreamType::ThreadList => self.thread_list_stream(&mut w, &memory),
                StreamType::ModuleList => self.module_list_stream(&mut w),
                StreamType::UnloadedModuleList => self.unloaded_module_stream(&mut w),
                StreamType::MemoryList => memory_list_stream(&memory),
                StreamType::Memory64List => memory64_list_stream(&memory),
                StreamType::MemoryInfoList => self.memory_info_stream(),
                StreamType::HandleData => self.handle_data_stream(&mut w),
                StreamType::ThreadInfoList => self.thread_info_stream(),
                StreamType::ThreadNames => self.thread_names_stream(&mut w),
                StreamType::Exception => self.exception_stream(&mut w),
            };
            directory.push((stream, w.blob(&body)));
        }

        put32(&mut w.bytes, 0, SIGNATURE);
        put32(&mut w.bytes, 4, VERSION);
        put32(&mut w.bytes, 8, directory.len() as u32);
        put32(&mut w.bytes, 12, HEADER_SIZE as u32);
        put32(&mut w.bytes, 20, self.time_date_stamp);
        put64(&mut w.bytes, 24, self.flags);
        for (i, (stream, location)) in directory.into_iter().enumerate() {
            let at = HEADER_SIZE + DIRECTORY_ENTRY_SIZE * i;
            put32(&mut w.bytes, at, stream as u32);
            put32(&mut w.bytes, at + 4, location.size);
            put32(&mut w.bytes, at + 8, location.rva);
        }
        w.bytes
    }

    /// Writes the explicit memory ranges, then every thread's stack, back to back (the
    /// `Memory64ListStream` needs them contiguous; the `MemoryListStream` does not mind).
    fn write_memory_data(&self, w: &mut Writer) -> Vec<MemoryRange> {
        w.align();
        let ranges = self
            .memory
            .iter()
            .map(|(base, bytes)| (*base, bytes))
            .chain(
                self.threads
                    .iter()
                    .filter(|t| !t.stack.is_empty())
                    .map(|t| (t.stack_base, &t.stack)),
            );
        let mut written = std::collections::HashSet::new();
        ranges
            .filter(|(base, bytes)| !self.share_thread_data || written.insert((*base, *bytes)))
            .map(|(base, bytes)| {
                let rva = w.bytes.len() as u32;
                w.bytes.extend_from_slice(bytes);
                MemoryRange {
                    base,
                    size: bytes.len() as u32,
                    rva,
                }
            })
            .collect()
    }

    /// `MINIDUMP_SYSTEM_INFO` (56 bytes).
    fn system_info_stream(&self, w: &mut Writer) -> Vec<u8> {
        let s = &self.system;
        let csd = w.string(&s.csd_version);
        let mut b = vec![0u8; 56];
        put16(&mut b, 0, self.cpu.processor_architecture());
        put16(&mut b, 2, s.processor_level);
        put16(&mut b, 4, s.processor_revision);
        b[6] = s.number_of_processors;
        b[7] = s.product_type;
        put32(&mut b, 8, s.major_version);
        put32(&mut b, 12, s.minor_version);
        put32(&mut b, 16, s.build_number);
        put32(&mut b, 20, s.platform_id);
        put32(&mut b, 24, csd);
        put16(&mut b, 28, s.suite_mask);
        // CPU_INFORMATION at 32: X86CpuInfo (VendorId[3], VersionInformation,
        // FeatureInformation, AMDExtendedCpuFeatures) on x86/x64; OtherCpuInfo stays zero.
        if matches!(self.cpu, Cpu::X86 | Cpu::X64) {
            let vendor = s.cpu_vendor.as_bytes();
            let n = vendor.len().min(12);
            b[32..32 + n].copy_from_slice(&vendor[..n]);
            put32(&mut b, 44, s.cpu_version_information);
            put32(&mut b, 48, s.cpu_feature_information);
        }
        b
    }

    /// `MINIDUMP_MISC_INFO` (24 bytes).
    fn misc_info_stream(&self) -> Vec<u8> {
        let misc = self.misc.unwrap_or_default();
        let mut b = vec![0u8; 24];
        put32(&mut b, 0, 24);
        let mut flags = 0;
        if let Some(pid) = misc.process_id {
            flags |= 1; // MINIDUMP_MISC1_PROCESS_ID
            put32(&mut b, 8, pid);
        }
        if let Some((create, user, kernel)) = misc.process_times {
            flags |= 2; // MINIDUMP_MISC1_PROCESS_TIMES
            put32(&mut b, 12, create);
            put32(&mut b, 16, user);
            put32(&mut b, 20, kernel);
        }
        put32(&mut b, 4, flags);
        b
    }

    /// `MINIDUMP_THREAD_LIST`: the count, then 48-byte `MINIDUMP_THREAD`s.
    fn thread_list_stream(&self, w: &mut Writer, memory: &[MemoryRange]) -> Vec<u8> {
        let stacks = &memory[self.memory.len()..];
        let mut stacks = stacks.iter();
        let mut shared_contexts = std::collections::HashMap::<Vec<u8>, Location>::new();
        let mut shared_stacks = std::collections::HashMap::<(u64, &[u8]), MemoryRange>::new();
        let mut b = count_u32(self.threads.len());
        for t in &self.threads {
            let context = match &t.context {
                None => Location::default(),
                Some(c) if self.share_thread_data => {
                    let bytes = c.to_bytes();
                    match shared_contexts.get(&bytes) {
                        Some(location) => *location,
                        None => {
                            let location = w.blob(&bytes);
                            shared_contexts.insert(bytes, location);
                            location
                        }
                    }
                }
                Some(c) => w.blob(&c.to_bytes()),
            };
            let stack = if t.stack.is_empty() {
                MemoryRange::default()
            } else if self.share_thread_data {
                *shared_stacks
                    .entry((t.stack_base, &t.stack[..]))
                    .or_insert_with(|| stacks.next().copied().unwrap_or_default())
            } else {
                stacks.next().copied().unwrap_or_default()
            };
            let mut r = vec![0u8; 48];
            put32(&mut r, 0, t.id);
            put32(&mut r, 4, t.suspend_count);
            put32(&mut r, 8, t.priority_class);
            put32(&mut r, 12, t.priority);
            put64(&mut r, 16, t.teb);
            put64(&mut r, 24, t.stack_base);
            put32(&mut r, 32, stack.size);
            put32(&mut r, 36, stack.rva);
            put32(&mut r, 40, context.size);
            put32(&mut r, 44, context.rva);
            b.extend_from_slice(&r);
        }
        b
    }

    /// `MINIDUMP_MODULE_LIST`: the count, then 108-byte `MINIDUMP_MODULE`s.
    fn module_list_stream(&self, w: &mut Writer) -> Vec<u8> {
        let mut b = count_u32(self.modules.len());
        for m in &self.modules {
            let name = w.string(&m.name);
            let cv = m
                .codeview
                .as_ref()
                .map_or(Location::default(), |cv| w.blob(&cv.to_bytes()));
            let mut r = vec![0u8; 108];
            put64(&mut r, 0, m.base);
            put32(&mut r, 8, m.size);
            put32(&mut r, 12, m.checksum);
            put32(&mut r, 16, m.time_date_stamp);
            put32(&mut r, 20, name);
            r[24..76].copy_from_slice(&m.version_info());
            put32(&mut r, 76, cv.size);
            put32(&mut r, 80, cv.rva);
            // MiscRecord (84), Reserved0 (92) and Reserved1 (100) stay zero.
            b.extend_from_slice(&r);
        }
        b
    }

    /// `MINIDUMP_UNLOADED_MODULE_LIST` (12-byte header), then 24-byte entries.
    fn unloaded_module_stream(&self, w: &mut Writer) -> Vec<u8> {
        let mut b = header_u32s(&[12, 24, self.unloaded.len() as u32]);
        for m in &self.unloaded {
            let name = w.string(&m.name);
            let mut r = vec![0u8; 24];
            put64(&mut r, 0, m.base);
            put32(&mut r, 8, m.size);
            put32(&mut r, 12, m.checksum);
            put32(&mut r, 16, m.time_date_stamp);
            put32(&mut r, 20, name);
            b.extend_from_slice(&r);
        }
        b
    }

    /// `MINIDUMP_MEMORY_INFO_LIST` (16-byte header with a 64-bit count), then 48-byte
    /// `MINIDUMP_MEMORY_INFO`s.
    fn memory_info_stream(&self) -> Vec<u8> {
        let mut b = header_u32s(&[16, 48]);
        b.extend_from_slice(&(self.memory_info.len() as u64).to_le_bytes());
        for m in &self.memory_info {
            let mut r = vec![0u8; 48];
            put64(&mut r, 0, m.base);
            put64(&mut r, 8, m.allocation_base);
            put32(&mut r, 16, m.allocation_protect);
            put64(&mut r, 24, m.region_size);
            put32(&mut r, 32, m.state);
            put32(&mut r, 36, m.protect);
            put32(&mut r, 40, m.kind);
            b.extend_from_slice(&r);
        }
        b
    }

    /// `MINIDUMP_HANDLE_DATA_STREAM` (16-byte header), then 40-byte
    /// `MINIDUMP_HANDLE_DESCRIPTOR_2`s.
    fn handle_data_stream(&self, w: &mut Writer) -> Vec<u8> {
        let mut b = header_u32s(&[16, 40, self.handles.len() as u32, 0]);
        for h in &self.handles {
            let type_name = h.type_name.as_deref().map_or(0, |s| w.string(s));
            let object_name = h.object_name.as_deref().map_or(0, |s| w.string(s));
            let mut r = vec![0u8; 40];
            put64(&mut r, 0, h.handle);
            put32(&mut r, 8, type_name);
            put32(&mut r, 12, object_name);
            put32(&mut r, 16, h.attributes);
            put32(&mut r, 20, h.granted_access);
            put32(&mut r, 24, h.handle_count);
            put32(&mut r, 28, h.pointer_count);
            // ObjectInfoRva (32) and Reserved0 (36) stay zero.
            b.extend_from_slice(&r);
        }
        b
    }

    /// `MINIDUMP_THREAD_INFO_LIST` (12-byte header), then 64-byte `MINIDUMP_THREAD_INFO`s.
    fn thread_info_stream(&self) -> Vec<u8> {
        let mut b = header_u32s(&[12, 64, self.thread_infos.len() as u32]);
        for t in &self.thread_infos {
            let mut r = vec![0u8; 64];
            put32(&mut r, 0, t.thread_id);
            put32(&mut r, 4, t.dump_flags);
            put32(&mut r, 8, t.dump_error);
            put32(&mut r, 12, t.exit_status);
            let times = [
                t.create_time,
                t.exit_time,
                t.kernel_time,
                t.user_time,
                t.start_address,
                t.affinity,
            ];
            for (i, value) in times.into_iter().enumerate() {
                put64(&mut r, 16 + 8 * i, value);
            }
            b.extend_from_slice(&r);
        }
        b
    }

    /// `MINIDUMP_THREAD_NAME_LIST`: the count, then 12-byte `MINIDUMP_THREAD_NAME`s (thread
    /// id, 64-bit RVA of the name).
    fn thread_names_stream(&self, w: &mut Writer) -> Vec<u8> {
        let mut b = count_u32(self.thread_names.len());
        for (id, name) in &self.thread_names {
            let rva = w.string(name);
            b.extend_from_slice(&id.to_le_bytes());
            b.extend_from_slice(&u64::from(rva).to_le_bytes());
        }
        b
    }

    /// `MINIDUMP_EXCEPTION_STREAM` (168 bytes).
    fn exception_stream(&self, w: &mut Writer) -> Vec<u8> {
        let Some(e) = &self.exception else {
            return Vec::new();
        };
        let context = e
            .context
            .as_ref()
            .map_or(Location::default(), |c| w.blob(&c.to_bytes()));
        let mut b = vec![0u8; 168];
        put32(&mut b, 0, e.thread_id);
        // MINIDUMP_EXCEPTION at 8: code, flags, record, address, NumberParameters,
        // alignment, ExceptionInformation[15].
        put32(&mut b, 8, e.code);
        put32(&mut b, 12, e.flags);
        put64(&mut b, 16, e.record);
        put64(&mut b, 24, e.address);
        put32(&mut b, 32, e.parameters.len() as u32);
        for (i, p) in e.parameters.iter().take(15).enumerate() {
            put64(&mut b, 40 + 8 * i, *p);
        }
        put32(&mut b, 160, context.size);
        put32(&mut b, 164, context.rva);
        b
    }
}

/// `MINIDUMP_MEMORY_LIST`: the count, then 16-byte `MINIDUMP_MEMORY_DESCRIPTOR`s.
fn memory_list_stream(memory: &[MemoryRange]) -> Vec<u8> {
    let mut b = count_u32(memory.len());
    for m in memory {
        b.extend_from_slice(&m.base.to_le_bytes());
        b.extend_from_slice(&m.size.to_le_bytes());
        b.extend_from_slice(&m.rva.to_le_bytes());
    }
    b
}

/// `MINIDUMP_MEMORY64_LIST`: a 64-bit count, the 64-bit `BaseRva` of the first range's data,
/// then 16-byte `MINIDUMP_MEMORY_DESCRIPTOR64`s (start, 64-bit size).
fn memory64_list_stream(memory: &[MemoryRange]) -> Vec<u8> {
    let mut b = (memory.len() as u64).to_le_bytes().to_vec();
    let base_rva = memory.first().map_or(0, |m| m.rva);
    b.extend_from_slice(&u64::from(base_rva).to_le_bytes());
    for m in memory {
        b.extend_from_slice(&m.base.to_le_bytes());
        b.extend_from_slice(&u64::from(m.size).to_le_bytes());
    }
    b
}

/// A captured range: where it is in the process and in the file.
#[derive(Debug, Clone, Copy, Default)]
struct MemoryRange {
    base: u64,
    size: u32,
    rva: u32,
}

/// A `MINIDUMP_LOCATION_DESCRIPTOR`.
#[derive(Debug, Clone, Copy, Default)]
struct Location {
    size: u32,
    rva: u32,
}

/// The file being written: blobs are appended 8-byte aligned.
#[derive(Debug, Default)]
struct Writer {
    bytes: Vec<u8>,
}

impl Writer {
    fn align(&mut self) {
        let padded = self.bytes.len().next_multiple_of(8);
        self.bytes.resize(padded, 0);
    }

    /// Appends `data` and says where it went.
    fn blob(&mut self, data: &[u8]) -> Location {
        self.align();
        let rva = self.bytes.len() as u32;
        self.bytes.extend_from_slice(data);
        Location {
            size: data.len() as u32,
            rva,
        }
    }

    /// Appends a `MINIDUMP_STRING` (byte length without the terminator, UTF-16LE, NUL) and
    /// returns its RVA.
    fn string(&mut self, s: &str) -> u32 {
        let units: Vec<u16> = s.encode_utf16().collect();
        let mut data = ((units.len() * 2) as u32).to_le_bytes().to_vec();
        for unit in units.into_iter().chain([0]) {
            data.extend_from_slice(&unit.to_le_bytes());
        }
        self.blob(&data).rva
    }
}

fn count_u32(n: usize) -> Vec<u8> {
    (n as u32).to_le_bytes().to_vec()
}

fn header_u32s(fields: &[u32]) -> Vec<u8> {
    fields.iter().flat_map(|f| f.to_le_bytes()).collect()
}

fn put16(b: &mut [u8], at: usize, value: u16) {
    b[at..at + 2].copy_from_slice(&value.to_le_bytes());
}

fn put32(b: &mut [u8], at: usize, value: u32) {
    b[at..at + 4].copy_from_slice(&value.to_le_bytes());
}

fn put64(b: &mut [u8], at: usize, value: u64) {
    b[at..at + 8].copy_from_slice(&value.to_le_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u32_at(b: &[u8], at: usize) -> u32 {
        u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
    }

    #[test]
    fn record_sizes_match_the_documented_ones() {
        assert_eq!(X64Context::default().to_bytes().len(), 1232);
        assert_eq!(X86Context::default().to_bytes().len(), 716);
        assert_eq!(Arm64Context::default().to_bytes().len(), 912);
        let x64 = X64Context {
            rip: 0x1122_3344_5566_7788,
            ..X64Context::default()
        }
        .to_bytes();
        assert_eq!(&x64[0xf8..0x100], &0x1122_3344_5566_7788u64.to_le_bytes());
        let x86 = X86Context {
            eip: 0x0040_1000,
            esp: 0x0019_ff00,
            ..X86Context::default()
        }
        .to_bytes();
        assert_eq!(u32_at(&x86, 0xb8), 0x0040_1000);
        assert_eq!(u32_at(&x86, 0xc4), 0x0019_ff00);
    }

    #[test]
    fn header_and_directory_describe_every_stream() {
        let mut dump = MinidumpBuilder::new(Cpu::X86);
        dump.thread_name(1, "main").time_date_stamp(0x6000_0000);
        let bytes = dump.build();
        assert_eq!(&bytes[..4], b"MDMP");
        assert_eq!(u32_at(&bytes, 8), 5);
        assert_eq!(u32_at(&bytes, 12), 32);
        assert_eq!(u32_at(&bytes, 20), 0x6000_0000);
        let types: Vec<u32> = (0..5).map(|i| u32_at(&bytes, 32 + 12 * i)).collect();
        assert_eq!(types, [7, 3, 4, 5, 24]);
        for i in 0..5 {
            let size = u32_at(&bytes, 32 + 12 * i + 4) as usize;
            let rva = u32_at(&bytes, 32 + 12 * i + 8) as usize;
            assert!(rva + size <= bytes.len());
        }
    }
}
