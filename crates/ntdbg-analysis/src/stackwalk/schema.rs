//! The JSON shape `minidump-stackwalk --json` (rust-minidump 0.27) writes, as typed values.
//!
//! Field names, their types and their nullness follow `print_json` of minidump-processor and
//! its `json-schema.md`; fields are declared in the alphabetical order minidump-stackwalk's
//! output has, so the same dump gives the same layout. Addresses are `0x` hex strings of the
//! dump's pointer width (`0x00000045` on 32-bit, `0x0000000000000045` on 64-bit).

use serde::Serialize;
use std::collections::BTreeMap;

/// The whole report: `minidump-stackwalk --json`'s top-level object.
#[derive(Debug, Clone, Serialize)]
pub struct StackwalkReport {
    /// The exception that caused the dump (every field null without one).
    pub crash_info: CrashInfo,
    /// A copy of the crashing thread with `threads_index` and frame 0's `registers`; absent
    /// when the dump has no exception or that thread has no frames (as minidump-stackwalk).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub crashing_thread: Option<CrashingThread>,
    /// The HandleDataStream's handles; null without that stream.
    pub handles: Option<Vec<Handle>>,
    /// Linux only: always null for Windows dumps.
    pub linux_memory_map_count: Option<u64>,
    /// Linux only: always null for Windows dumps.
    pub lsb_release: Option<serde_json::Value>,
    /// macOS only: always null for Windows dumps.
    pub mac_boot_args: Option<String>,
    /// macOS only: always null for Windows dumps.
    pub mac_crash_info: Option<serde_json::Value>,
    /// Index of the main module in `modules`: always 0, the dump's first module.
    pub main_module: usize,
    /// The loaded modules, in the dump's order.
    pub modules: Vec<Module>,
    /// Whether certificate information (Mozilla's side-channel `--evil-json`) was given:
    /// always false.
    pub modules_contains_cert_info: bool,
    /// The process id, from the MiscInfo stream.
    pub pid: Option<u32>,
    /// Linux only: always null for Windows dumps.
    pub proc_limits: Option<serde_json::Value>,
    /// Seconds from process start to the dump, from the MiscInfo stream.
    pub process_uptime: Option<u64>,
    /// Mozilla's soft-error stream: always null (not read).
    pub soft_errors: Option<serde_json::Value>,
    /// Always `OK`: a dump that cannot be read gives no report at all.
    pub status: &'static str,
    /// The SystemInfo stream.
    pub system_info: SystemInfo,
    /// How many threads `threads` lists.
    pub thread_count: usize,
    /// Every thread of the thread list, in the dump's order.
    pub threads: Vec<Thread>,
    /// The UnloadedModuleList stream (empty without it).
    pub unloaded_modules: Vec<UnloadedModule>,
}

/// `system_info`.
#[derive(Debug, Clone, Serialize)]
pub struct SystemInfo {
    /// `x86`, `amd64`, `arm64`, … (minidump's `Cpu` names).
    pub cpu_arch: String,
    /// Number of processors.
    pub cpu_count: u32,
    /// Vendor, family, model and stepping as the SystemInfo stream gives them.
    pub cpu_info: Option<String>,
    /// Microcode version: not read (null), as minidump-stackwalk for Windows dumps.
    pub cpu_microcode_version: Option<String>,
    /// Always `Windows NT`.
    pub os: String,
    /// `major.minor.build`, then the service-pack text when there is one.
    pub os_ver: Option<String>,
}

/// `crash_info`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct CrashInfo {
    /// The crash address: the accessed address of an access violation or in-page error,
    /// else the exception address (zero-extended to 32 bits on 32-bit CPUs).
    pub address: Option<String>,
    /// minidump-stackwalk's instruction analysis: not done by ntdbg (null).
    pub adjusted_address: Option<serde_json::Value>,
    /// Breakpad assertion info: never present in Windows dumps (null).
    pub assertion: Option<String>,
    /// minidump-stackwalk's instruction analysis: not done by ntdbg (null).
    pub crash_inconsistencies: Option<Vec<serde_json::Value>>,
    /// Index in `threads` of the thread the exception stream names.
    pub crashing_thread: Option<usize>,
    /// minidump-stackwalk's instruction analysis: not done by ntdbg (null).
    pub instruction: Option<String>,
    /// minidump-stackwalk's instruction analysis: not done by ntdbg (null).
    pub instruction_pointer_update: Option<serde_json::Value>,
    /// minidump-stackwalk's instruction analysis: not done by ntdbg (null).
    pub memory_accesses: Option<Vec<serde_json::Value>>,
    /// minidump-stackwalk's instruction analysis: not done by ntdbg (null).
    pub possible_bit_flips: Option<Vec<serde_json::Value>>,
    /// The crash reason as minidump names it (`EXCEPTION_ACCESS_VIOLATION_WRITE`,
    /// `EXCEPTION_STACK_BUFFER_OVERRUN / FAST_FAIL_FATAL_APP_EXIT`, …).
    #[serde(rename = "type")]
    pub kind: Option<String>,
}

/// One entry of `modules`.
#[derive(Debug, Clone, Serialize)]
pub struct Module {
    /// Load address.
    pub base_addr: String,
    /// Certificate subject from `--evil-json`: always null.
    pub cert_subject: Option<String>,
    /// `TIMESTAMPsizeofimage` in lower-case hex (the symbol-server key of the image).
    pub code_id: String,
    /// Whether a symbol file was found but could not be parsed: ntdbg falls back to the
    /// next source instead, so always false.
    pub corrupt_symbols: bool,
    /// The PDB's file name (empty when unknown).
    pub debug_file: String,
    /// The Breakpad debug id (GUID + age, 33 hex digits; zeros when unknown).
    pub debug_id: String,
    /// One past the last byte.
    pub end_addr: String,
    /// The image's file name.
    pub filename: String,
    /// Whether symbols (a `.sym` or a PDB) were loaded for it.
    pub loaded_symbols: bool,
    /// Whether symbols were looked for (a frame fell in it) and none was found.
    pub missing_symbols: bool,
    /// The URL symbols were downloaded from: null (ntdbg names the cached file in `lm`).
    pub symbol_url: Option<String>,
    /// The file version from VS_FIXEDFILEINFO.
    pub version: Option<String>,
}

/// One entry of `unloaded_modules`.
#[derive(Debug, Clone, Serialize)]
pub struct UnloadedModule {
    /// Where it was loaded.
    pub base_addr: String,
    /// Certificate subject from `--evil-json`: always null.
    pub cert_subject: Option<String>,
    /// `TIMESTAMPsizeofimage` in lower-case hex.
    pub code_id: String,
    /// One past its last byte.
    pub end_addr: String,
    /// The name as the process recorded it.
    pub filename: String,
}

/// One entry of `handles`.
#[derive(Debug, Clone, Serialize)]
pub struct Handle {
    /// The handle value (a number, as minidump-stackwalk writes it).
    pub handle: u64,
    /// The object name, when recorded.
    pub object_name: Option<String>,
    /// The object type name, when recorded.
    pub type_name: Option<String>,
}

/// One entry of `threads`.
#[derive(Debug, Clone, Serialize)]
pub struct Thread {
    /// How many frames `frames` has (inlined calls are inside their frame's `inlines`).
    pub frame_count: usize,
    /// Frames, innermost first.
    pub frames: Vec<Frame>,
    /// The TEB's LastErrorValue named as minidump names Windows errors (`ERROR_SUCCESS`, …),
    /// when the TEB is in the dump.
    pub last_error_value: Option<String>,
    /// The OS thread id.
    pub thread_id: u32,
    /// The thread's name from the ThreadNames stream.
    pub thread_name: Option<String>,
}

/// `crashing_thread`: the crashing thread again, with its index.
#[derive(Debug, Clone, Serialize)]
pub struct CrashingThread {
    /// The thread, frame 0 with its `registers`.
    #[serde(flatten)]
    pub thread: Thread,
    /// Its index in `threads`.
    pub threads_index: usize,
}

/// One frame.
#[derive(Debug, Clone, Serialize)]
pub struct Frame {
    /// Source file (full path as the symbols give it).
    pub file: Option<String>,
    /// Index in the thread's `frames`.
    pub frame: usize,
    /// Function name (with parameters where the symbols give them).
    pub function: Option<String>,
    /// `offset` minus the function's start.
    pub function_offset: Option<String>,
    /// Calls inlined at this frame's address, outermost first (minidump-stackwalk's order);
    /// null when none.
    pub inlines: Option<Vec<InlineFrame>>,
    /// Source line.
    pub line: Option<u32>,
    /// Whether no function name was found.
    pub missing_symbols: bool,
    /// The module's file name.
    pub module: Option<String>,
    /// `offset` minus the module's base.
    pub module_offset: Option<String>,
    /// The instruction address: the context's for frame 0; for callers the return address
    /// minus one (x86, x64) or minus four (ARM64), inside the call instruction.
    pub offset: String,
    /// Frame 0 of `crashing_thread` only: the valid general-purpose registers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub registers: Option<BTreeMap<String, String>>,
    /// How the frame was found: `context`, `cfi`, `frame_pointer` or `scan`.
    pub trust: &'static str,
    /// For an address in no loaded module: the unloaded modules that held it, with offsets.
    pub unloaded_modules: Option<Vec<UnloadedHit>>,
}

/// One inlined call inside a frame.
#[derive(Debug, Clone, Serialize)]
pub struct InlineFrame {
    /// Source file.
    pub file: Option<String>,
    /// The inlined function.
    pub function: String,
    /// Source line.
    pub line: Option<u32>,
}

/// An unloaded module that once held a frame's address.
#[derive(Debug, Clone, Serialize)]
pub struct UnloadedHit {
    /// Its name.
    pub module: String,
    /// The address's offsets from each of its load addresses.
    pub offsets: Vec<String>,
}
