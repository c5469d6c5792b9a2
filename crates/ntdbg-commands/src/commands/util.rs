//! What every command family uses: an address expression evaluated with WinDbg's error
//! wording, the scope reset of `.cxr`/`.trap`/`.thread` alone, and one step of a walk over all
//! threads (its cancellation check and progress).

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
