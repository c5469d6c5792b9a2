//! Live targets in the command layer. Read-only sessions refuse run control and
//! breakpoints; a command that needs a halted target waits for a stop, or is not run.

use crate::error::{CommandError, ErrorCode};
use crate::spec::{CommandSpec, Effect, Needs};
use ntdbg_engine::live::RunState;
use ntdbg_engine::Session;

/// Checks that `spec` may run now, waiting for a running target to stop when it needs to.
pub(crate) fn gate(session: &mut Session, spec: &CommandSpec) -> Result<(), CommandError> {
    let Some(live) = session.live().cloned() else {
        return Ok(());
    };
    if spec.effect != Effect::None && live.read_only() {
        return Err(CommandError::new(
            ErrorCode::ReadOnly,
            format!(
                "'{}' is refused: the session is read-only (no run control, breakpoints or writes)",
                spec.names[0]
            ),
        ));
    }
    let resumes = matches!(spec.effect, Effect::Run | Effect::Step);
    let needs_halted = spec.needs == Needs::Halted;
    match live.state() {
        RunState::Running if resumes => {
            return Err(CommandError::new(
                ErrorCode::TargetRunning,
                format!(
                    "'{}' is refused: the target is already running",
                    spec.names[0]
                ),
            ));
        }
        RunState::Exited(why) if needs_halted => {
            return Err(CommandError::new(
                ErrorCode::TargetGone,
                format!(
                    "the target is gone ({why}): '{}' was not run",
                    spec.names[0]
                ),
            )
            .with_hint("close the session; attach again to debug a new process"));
        }
        RunState::Detached if needs_halted => {
            return Err(CommandError::new(
                ErrorCode::TargetGone,
                "the debugger detached from the target",
            ));
        }
        _ => {}
    }
    if needs_halted && !session.wait_until_halted()? {
        return Err(CommandError::new(
            ErrorCode::TargetRunning,
            format!(
                "the target is still running after {} ms: '{}' was not run",
                live.command_wait().as_millis(),
                spec.names[0]
            ),
        ));
    }
    Ok(())
}

/// What the target printed for the stops the session has not shown yet (the reason and the
/// next instruction), bringing the session up to date; empty when there is nothing new.
/// Front ends call it after `break_in` and `wait_for_event`.
pub fn pending_stop(session: &mut Session) -> Result<String, CommandError> {
    Ok(crate::commands::run_control::shown_stop(session)?.text)
}
