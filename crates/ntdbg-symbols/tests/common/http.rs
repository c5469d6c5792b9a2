//! A real HTTP server on 127.0.0.1 for the symbol-server tests.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// A minimal HTTP/1.1 file server: `GET /a/b/c` serves `ROOT/a/b/c` (components matched
/// case-insensitively, as Windows symbol servers do), else 404. Every request is logged, and
/// the most requests in flight at once is kept.
pub struct TestServer {
    addr: String,
    stop: Arc<AtomicBool>,
    accept: Option<JoinHandle<()>>,
    log: Arc<Mutex<Vec<String>>>,
    load: Arc<Load>,
}

/// Requests being served now, and the most at once.
#[derive(Default)]
struct Load {
    now: AtomicUsize,
    max: AtomicUsize,
}

impl TestServer {
    pub fn start(root: &Path, delay: Duration) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let stop = Arc::new(AtomicBool::new(false));
        let log = Arc::new(Mutex::new(Vec::new()));
        let load = Arc::new(Load::default());
        let (root, stop2, log2, load2) =
            (root.to_path_buf(), stop.clone(), log.clone(), load.clone());
        let accept = std::thread::spawn(move || {
            for conn in listener.incoming() {
                if stop2.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(conn) = conn else { continue };
                let (root, log, load) = (root.clone(), log2.clone(), load2.clone());
                std::thread::spawn(move || serve(conn, &root, delay, &log, &load));
            }
        });
        TestServer {
            addr,
            stop,
            accept: Some(accept),
            log,
            load,
        }
    }

    /// The most requests the server was answering at the same time.
    pub fn max_in_flight(&self) -> usize {
        self.load.max.load(Ordering::SeqCst)
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn requests(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    /// Stops accepting connections; later requests are refused.
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(&self.addr);
        if let Some(h) = self.accept.take() {
            h.join().unwrap();
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop();
    }
}

fn serve(mut conn: TcpStream, root: &Path, delay: Duration, log: &Mutex<Vec<String>>, load: &Load) {
    let mut request = Vec::new();
    let mut buf = [0u8; 1024];
    while !request.windows(4).any(|w| w == b"\r\n\r\n") && request.len() < 16384 {
        match conn.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => request.extend_from_slice(&buf[..n]),
        }
    }
    let text = String::from_utf8_lossy(&request);
    let target = text.split_whitespace().nth(1).unwrap_or("/").to_string();
    let now = load.now.fetch_add(1, Ordering::SeqCst) + 1;
    load.max.fetch_max(now, Ordering::SeqCst);
    std::thread::sleep(delay);
    load.now.fetch_sub(1, Ordering::SeqCst);
    let mut file = Some(root.to_path_buf());
    for comp in target.trim_start_matches('/').split('/') {
        let comp = percent_decode(comp);
        file = file.and_then(|dir| {
            std::fs::read_dir(&dir)
                .ok()?
                .filter_map(Result::ok)
                .find_map(|e| {
                    let name = e.file_name().into_string().ok()?;
                    name.eq_ignore_ascii_case(&comp).then(|| e.path())
                })
        });
    }
    let body = file
        .filter(|f| f.is_file())
        .and_then(|f| std::fs::read(f).ok());
    let status = if body.is_some() { 200 } else { 404 };
    log.lock().unwrap().push(format!("GET {target} {status}"));
    let head = match &body {
        Some(b) => format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            b.len()
        ),
        None => {
            "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".to_string()
        }
    };
    let _ = conn.write_all(head.as_bytes());
    if let Some(b) = body {
        let _ = conn.write_all(&b);
    }
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() + 1 {
            if let Ok(v) = u8::from_str_radix(&s[i + 1..(i + 3).min(s.len())], 16) {
                out.push(v);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}
