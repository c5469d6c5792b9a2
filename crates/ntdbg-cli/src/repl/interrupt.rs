//! Ctrl-C while a command runs (at the prompt the editor reads it as a key): on a live
//! target that is running, break in (the waiting `g`/`p` then sees the stop); otherwise say
//! that the command cannot be cancelled (the engine has no cancellation hook for commands)
//! and let it finish, instead of ending ntdbg.

use ntdbg_engine::live::{LiveControl, RunState};
use std::sync::Arc;
use std::time::Duration;

/// How long a break-in may wait for the target to stop.
pub const BREAK_IN_WAIT: Duration = Duration::from_secs(5);

/// Installs the handler for this process; `live` is the session's live control, if any. A
/// failure (another handler is installed) is reported and Ctrl-C keeps its default action.
pub fn install(live: Option<Arc<LiveControl>>) {
    let result = ctrlc::set_handler(move || match &live {
        Some(live) if matches!(live.state(), RunState::Running) => break_in(live),
        _ => eprintln!(
            "\n^C: a command cannot be cancelled; it runs to its end (`q` quits at the prompt)"
        ),
    });
    if let Err(e) = result {
        eprintln!("warning: Ctrl-C cannot be caught ({e}); it will end ntdbg");
    }
}

/// Breaks into the running target, saying what happened on stderr.
pub fn break_in(live: &LiveControl) {
    match live.break_in(BREAK_IN_WAIT) {
        Ok(state) => eprintln!("\n^C: break-in: the target is {}", state.name()),
        Err(e) => eprintln!("\n^C: break-in failed: {e}"),
    }
}
