//! A real `gdbserver` on 127.0.0.1 debugging `testdata/live/live_target.c`, for the live-target
//! tests of every crate. Without `gdbserver`, `cc` or `nm` the helpers print a loud SKIP and
//! return `None`, so the tests pass where the tools cannot be installed; with
//! `NTDBG_REQUIRE_LIVE=1` (set by CI once it installed them) a missing tool is a failure.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// The compiled test program and the addresses of its symbols (built without PIE, so the
/// addresses are fixed).
#[derive(Debug)]
pub struct LiveProgram {
    /// The executable.
    pub path: PathBuf,
    symbols: HashMap<String, u64>,
}

impl LiveProgram {
    /// The address of a symbol of the program (`main`, `ntdbg_target_func`, `ntdbg_counter`).
    pub fn symbol(&self, name: &str) -> u64 {
        *self
            .symbols
            .get(name)
            .unwrap_or_else(|| panic!("nm: no symbol {name}"))
    }
}

/// Whether `tool` is on PATH (`tool.exe` too on Windows).
pub fn on_path(tool: &str) -> bool {
    let names = [
        tool.to_string(),
        format!("{tool}{}", std::env::consts::EXE_SUFFIX),
    ];
    std::env::var_os("PATH").is_some_and(|p| {
        std::env::split_paths(&p).any(|d| names.iter().any(|n| d.join(n).is_file()))
    })
}

/// Why a test cannot run the Linux host tool `tool` (gdbserver, cc, nm, winedbg…), or `None`
/// when it can: a Windows build of the tests (run under Wine by `tools/windows/build.sh`)
/// never drives them, even where Wine could reach the host's files; elsewhere the tool must be
/// on PATH.
pub fn host_tool_missing(tool: &str) -> Option<String> {
    if cfg!(windows) {
        Some(format!(
            "`{tool}` is a Linux host tool and this is a Windows build of the tests"
        ))
    } else if on_path(tool) {
        None
    } else {
        Some(format!("`{tool}` is not on PATH"))
    }
}

/// Prints a SKIP line past the test harness's capture, so it shows in CI logs.
pub fn skip(what: &str, why: &str) {
    let _ = writeln!(std::io::stderr(), "\n*** SKIP {what}: {why} ***\n");
}

/// [`skip`] for a test whose Linux host tools are missing; a failure instead where CI said it
/// installed them (`require`, an environment variable such as `NTDBG_REQUIRE_LIVE`, is `1`),
/// except in a Windows build of the tests, which never drives Linux host tools.
///
/// # Panics
/// When `require` is `1` on a non-Windows build.
pub fn skip_unless_required(require: &str, what: &str, why: &str) {
    if !cfg!(windows) && std::env::var_os(require).is_some_and(|v| v == "1") {
        panic!("{what}: {why}, and {require}=1 says it must run");
    }
    skip(what, why);
}

/// The test program, compiled once per test process; `None` (with a SKIP line) when
/// gdbserver or the C toolchain is missing.
pub fn live_program() -> Option<&'static LiveProgram> {
    static PROGRAM: OnceLock<Option<LiveProgram>> = OnceLock::new();
    PROGRAM
        .get_or_init(|| {
            for tool in ["gdbserver", "cc", "nm"] {
                if let Some(why) = host_tool_missing(tool) {
                    skip_unless_required(
                        "NTDBG_REQUIRE_LIVE",
                        "live gdbserver tests",
                        &format!("{why} (apt-get install -y gdbserver gcc binutils)"),
                    );
                    return None;
                }
            }
            let dir = std::env::temp_dir().join(format!("ntdbg-live-{}", std::process::id()));
            std::fs::create_dir_all(&dir).ok()?;
            let shared = dir.clone();
            crate::at_exit::at_exit(move || {
                let _ = std::fs::remove_dir_all(shared);
            });
            let exe = dir.join("live_target");
            let src = crate::repo_root().join("testdata/live/live_target.c");
            let built = Command::new("cc")
                .args([
                    "-g",
                    "-O0",
                    "-no-pie",
                    "-fno-pie",
                    "-fno-omit-frame-pointer",
                    "-pthread",
                    "-o",
                ])
                .arg(&exe)
                .arg(&src)
                .status()
                .is_ok_and(|s| s.success());
            assert!(built, "cc failed to build {}", src.display());
            let nm = Command::new("nm").arg(&exe).output().expect("nm runs");
            let symbols = String::from_utf8_lossy(&nm.stdout)
                .lines()
                .filter_map(|l| {
                    let mut parts = l.split_whitespace();
                    let addr = u64::from_str_radix(parts.next()?, 16).ok()?;
                    let name = parts.nth(1)?;
                    Some((name.to_string(), addr))
                })
                .collect();
            Some(LiveProgram { path: exe, symbols })
        })
        .as_ref()
}

/// A gdbserver child and its inferior, both killed on drop.
#[derive(Debug)]
pub struct GdbServer {
    child: Child,
    /// The port it listens on (127.0.0.1).
    pub port: u16,
    /// The debugged process.
    pub inferior: Option<u32>,
}

impl GdbServer {
    /// Starts `gdbserver --once 127.0.0.1:0 PROGRAM ARGS…` and waits (bounded) for its port.
    pub fn start(program: &LiveProgram, args: &[&str]) -> GdbServer {
        let mut child = Command::new("gdbserver")
            .args(["--once", "127.0.0.1:0"])
            .arg(&program.path)
            .args(args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("gdbserver starts");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut pid = None;
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some((_, p)) = line.split_once("created; pid = ") {
                    pid = p.trim().parse::<u32>().ok();
                }
                if let Some(p) = line.strip_prefix("Listening on port ") {
                    let _ = tx.send((p.trim().parse::<u16>().ok(), pid));
                }
            }
        });
        match rx.recv_timeout(Duration::from_secs(10)) {
            Ok((Some(port), inferior)) => GdbServer {
                child,
                port,
                inferior,
            },
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                panic!("gdbserver did not say which port it listens on");
            }
        }
    }

    /// `gdb:127.0.0.1:PORT`.
    pub fn target(&self) -> String {
        format!("gdb:127.0.0.1:{}", self.port)
    }

    /// Kills gdbserver now (the connection drops), leaving the inferior to `Drop`.
    pub fn kill_server(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Waits (bounded) for gdbserver to exit by itself.
    pub fn exited_within(&mut self, t: Duration) -> bool {
        let start = Instant::now();
        while start.elapsed() < t {
            if let Ok(Some(_)) = self.child.try_wait() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        false
    }
}

impl Drop for GdbServer {
    fn drop(&mut self) {
        // A detached inferior keeps running (and gdbserver waits for it): end both.
        if let Some(pid) = self.inferior {
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
