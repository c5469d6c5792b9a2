//! The WinDbg command language for ntdbg.
//!
//! One parser and one command table, shared by every front end (CLI, REPL, MCP): a line is
//! split into commands ([`parse`]), each is looked up in the [`table`] and run by its family's
//! handler (`commands/`), which returns WinDbg-shaped text and, where it has one, a
//! [`TypedResult`]. Handlers never print.
//!
//! ```no_run
//! let mut session = ntdbg_engine::Session::open_dump("crash.dmp".as_ref(), None)?;
//! for result in ntdbg_commands::run_batch(&mut session, ".ecxr; kn")? {
//!     print!("{}", result.output);
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod commands;
mod error;
pub mod live;
mod output;
pub mod parse;
mod policy;
pub mod render;
mod rows;
mod run;
pub mod spec;
mod suggest;
pub mod table;

pub use commands::kernel_objects::KernelLayoutOverride;
pub use error::{CommandError, ErrorCode};
pub use output::{
    CommandOutput, KernelProcessRow, KernelThreadRow, MemberValue, ModuleRow, NamedValue,
    PeHeadersResult, PeSectionRow, RegionRow, SearchHit, SortedJson, ThreadError, ThreadResult,
    ThreadRow, TypedResult, UnloadedModuleRow,
};
pub use policy::{FileGate, Policy, SymbolPathGate};
pub use rows::{
    CriticalSectionRow, ErrorCodeRow, EventFilterRow, FormatsRow, HandleRow, LastErrorRow,
    ThreadTimesRow, TypeCount, UniqueStack,
};
pub use run::{run_batch, run_batch_with, run_command, Batch, CommandResult, OnError, Status};
