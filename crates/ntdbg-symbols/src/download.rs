//! HTTP symbol servers (and object stores, [`crate::remote`]): downloading store files into
//! the local cache.
//!
//! For a file `NAME` under the key `KEY` a server is asked, in order, for
//! `URL/DIR/KEY/NAME`, the CAB-compressed `URL/DIR/KEY/NAM_`, and the redirection
//! `URL/DIR/KEY/file.ptr` (`DIR` is `NAME` except for Breakpad `.sym` files, which live under
//! the PDB's name). A file that arrives is written to `CACHE/DIR/KEY/NAME`, where the next
//! lookup finds it without the network; the caller verifies it and deletes it on a mismatch.
//!
//! Within one [`crate::SymbolStore`] (a debugging session) a URL that answered "not found" is
//! not asked again, and a server that could not be reached (refused, timed out) is not
//! contacted again. Each module load has a time budget shared by all its requests. Every
//! request is noted in `tried`: URL, status, bytes and milliseconds.

use std::collections::{HashMap, HashSet};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock, RwLock};
use std::time::{Duration, Instant};

use crate::compressed::{compressed_name, decompress_cab};
use crate::locate::path_ci;
use crate::progress::{CountingReader, Progress};
use crate::remote::is_object_store;
use crate::RemoteError;
use crate::{CancelCheck, SymbolPath};

/// The default time budget for one module's downloads.
pub(crate) const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// Largest file accepted from a server (PDBs of big binaries reach a few hundred MiB).
const MAX_DOWNLOAD: u64 = 4 << 30;

/// Largest `file.ptr` accepted.
const MAX_POINTER: u64 = 4096;

/// What the servers said earlier in this session.
#[derive(Debug, Default)]
pub(crate) struct DownloadState {
    /// URLs that answered "not found" (the negative cache).
    missing: Mutex<HashSet<String>>,
    /// Servers that could not be reached, with the reason.
    down: Mutex<HashMap<String, String>>,
    /// One agent (connection pool) for the session.
    agent: OnceLock<ureq::Agent>,
    /// Counter for unique temporary file names.
    temp: AtomicU64,
    /// What is loading and downloading now, for an observer.
    pub(crate) progress: Progress,
    /// Whether the current work was cancelled.
    cancel: CancelSlot,
}

/// The store's [`CancelCheck`], if one was given.
#[derive(Default)]
struct CancelSlot(RwLock<Option<CancelCheck>>);

impl std::fmt::Debug for CancelSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CancelSlot")
    }
}

impl DownloadState {
    /// Says how to tell that the current work was cancelled.
    pub(crate) fn set_cancel_check(&self, check: Option<CancelCheck>) {
        *self.cancel.0.write().unwrap_or_else(|e| e.into_inner()) = check;
    }

    /// Whether the current work was cancelled: no new request starts, a transfer stops.
    pub(crate) fn cancelled(&self) -> bool {
        self.cancel
            .0
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .is_some_and(|check| check())
    }

    fn agent(&self) -> &ureq::Agent {
        self.agent.get_or_init(|| {
            ureq::Agent::config_builder()
                .http_status_as_error(false)
                .user_agent(concat!("ntdbg/", env!("CARGO_PKG_VERSION")))
                .build()
                .into()
        })
    }

    fn is_missing(&self, url: &str) -> bool {
        self.missing
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(url)
    }

    fn mark_missing(&self, url: &str) {
        self.missing
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(url.to_string());
    }

    fn down_reason(&self, server: &str) -> Option<String> {
        self.down
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(server)
            .cloned()
    }

    fn mark_down(&self, server: &str, reason: String) {
        self.down
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(server.to_string())
            .or_insert(reason);
    }
}

/// One HTTP server of the symbol path and the cache its files go to.
#[derive(Clone, Debug)]
struct Server {
    url: String,
    cache: PathBuf,
}

/// A file obtained through [`Downloads::fetch`].
#[derive(Debug)]
pub(crate) struct Fetched {
    /// Where it is now.
    pub path: PathBuf,
    /// Whether it was written into the cache by this fetch (so a mismatch deletes it).
    pub downloaded: bool,
}

/// The download context of one module load.
pub(crate) struct Downloads<'a> {
    servers: Vec<Server>,
    state: &'a DownloadState,
    offline: bool,
    budget: Duration,
    deadline: Option<Instant>,
    offline_noted: bool,
}

/// The outcome of one GET.
enum Got {
    /// 200: the body was written to the given temporary file.
    File(PathBuf, u64),
    /// 200 for a small text body (`file.ptr`).
    Text(String),
    /// 404 or 410.
    NotFound,
    /// Another status.
    Status(u16),
    /// The server could not be reached or timed out (the server is given up for the session).
    Unreachable(String),
    /// A local failure (writing the cache) or a broken transfer.
    Failed(String),
}

impl<'a> Downloads<'a> {
    /// The HTTP servers of `path`, each with its download cache (the first `CACHE` of
    /// `srv*CACHE*URL`, else [`SymbolPath::default_cache_dir`]).
    pub fn new(
        path: &SymbolPath,
        state: &'a DownloadState,
        offline: bool,
        budget: Duration,
    ) -> Downloads<'a> {
        let servers = path
            .http_server_caches()
            .into_iter()
            .map(|(url, cache)| Server {
                url: url.trim_end_matches('/').to_string(),
                cache,
            })
            .collect();
        Downloads {
            servers,
            state,
            offline,
            budget,
            deadline: None,
            offline_noted: false,
        }
    }

    /// Asks every server, in path order, for `dir/key/name`; the first that has it (directly,
    /// CAB-compressed, or through `file.ptr`) wins.
    pub fn fetch(
        &mut self,
        dir: &str,
        key: &str,
        name: &str,
        tried: &mut Vec<String>,
    ) -> Option<Fetched> {
        if self.servers.is_empty() || !safe_component(dir) || !safe_component(name) {
            return None;
        }
        if !safe_component(key) {
            return None;
        }
        // Offline keeps symbol servers out; the user's own object store is still read.
        let offline = self.offline;
        if offline && !self.offline_noted {
            self.offline_noted = true;
            for s in self.servers.iter().filter(|s| !is_object_store(&s.url)) {
                tried.push(format!("{}: offline, symbol server not contacted", s.url));
            }
        }
        let servers: Vec<Server> = self
            .servers
            .iter()
            .filter(|s| !offline || is_object_store(&s.url))
            .cloned()
            .collect();
        for server in &servers {
            if let Some(f) = self.fetch_from(server, dir, key, name, tried) {
                return Some(f);
            }
        }
        None
    }

    fn fetch_from(
        &mut self,
        server: &Server,
        dir: &str,
        key: &str,
        name: &str,
        tried: &mut Vec<String>,
    ) -> Option<Fetched> {
        let target = server.cache.join(dir).join(key).join(name);
        // Another module (or an earlier session) may have put it there already.
        if let Some(found) = path_ci(&server.cache, &[dir, key, name]).filter(|p| p.is_file()) {
            tried.push(format!("{}: in the download cache", found.display()));
            return Some(Fetched {
                path: found,
                downloaded: false,
            });
        }
        let base = format!("{}/{}/{}", server.url, encode(dir), encode(key));
        // 1. The file itself.
        let url = format!("{base}/{}", encode(name));
        match self.get(server, &url, false, tried)? {
            Got::File(temp, _) => return self.install(&temp, &target, tried),
            Got::NotFound => {}
            _ => return None,
        }
        // 2. The CAB-compressed form (`crashy.pd_`).
        let compressed = compressed_name(name);
        let url = format!("{base}/{}", encode(&compressed));
        match self.get(server, &url, false, tried)? {
            Got::File(temp, _) => {
                let result = decompress_cab(&temp, name, &target);
                let _ = std::fs::remove_file(&temp);
                return match result {
                    Ok(size) => {
                        tried.push(format!(
                            "{url}: CAB expanded ({size} bytes) to {}",
                            target.display()
                        ));
                        Some(Fetched {
                            path: target,
                            downloaded: true,
                        })
                    }
                    Err(e) => {
                        tried.push(format!("{url}: not a usable CAB file: {e}"));
                        None
                    }
                };
            }
            Got::NotFound => {}
            _ => return None,
        }
        // 3. A redirection (`file.ptr`: `PATH:\\share\x.pdb` or `MSG: reason`).
        let url = format!("{base}/file.ptr");
        match self.get(server, &url, true, tried)? {
            Got::Text(text) => {
                let text = text.trim();
                match text.strip_prefix("PATH:") {
                    Some(p) if Path::new(p.trim()).is_file() => {
                        let p = PathBuf::from(p.trim());
                        tried.push(format!("{url}: points to {}", p.display()));
                        Some(Fetched {
                            path: p,
                            downloaded: false,
                        })
                    }
                    Some(p) => {
                        tried.push(format!(
                            "{url}: points to {}, which is not a readable local file",
                            p.trim()
                        ));
                        None
                    }
                    None => {
                        tried.push(format!("{url}: {text}"));
                        None
                    }
                }
            }
            _ => None,
        }
    }

    /// The remaining time of this module's budget, starting the clock on first use.
    fn remaining(&mut self) -> Option<Duration> {
        let budget = self.budget;
        let deadline = *self.deadline.get_or_insert_with(|| Instant::now() + budget);
        deadline
            .checked_duration_since(Instant::now())
            .filter(|d| !d.is_zero())
    }

    /// One GET, noted in `tried`. `None` (after a note) when the request was not made.
    fn get(
        &mut self,
        server: &Server,
        url: &str,
        text: bool,
        tried: &mut Vec<String>,
    ) -> Option<Got> {
        if let Some(reason) = self.state.down_reason(&server.url) {
            tried.push(format!(
                "{url}: not requested: the server was unreachable earlier in this session ({reason})"
            ));
            return None;
        }
        if self.state.is_missing(url) {
            tried.push(format!(
                "{url}: not found (known missing in this session, not requested again)"
            ));
            return Some(Got::NotFound);
        }
        if self.state.cancelled() {
            tried.push(format!("{url}: not requested: cancelled"));
            return None;
        }
        let Some(left) = self.remaining() else {
            tried.push(format!(
                "{url}: not requested: this module's download time limit ({} ms) is used up",
                self.budget.as_millis()
            ));
            return None;
        };
        let start = Instant::now();
        let got = self.request(server, url, text, left);
        let ms = start.elapsed().as_millis();
        let note = match &got {
            Got::File(_, bytes) => format!("{url}: 200, {bytes} bytes, {ms} ms"),
            Got::Text(t) => format!("{url}: 200, {} bytes, {ms} ms", t.len()),
            Got::NotFound => {
                self.state.mark_missing(url);
                format!("{url}: 404 not found, {ms} ms")
            }
            Got::Status(s) => format!("{url}: HTTP {s}, {ms} ms"),
            Got::Unreachable(why) => {
                self.state.mark_down(&server.url, why.clone());
                format!("{url}: {why} after {ms} ms; server not contacted again in this session")
            }
            Got::Failed(why) => format!("{url}: {why}, {ms} ms"),
        };
        tried.push(note);
        Some(got)
    }

    fn request(&self, server: &Server, url: &str, text: bool, timeout: Duration) -> Got {
        if is_object_store(url) {
            return self.request_object(server, url, text, timeout);
        }
        // Files (not `file.ptr`) are reported from the request on: a slow server shows.
        let file = url.rsplit('/').next().unwrap_or(url);
        let transfer = (!text).then(|| self.state.progress.transfer(file));
        let response = self
            .state
            .agent()
            .get(url)
            .config()
            .timeout_global(Some(timeout))
            .build()
            .call();
        let mut response = match response {
            Ok(r) => r,
            Err(e) => return classify(e, timeout),
        };
        match response.status().as_u16() {
            200 => {}
            404 | 410 => return Got::NotFound,
            s => return Got::Status(s),
        }
        let limit = if text { MAX_POINTER } else { MAX_DOWNLOAD };
        let total = response.body().content_length();
        let mut reader = response.body_mut().with_config().limit(limit).reader();
        let Some(transfer) = transfer else {
            let mut buf = Vec::new();
            return match reader.read_to_end(&mut buf) {
                Ok(_) => Got::Text(String::from_utf8_lossy(&buf).into_owned()),
                Err(e) => Got::Failed(format!("transfer failed: {e}")),
            };
        };
        transfer.report(0, total);
        let cancelled = || self.state.cancelled();
        let mut reader = CountingReader {
            inner: reader,
            guard: &transfer,
            cancelled: &cancelled,
            total,
            bytes: 0,
            reported: 0,
        };
        let temp = match self.temp_file(server) {
            Ok(t) => t,
            Err(why) => return Got::Failed(why),
        };
        let written = std::fs::File::create(&temp).and_then(|mut f| {
            let n = std::io::copy(&mut reader, &mut f)?;
            f.flush()?;
            Ok(n)
        });
        match written {
            Ok(n) => Got::File(temp, n),
            Err(e) => {
                let _ = std::fs::remove_file(&temp);
                match e.downcast::<ureq::Error>() {
                    Ok(e) => classify(e, timeout),
                    Err(e) => Got::Failed(format!("transfer failed: {e}")),
                }
            }
        }
    }

    /// A file from an object store, through the registered [`crate::RemoteReader`].
    fn request_object(&self, server: &Server, url: &str, text: bool, timeout: Duration) -> Got {
        let Some(reader) = crate::remote::reader() else {
            return Got::Failed("this program cannot read object stores".to_string());
        };
        let temp = match self.temp_file(server) {
            Ok(t) => t,
            Err(why) => return Got::Failed(why),
        };
        let limit = if text { MAX_POINTER } else { MAX_DOWNLOAD };
        let got = match reader.fetch(url, &temp, limit, timeout) {
            Ok(Some(_)) if text => match std::fs::read(&temp) {
                Ok(bytes) => Got::Text(String::from_utf8_lossy(&bytes).into_owned()),
                Err(e) => Got::Failed(format!("cannot read {}: {e}", temp.display())),
            },
            Ok(Some(n)) => return Got::File(temp, n),
            Ok(None) => Got::NotFound,
            Err(RemoteError::Unreachable(why)) => Got::Unreachable(why),
            Err(RemoteError::Failed(why)) => Got::Failed(why),
        };
        let _ = std::fs::remove_file(&temp);
        got
    }

    /// A new temporary file name in `server`'s cache (the folder created).
    fn temp_file(&self, server: &Server) -> Result<PathBuf, String> {
        std::fs::create_dir_all(&server.cache)
            .map_err(|e| format!("cannot create {}: {e}", server.cache.display()))?;
        let n = self.state.temp.fetch_add(1, Ordering::Relaxed);
        Ok(server
            .cache
            .join(format!(".ntdbg-download-{}-{n}", std::process::id())))
    }

    /// Moves a downloaded temporary file to its place in the cache.
    fn install(&self, temp: &Path, target: &Path, tried: &mut Vec<String>) -> Option<Fetched> {
        let result = target
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::rename(temp, target));
        match result {
            Ok(()) => Some(Fetched {
                path: target.to_path_buf(),
                downloaded: true,
            }),
            Err(e) => {
                let _ = std::fs::remove_file(temp);
                tried.push(format!(
                    "{}: cannot write to the cache: {e}",
                    target.display()
                ));
                None
            }
        }
    }
}

impl std::fmt::Debug for Downloads<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Downloads")
            .field("servers", &self.servers)
            .field("offline", &self.offline)
            .field("budget", &self.budget)
            .finish()
    }
}

/// Sorts a request error into "server unreachable" and other failures.
fn classify(e: ureq::Error, timeout: Duration) -> Got {
    match e {
        ureq::Error::Timeout(_) => {
            Got::Unreachable(format!("timed out (limit {} ms)", timeout.as_millis()))
        }
        ureq::Error::Io(io) => Got::Unreachable(format!("unreachable: {io}")),
        ureq::Error::HostNotFound => Got::Unreachable("host not found".to_string()),
        ureq::Error::ConnectionFailed => Got::Unreachable("connection failed".to_string()),
        ureq::Error::BodyExceedsLimit(limit) => {
            Got::Failed(format!("file larger than the {limit}-byte limit"))
        }
        other => Got::Failed(format!("request failed: {other}")),
    }
}

/// Whether a store path component is safe to put in a URL path and a cache path.
fn safe_component(s: &str) -> bool {
    !s.is_empty()
        && s != "."
        && s != ".."
        && !s
            .chars()
            .any(|c| c == '/' || c == '\\' || c.is_control() || c == '?' || c == '#')
}

/// Percent-encodes everything but unreserved URL characters.
fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_encoding() {
        assert_eq!(encode("a b+c.pdb"), "a%20b%2Bc.pdb");
        assert!(!safe_component("../x"));
        assert!(!safe_component(".."));
        assert!(safe_component("crashy.pdb"));
    }

    /// Serves `s3://bucket/...` from a folder, counting requests.
    struct FolderReader(PathBuf, AtomicU64);

    impl crate::RemoteReader for FolderReader {
        fn fetch(
            &self,
            url: &str,
            dest: &Path,
            _limit: u64,
            _timeout: Duration,
        ) -> Result<Option<u64>, RemoteError> {
            self.1.fetch_add(1, Ordering::Relaxed);
            let key = url.strip_prefix("s3://bucket/").expect("bucket URL");
            match std::fs::read(self.0.join(key)) {
                Ok(bytes) => {
                    std::fs::write(dest, &bytes).map_err(|e| RemoteError::Failed(e.to_string()))?;
                    Ok(Some(bytes.len() as u64))
                }
                Err(_) => Ok(None),
            }
        }
    }

    #[test]
    fn object_stores_are_read_through_the_registered_reader_even_offline() {
        let dir = ntdbg_testutil::corrupt::TempDir::new("remote-symbols");
        let store = dir.path().join("store");
        std::fs::create_dir_all(store.join("symbols/a.pdb/KEY")).unwrap();
        std::fs::write(store.join("symbols/a.pdb/KEY/a.pdb"), b"pdb bytes").unwrap();
        let reader = std::sync::Arc::new(FolderReader(store, AtomicU64::new(0)));
        crate::register_remote_reader(reader.clone());
        let cache = dir.path().join("cache");
        let path = SymbolPath::parse(&format!(
            "srv*{}*s3://bucket/symbols;srv*{}*http://127.0.0.1:9/none",
            cache.display(),
            cache.display()
        ))
        .unwrap();
        let state = DownloadState::default();
        let mut tried = Vec::new();
        let mut downloads = Downloads::new(&path, &state, true, DEFAULT_TIMEOUT);
        let got = downloads
            .fetch("a.pdb", "KEY", "a.pdb", &mut tried)
            .expect("found in the object store");
        assert!(got.downloaded);
        assert_eq!(std::fs::read(&got.path).unwrap(), b"pdb bytes");
        assert!(
            tried
                .iter()
                .any(|t| t.contains("http://127.0.0.1:9/none: offline")),
            "{tried:?}"
        );
        let missing = downloads.fetch("b.pdb", "KEY", "b.pdb", &mut tried);
        assert!(missing.is_none());
        assert!(tried
            .iter()
            .any(|t| t.contains("s3://bucket/symbols/b.pdb/KEY/b.pdb: 404")));
        assert_eq!(
            reader.1.load(Ordering::Relaxed),
            4,
            "file, .pd_, file.ptr of b, a once"
        );
    }
}
