//! Cancelling a long command and following its progress.
//!
//! An [`Interrupt`] is a cheap, cloneable token: a front end keeps one clone and gives the
//! other to the work (on the [`Session`](crate::Session) with
//! [`Session::set_interrupt`](crate::Session::set_interrupt), or to a batch job). The front
//! end calls [`Interrupt::cancel`] (MCP `notifications/cancelled`, Ctrl-C at the REPL); long
//! loops call [`Interrupt::check`] once per chunk of work (an atomic load, nothing more when
//! nobody cancels) and stop with [`Cancelled`], and say how far they are with
//! [`Interrupt::report`], which reaches the observer given to
//! [`Interrupt::with_progress`] (MCP `notifications/progress`), if any.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// How far a long piece of work is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress<'a> {
    /// Units done (bytes searched, threads walked, dumps analysed); grows as work advances.
    pub done: u64,
    /// Units in all, when known.
    pub total: Option<u64>,
    /// What is being done, for people (`searching memory`).
    pub message: &'a str,
}

/// Receives [`Progress`] reports, on the thread doing the work: it must be quick.
pub type ProgressObserver = dyn Fn(Progress<'_>) + Send + Sync;

/// A cancellation token with an optional progress observer; clones share both.
#[derive(Clone, Default)]
pub struct Interrupt {
    shared: Arc<Shared>,
}

#[derive(Default)]
struct Shared {
    cancelled: AtomicBool,
    observer: Option<Box<ProgressObserver>>,
}

impl std::fmt::Debug for Interrupt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Interrupt")
            .field("cancelled", &self.is_cancelled())
            .field("observed", &self.shared.observer.is_some())
            .finish()
    }
}

/// The error of work stopped by [`Interrupt::cancel`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("cancelled")]
pub struct Cancelled;

impl Interrupt {
    /// A token nobody has cancelled, with no progress observer.
    pub fn new() -> Interrupt {
        Interrupt::default()
    }

    /// A token whose [`report`](Self::report)s reach `observer`.
    pub fn with_progress(observer: impl Fn(Progress<'_>) + Send + Sync + 'static) -> Interrupt {
        Interrupt {
            shared: Arc::new(Shared {
                cancelled: AtomicBool::new(false),
                observer: Some(Box::new(observer)),
            }),
        }
    }

    /// Asks the work holding a clone of this token to stop at its next check.
    pub fn cancel(&self) {
        self.shared.cancelled.store(true, Ordering::Relaxed);
    }

    /// Whether [`cancel`](Self::cancel) was called on any clone.
    pub fn is_cancelled(&self) -> bool {
        self.shared.cancelled.load(Ordering::Relaxed)
    }

    /// `Err(Cancelled)` once the token is cancelled: long loops call it once per chunk.
    pub fn check(&self) -> Result<(), Cancelled> {
        if self.is_cancelled() {
            Err(Cancelled)
        } else {
            Ok(())
        }
    }

    /// Tells the progress observer, if there is one, how far the work is.
    pub fn report(&self, done: u64, total: Option<u64>, message: &str) {
        if let Some(observer) = &self.shared.observer {
            observer(Progress {
                done,
                total,
                message,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn a_cancel_on_one_clone_stops_every_clone() {
        let front = Interrupt::new();
        let work = front.clone();
        assert_eq!(work.check(), Ok(()));
        front.cancel();
        assert!(work.is_cancelled());
        assert_eq!(work.check(), Err(Cancelled));
        assert_eq!(Cancelled.to_string(), "cancelled");
        assert!(!Interrupt::new().is_cancelled(), "a new token is fresh");
    }

    #[test]
    fn reports_reach_the_observer_and_are_dropped_without_one() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let interrupt = Interrupt::with_progress(move |p| {
            sink.lock()
                .unwrap()
                .push((p.done, p.total, p.message.to_string()))
        });
        interrupt.clone().report(1, Some(4), "walking");
        interrupt.report(2, None, "walking");
        assert_eq!(
            *seen.lock().unwrap(),
            vec![(1, Some(4), "walking".into()), (2, None, "walking".into())]
        );
        Interrupt::new().report(1, None, "nobody listens");
    }
}
