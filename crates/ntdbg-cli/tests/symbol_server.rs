//! The closing check, end to end: `ntdbg analyze DUMP --symbols srv*CACHE*URL`
//! symbolizes a dump whose image and PDB live only on a real HTTP server on 127.0.0.1; a second
//! run uses the cache with the server stopped; `--offline` contacts nothing; a slow server
//! brings the download indicator on stderr, never on stdout.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Serves `ROOT/a/b/c` for `GET /a/b/c` (else 404) after `delay`, each connection on its own
/// thread, and counts requests.
struct Server {
    addr: String,
    stop: Arc<AtomicBool>,
    requests: Arc<AtomicUsize>,
    thread: Option<JoinHandle<()>>,
}

impl Server {
    fn start(root: PathBuf, delay: Duration) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let stop = Arc::new(AtomicBool::new(false));
        let requests = Arc::new(AtomicUsize::new(0));
        let (stop2, requests2) = (stop.clone(), requests.clone());
        let thread = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if stop2.load(Ordering::SeqCst) {
                    break;
                }
                if let Ok(conn) = conn {
                    requests2.fetch_add(1, Ordering::SeqCst);
                    let root = root.clone();
                    std::thread::spawn(move || serve(conn, &root, delay));
                }
            }
        });
        Server {
            addr,
            stop,
            requests,
            thread: Some(thread),
        }
    }

    fn stop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(&self.addr);
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
    }
}

fn serve(mut conn: TcpStream, root: &Path, delay: Duration) {
    let mut request = Vec::new();
    let mut buf = [0u8; 1024];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") {
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => request.extend_from_slice(&buf[..n]),
        }
    }
    let text = String::from_utf8_lossy(&request).into_owned();
    let target = text.split_whitespace().nth(1).unwrap_or("/");
    std::thread::sleep(delay);
    let file = root.join(target.trim_start_matches('/'));
    let reply = match std::fs::read(&file) {
        Ok(body) if !target.contains("..") => {
            let mut r = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            )
            .into_bytes();
            r.extend(body);
            r
        }
        _ => b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_vec(),
    };
    let _ = conn.write_all(&reply);
}

fn ntdbg(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ntdbg"))
        .args(args)
        .env_remove("_NT_SYMBOL_PATH")
        .env_remove("NTDBG_OFFLINE")
        .output()
        .expect("ntdbg runs")
}

/// A scratch folder with the winelab null dump alone in `dump/` (no PDB beside it) and the
/// crashy image and PDB in store layout in `store/`; returns the dump's path.
fn lab(dir: &Path) -> PathBuf {
    let _ = std::fs::remove_dir_all(dir);
    let data = ntdbg_testutil::testdata("winelab/x64");
    // The dump alone in its folder: no PDB beside it.
    let dump = dir.join("dump").join("null.inproc.dmp");
    std::fs::create_dir_all(dump.parent().unwrap()).unwrap();
    std::fs::copy(data.join("null.inproc.dmp"), &dump).unwrap();
    let store = dir.join("store");
    for (from, to) in [
        ("crashy.exe", "crashy.exe/6B0CCCD25c000/crashy.exe"),
        (
            "crashy.pdb",
            "crashy.pdb/99B57C97E2C099B24C4C44205044422E1/crashy.pdb",
        ),
    ] {
        let to = store.join(to);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(data.join(from), to).unwrap();
    }
    dump
}

#[test]
fn analyze_downloads_then_uses_the_cache_with_the_server_stopped() {
    ntdbg_testutil::require_testdata!();
    let dir = std::env::temp_dir().join(format!("ntdbg-cli-symsrv-{}", std::process::id()));
    let dump = lab(&dir);
    let mut server = Server::start(dir.join("store"), Duration::ZERO);
    let cache = dir.join("cache");
    let path = format!("srv*{}*http://{}", cache.display(), server.addr);
    let dump = dump.display().to_string();

    // Offline: nothing is asked, nothing is symbolized.
    let offline = ntdbg(&["analyze", &dump, "--symbols", &path, "--offline"]);
    assert!(offline.status.success());
    assert_eq!(server.requests.load(Ordering::SeqCst), 0);
    assert!(!String::from_utf8_lossy(&offline.stdout).contains("crashy!crash_null_write"));

    let first = ntdbg(&["analyze", &dump, "--symbols", &path]);
    let first_text = String::from_utf8_lossy(&first.stdout).into_owned();
    assert!(first.status.success());
    assert!(
        first_text.contains("crashy!crash_null_write+0x4 [/build/crashy/winelab/src/crashy.c:119]"),
        "{first_text}"
    );
    assert!(server.requests.load(Ordering::SeqCst) >= 2);

    server.stop();
    let second = ntdbg(&["analyze", &dump, "--symbols", &path]);
    assert!(second.status.success());
    assert_eq!(String::from_utf8_lossy(&second.stdout), first_text);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_slow_server_brings_the_indicator_on_stderr_only() {
    ntdbg_testutil::require_testdata!();
    let dir = std::env::temp_dir().join(format!("ntdbg-cli-symslow-{}", std::process::id()));
    let dump = lab(&dir);
    let server = Server::start(dir.join("store"), Duration::from_millis(1100));
    let path = format!("srv*{}*http://{}", dir.join("cache").display(), server.addr);
    let out = ntdbg(&[
        "analyze",
        &dump.display().to_string(),
        "--symbols",
        &path,
        "--json",
    ]);
    assert!(out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("downloading symbols: ") && stderr.contains(" module"),
        "{stderr}"
    );
    assert!(!stdout.contains("downloading"), "{stdout}");
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("stdout is JSON");
    assert!(report.is_object());
    let _ = std::fs::remove_dir_all(&dir);
}
