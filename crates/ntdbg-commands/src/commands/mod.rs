//! The command families, one module each. Every module exports `COMMANDS`.

pub(crate) mod address;
pub(crate) mod breakpoints;
pub(crate) mod disasm;
pub(crate) mod dump_file;
pub(crate) mod edit;
pub(crate) mod errors;
pub(crate) mod event_filters;
pub(crate) mod events;
pub(crate) mod frames;
pub(crate) mod handles;
pub(crate) mod kernel;
pub(crate) mod kernel_objects;
pub(crate) mod locks;
pub(crate) mod memory;
pub(crate) mod meta;
pub(crate) mod modules;
pub(crate) mod pe_headers;
pub(crate) mod process;
pub(crate) mod registers;
pub(crate) mod run_control;
pub(crate) mod search;
pub(crate) mod stack;
pub(crate) mod symbols;
pub(crate) mod threads;
pub(crate) mod threads_info;
pub(crate) mod typed;
pub(crate) mod types;

use crate::error::CommandError;
use crate::output::CommandOutput;
use ntdbg_engine::Session;

/// `.cxr`, `.trap` and `.thread` alone: back to the current thread's own registers.
pub(crate) fn reset_scope(session: &mut Session) -> CommandOutput {
    session.reset_scope();
    CommandOutput::text("Resetting default scope\n")
}

/// Evaluates an address expression, mapping errors to WinDbg's wording.
pub(crate) fn eval(session: &Session, text: &str) -> Result<u64, CommandError> {
    session.evaluate(text).map_err(CommandError::from)
}

/// One step of a walk over `total` threads, `done` of them done: the cancellation check
/// (`Cancelled after N of M threads`) and the progress report.
pub(crate) fn thread_step(
    session: &Session,
    done: usize,
    total: usize,
) -> Result<(), CommandError> {
    let interrupt = session.interrupt();
    if interrupt.check().is_err() {
        return Err(CommandError::new(
            crate::error::ErrorCode::Cancelled,
            format!("Cancelled after {done} of {total} threads"),
        ));
    }
    interrupt.report(done as u64, Some(total as u64), "walking threads");
    Ok(())
}
