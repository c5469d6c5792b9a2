//! Live targets: attaching over the GDB remote protocol and run control.
//!
//! [`LiveControl`] (shared behind an `Arc`) keeps the run state, the breakpoints and the
//! event log, and can be used without the session: `break_in` and waiting for events never
//! wait for a command in progress. The [`Session`](crate::Session) methods here resume,
//! step and wait for stops, and bring the target's threads and registers up to date after
//! each stop ([`Session::sync_live`]).

pub mod breakpoints;
mod control;
mod dump;
mod exception;
pub mod filters;
mod run;
mod run_book;
mod session;
mod stepping;
pub mod stop_text;
mod trap;
mod writes;

pub use breakpoints::{Access, BreakKind, Breakpoint, FrameOwner};
pub use control::{DumpKind, EventKind, Halt, Leave, LiveControl, LiveEvent, Resume, RunState};
pub use dump::DumpSummary;
pub use filters::{EventFilters, FilterAction, FilterSetting};
pub use ntdbg_gdbremote::{ThreadId, WindowsEvent, WindowsEventKind};
pub use session::AttachOptions;
pub use stop_text::{Chance, StopCause};
