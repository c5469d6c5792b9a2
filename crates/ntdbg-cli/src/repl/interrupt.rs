//! Ctrl-C while a command runs (at the prompt the editor reads it as a key): on a live
//! target that is running, break in (the waiting `g`/`p` then sees the stop); otherwise
//! cancel the command through the engine's [`Interrupt`]: a long loop (`s`, `~*`) stops at
//! its next check with a `cancelled` error, and ntdbg goes on at the prompt.

use ntdbg_engine::live::{LiveControl, RunState};
use ntdbg_engine::{Interrupt, Session};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// How long a break-in may wait for the target to stop.
pub const BREAK_IN_WAIT: Duration = Duration::from_secs(5);
/// How long a Ctrl-C on a halted live target waits for a command to resume it before it
/// cancels the command instead.
const RESUME_WAIT: Duration = Duration::from_millis(500);

/// The token of the command running now, which Ctrl-C cancels; each command gets a fresh
/// one ([`Running::arm`]), so a Ctrl-C never reaches the next command.
#[derive(Debug, Clone, Default)]
pub struct Running(Arc<Mutex<Interrupt>>);

impl Running {
    /// Gives the next command of `session` a fresh token, the one Ctrl-C now cancels.
    pub fn arm(&self, session: &mut Session) {
        let fresh = Interrupt::new();
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = fresh.clone();
        session.set_interrupt(fresh);
    }

    /// Cancels the command running now.
    fn cancel(&self) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .cancel();
    }
}

/// Installs the handler for this process; `live` is the session's live control, if any,
/// and `running` the token of the command running. A failure (another handler is
/// installed) is reported and Ctrl-C keeps its default action.
pub fn install(live: Option<Arc<LiveControl>>, running: Running) {
    let result = ctrlc::set_handler(move || match &live {
        Some(live) if resumes_soon(live) => break_in(live),
        _ => {
            running.cancel();
            eprintln!("\n^C: cancelling the command");
        }
    });
    if let Err(e) = result {
        eprintln!("warning: Ctrl-C cannot be caught ({e}); it will end ntdbg");
    }
}

/// Whether the live target runs now, or starts to within [`RESUME_WAIT`]: a Ctrl-C typed right
/// after `g` can arrive before the target is resumed, and it means "break in" there too, not
/// "give up waiting".
fn resumes_soon(live: &LiveControl) -> bool {
    let deadline = std::time::Instant::now() + RESUME_WAIT;
    loop {
        if matches!(live.state(), RunState::Running) {
            return true;
        }
        if std::time::Instant::now() >= deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Breaks into the running target, saying what happened on stderr.
pub fn break_in(live: &LiveControl) {
    match live.break_in(BREAK_IN_WAIT) {
        Ok(state) => eprintln!("\n^C: break-in: the target is {}", state.name()),
        Err(e) => eprintln!("\n^C: break-in failed: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ctrl_c_cancels_the_running_command_and_not_the_next() {
        let path = ntdbg_testutil::sample("crashy-x64-null.dmp");
        let mut session = Session::open_dump(&path, None).expect("sample opens");
        let stack = ntdbg_commands::run_command(&mut session, "k")
            .expect("k")
            .text;
        let running = Running::default();
        running.arm(&mut session);
        running.cancel();
        let err = ntdbg_commands::run_command(&mut session, "~*k").expect_err("cancelled");
        assert_eq!(err.code, ntdbg_engine::ErrorCode::Cancelled);
        running.arm(&mut session);
        let again = ntdbg_commands::run_command(&mut session, "k").expect("k");
        assert_eq!(again.text, stack);
    }
}
