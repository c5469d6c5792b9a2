//! What a command returns: WinDbg-shaped text and, where it has one, a typed result.

use ntdbg_engine::stack::Stack;
use ntdbg_engine::Symbolized;
use serde::ser::{Error as _, SerializeStruct as _};
use serde::{Serialize, Serializer};

/// The output of one command.
#[derive(Debug, Clone, Default)]
pub struct CommandOutput {
    /// The text, as WinDbg would print it.
    pub text: String,
    /// The structured value, for `format: "json"` and `--json`.
    pub typed: Option<TypedResult>,
}

impl CommandOutput {
    /// Text only.
    pub fn text(text: impl Into<String>) -> CommandOutput {
        CommandOutput {
            text: text.into(),
            typed: None,
        }
    }

    /// Text and a typed result.
    pub fn with(text: impl Into<String>, typed: TypedResult) -> CommandOutput {
        CommandOutput {
            text: text.into(),
            typed: Some(typed),
        }
    }
}

/// Typed results of the commands that have one.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TypedResult {
    /// `k` family: the walked stack.
    Stack(Stack),
    /// `~*k`: several stacks.
    Stacks {
        /// One stack per thread.
        stacks: Vec<Stack>,
    },
    /// `~*CMD` (or `~N CMD` on several threads) whose command is not a stack walk: what it
    /// gave on each thread.
    PerThread {
        /// One entry per selected thread, in the selector's order.
        threads: Vec<ThreadResult>,
    },
    /// `!peb`: the process environment block and its process parameters.
    Peb(Box<ntdbg_engine::process_blocks::Peb>),
    /// `!teb`: the current thread's environment block.
    Teb(Box<ntdbg_engine::process_blocks::Teb>),
    /// `r`: registers by name (`0x` hex strings).
    Registers {
        /// Name → value.
        registers: Vec<NamedValue>,
    },
    /// `lm`: modules.
    Modules {
        /// The modules.
        modules: Vec<ModuleRow>,
        /// Modules unloaded before the dump was written (left out when there are none).
        #[serde(skip_serializing_if = "Vec::is_empty")]
        unloaded: Vec<UnloadedModuleRow>,
    },
    /// `~`: threads.
    Threads {
        /// The threads.
        threads: Vec<ThreadRow>,
    },
    /// `d*`: memory, one entry per unit; `null` where the dump has no data.
    Memory {
        /// First address.
        address: String,
        /// Unit size in bytes.
        unit: usize,
        /// Values (`0x` hex), `None` for missing memory.
        values: Vec<Option<String>>,
        /// `[start, end)` address ranges (`0x` hex) whose bytes the dump lacks and that were
        /// read from the module's image file instead; absent when there are none.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        from_image: Vec<[String; 2]>,
    },
    /// `u`/`ub`/`uf`: instructions.
    Disassembly {
        /// The instructions.
        instructions: Vec<ntdbg_engine::disasm::Instruction>,
    },
    /// `?`: an evaluated expression.
    Value {
        /// The value as `0x` hex.
        hex: String,
        /// The value in decimal.
        decimal: String,
    },
    /// `??`, `dx`, `dt VAR`: a typed value (same `kind` as `?`, told apart by its fields).
    #[serde(rename = "value")]
    TypedValue {
        /// The expression evaluated.
        expression: String,
        /// Its type, in WinDbg's C++ spelling.
        #[serde(rename = "type")]
        type_name: String,
        /// Its value as the text shows it (`0n5`, `0x00000001`40001000 "text"`).
        value: String,
        /// Where it is in memory (`0x` hex), when it is.
        #[serde(skip_serializing_if = "Option::is_none")]
        address: Option<String>,
        /// Its members, when expanded (structures, structures behind pointers, elements).
        #[serde(skip_serializing_if = "Vec::is_empty")]
        members: Vec<MemberValue>,
    },
    /// `ln`, `x`: symbols.
    Symbols {
        /// The symbols.
        symbols: Vec<Symbolized>,
    },
    /// `!process`: kernel processes, with their threads when the flags ask for them.
    Processes {
        /// The processes.
        processes: Vec<KernelProcessRow>,
    },
    /// `!thread`: one kernel thread.
    KernelThread(KernelThreadRow),
    /// `!analyze`: the analysis report.
    Analysis(Box<ntdbg_analysis::Report>),
    /// `!handle`: the process's handles and a count by type.
    Handles {
        /// The handles shown.
        handles: Vec<crate::rows::HandleRow>,
        /// Handles by type name, in the order the types first appear.
        by_type: Vec<crate::rows::TypeCount>,
    },
    /// `!cs`, `!locks`: critical sections.
    CriticalSections {
        /// The sections, each with how it was found.
        sections: Vec<crate::rows::CriticalSectionRow>,
        /// Where a listing's sections come from (absent for `!cs ADDR`).
        #[serde(skip_serializing_if = "Option::is_none")]
        note: Option<String>,
    },
    /// `!waits`: what every thread waits on, and the deadlock cycles.
    Waits {
        /// One entry per thread, in `~` order.
        threads: Vec<ntdbg_analysis::hang::WaitFacts>,
        /// Each cycle of threads waiting for each other's critical sections.
        deadlocks: Vec<ntdbg_analysis::Inference>,
    },
    /// `!runaway`: thread times.
    ThreadTimes {
        /// One row per thread, in `~` order.
        threads: Vec<crate::rows::ThreadTimesRow>,
    },
    /// `!uniqstack`: the distinct stacks, each with the threads that share it.
    UniqueStacks {
        /// The distinct stacks, in the order of their first thread.
        stacks: Vec<crate::rows::UniqueStack>,
        /// Threads looked at.
        total_threads: usize,
        /// Threads whose stack repeats an earlier one.
        duplicate_threads: usize,
    },
    /// `!gle`: the last Win32 error and NTSTATUS of threads, from their TEBs.
    LastErrors {
        /// One entry per thread shown.
        threads: Vec<crate::rows::LastErrorRow>,
    },
    /// `!error`: one error code and its message.
    ErrorCode(crate::rows::ErrorCodeRow),
    /// `.formats`: a value in every notation.
    Formats(crate::rows::FormatsRow),
    /// `dv`: the parameters and locals of a frame.
    Locals {
        /// The frame number.
        frame: usize,
        /// The frame's function, when known.
        function: Option<String>,
        /// The variables, as `dv` shows them.
        variables: Vec<ntdbg_engine::variable_view::VariableView>,
    },
    /// `!address`: memory regions.
    Regions {
        /// The regions shown.
        regions: Vec<RegionRow>,
    },
    /// `s`: search hits.
    SearchHits {
        /// The hits, in address order.
        hits: Vec<SearchHit>,
        /// Whether the search stopped at its hit cap before the end of the range.
        truncated: bool,
    },
    /// `!dh`, `!lmi`: a module's PE headers.
    PeHeaders(Box<PeHeadersResult>),
    /// `.lastevent`, `.exr`: the exception.
    Event {
        /// Exception code.
        code: String,
        /// Its name.
        name: String,
        /// Exception address.
        address: String,
        /// Thread id.
        thread_id: String,
        /// Parameters.
        parameters: Vec<String>,
        /// What happened.
        description: String,
    },
    /// `sx`, `sxe`, …: event filters.
    EventFilters {
        /// The filters listed or set.
        filters: Vec<crate::rows::EventFilterRow>,
    },
}

impl TypedResult {
    /// The result as JSON whose objects have their keys in sorted order: the bytes of
    /// `serde_json::to_value(self)` serialized, which is how `ntdbg run --json` has always
    /// printed results. Stacks (the frames of `~*k`, most of a large dump's output) are written
    /// straight to the serializer, their types declaring their fields in name order; other
    /// kinds go through a `Value`.
    pub fn sorted_json(&self) -> SortedJson<'_> {
        SortedJson(self)
    }
}

/// A [`TypedResult`] serialized with sorted keys ([`TypedResult::sorted_json`]).
#[derive(Debug, Clone, Copy)]
pub struct SortedJson<'a>(&'a TypedResult);

impl Serialize for SortedJson<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            // The derive would write the `kind` tag first; sorted, it falls after `frames`.
            TypedResult::Stack(stack) => {
                let mut object = s.serialize_struct("Stack", 4)?;
                object.serialize_field("frames", &stack.frames)?;
                object.serialize_field("kind", "stack")?;
                object.serialize_field("note", &stack.note)?;
                let thread_id = ntdbg_engine::hex_json::Hex(u64::from(stack.thread_id));
                object.serialize_field("thread_id", &thread_id)?;
                object.end()
            }
            TypedResult::Stacks { stacks } => {
                let mut object = s.serialize_struct("Stacks", 2)?;
                object.serialize_field("kind", "stacks")?;
                object.serialize_field("stacks", stacks)?;
                object.end()
            }
            other => serde_json::to_value(other)
                .map_err(S::Error::custom)?
                .serialize(s),
        }
    }
}

/// One thread's part of a [`TypedResult::PerThread`].
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ThreadResult {
    /// The thread's `~` number.
    pub thread: usize,
    /// The thread's id (`0x` hex).
    pub thread_id: String,
    /// The command's typed result on this thread; `None` when it has none or failed.
    pub result: Option<Box<TypedResult>>,
    /// Why the command failed on this thread, when it did.
    pub error: Option<ThreadError>,
}

/// A command's failure on one thread of a `~*CMD`.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ThreadError {
    /// The stable error key (`not_in_dump`, …).
    pub code: String,
    /// The message, as the text output shows it.
    pub message: String,
}

/// One region of `!address` (addresses and sizes as `0x` hex strings).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct RegionRow {
    /// First address.
    pub base: String,
    /// One past the last address.
    pub end: String,
    /// Size in bytes.
    pub size: String,
    /// `MEM_COMMIT`, `MEM_RESERVE` or `MEM_FREE`; `None` when derived (no MemoryInfoList).
    pub state: Option<String>,
    /// `PAGE_*` protection; `None` when derived or not committed.
    pub protect: Option<String>,
    /// `MEM_IMAGE`, `MEM_MAPPED`, `MEM_PRIVATE` (empty for free regions); `None` when derived.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// WinDbg's usage: `Image`, `Stack`, `TEB`, `PEB`, `Heap`, `Free` or `<unknown>`.
    pub usage: String,
    /// The module, for image regions.
    pub module: Option<String>,
    /// The image section holding the region's start, when the module's headers are known.
    pub section: Option<String>,
    /// The `~` number of the thread, for stack and TEB regions.
    pub thread: Option<usize>,
    /// `memory_info` (the dump's MemoryInfoList stream) or `derived` (memory list, modules,
    /// thread stacks).
    pub source: String,
}

/// `!dh` / `!lmi`: a module's PE headers (values as `0x` hex strings).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct PeHeadersResult {
    /// The module's WinDbg name.
    pub module: String,
    /// Its load address.
    pub base: String,
    /// `dump_memory` or `image_file` (the dump lacks the headers; read from the image found
    /// on the symbol path).
    pub source: String,
    /// COFF `Machine`.
    pub machine: String,
    /// COFF `TimeDateStamp`.
    pub time_date_stamp: String,
    /// COFF `Characteristics`.
    pub characteristics: String,
    /// Optional header `ImageBase`.
    pub image_base: String,
    /// `AddressOfEntryPoint` (an RVA).
    pub entry_point: String,
    /// `SizeOfImage`.
    pub size_of_image: String,
    /// `CheckSum`.
    pub checksum: String,
    /// The subsystem's name (`Windows CUI`, …).
    pub subsystem: String,
    /// `DllCharacteristics`.
    pub dll_characteristics: String,
    /// The PDB path of the CodeView record, when the image has one.
    pub pdb: Option<String>,
    /// Symbol state (`!lmi` only): `pdb`, `breakpad`, `export`, `no_symbols`.
    pub symbols: Option<String>,
    /// The section table.
    pub sections: Vec<PeSectionRow>,
}

/// One section of [`PeHeadersResult`].
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct PeSectionRow {
    /// Section name.
    pub name: String,
    /// Its address in the process (base + RVA).
    pub address: String,
    /// `VirtualSize`.
    pub virtual_size: String,
    /// `SizeOfRawData`.
    pub raw_size: String,
    /// `Characteristics`.
    pub characteristics: String,
}

/// One hit of `s`.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct SearchHit {
    /// Where the match starts (`0x` hex).
    pub address: String,
    /// The string found, for string scans (`-sa`, `-su`) and text searches (`-a`, `-u`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Whether the match lies (partly) in bytes read from the module's image file rather
    /// than the dump.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub from_image: bool,
}

/// A named value (`0x` hex string).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct NamedValue {
    /// Name.
    pub name: String,
    /// Value, `0x` hex.
    pub value: String,
}

/// A member (or array element) of a typed value.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct MemberValue {
    /// The member's name, or `[N]` for an element.
    pub name: String,
    /// Its offset in the structure (`0x` hex); absent for elements.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offset: Option<String>,
    /// Its type.
    #[serde(rename = "type")]
    pub type_name: String,
    /// Its value as the text shows it.
    pub value: String,
    /// Its own members, when expanded further.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub members: Vec<MemberValue>,
}

/// One row of `lm`.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ModuleRow {
    /// WinDbg module name.
    pub name: String,
    /// Start address.
    pub start: String,
    /// End address (exclusive).
    pub end: String,
    /// Full image path as the dump records it.
    pub image: String,
    /// PE TimeDateStamp.
    pub timestamp: String,
    /// File version, when the dump records it.
    pub version: Option<String>,
    /// Symbol state: `pdb`, `breakpad`, `export`, `no_symbols`, or `deferred` (not loaded yet).
    pub symbols: String,
    /// The symbol file used, when one was found.
    pub symbol_file: Option<String>,
}

/// One module of `lm`'s `Unloaded modules:` section.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct UnloadedModuleRow {
    /// File name as the process recorded it.
    pub name: String,
    /// Where it was loaded.
    pub start: String,
    /// One past its end.
    pub end: String,
    /// PE TimeDateStamp.
    pub timestamp: String,
    /// PE checksum.
    pub checksum: String,
}

/// One row of `~`.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ThreadRow {
    /// `~` number.
    pub index: usize,
    /// OS thread id (`0x` hex).
    pub id: String,
    /// Thread name, when known.
    pub name: Option<String>,
    /// TEB address.
    pub teb: String,
    /// Whether it is the current thread.
    pub current: bool,
    /// Whether it raised the last event.
    pub event: bool,
}

/// One process of `!process` (addresses and ids as `0x` hex strings).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct KernelProcessRow {
    /// The `_EPROCESS` address.
    pub address: String,
    /// Process id.
    pub pid: String,
    /// Parent process id, when the layout has it.
    pub parent_pid: Option<String>,
    /// PEB address, when the layout has it.
    pub peb: Option<String>,
    /// Page-table root.
    pub directory_table_base: String,
    /// Image file name (at most 15 characters, as the kernel keeps it).
    pub image: String,
    /// The threads, when asked for (flags 2 or 4).
    pub threads: Vec<KernelThreadRow>,
}

/// One thread of `!thread` / `!process ADDR 7`.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct KernelThreadRow {
    /// The `_ETHREAD` address.
    pub address: String,
    /// Process id.
    pub pid: String,
    /// Thread id.
    pub tid: String,
    /// `KTHREAD_STATE` name (`Running`, `Waiting`, …).
    pub state: Option<String>,
    /// `KWAIT_REASON` name, for a waiting thread.
    pub wait_reason: Option<String>,
    /// `Win32StartAddress`.
    pub start_address: Option<String>,
    /// The stack from the thread's saved state, when asked for and available.
    pub stack: Option<Stack>,
    /// Why there is no stack, when one was asked for.
    pub stack_unavailable: Option<String>,
}
