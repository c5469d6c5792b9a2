//! The client against a real `gdbserver` (Debian package `gdbserver`) on 127.0.0.1, debugging a
//! small C program compiled by the test. Every test is bounded by timeouts and kills its
//! gdbserver. Without `gdbserver` or `cc` on PATH the tests print a loud SKIP and pass.

use std::time::{Duration, Instant};

use ntdbg_gdbremote::{
    BreakpointKind, BreakpointMethod, ClientOptions, GdbClient, ResumeAction, RunState, StopReason,
    StopReply,
};
use ntdbg_testutil::gdbserver::{live_program, GdbServer, LiveProgram};

/// The test program (`testdata/live/live_target.c`, shared with the engine's live tests) and
/// the two symbols these tests use; `None` (with a SKIP line) when the tools are missing.
struct Program {
    prog: &'static LiveProgram,
    func: u64,
    counter: u64,
}

fn program() -> Option<Program> {
    let prog = live_program()?;
    Some(Program {
        prog,
        func: prog.symbol("ntdbg_target_func"),
        counter: prog.symbol("ntdbg_counter"),
    })
}

/// Starts gdbserver on the test program.
fn start(prog: &Program) -> GdbServer {
    GdbServer::start(prog.prog, &[])
}

/// A client connected to `server`, with a 5 s deadline per reply.
fn connect(server: &GdbServer) -> GdbClient {
    let opts = ClientOptions {
        timeout: Duration::from_secs(5),
        ..ClientOptions::default()
    };
    GdbClient::connect(&format!("127.0.0.1:{}", server.port), opts).expect("connect")
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
    let mut server = start(&prog);
    let mut c = connect(&server);
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
    let mut server = start(&prog);
    let mut c = connect(&server);
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
    let _server = start(&prog);
    let mut c = connect(&_server);
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
    drop(c);
    eprintln!(
        "gdbserver interrupt/watchpoint/drop-while-running: {:?}",
        t.elapsed()
    );
}

#[test]
fn gdbserver_resume_then_immediate_kill() {
    let Some(prog) = program() else { return };
    let t = Instant::now();
    let mut server = start(&prog);
    let mut c = connect(&server);
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
    let mut server = start(&prog);
    let mut c = connect(&server);
    c.resume(ResumeAction::Continue, None).unwrap();
    server.kill_server();
    // The lost connection ends the wait with an error (not its timeout's `Ok(None)`).
    let err = c.wait_stop(Duration::from_secs(30)).unwrap_err();
    assert_eq!(err.code(), "disconnected", "{err}");
    drop(c);
    eprintln!("gdbserver killed under a running target: {:?}", t.elapsed());
}

#[test]
fn gdbserver_break_in_and_resume_cycles() {
    let Some(prog) = program() else { return };
    let t = Instant::now();
    let server = start(&prog);
    let mut c = connect(&server);
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
