//! The symbol-download indicator on stderr, e.g.
//! `downloading symbols: 3/12 modules (ntdll.pdb 1.2 MB)`.
//!
//! Shown only once symbol-server requests have kept the user waiting for [`SHOW_AFTER`]; on a
//! terminal the line is redrawn in place and erased when the downloads end, elsewhere (a
//! log, a pipe) a plain line is written at most every [`LOG_EVERY`]. Never on stdout, so
//! command output and `--json` stay clean; the MCP server installs no indicator.

use std::io::{IsTerminal, Write};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ntdbg_symbols::{DownloadObserver, DownloadProgress, SymbolStore};

/// How long downloads run before the indicator appears.
const SHOW_AFTER: Duration = Duration::from_secs(1);
/// How often the indicator is redrawn on a terminal.
const TICK: Duration = Duration::from_millis(200);
/// How often a line is written when stderr is not a terminal.
const LOG_EVERY: Duration = Duration::from_secs(5);

/// The latest progress and since when requests have been under way.
#[derive(Default)]
struct Latest {
    progress: DownloadProgress,
    busy_since: Option<Instant>,
}

/// The drawing thread, started by the first request: runs without downloads start none.
enum Drawer {
    NotStarted,
    Running {
        /// Dropped to stop the thread: its wait ends when the channel disconnects.
        stop: Sender<()>,
        thread: JoinHandle<()>,
    },
    Stopped,
}

/// Receives the store's progress (on its loading threads).
struct Observer {
    /// Shared with the drawing thread.
    latest: Arc<Mutex<Latest>>,
    drawer: Mutex<Drawer>,
}

impl Observer {
    /// Starts the drawing thread unless it runs or has been stopped.
    fn start_drawing(&self) {
        let mut drawer = self.drawer.lock().unwrap_or_else(|e| e.into_inner());
        if !matches!(*drawer, Drawer::NotStarted) {
            return;
        }
        let latest = self.latest.clone();
        let (stop, stopped) = mpsc::channel();
        let thread = std::thread::spawn(move || draw(&latest, &stopped));
        *drawer = Drawer::Running { stop, thread };
    }
}

impl DownloadObserver for Observer {
    fn progress(&self, progress: &DownloadProgress) {
        let mut latest = self.latest.lock().unwrap_or_else(|e| e.into_inner());
        latest.progress = progress.clone();
        if progress.transfers.is_empty() {
            if progress.is_idle() {
                latest.busy_since = None;
            }
            return;
        }
        latest.busy_since.get_or_insert_with(Instant::now);
        drop(latest);
        self.start_drawing();
    }
}

/// The indicator for one store; dropping it stops it at once (no waiting out a tick) and
/// erases its line.
pub struct Indicator {
    observer: Arc<Observer>,
}

impl Indicator {
    /// Starts following `store`'s downloads.
    pub fn install(store: &SymbolStore) -> Indicator {
        let observer = Arc::new(Observer {
            latest: Arc::default(),
            drawer: Mutex::new(Drawer::NotStarted),
        });
        store.set_download_observer(Some(observer.clone()));
        Indicator { observer }
    }
}

impl Drop for Indicator {
    fn drop(&mut self) {
        let drawer = {
            let mut drawer = self
                .observer
                .drawer
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            std::mem::replace(&mut *drawer, Drawer::Stopped)
        };
        if let Drawer::Running { stop, thread } = drawer {
            drop(stop);
            if let Err(e) = thread.join() {
                std::panic::resume_unwind(e);
            }
        }
    }
}

/// The drawing loop: every [`TICK`] until `stopped` disconnects, shows the line when due.
fn draw(latest: &Mutex<Latest>, stopped: &Receiver<()>) {
    let terminal = std::io::stderr().is_terminal();
    let mut shown = false;
    let mut last_log: Option<Instant> = None;
    while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(TICK) {
        let line = {
            let latest = latest.lock().unwrap_or_else(|e| e.into_inner());
            latest
                .busy_since
                .filter(|since| since.elapsed() >= SHOW_AFTER)
                .map(|_| line(&latest.progress))
        };
        let mut err = std::io::stderr().lock();
        match (line, terminal) {
            (Some(line), true) => {
                let _ = write!(err, "\r{line}\x1b[K");
                shown = true;
            }
            (Some(line), false) => {
                if last_log.is_none_or(|t| t.elapsed() >= LOG_EVERY) {
                    let _ = writeln!(err, "{line}");
                    last_log = Some(Instant::now());
                }
            }
            (None, _) => {
                last_log = None;
                if shown {
                    let _ = write!(err, "\r\x1b[K");
                    shown = false;
                }
            }
        }
        let _ = err.flush();
    }
    if shown {
        let _ = write!(std::io::stderr(), "\r\x1b[K");
    }
}

/// `downloading symbols: 3/12 modules (ntdll.pdb 1.2 of 5.0 MB, 2 more files)`.
fn line(p: &DownloadProgress) -> String {
    let mut out = format!(
        "downloading symbols: {}/{} module{}",
        p.modules_done,
        p.modules_total,
        if p.modules_total == 1 { "" } else { "s" }
    );
    if let Some(first) = p.transfers.first() {
        let size = match first.total {
            Some(total) => format!("{} of {}", megabytes(first.bytes), megabytes(total)),
            None => megabytes(first.bytes),
        };
        out.push_str(&format!(" ({} {size}", first.file));
        match p.transfers.len() - 1 {
            0 => {}
            1 => out.push_str(", 1 more file"),
            n => out.push_str(&format!(", {n} more files")),
        }
        out.push(')');
    }
    out
}

fn megabytes(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ntdbg_symbols::Transfer;

    #[test]
    fn line_shape() {
        let transfer = |file: &str, bytes, total| Transfer {
            file: file.to_string(),
            bytes,
            total,
        };
        let p = DownloadProgress {
            modules_done: 3,
            modules_total: 12,
            transfers: vec![transfer("ntdll.pdb", 1_200_000, None)],
        };
        assert_eq!(
            line(&p),
            "downloading symbols: 3/12 modules (ntdll.pdb 1.2 MB)"
        );
        let p = DownloadProgress {
            modules_done: 0,
            modules_total: 1,
            transfers: vec![
                transfer("a.pdb", 0, Some(5_000_000)),
                transfer("b.pdb", 7, None),
                transfer("c.dll", 7, None),
            ],
        };
        assert_eq!(
            line(&p),
            "downloading symbols: 0/1 module (a.pdb 0.0 MB of 5.0 MB, 2 more files)"
        );
    }
}
