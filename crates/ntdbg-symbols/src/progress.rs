//! Loading and download progress, reported to an observer that a front end renders (the CLI's
//! stderr indicator). The store only reports; it never prints.

use std::sync::{Arc, Mutex, RwLock};

/// What the symbol store is doing now: modules loading in the current burst of work, and the
/// files being downloaded.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DownloadProgress {
    /// Modules of the current burst whose symbols are loaded.
    pub modules_done: usize,
    /// Modules in the current burst (loaded, loading or waiting). Both counts return to 0
    /// when the burst ends.
    pub modules_total: usize,
    /// Files being downloaded now (waiting for the server included), oldest first.
    pub transfers: Vec<Transfer>,
}

impl DownloadProgress {
    /// Whether nothing is loading.
    pub fn is_idle(&self) -> bool {
        self.modules_total == 0 && self.transfers.is_empty()
    }
}

/// One file being downloaded from a symbol server.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transfer {
    /// The file's name (`ntdll.pdb`).
    pub file: String,
    /// Bytes received so far.
    pub bytes: u64,
    /// The size the server announced, when it did.
    pub total: Option<u64>,
}

/// Receives a [`DownloadProgress`] snapshot whenever a module load starts or ends and as
/// downloads advance. Called on the loading threads (several at once): it must be quick and
/// must not call back into the store.
pub trait DownloadObserver: Send + Sync {
    /// The state after a change.
    fn progress(&self, progress: &DownloadProgress);
}

/// How many bytes a transfer receives between two reports.
pub(crate) const REPORT_EVERY: u64 = 256 * 1024;

/// The store's progress state and its observer.
#[derive(Default)]
pub(crate) struct Progress {
    state: Mutex<State>,
    observer: RwLock<Option<Arc<dyn DownloadObserver>>>,
}

#[derive(Default)]
struct State {
    done: usize,
    total: usize,
    transfers: Vec<(u64, Transfer)>,
    next_id: u64,
}

impl std::fmt::Debug for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Progress")
            .field("observed", &self.observer().is_some())
            .finish()
    }
}

impl Progress {
    /// Replaces the observer (`None`: nobody is told).
    pub fn set_observer(&self, observer: Option<Arc<dyn DownloadObserver>>) {
        *self.observer.write().unwrap_or_else(|e| e.into_inner()) = observer;
    }

    fn observer(&self) -> Option<Arc<dyn DownloadObserver>> {
        self.observer
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Applies `change` and tells the observer, outside the lock.
    fn update<T>(&self, change: impl FnOnce(&mut State) -> T) -> T {
        let (out, snapshot) = {
            let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
            let out = change(&mut state);
            let snapshot = DownloadProgress {
                modules_done: state.done,
                modules_total: state.total,
                transfers: state.transfers.iter().map(|(_, t)| t.clone()).collect(),
            };
            (out, snapshot)
        };
        if let Some(observer) = self.observer() {
            observer.progress(&snapshot);
        }
        out
    }

    /// `n` more modules are about to load.
    pub fn modules_queued(&self, n: usize) {
        if n > 0 {
            self.update(|s| s.total += n);
        }
    }

    /// One queued module finished loading; the burst ends when all have.
    pub fn module_done(&self) {
        self.update(|s| {
            s.done = (s.done + 1).min(s.total);
            if s.done == s.total {
                s.done = 0;
                s.total = 0;
            }
        });
    }

    /// A download of `file` starts; the guard reports its bytes and its end.
    pub fn transfer(&self, file: &str) -> TransferGuard<'_> {
        let id = self.update(|s| {
            s.next_id += 1;
            s.transfers.push((
                s.next_id,
                Transfer {
                    file: file.to_string(),
                    bytes: 0,
                    total: None,
                },
            ));
            s.next_id
        });
        TransferGuard { progress: self, id }
    }
}

/// A download in progress; dropping it ends it.
pub(crate) struct TransferGuard<'a> {
    progress: &'a Progress,
    id: u64,
}

impl TransferGuard<'_> {
    /// The server's announced size, and the bytes received so far.
    pub fn report(&self, bytes: u64, total: Option<u64>) {
        self.progress.update(|s| {
            if let Some((_, t)) = s.transfers.iter_mut().find(|(id, _)| *id == self.id) {
                t.bytes = bytes;
                t.total = total.or(t.total);
            }
        });
    }
}

impl Drop for TransferGuard<'_> {
    fn drop(&mut self) {
        self.progress
            .update(|s| s.transfers.retain(|(id, _)| *id != self.id));
    }
}

/// A reader that reports the bytes read through a [`TransferGuard`] every
/// [`REPORT_EVERY`] bytes and at the end, and fails (`cancelled`) once `cancelled` says so.
pub(crate) struct CountingReader<'g, 'p, R> {
    pub inner: R,
    pub guard: &'g TransferGuard<'p>,
    pub cancelled: &'g dyn Fn() -> bool,
    pub total: Option<u64>,
    pub bytes: u64,
    pub reported: u64,
}

impl<R: std::io::Read> std::io::Read for CountingReader<'_, '_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if (self.cancelled)() {
            return Err(std::io::Error::other("cancelled"));
        }
        let n = self.inner.read(buf)?;
        self.bytes += n as u64;
        if self.bytes - self.reported >= REPORT_EVERY || (n == 0 && self.bytes > self.reported) {
            self.reported = self.bytes;
            self.guard.report(self.bytes, self.total);
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Record(Mutex<Vec<DownloadProgress>>);

    impl DownloadObserver for Record {
        fn progress(&self, progress: &DownloadProgress) {
            self.0.lock().unwrap().push(progress.clone());
        }
    }

    #[test]
    fn bursts_and_transfers_are_reported() {
        let progress = Progress::default();
        let record = Arc::new(Record::default());
        progress.set_observer(Some(record.clone()));
        progress.modules_queued(2);
        {
            let guard = progress.transfer("ntdll.pdb");
            guard.report(1000, Some(5000));
        }
        progress.module_done();
        progress.module_done();
        let seen = record.0.lock().unwrap().clone();
        assert_eq!(seen[0].modules_total, 2);
        assert_eq!(
            seen[2].transfers,
            vec![Transfer {
                file: "ntdll.pdb".to_string(),
                bytes: 1000,
                total: Some(5000)
            }]
        );
        assert!(seen[3].transfers.is_empty());
        assert_eq!((seen[4].modules_done, seen[4].modules_total), (1, 2));
        assert!(seen[5].is_idle());
    }
}
