//! What a command returns: WinDbg-shaped text and, where it has one, a typed result.

use ntdbg_engine::stack::Stack;
use ntdbg_engine::Symbolized;
use serde::Serialize;

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
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TypedResult {
    /// `k` family: the walked stack.
    Stack(Stack),
    /// `~*k`: several stacks.
    Stacks {
        /// One stack per thread.
        stacks: Vec<Stack>,
    },
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
        handles: Vec<crate::commands::handles::HandleRow>,
        /// Handles by type name, in the order the types first appear.
        by_type: Vec<crate::commands::handles::TypeCount>,
    },
    /// `!runaway`: thread times.
    ThreadTimes {
        /// One row per thread, in `~` order.
        threads: Vec<crate::commands::threads_info::ThreadTimesRow>,
    },
    /// `!uniqstack`: the distinct stacks, each with the threads that share it.
    UniqueStacks {
        /// The distinct stacks, in the order of their first thread.
        stacks: Vec<crate::commands::threads_info::UniqueStack>,
        /// Threads looked at.
        total_threads: usize,
        /// Threads whose stack repeats an earlier one.
        duplicate_threads: usize,
    },
    /// `!gle`: the last Win32 error and NTSTATUS of threads, from their TEBs.
    LastErrors {
        /// One entry per thread shown.
        threads: Vec<crate::commands::errors::LastErrorRow>,
    },
    /// `!error`: one error code and its message.
    ErrorCode(crate::commands::errors::ErrorCodeRow),
    /// `.formats`: a value in every notation.
    Formats(crate::commands::errors::FormatsRow),
    /// `dv`: the parameters and locals of a frame.
    Locals {
        /// The frame number.
        frame: usize,
        /// The frame's function, when known.
        function: Option<String>,
        /// The variables, as `dv` shows them.
        variables: Vec<ntdbg_engine::variable_view::VariableView>,
    },
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
}

/// A named value (`0x` hex string).
#[derive(Debug, Clone, Serialize)]
pub struct NamedValue {
    /// Name.
    pub name: String,
    /// Value, `0x` hex.
    pub value: String,
}

/// A member (or array element) of a typed value.
#[derive(Debug, Clone, Serialize)]
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
#[derive(Debug, Clone, Serialize)]
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
#[derive(Debug, Clone, Serialize)]
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
#[derive(Debug, Clone, Serialize)]
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
#[derive(Debug, Clone, Serialize)]
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
#[derive(Debug, Clone, Serialize)]
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
