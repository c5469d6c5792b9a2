//! `GdbTarget` against a real gdbserver on 127.0.0.1 debugging a small C program: the Target
//! contract (arch, threads with x64 contexts, memory with holes) on a stopped live target.
//! Skips loudly when `gdbserver`, `cc` or `nm` is not on PATH.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use minidump::MinidumpRawContext;
use ntdbg_gdbremote::{BreakpointKind, ClientOptions, ResumeAction};
use ntdbg_targets::{Arch, GdbTarget, MemoryView, Target, TargetKind};

const PROGRAM: &str = r#"
#include <unistd.h>
volatile long ntdbg_counter;
__attribute__((noinline)) void ntdbg_target_func(long x) { ntdbg_counter += x; }
int main(void) {
    for (;;) { ntdbg_target_func(1); usleep(1000); }
    return 0;
}
"#;

struct Server {
    child: Child,
    port: u16,
    pid: u32,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .arg("-9")
            .arg(self.pid.to_string())
            .status();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Builds the program, starts gdbserver on it; `None` (after a loud SKIP) without the tools.
fn start() -> Option<(Server, u64)> {
    for tool in ["gdbserver", "cc", "nm"] {
        if let Some(why) = ntdbg_testutil::gdbserver::host_tool_missing(tool) {
            ntdbg_testutil::gdbserver::skip(
                "GdbTarget tests",
                &format!("{why} (apt-get install -y gdbserver)"),
            );
            return None;
        }
    }
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("gdb-target-prog");
    std::fs::create_dir_all(&dir).unwrap();
    let (src, exe) = (dir.join("loop.c"), dir.join("loop"));
    std::fs::write(&src, PROGRAM).unwrap();
    let ok = Command::new("cc")
        .args(["-g", "-O0", "-no-pie", "-fno-pie", "-o"])
        .arg(&exe)
        .arg(&src)
        .status()
        .unwrap();
    assert!(ok.success());
    let nm = Command::new("nm").arg(&exe).output().unwrap();
    let func = String::from_utf8_lossy(&nm.stdout)
        .lines()
        .find(|l| l.ends_with(" ntdbg_target_func"))
        .and_then(|l| u64::from_str_radix(l.split(' ').next()?, 16).ok())
        .expect("nm finds ntdbg_target_func");
    let mut child = Command::new("gdbserver")
        .args(["--once", "127.0.0.1:0"])
        .arg(&exe)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let mut pid = 0;
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if let Some((_, p)) = line.split_once("created; pid = ") {
                pid = p.trim().parse().unwrap_or(0);
            }
            if let Some(p) = line.strip_prefix("Listening on port ") {
                let _ = tx.send((p.trim().parse::<u16>().unwrap_or(0), pid));
            }
        }
    });
    let Ok((port, pid)) = rx.recv_timeout(Duration::from_secs(10)) else {
        let _ = child.kill();
        panic!("gdbserver did not start");
    };
    Some((Server { child, port, pid }, func))
}

#[test]
fn gdb_target_contract_on_a_stopped_process() {
    let Some((server, func)) = start() else {
        return;
    };
    let opts = ClientOptions {
        timeout: Duration::from_secs(5),
        ..ClientOptions::default()
    };
    let mut t = GdbTarget::connect(&format!("127.0.0.1:{}", server.port), opts).unwrap();
    assert_eq!(t.kind(), TargetKind::Live);
    assert_eq!(t.arch(), Arch::X64);
    assert!(t.origin().starts_with("gdb:127.0.0.1:"));
    assert_eq!(t.threads().len(), 1);
    assert_eq!(t.threads()[0].id, server.pid);

    // Run to the function, then refresh the snapshot.
    {
        let mut c = t.client();
        c.insert_breakpoint(BreakpointKind::Software, func, 1)
            .unwrap();
        c.resume(ResumeAction::Continue, None).unwrap();
        let stop = c.wait_stop(Duration::from_secs(10)).unwrap().unwrap();
        assert_eq!(stop.signal(), Some(5));
        c.remove_breakpoint(BreakpointKind::Software, func, 1)
            .unwrap();
    }
    t.refresh().unwrap();
    let ctx = t.threads()[0].context.as_ref().expect("x64 context");
    let MinidumpRawContext::Amd64(raw) = &ctx.raw else {
        panic!("not amd64")
    };
    assert_eq!(raw.rip, func);
    assert_eq!(raw.cs, 0x33);
    assert!(raw.rsp != 0);

    // Memory: code is there, page zero is a hole, and the end of the stack mapping is
    // exactly where the holes start.
    assert!(t.read_virtual(func, 32).iter().all(Option::is_some));
    assert!(t.read_virtual(0, 16).iter().all(Option::is_none));
    assert!(t.read_chunk(raw.rsp, 8).is_some_and(|c| c.len() == 8));
    let maps = std::fs::read_to_string(format!("/proc/{}/maps", server.pid)).unwrap();
    let ranges: Vec<(u64, u64)> = maps
        .lines()
        .filter_map(|l| {
            let (a, b) = l.split(' ').next()?.split_once('-')?;
            Some((
                u64::from_str_radix(a, 16).ok()?,
                u64::from_str_radix(b, 16).ok()?,
            ))
        })
        .collect();
    if let Some(&(_, end)) = ranges
        .iter()
        .find(|(a, b)| (*a..*b).contains(&raw.rsp))
        .filter(|(_, end)| !ranges.iter().any(|(a, _)| a == end))
    {
        let bytes = t.read_virtual(end - 8, 16);
        assert!(bytes[..8].iter().all(Option::is_some), "{bytes:?}");
        assert!(bytes[8..].iter().all(Option::is_none), "{bytes:?}");
        eprintln!("end of the stack mapping at {end:#x}: bytes then holes");
    } else {
        eprintln!("note: the stack mapping is followed by another; boundary check not done");
    }

    // The engine holds targets as `dyn Target` (Send + Sync).
    let boxed: Box<dyn Target> = Box::new(t);
    drop(boxed); // detaches
}
