//! The client against a real `gdbserver` (Debian package `gdbserver`) on 127.0.0.1, debugging a
//! small C program compiled by the test. Every test is bounded by timeouts and kills its
//! gdbserver. Without `gdbserver` or `cc` on PATH the tests print a loud SKIP and pass.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use ntdbg_gdbremote::{
    BreakpointKind, BreakpointMethod, ClientOptions, GdbClient, ResumeAction, RunState, StopReason,
    StopReply,
};

const PROGRAM: &str = r#"
#include <unistd.h>
volatile long ntdbg_counter;
__attribute__((noinline)) void ntdbg_target_func(long x) { ntdbg_counter += x; }
int main(void) {
    for (;;) { ntdbg_target_func(1); usleep(1000); }
    return 0;
}
"#;

fn on_path(tool: &str) -> Option<PathBuf> {
    std::env::var_os("PATH")?
        .to_str()?
        .split(':')
        .map(|d| Path::new(d).join(tool))
        .find(|p| p.is_file())
}

/// The test program and the addresses of its symbols, built once; `None` (with the reason
/// printed) when the tools are missing.
struct Program {
    path: PathBuf,
    func: u64,
    counter: u64,
}

fn program() -> Option<&'static Program> {
    static P: OnceLock<Option<Program>> = OnceLock::new();
    P.get_or_init(|| {
        for tool in ["gdbserver", "cc", "nm"] {
            if on_path(tool).is_none() {
                // Written to stderr directly, past the test harness's capture, so it shows.
                use std::io::Write;
                let _ = writeln!(
                    std::io::stderr(),
                    "\n*** SKIP gdbserver tests: `{tool}` is not on PATH \
                     (apt-get install -y gdbserver gcc binutils) ***\n"
                );
                return None;
            }
        }
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("gdbremote-prog");
        std::fs::create_dir_all(&dir).ok()?;
        let src = dir.join("loop.c");
        let exe = dir.join("loop");
        std::fs::write(&src, PROGRAM).ok()?;
        let ok = Command::new("cc")
            .args(["-g", "-O0", "-no-pie", "-fno-pie", "-o"])
            .arg(&exe)
            .arg(&src)
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        assert!(ok, "cc failed to build the test program");
        let nm = Command::new("nm").arg(&exe).output().expect("nm runs");
        let text = String::from_utf8_lossy(&nm.stdout);
        let sym = |name: &str| {
            text.lines()
                .find(|l| l.ends_with(&format!(" {name}")))
                .and_then(|l| u64::from_str_radix(l.split(' ').next()?, 16).ok())
                .unwrap_or_else(|| panic!("nm: no {name}"))
        };
        Some(Program {
            func: sym("ntdbg_target_func"),
            counter: sym("ntdbg_counter"),
            path: exe,
        })
    })
    .as_ref()
}

/// A gdbserver child and its inferior, both killed on drop.
struct Server {
    child: Child,
    port: u16,
    inferior: Option<u32>,
}

impl Server {
    fn start(prog: &Program) -> Server {
        let mut child = Command::new("gdbserver")
            .args(["--once", "127.0.0.1:0"])
            .arg(&prog.path)
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
        let (port, inferior) = match rx.recv_timeout(Duration::from_secs(10)) {
            Ok((Some(p), pid)) => (p, pid),
            _ => {
                let _ = child.kill();
                panic!("gdbserver did not say which port it listens on");
            }
        };
        Server {
            child,
            port,
            inferior,
        }
    }

    fn connect(&self) -> GdbClient {
        let opts = ClientOptions {
            timeout: Duration::from_secs(5),
            ..ClientOptions::default()
        };
        GdbClient::connect(&format!("127.0.0.1:{}", self.port), opts).expect("connect")
    }

    /// Waits (bounded) for gdbserver to exit by itself.
    fn exited_within(&mut self, t: Duration) -> bool {
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

impl Drop for Server {
    fn drop(&mut self) {
        // A detached inferior keeps running (and gdbserver waits for it): end both.
        if let Some(pid) = self.inferior {
            let _ = Command::new("kill").arg("-9").arg(pid.to_string()).status();
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn rip(c: &mut GdbClient) -> u64 {
    let layout = c.register_layout().unwrap();
    let regs = c.read_registers().unwrap();
    layout.value_u64("rip", &regs).unwrap()
}

#[test]
fn gdbserver_handshake_registers_memory_threads() {
    let Some(prog) = program() else { return };
    let t = Instant::now();
    let mut server = Server::start(prog);
    let mut c = server.connect();
    assert!(c.features().packet_size.is_some());
    assert!(c.features().supports("qXfer:features:read"));
    assert!(!c.ack_mode(), "gdbserver offers QStartNoAckMode");
    assert_eq!(c.initial_stop().unwrap().signal(), Some(5));

    let layout = c.register_layout().unwrap();
    assert_eq!(layout.architecture.as_deref(), Some("i386:x86-64"));
    for (name, num, bits) in [
        ("rax", 0, 64),
        ("rsp", 7, 64),
        ("rip", 16, 64),
        ("eflags", 17, 32),
    ] {
        let r = layout.by_name(name).unwrap();
        assert_eq!((r.regnum, r.bitsize), (num, bits), "{name}");
    }
    let regs = c.read_registers().unwrap();
    let rip = layout.value_u64("rip", &regs).unwrap();
    let rsp = layout.value_u64("rsp", &regs).unwrap();
    assert!(rip != 0 && rsp != 0);
    // `p` agrees with `g` (after `Hg`; gdbserver may not implement `p` at all).
    let threads = c.threads().unwrap();
    c.set_thread(threads[0]).unwrap();
    match c.read_register(16) {
        Ok(p) => assert_eq!(u64::from_le_bytes(p.unwrap().try_into().unwrap()), rip),
        Err(e) => {
            assert_eq!(e.code(), "unsupported");
            eprintln!("note: this gdbserver does not answer `p`: {e}");
        }
    }

    // Memory at rip is there; page zero is a hole; a read across the end of a mapping is
    // partly there and partly holes.
    let code = c.read_memory(rip, 64).unwrap();
    assert!(code.iter().all(Option::is_some));
    assert!(c.read_memory(0, 32).unwrap().iter().all(Option::is_none));
    let big = c.read_memory(rsp & !0xfff, 0x3000).unwrap();
    assert!(big[..0x10].iter().all(Option::is_some));

    // Writing memory (the counter) reads back.
    c.write_memory(prog.counter, &42u64.to_le_bytes()).unwrap();
    let back: Option<Vec<u8>> = c
        .read_memory(prog.counter, 8)
        .unwrap()
        .into_iter()
        .collect();
    assert_eq!(back.unwrap(), 42u64.to_le_bytes());

    assert_eq!(threads.len(), 1);
    assert!(c.current_thread().unwrap().is_some());

    c.detach().unwrap();
    drop(c);
    // gdbserver (non-extended mode) waits for the detached process to end: it must still be
    // running, and the program with it — detaching did not kill anything.
    assert!(!server.exited_within(Duration::from_millis(300)));
    assert!(server.inferior.is_some());
    eprintln!(
        "gdbserver handshake/registers/memory/threads: {:?}",
        t.elapsed()
    );
}

#[test]
fn gdbserver_breakpoint_continue_step_kill() {
    let Some(prog) = program() else { return };
    let t = Instant::now();
    let mut server = Server::start(prog);
    let mut c = server.connect();
    let how = c
        .insert_breakpoint(BreakpointKind::Software, prog.func, 1)
        .unwrap();
    assert_eq!(how, BreakpointMethod::Stub);
    c.resume(ResumeAction::Continue, None).unwrap();
    let stop = c
        .wait_stop(Duration::from_secs(10))
        .unwrap()
        .expect("breakpoint hit");
    assert_eq!(stop.signal(), Some(5), "{stop:?}");
    if let StopReply::Signal { reason, .. } = &stop {
        assert_eq!(
            reason.as_ref(),
            Some(&StopReason::SoftwareBreak),
            "{stop:?}"
        );
    }
    assert_eq!(rip(&mut c), prog.func);

    c.remove_breakpoint(BreakpointKind::Software, prog.func, 1)
        .unwrap();
    let stop = c.step(None).unwrap();
    assert_eq!(stop.signal(), Some(5));
    let after = rip(&mut c);
    assert!(after > prog.func && after < prog.func + 16, "{after:#x}");

    c.kill().unwrap();
    assert_eq!(c.state(), RunState::Gone);
    assert!(server.exited_within(Duration::from_secs(5)));
    eprintln!("gdbserver breakpoint/continue/step/kill: {:?}", t.elapsed());
}

#[test]
fn gdbserver_interrupt_running_target_and_watchpoint() {
    let Some(prog) = program() else { return };
    let t = Instant::now();
    let _server = Server::start(prog);
    let mut c = _server.connect();
    c.resume(ResumeAction::Continue, None).unwrap();
    // Still running after a short wait: not an error.
    assert_eq!(c.wait_stop(Duration::from_millis(300)).unwrap(), None);
    // Interrupt from another thread's handle, as break_in will.
    let h = c.interrupt_handle().unwrap();
    std::thread::spawn(move || h.interrupt().unwrap())
        .join()
        .unwrap();
    let stop = c
        .wait_stop(Duration::from_secs(5))
        .unwrap()
        .expect("stopped");
    assert_eq!(stop.signal(), Some(2), "{stop:?}"); // SIGINT

    // A write watchpoint on the counter (hardware, may be unavailable in some sandboxes).
    match c.insert_breakpoint(BreakpointKind::WriteWatch, prog.counter, 8) {
        Ok(_) => {
            c.resume(ResumeAction::Continue, None).unwrap();
            let stop = c
                .wait_stop(Duration::from_secs(10))
                .unwrap()
                .expect("watch hit");
            match &stop {
                StopReply::Signal {
                    reason: Some(StopReason::Watch(a)),
                    ..
                } => assert_eq!(*a, prog.counter),
                other => panic!("{other:?}"),
            }
            c.remove_breakpoint(BreakpointKind::WriteWatch, prog.counter, 8)
                .unwrap();
        }
        Err(e) => eprintln!("note: gdbserver refused a watchpoint here: {e}"),
    }

    // Resume, then drop while running: Drop interrupts and detaches, bounded.
    c.resume(ResumeAction::Continue, None).unwrap();
    let d = Instant::now();
    drop(c);
    assert!(d.elapsed() < Duration::from_secs(3));
    eprintln!(
        "gdbserver interrupt/watchpoint/drop-while-running: {:?}",
        t.elapsed()
    );
}

#[test]
fn gdbserver_resume_then_immediate_kill() {
    let Some(prog) = program() else { return };
    let t = Instant::now();
    let mut server = Server::start(prog);
    let mut c = server.connect();
    c.resume(ResumeAction::Continue, None).unwrap();
    // `g` then an immediate `k`: the client interrupts, then kills; nothing hangs.
    c.kill().unwrap();
    assert_eq!(c.state(), RunState::Gone);
    assert!(server.exited_within(Duration::from_secs(5)));
    // Everything after is refused at once.
    assert!(c.read_registers().is_err());
    eprintln!("gdbserver resume+kill: {:?}", t.elapsed());
}

#[test]
fn gdbserver_dies_while_target_runs() {
    let Some(prog) = program() else { return };
    let t = Instant::now();
    let mut server = Server::start(prog);
    let mut c = server.connect();
    c.resume(ResumeAction::Continue, None).unwrap();
    let _ = server.child.kill();
    let _ = server.child.wait();
    let w = Instant::now();
    let err = c.wait_stop(Duration::from_secs(5)).unwrap_err();
    assert_eq!(err.code(), "disconnected", "{err}");
    assert!(w.elapsed() < Duration::from_secs(2));
    let d = Instant::now();
    drop(c);
    assert!(d.elapsed() < Duration::from_secs(1));
    eprintln!("gdbserver killed under a running target: {:?}", t.elapsed());
}

#[test]
fn gdbserver_break_in_and_resume_cycles() {
    let Some(prog) = program() else { return };
    let t = Instant::now();
    let server = Server::start(prog);
    let mut c = server.connect();
    for _ in 0..5 {
        c.resume(ResumeAction::Continue, None).unwrap();
        assert!(matches!(
            c.resume(ResumeAction::Continue, None),
            Err(ntdbg_gdbremote::GdbError::Running)
        ));
        let stop = c.break_in().unwrap();
        assert_eq!(stop.signal(), Some(2), "{stop:?}");
        assert_eq!(c.state(), RunState::Stopped);
        assert!(rip(&mut c) != 0);
    }
    c.detach().unwrap();
    eprintln!("gdbserver 5 resume/break_in cycles: {:?}", t.elapsed());
}
