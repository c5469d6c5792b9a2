//! Progress notifications and cancellation of one tool call.
//!
//! [`CallInterrupt::of`] joins a request to the engine's [`Interrupt`] for the call's
//! duration: rmcp cancels the request's token on `notifications/cancelled` (and then sends
//! no response for it, as the protocol says), which cancels the engine's work at its next
//! check; and when the request's `_meta` carries a `progressToken`, the engine's progress
//! reports go out as `notifications/progress`, at most one per [`MIN_INTERVAL`], with
//! `progress` strictly increasing. Dropping the [`CallInterrupt`] (the call returned) stops
//! both, so no notification follows the response. A call running as a task
//! ([`crate::tasks`]) is cancelled by `tasks/cancel` through the same token, and its progress
//! becomes the task's status message.

use crate::tasks::StatusSink;
use ntdbg_engine::Interrupt;
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::RequestContext;
use rmcp::RoleServer;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};
use tokio::task::AbortHandle;

/// Shortest time between two progress notifications of one call.
pub const MIN_INTERVAL: Duration = Duration::from_millis(100);

/// The engine token of one tool call, cancelled with the request; see the module docs.
#[derive(Debug)]
pub struct CallInterrupt {
    interrupt: Interrupt,
    tasks: Vec<AbortHandle>,
}

/// One progress report the throttle let through.
struct Update {
    progress: u64,
    total: Option<u64>,
    message: String,
}

impl CallInterrupt {
    /// The token for the call `context` belongs to (must be called on the tokio runtime).
    /// A call running as a task ([`StatusSink`] in the context's extensions) shows its progress
    /// in the task's status message instead of sending notifications.
    pub fn of(context: &RequestContext<RoleServer>) -> CallInterrupt {
        let mut tasks = Vec::new();
        let redactor = crate::redact::Redactor::current();
        let interrupt = if let Some(sink) = context.extensions.get::<StatusSink>() {
            let sink = sink.clone();
            throttled(move |u| {
                sink.report(
                    u.progress,
                    u.total,
                    &redacted(redactor.as_deref(), u.message),
                )
            })
        } else if let Some(token) = context.meta.get_progress_token() {
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
            let peer = context.peer.clone();
            tasks.push(tokio::spawn(forward(peer, token, rx, redactor)).abort_handle());
            throttled(move |u| {
                let _ = tx.send(u);
            })
        } else {
            Interrupt::new()
        };
        let ct = context.ct.clone();
        let engine = interrupt.clone();
        tasks.push(
            tokio::spawn(async move {
                ct.cancelled().await;
                engine.cancel();
            })
            .abort_handle(),
        );
        CallInterrupt { interrupt, tasks }
    }

    /// The engine token: give a clone to the work (a session, a triage).
    pub fn interrupt(&self) -> &Interrupt {
        &self.interrupt
    }
}

impl Drop for CallInterrupt {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// Sends the updates in order until the call ends.
async fn forward(
    peer: rmcp::Peer<RoleServer>,
    token: ProgressToken,
    mut updates: tokio::sync::mpsc::UnboundedReceiver<Update>,
    redactor: Option<std::sync::Arc<crate::redact::Redactor>>,
) {
    while let Some(update) = updates.recv().await {
        let mut param = ProgressNotificationParam::new(token.clone(), update.progress as f64)
            .with_message(redacted(redactor.as_deref(), update.message));
        param.total = update.total.map(|t| t as f64);
        if peer.notify_progress(param).await.is_err() {
            return;
        }
    }
}

/// An engine token whose progress reports go, throttled, to `send`.
fn throttled(send: impl Fn(Update) + Send + Sync + 'static) -> Interrupt {
    let throttle = Mutex::new(Throttle::default());
    Interrupt::with_progress(move |p| {
        let admitted = throttle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .admit(p.done, p.total, Instant::now());
        if let Some((progress, total)) = admitted {
            send(Update {
                progress,
                total,
                message: p.message.to_string(),
            });
        }
    })
}

/// Turns the engine's reports into notifications: a report whose `done` is below the last
/// one starts a new phase (the next command of a batch), counted on from where the last
/// phase ended, so `progress` only grows (the total is then unknown); a notification goes out
/// when its progress is past the last one sent and [`MIN_INTERVAL`] after it.
#[derive(Debug, Default)]
struct Throttle {
    /// Progress of the phases before the current one.
    offset: u64,
    /// The current phase's last `done`.
    done: u64,
    /// The last progress sent, and when.
    sent: Option<(u64, Instant)>,
}

impl Throttle {
    /// The `(progress, total)` to send for a report, or `None` to drop it.
    fn admit(&mut self, done: u64, total: Option<u64>, now: Instant) -> Option<(u64, Option<u64>)> {
        if done < self.done {
            self.offset += self.done;
        }
        self.done = done;
        let progress = self.offset + done;
        let due = match self.sent {
            None => true,
            Some((sent, at)) => progress > sent && now.duration_since(at) >= MIN_INTERVAL,
        };
        if !due {
            return None;
        }
        self.sent = Some((progress, now));
        Some((progress, total.filter(|_| self.offset == 0)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_throttle_sends_growing_progress_at_a_bounded_rate() {
        let mut throttle = Throttle::default();
        let t0 = Instant::now();
        let at = |n: u32| t0 + MIN_INTERVAL * n;
        assert_eq!(throttle.admit(0, Some(10), t0), Some((0, Some(10))));
        assert_eq!(
            throttle.admit(5, Some(10), t0 + MIN_INTERVAL / 2),
            None,
            "too soon"
        );
        assert_eq!(throttle.admit(6, Some(10), at(1)), Some((6, Some(10))));
        assert_eq!(
            throttle.admit(6, Some(10), at(3)),
            None,
            "progress must grow"
        );
        assert_eq!(throttle.admit(8, Some(10), at(3)), Some((8, Some(10))));
    }

    #[test]
    fn a_new_phase_counts_on_from_the_last() {
        let mut throttle = Throttle::default();
        let t0 = Instant::now();
        let at = |n: u32| t0 + MIN_INTERVAL * n;
        assert_eq!(throttle.admit(7, Some(9), t0), Some((7, Some(9))));
        assert_eq!(
            throttle.admit(0, Some(4), at(1)),
            None,
            "7 + 0 is not past 7"
        );
        assert_eq!(throttle.admit(2, Some(4), at(2)), Some((9, None)));
    }
}

/// A progress message as the client may see it (`--redact`).
fn redacted(redactor: Option<&crate::redact::Redactor>, message: String) -> String {
    match redactor {
        Some(r) => r.redact_text(&message, &mut Default::default()),
        None => message,
    }
}
