//! Accepted reports into the database. One committer thread takes every report waiting and
//! commits them in one durable transaction ([`ntdbg_store::Store::accept`]), then answers each
//! upload: a handful of commits a second carry thousands of uploads, and no client is answered
//! before its report is safe. A database that goes away (PostgreSQL restarting) is reconnected
//! to while the uploads wait.

use ntdbg_store::{DbLocation, Doorbell, Store, StoreError, Upload};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};

/// Reports committed together at most.
const MAX_BATCH: usize = 2_048;
/// Reports waiting for the committer at most (uploads beyond wait for room).
const MAX_WAITING: usize = 8_192;
/// How long a commit keeps reconnecting to a database that went away.
const RECONNECT_FOR: Duration = Duration::from_secs(30);

/// A report waiting for its commit.
struct Waiting {
    upload: Upload,
    done: oneshot::Sender<Result<(), String>>,
}

/// The way into the committer.
#[derive(Clone)]
pub struct Intake {
    queue: mpsc::Sender<Waiting>,
}

impl Intake {
    /// Starts the committer, which opens the database (failing now if it cannot be opened)
    /// and rings `doorbell` after each commit. It ends when every `Intake` is dropped.
    ///
    /// The database is opened on the committer's own thread: the PostgreSQL client blocks on
    /// a runtime of its own, which cannot start on a thread of the server's.
    pub fn start(
        location: &DbLocation,
        doorbell: Arc<Doorbell>,
    ) -> Result<(Intake, std::thread::JoinHandle<()>), StoreError> {
        let (queue, waiting) = mpsc::channel(MAX_WAITING);
        let (opened, first_open) = std::sync::mpsc::sync_channel(1);
        let location = location.clone();
        let thread = std::thread::Builder::new()
            .name("ntdbg-intake".into())
            .spawn(move || match open(&location) {
                Ok(store) => {
                    let _ = opened.send(Ok(()));
                    commit_loop(Some(store), &location, waiting, &doorbell);
                }
                Err(e) => {
                    let _ = opened.send(Err(e));
                }
            })
            .map_err(|e| StoreError::new(format!("cannot start the committer: {e}")))?;
        match first_open.recv() {
            Ok(Ok(())) => Ok((Intake { queue }, thread)),
            Ok(Err(e)) => Err(e),
            Err(_) => Err(StoreError::new(
                "the committer ended before it opened the database",
            )),
        }
    }

    /// Records `upload` and queues its dump; returns once that is durable.
    pub async fn record(&self, upload: Upload) -> Result<(), String> {
        let (done, answer) = oneshot::channel();
        self.queue
            .send(Waiting { upload, done })
            .await
            .map_err(|_| "the collector is shutting down".to_string())?;
        answer
            .await
            .map_err(|_| "the collector is shutting down".to_string())?
    }
}

/// The database, with every commit durable.
fn open(location: &DbLocation) -> Result<Store, StoreError> {
    let mut store = Store::open(location)?;
    store.durable_commits()?;
    Ok(store)
}

fn commit_loop(
    mut store: Option<Store>,
    location: &DbLocation,
    mut waiting: mpsc::Receiver<Waiting>,
    doorbell: &Doorbell,
) {
    while let Some(first) = waiting.blocking_recv() {
        let mut batch = vec![first];
        while batch.len() < MAX_BATCH {
            match waiting.try_recv() {
                Ok(w) => batch.push(w),
                Err(_) => break,
            }
        }
        let uploads: Vec<Upload> = batch.iter().map(|w| w.upload.clone()).collect();
        let result = commit(&mut store, location, &uploads);
        if result.is_ok() {
            doorbell.ring();
        } else if let Err(e) = &result {
            tracing::error!("{} upload(s) not recorded: {e}", uploads.len());
        }
        for w in batch {
            let _ = w.done.send(result.clone());
        }
    }
}

/// Commits `uploads`, reconnecting (with backoff, for at most [`RECONNECT_FOR`]) while the
/// database is away.
fn commit(
    store: &mut Option<Store>,
    location: &DbLocation,
    uploads: &[Upload],
) -> Result<(), String> {
    let deadline = Instant::now() + RECONNECT_FOR;
    let mut backoff = Duration::from_millis(100);
    loop {
        let result = match store {
            Some(s) => s.accept(uploads).map(|_| ()),
            None => open(location).and_then(|mut s| {
                let r = s.accept(uploads).map(|_| ());
                *store = Some(s);
                r
            }),
        };
        match result {
            Err(e) if e.transient && Instant::now() < deadline => {
                tracing::warn!("{e}; reconnecting in {} ms", backoff.as_millis());
                *store = None;
                std::thread::sleep(backoff);
                backoff = (backoff * 2).min(Duration::from_secs(2));
            }
            other => return other.map_err(|e| e.to_string()),
        }
    }
}
