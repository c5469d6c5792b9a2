//! The rows of the typed results that command families build and [`crate::TypedResult`]
//! carries: declared here, below both, so that the result type needs no command family.

use ntdbg_analysis::hang::critical_section::LockEncoding;
use ntdbg_engine::stack::Stack;
use serde::Serialize;

/// One handle of `!handle` (values as `0x` hex strings).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct HandleRow {
    /// The handle value.
    pub handle: String,
    /// Object type name, when recorded.
    #[serde(rename = "type")]
    pub type_name: Option<String>,
    /// Object name, when recorded.
    pub name: Option<String>,
    /// Handle attributes.
    pub attributes: String,
    /// Granted access mask.
    pub granted_access: String,
    /// Handle references.
    pub handle_count: u32,
    /// Pointer references.
    pub pointer_count: u32,
    /// Object-specific information records in the dump (not decoded).
    pub object_info_records: usize,
}

/// How many handles have one type.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct TypeCount {
    /// Type name (`None` for handles without one, as WinDbg writes).
    #[serde(rename = "type")]
    pub type_name: String,
    /// Number of handles.
    pub count: usize,
}

/// One critical section of `!cs` and `!locks` (addresses as `0x` hex strings).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct CriticalSectionRow {
    /// Its address.
    pub address: String,
    /// Its symbol, when it has one.
    pub symbol: Option<String>,
    /// `DebugInfo`.
    pub debug_info: String,
    /// `LockCount`, as stored.
    pub lock_count: i32,
    /// `RecursionCount`.
    pub recursion_count: i32,
    /// `OwningThread`.
    pub owning_thread: String,
    /// `LockSemaphore`.
    pub lock_semaphore: String,
    /// `SpinCount`.
    pub spin_count: String,
    /// Whether it is held; `None` when the fields do not check out.
    pub locked: Option<bool>,
    /// Waiting threads, as `LockCount` counts them.
    pub waiters: Option<u32>,
    /// Bit-field encoding only: whether a waiter was woken.
    pub waiter_woken: Option<bool>,
    /// `bit_field` or `counted`; `null` when free (-1 in both) or not a critical section.
    pub encoding: Option<LockEncoding>,
    /// `EntryCount`, when the dump holds the debug record.
    pub entry_count: Option<u32>,
    /// `ContentionCount`, when the dump holds the debug record.
    pub contention_count: Option<u32>,
    /// `process_list`, `waited_for` or `stack_scan` (`!locks`), `address` (`!cs ADDR`).
    pub found_by: &'static str,
    /// The thread that waits for it (`waited_for`) or whose stack holds it (`stack_scan`).
    pub thread_id: Option<String>,
    /// Why the fields are not taken for a critical section, when they are not.
    pub problem: Option<String>,
}

/// One thread's times (`0x` hex for raw values; durations in milliseconds).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ThreadTimesRow {
    /// `~` number.
    pub index: usize,
    /// OS thread id (`0x` hex).
    pub id: String,
    /// Thread name, when known.
    pub name: Option<String>,
    /// Milliseconds in user mode.
    pub user_ms: u64,
    /// Milliseconds in kernel mode.
    pub kernel_ms: u64,
    /// Milliseconds from creation to the dump, when both times are known.
    pub elapsed_ms: Option<u64>,
    /// Start address (`0x` hex).
    pub start_address: String,
    /// Affinity mask (`0x` hex).
    pub affinity: String,
}

/// One distinct stack of `!uniqstack` and the threads that have it.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct UniqueStack {
    /// `~` numbers of the threads with this stack, first one first.
    pub threads: Vec<usize>,
    /// The stack (as the first thread's walk found it); `None` when the thread has no context.
    pub stack: Option<Stack>,
    /// Why there is no stack.
    pub unavailable: Option<String>,
}

/// One thread's last error and status, as `!gle` reads them.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct LastErrorRow {
    /// `~` number.
    pub thread: usize,
    /// TEB address (`0x` hex).
    pub teb: String,
    /// LastErrorValue, when the TEB is in the dump.
    pub last_error: Option<ErrorCodeRow>,
    /// LastStatusValue, when the TEB is in the dump.
    pub last_status: Option<ErrorCodeRow>,
}

/// An error code and what it means.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ErrorCodeRow {
    /// `win32` or `ntstatus`.
    pub kind: &'static str,
    /// The code (`0x` hex).
    pub code: String,
    /// Its message, when the built-in table knows it.
    pub message: Option<String>,
}

/// `.formats`: one value in each notation.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct FormatsRow {
    /// `0x` hex.
    pub hex: String,
    /// Signed decimal.
    pub decimal: String,
    /// Unsigned decimal.
    pub unsigned: String,
    /// Octal.
    pub octal: String,
    /// Binary, in groups of 8 bits.
    pub binary: String,
    /// The bytes as characters (`.` for unprintable ones), most significant first.
    pub chars: String,
    /// The value as a time, when it reads as one.
    pub time: Option<String>,
    /// The low and high 32 bits as floats.
    pub float: String,
    /// The value as a double.
    pub double: String,
}

/// One filter of the typed result (codes as `0x` hex strings).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct EventFilterRow {
    /// The abbreviation (`av`), the code in hex for a filter set by code, or `*`.
    pub abbrev: String,
    /// WinDbg's name.
    pub name: String,
    /// Exception filters: the code.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// `break`, `second-chance break`, `output`, `ignore`.
    pub action: &'static str,
    /// `ld`: the module names `sxe ld:NAME` breaks on.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub argument: Option<String>,
}
