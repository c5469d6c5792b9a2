//! Crash triage for ntdbg.
//!
//! [`analyze`] turns a [`Session`](ntdbg_engine::Session) into a [`Report`]: the exception
//! or bugcheck decoded ([`exception`], [`bugcheck`]), the faulting module and stack, a stable crash [`signature`],
//! inferences with their basis, and the limitations of what could be known. [`render`] gives
//! the text forms (`.exr`, `!analyze -v`).
#![warn(missing_docs, missing_debug_implementations)]

pub mod bugcheck;
pub mod exception;
mod inference;
pub mod ntstatus;
pub mod render;
mod report;
pub mod signature;

pub use report::{
    analyze, DumpFacts, EventFacts, Inference, ModuleFacts, Report, StackEntry, REPORT_FRAMES,
};
