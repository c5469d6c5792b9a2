//! `ntdbg run --timeout`: a watchdog that cancels the command still running when the time is
//! up, through the session's [`Interrupt`] (as a cancelled MCP call does), and marks it timed
//! out in the results.

use ntdbg_commands::{CommandError, CommandResult, ErrorCode, Status};
use ntdbg_engine::Interrupt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Cancels a batch that runs past its time limit.
pub struct Watchdog {
    limit: Duration,
    fired: Arc<AtomicBool>,
    done: mpsc::Sender<()>,
    thread: JoinHandle<()>,
}

impl Watchdog {
    /// Starts the clock: `interrupt` is cancelled once `limit` has passed, unless
    /// [`finish`](Self::finish) comes first.
    pub fn start(interrupt: Interrupt, limit: Duration) -> Watchdog {
        let fired = Arc::new(AtomicBool::new(false));
        let (done, finished) = mpsc::channel::<()>();
        let thread = {
            let fired = fired.clone();
            std::thread::spawn(move || {
                if finished.recv_timeout(limit) == Err(RecvTimeoutError::Timeout) {
                    fired.store(true, Ordering::SeqCst);
                    interrupt.cancel();
                }
            })
        };
        Watchdog {
            limit,
            fired,
            done,
            thread,
        }
    }

    /// Stops the clock; if it ran out, the command it cancelled is reported timed out.
    pub fn finish(self, results: &mut [CommandResult]) {
        let _ = self.done.send(());
        let _ = self.thread.join();
        if !self.fired.load(Ordering::SeqCst) {
            return;
        }
        let cancelled = results.iter_mut().find(|r| {
            r.status == Status::Failed
                && r.error
                    .as_ref()
                    .is_some_and(|e| e.code == ErrorCode::Cancelled)
        });
        if let Some(result) = cancelled {
            let message = format!(
                "stopped after {} s (--timeout); a narrower range or a longer --timeout lets it finish",
                self.limit.as_secs()
            );
            result.status = Status::TimedOut;
            result.output = message.clone();
            result.error = Some(CommandError::new(ErrorCode::TimedOut, message));
        }
    }
}
