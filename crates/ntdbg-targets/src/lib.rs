//! Debug targets for ntdbg.
//!
//! A [`Target`] answers what the engine needs from anything it debugs: the CPU architecture,
//! threads and their register contexts, loaded modules, the last event (exception), and
//! virtual memory that reports exactly which bytes are missing — a dump has holes, and nothing
//! here ever invents bytes.
//!
//! [`UserDump`] is the target for Windows user-mode minidumps (MDMP). The file is
//! memory-mapped; streams are parsed once at open time into owned facts, and memory reads
//! borrow straight from the mapping.
//!
//! ```no_run
//! use ntdbg_targets::{Target, UserDump};
//! let dump = UserDump::open("crash.dmp".as_ref())?;
//! println!("{} threads, {} modules", dump.threads().len(), dump.modules().iter().count());
//! # Ok::<(), ntdbg_targets::TargetError>(())
//! ```
#![warn(missing_docs, missing_debug_implementations)]

mod error;
mod memory;
mod model;
mod user_dump;

pub use error::TargetError;
pub use memory::{MemoryRegion, MemoryView};
pub use model::{Arch, ExceptionEvent, SystemFacts, TargetKind, ThreadInfo};
pub use user_dump::UserDump;

/// Re-exported so that callers name the same register-context and module types.
pub use minidump::{MinidumpContext, MinidumpModule, MinidumpModuleList};

/// What the engine needs from a debug target (dump or live).
pub trait Target: MemoryView + Send + Sync + std::fmt::Debug {
    /// What sort of target this is.
    fn kind(&self) -> TargetKind;
    /// The CPU architecture of the debuggee.
    fn arch(&self) -> Arch;
    /// Operating system, CPU and process facts.
    fn system(&self) -> &SystemFacts;
    /// The threads, in the order the target lists them (`~` numbers index this slice).
    fn threads(&self) -> &[ThreadInfo];
    /// The loaded modules.
    fn modules(&self) -> &MinidumpModuleList;
    /// The last event (the exception that caused the dump), if any.
    fn event(&self) -> Option<&ExceptionEvent>;
    /// Where the target came from (a file path or a connection string), for people.
    fn origin(&self) -> &str;
}
