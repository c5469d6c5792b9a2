//! `.sym.xz` files decoded before a load asks for them. A walk over many threads loads one
//! module at a time, and on a first run most of that time is decoding; [`start`] hands the
//! `.xz` files the walk may need to one background thread, which decodes each into its copy
//! in the symbol cache (`unpacked.rs`) while the walk decodes others. A load that reaches a
//! file the thread is decoding waits for that decode ([`claim`]) instead of doing it again,
//! then reads the copy; a file the thread has not reached is decoded by the load itself and
//! skipped by the thread. A file nobody asks for costs only the thread's time.
//!
//! Bounded: one thread, one text in memory at a time (dropped once its copy is written), and
//! [`stop_decoding_ahead`] cancels the work between chunks of the decoder and joins the thread
//! (a cancelled decode writes no copy).

use std::collections::{HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;

/// The files waiting for the thread, each with the symbol cache its copy goes to.
#[derive(Default)]
struct Queue {
    files: VecDeque<(PathBuf, PathBuf)>,
    worker: Option<JoinHandle<()>>,
    running: bool,
}

static QUEUE: Mutex<Queue> = Mutex::new(Queue {
    files: VecDeque::new(),
    worker: None,
    running: false,
});
/// Set by [`stop_decoding_ahead`]: the thread stops at its next chunk.
static CANCELLED: AtomicBool = AtomicBool::new(false);

/// The copies being decoded now, by any thread (ahead or by a load).
static IN_FLIGHT: Mutex<Option<HashSet<PathBuf>>> = Mutex::new(None);
/// Signalled when a copy leaves [`IN_FLIGHT`].
static DONE: Condvar = Condvar::new();

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The right to decode one copy; dropping it lets those waiting in [`claim`] go on.
#[derive(Debug)]
pub(crate) struct Claim(PathBuf);

impl Drop for Claim {
    fn drop(&mut self) {
        if let Some(set) = lock(&IN_FLIGHT).as_mut() {
            set.remove(&self.0);
        }
        DONE.notify_all();
    }
}

/// Claims the copy at `copy`, first waiting for whoever decodes it now to finish.
pub(crate) fn claim(copy: &Path) -> Claim {
    let mut set = lock(&IN_FLIGHT);
    while set.as_ref().is_some_and(|s| s.contains(copy)) {
        set = DONE.wait(set).unwrap_or_else(|e| e.into_inner());
    }
    set.get_or_insert_with(HashSet::new)
        .insert(copy.to_path_buf());
    Claim(copy.to_path_buf())
}

/// Claims the copy at `copy` unless someone decodes it now.
pub(crate) fn try_claim(copy: &Path) -> Option<Claim> {
    let mut set = lock(&IN_FLIGHT);
    let set = set.get_or_insert_with(HashSet::new);
    set.insert(copy.to_path_buf())
        .then(|| Claim(copy.to_path_buf()))
}

/// Queues the `.xz` files `files` for decoding into copies under the symbol cache `cache`,
/// in this order, and starts the thread if it is not running.
pub(crate) fn start(files: Vec<PathBuf>, cache: &Path) {
    let mut queue = lock(&QUEUE);
    for file in files {
        if !queue.files.iter().any(|(f, _)| *f == file) {
            queue.files.push_back((file, cache.to_path_buf()));
        }
    }
    if queue.running || queue.files.is_empty() {
        return;
    }
    if let Some(done) = queue.worker.take() {
        let _ = done.join();
    }
    let spawned = std::thread::Builder::new()
        .name("ntdbg-decode-ahead".into())
        .spawn(work);
    if let Ok(handle) = spawned {
        queue.worker = Some(handle);
        queue.running = true;
    }
}

/// The thread: decodes queued files until the queue is empty or the work is cancelled.
fn work() {
    loop {
        let next = {
            let mut queue = lock(&QUEUE);
            match queue.files.pop_front() {
                Some(next) if !CANCELLED.load(Ordering::Relaxed) => next,
                _ => {
                    queue.running = false;
                    return;
                }
            }
        };
        let (file, cache) = next;
        let Ok(xz) = std::fs::read(&file) else {
            continue;
        };
        let decoded =
            crate::unpacked::decode_ahead(&xz, &cache, crate::load::MAX_SYM_SIZE, &|| {
                CANCELLED.load(Ordering::Relaxed)
            });
        tracing::debug!(file = %file.display(), decoded, "decoded ahead");
    }
}

/// Cancels the decoding ahead (the file being decoded is dropped, no copy written) and waits
/// for the thread to end; a later [`start`] starts again. For a process about to exit.
pub fn stop_decoding_ahead() {
    let worker = {
        let mut queue = lock(&QUEUE);
        queue.files.clear();
        queue.worker.take()
    };
    CANCELLED.store(true, Ordering::Relaxed);
    if let Some(worker) = worker {
        let _ = worker.join();
    }
    CANCELLED.store(false, Ordering::Relaxed);
}

/// Whether `claim` would wait for `copy` now (for tests).
#[cfg(test)]
pub(crate) fn in_flight(copy: &Path) -> bool {
    lock(&IN_FLIGHT).as_ref().is_some_and(|s| s.contains(copy))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_claim_waits_for_the_one_before_it() {
        let copy = std::env::temp_dir().join(format!("ntdbg-claim-{}", std::process::id()));
        let first = claim(&copy);
        assert!(try_claim(&copy).is_none());
        let waiter = std::thread::spawn({
            let copy = copy.clone();
            move || drop(claim(&copy))
        });
        std::thread::sleep(std::time::Duration::from_millis(20));
        assert!(!waiter.is_finished(), "the second claim waits");
        drop(first);
        waiter.join().unwrap();
        assert!(!in_flight(&copy));
        assert!(try_claim(&copy).is_some());
    }
}
