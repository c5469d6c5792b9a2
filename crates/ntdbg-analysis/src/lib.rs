//! Crash triage for ntdbg.
//!
//! [`analyze`] turns a [`Session`](ntdbg_engine::Session) into a [`Report`]: the exception
//! or bugcheck decoded ([`exception`], [`bugcheck`]), the faulting module and stack, a stable crash [`signature`],
//! inferences with their basis, and the limitations of what could be known. [`render`] gives
//! the text forms (`.exr`, `!analyze -v`). [`fault`] classifies an access violation's address
//! and decodes the faulting instruction, [`cxx`] names thrown C++ types. Many dumps at once:
//! [`listing::list_dumps`] (header-only summaries) and [`triage::triage_dumps`] (parallel
//! analysis grouped by signature, JSON and HTML). [`kernel_objects`] reads kernel processes
//! and threads with field offsets from the kernel's PDB.

mod analyze;
pub mod bugcheck;
mod conclusion;
pub mod cxx;
pub mod error_text;
mod evidence;
pub mod exception;
pub mod fault;
pub mod frame_locals;
pub mod hang;
mod inference;
pub mod kernel_objects;
mod limits;
pub mod listing;
pub mod ntstatus;
pub mod render;
mod report;
pub mod signature;
pub mod stackwalk;
pub mod triage;

pub use analyze::{analyze, analyze_checked, analyze_with};
pub use report::{
    DumpFacts, EventFacts, Inference, ModuleFacts, PointedTo, Report, StackEntry, REPORT_FRAMES,
    REPORT_VERSION,
};
