//! A running `ntdbg collect` or `ntdbg serve` (its address read from what it prints), the
//! Crashpad-protocol client `tools/crashpad_upload.py`, and plain HTTP GETs.

use serde_json::Value;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// An `ntdbg` server process, killed on drop.
pub struct Running {
    /// The process.
    pub child: Child,
    /// Where it listens.
    pub addr: SocketAddr,
    /// What it printed on stderr after its address, gathered by a thread.
    pub log: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Running {
    /// Starts `ntdbg ARGS` (which must listen on 127.0.0.1:0) with `env`, and waits for the
    /// line naming its address.
    pub fn start(args: &[String], env: &[(String, String)]) -> Running {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ntdbg"))
            .args(args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .env_remove("_NT_SYMBOL_PATH")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("ntdbg starts");
        let mut lines = BufReader::new(child.stderr.take().expect("stderr")).lines();
        let mut seen = String::new();
        let addr = loop {
            let Some(Ok(line)) = lines.next() else {
                let _ = child.kill();
                panic!("ntdbg {args:?} ended before listening:\n{seen}");
            };
            seen.push_str(&line);
            seen.push('\n');
            if let Some(rest) = line.split("listening on http://").nth(1) {
                let addr = rest.split('/').next().expect("address");
                break addr.parse().expect("a socket address");
            }
        };
        let log = std::sync::Arc::new(std::sync::Mutex::new(seen));
        let sink = log.clone();
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                let mut log = sink.lock().unwrap_or_else(|e| e.into_inner());
                log.push_str(&line);
                log.push('\n');
            }
        });
        Running { child, addr, log }
    }

    /// The upload URL, with `?token=` when given.
    pub fn submit_url(&self, token: Option<&str>) -> String {
        match token {
            Some(t) => format!("http://{}/submit?token={t}", self.addr),
            None => format!("http://{}/submit", self.addr),
        }
    }

    /// What it logged so far.
    pub fn log(&self) -> String {
        self.log.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// SIGKILL, waited for.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The repository's root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .nth(2)
        .expect("the repository")
        .to_path_buf()
}

/// One upload's outcome, as the client reports it.
#[derive(Debug, Clone)]
pub struct Sent {
    /// The file sent.
    pub file: PathBuf,
    /// The HTTP status (0: no answer).
    pub status: u64,
    /// The answer: the crash id, or the error.
    pub answer: String,
}

/// Runs the Crashpad-protocol client: `files` each sent `copies` times as different dumps,
/// with `extra` flags. Every outcome, in the order the answers came (uploads run in parallel).
pub fn upload(url: &str, files: &[PathBuf], copies: usize, extra: &[&str]) -> Vec<Sent> {
    let output = Command::new("python3")
        .arg(repo().join("tools/crashpad_upload.py"))
        .arg(url)
        .args(files)
        .args(["--copies", &copies.to_string(), "--jobs", "8", "--json"])
        .args(extra)
        .output()
        .expect("python3 runs tools/crashpad_upload.py");
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| {
            let v: Value = serde_json::from_str(line).expect("a JSON line");
            Sent {
                file: PathBuf::from(v["file"].as_str().expect("file")),
                status: v["status"].as_u64().expect("status"),
                answer: v["answer"].as_str().expect("answer").to_string(),
            }
        })
        .collect()
}

/// `GET path` on `addr`: the status and body.
pub fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    let mut stream = TcpStream::connect(addr).expect("connects");
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .expect("timeout");
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .expect("request");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("response");
    let status = response
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}
