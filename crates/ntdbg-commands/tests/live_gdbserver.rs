//! Run control through the command language against a real `gdbserver` on 127.0.0.1 (started
//! by each test, killed when it ends): breakpoints, stepping, interrupting, races, read-only
//! sessions, dead stubs and disconnects. Skipped loudly without gdbserver or cc.

use std::net::TcpListener;
use std::time::{Duration, Instant};

use ntdbg_commands::{run_command, CommandOutput};
use ntdbg_engine::live::{AttachOptions, Chance, RunState, StopCause};
use ntdbg_engine::Session;
use ntdbg_testutil::gdbserver::{live_program, GdbServer, LiveProgram};

fn attach(server: &GdbServer, read_only: bool) -> Session {
    let opts = AttachOptions {
        timeout: Duration::from_secs(5),
        read_only,
    };
    let session = Session::attach(&server.target(), Some("."), &opts).expect("attach");
    session
        .live()
        .unwrap()
        .set_command_wait(Duration::from_secs(5));
    session
}

fn run(session: &mut Session, line: &str) -> CommandOutput {
    run_command(session, line).unwrap_or_else(|e| panic!("{line}: {e}"))
}

fn ip(session: &Session) -> u64 {
    session.instruction_pointer().expect("rip")
}

fn setup(args: &[&str]) -> Option<(&'static LiveProgram, GdbServer, Session)> {
    let prog = live_program()?;
    let server = GdbServer::start(prog, args);
    let session = attach(&server, false);
    Some((prog, server, session))
}

#[test]
fn breakpoints_go_and_steps_like_windbg() {
    let Some((prog, _server, mut s)) = setup(&[]) else {
        return;
    };
    let func = prog.symbol("ntdbg_target_func");
    assert!(
        s.trailer().starts_with("[target halted @ ~0 "),
        "{}",
        s.trailer()
    );

    run(&mut s, &format!("bp {func:#x}"));
    let bl = run(&mut s, "bl").text;
    assert_eq!(
        bl.trim_end(),
        format!(" 0 e Disable Clear  00000000`{func:08x}      0001 (0001)  0:****")
    );
    let t = Instant::now();
    let hit = run(&mut s, "g").text;
    eprintln!("g to the breakpoint: {:?}", t.elapsed());
    assert!(hit.starts_with("Breakpoint 0 hit\n"), "{hit}");
    assert!(hit.contains(&format!("00000000`{func:08x} ")), "{hit}");
    assert_eq!(ip(&s), func);
    assert!(
        s.trailer()
            .starts_with(&format!("[target halted @ ~0 00000000`{func:08x}")),
        "{}",
        s.trailer()
    );

    // Hit again: the breakpoint under the current instruction is stepped over.
    run(&mut s, "g");
    assert_eq!(ip(&s), func);
    let live = s.live().unwrap().clone();
    assert_eq!(live.breakpoints()[0].hits, 2);

    // `t` executes one instruction and prints the next one, without a reason line.
    let stepped = run(&mut s, "t").text;
    assert!(!stepped.contains("hit"), "{stepped}");
    assert!(ip(&s) > func && ip(&s) < func + 16, "{:#x}", ip(&s));
    assert!(
        stepped.contains(&format!("00000000`{:08x} ", ip(&s))),
        "{stepped}"
    );

    // `gu` returns into main, right after the call (once the frame pointer is set up: the
    // test program has no unwind data the walker reads).
    run(&mut s, "t 2");
    run(&mut s, "gu");
    let main = prog.symbol("main");
    let back = ip(&s);
    assert!(
        back > main && back < main + 0x100,
        "gu stopped at {back:#x}"
    );

    // `p` steps over the next call: from main, until the loop calls the function again.
    let mut calls_seen = 0;
    for _ in 0..40 {
        let bytes = s.read_virtual(ip(&s), 1);
        let was_call = bytes[0] == Some(0xe8);
        run(&mut s, "p");
        let now = ip(&s);
        assert!(now > main && now < main + 0x100, "p left main: {now:#x}");
        if was_call {
            calls_seen += 1;
            break;
        }
    }
    assert!(calls_seen > 0, "p never met a call in main");
    // The call hit breakpoint 0 inside: p reports it like WinDbg would … unless disabled.
    run(&mut s, "bd 0");
    assert!(run(&mut s, "bl").text.contains(" 0 d Enable  Clear "));
    run(&mut s, "be 0");
    run(&mut s, "bc *");
    assert_eq!(run(&mut s, "bl").text, "");
    assert!(run_command(&mut s, "bc 7").is_err());

    // A hardware write watchpoint on the counter.
    let counter = prog.symbol("ntdbg_counter");
    run(&mut s, &format!("ba w8 {counter:#x}"));
    assert!(run(&mut s, "bl")
        .text
        .contains(&format!("{counter:08x} w 8 0001")));
    let hit = run(&mut s, "g").text;
    assert!(hit.starts_with("Breakpoint 1 hit"), "{hit}");
    run(&mut s, "bc 1");

    // Thread prefixes: `~0 t` steps thread 0 alone, `~*g` resumes every thread.
    let before = ip(&s);
    let stepped = run(&mut s, "~0 t").text;
    assert!(ip(&s) != before, "{stepped}");
    run(&mut s, &format!("bp {func:#x}"));
    assert!(run(&mut s, "~*g").text.starts_with("Breakpoint 2 hit"));
    run(&mut s, "bc 2");

    // `k` works on the live stack; `g ADDR` runs to an address.
    run(&mut s, &format!("g {func:#x}"));
    assert_eq!(ip(&s), func);
    assert!(!run(&mut s, "k").text.is_empty());
    assert!(
        s.live().unwrap().breakpoints().is_empty(),
        "g ADDR's breakpoint is gone"
    );
    let closed = live.close(Duration::from_secs(5)).unwrap();
    assert!(closed.contains("detached"), "{closed}");
    assert_eq!(s.trailer(), "[target detached]");
}

#[test]
fn running_target_races_and_break_in() {
    let Some((_prog, _server, mut s)) = setup(&[]) else {
        return;
    };
    let live = s.live().unwrap().clone();
    live.set_command_wait(Duration::from_millis(300));
    // `g` with nothing to stop it: returns after the wait, the target still running.
    assert_eq!(run(&mut s, "g").text, "");
    assert_eq!(s.trailer(), "[target running]");
    // A second `g` is refused, not queued.
    let e = run_command(&mut s, "g").unwrap_err();
    assert_eq!(e.code, "target_running");
    // `k` right after `g`: waits for a stop, then is reported not run.
    let e = run_command(&mut s, "k").unwrap_err();
    assert_eq!(e.code, "target_running", "{e}");
    // A command that needs no halted target still runs.
    assert_eq!(run(&mut s, "bl").text, "");

    // break_in from another thread while this one waits for a stop (after the stops counted
    // before it, so a waiter that starts late still sees it).
    let waiter = {
        let live = live.clone();
        let stops = live.stops();
        std::thread::spawn(move || live.wait_for_stop(stops, Duration::from_secs(30)))
    };
    let t = Instant::now();
    let state = live.break_in(Duration::from_secs(5)).unwrap();
    eprintln!("break_in: {:?}", t.elapsed());
    assert!(matches!(state, RunState::Halted(_)), "{state:?}");
    assert!(waiter.join().unwrap(), "the waiter saw the stop");
    // break_in on a halted target returns at once.
    assert!(matches!(
        live.break_in(Duration::from_secs(1)).unwrap(),
        RunState::Halted(_)
    ));
    // The stop is shown at the head of the next command.
    let r = run(&mut s, "r rip").text;
    assert!(
        r.contains("Break instruction exception - code 80000003"),
        "{r}"
    );
    assert!(!run(&mut s, "r rip").text.contains("Break instruction"));
    // The event log has the resume and the stop, with the rendered text.
    let events = live.events_since(Some(Duration::from_secs(60)));
    let kinds: Vec<&str> = events.iter().map(|e| e.kind.name()).collect();
    assert!(kinds.ends_with(&["resumed", "stopped"]), "{kinds:?}");
    assert!(events.last().unwrap().text.contains("Break instruction"));

    // `g` with a tiny wait and then `k` at once: `k` waits for the stop that comes later.
    run(
        &mut s,
        &format!("bp {:#x}", _prog.symbol("ntdbg_target_func")),
    );
    live.set_command_wait(Duration::from_millis(0));
    run(&mut s, "g");
    live.set_command_wait(Duration::from_secs(5));
    let k = run(&mut s, "k").text;
    assert!(k.starts_with("Breakpoint 0 hit"), "{k}");
}

#[test]
fn access_violation_is_the_stop_reason_then_the_process_ends() {
    let Some((_prog, _server, mut s)) = setup(&["crash"]) else {
        return;
    };
    let out = run(&mut s, "g").text;
    assert!(
        out.contains("Access violation - code c0000005 (first chance)"),
        "{out}"
    );
    let live = s.live().unwrap().clone();
    let RunState::Halted(h) = live.state() else {
        panic!("not halted")
    };
    assert_eq!(
        h.cause,
        StopCause::Exception {
            code: 0xC000_0005,
            chance: Chance::First
        }
    );
    // Passing the exception on ends the process (SIGSEGV on Linux).
    let out = run(&mut s, "g").text;
    assert!(out.contains("terminated by signal"), "{out}");
    assert!(s.trailer().starts_with("[target exited"), "{}", s.trailer());
    assert_eq!(run_command(&mut s, "r").unwrap_err().code, "target_gone");
}

#[test]
fn read_only_sessions_refuse_run_control_and_breakpoints() {
    let Some(prog) = live_program() else { return };
    let server = GdbServer::start(prog, &[]);
    let mut s = attach(&server, true);
    for cmd in ["g", "p", "t", "gu", "bp 0x1000", "ba w4 0x1000"] {
        assert_eq!(
            run_command(&mut s, cmd).unwrap_err().code,
            "read_only",
            "{cmd}"
        );
    }
    assert!(run(&mut s, "r rip").text.starts_with("rip="));
    assert_eq!(run(&mut s, "bl").text, "");
}

#[test]
fn dead_and_silent_stubs_time_out_with_clear_errors() {
    let opts = AttachOptions {
        timeout: Duration::from_millis(500),
        read_only: false,
    };
    // A port where nothing listens.
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let e = Session::attach(&format!("gdb:127.0.0.1:{port}"), None, &opts).unwrap_err();
    assert!(e.to_string().contains("127.0.0.1"), "{e}");
    // A stub that accepts and never answers.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = silent.local_addr().unwrap();
    let e = Session::attach(&format!("gdb:{addr}"), None, &opts).unwrap_err();
    assert_eq!(e.code(), "timeout", "{e}");
    // Not a gdb target at all.
    let e = Session::attach("tcp:1.2.3.4", None, &opts).unwrap_err();
    assert_eq!(e.code(), "unsupported_target");
}

#[test]
fn a_lost_connection_while_running_ends_the_session_cleanly() {
    let Some((_prog, mut server, mut s)) = setup(&[]) else {
        return;
    };
    let live = s.live().unwrap().clone();
    live.set_command_wait(Duration::from_millis(100));
    run(&mut s, "g");
    server.kill_server();
    assert!(live.wait_for_stop(live.stops(), Duration::from_secs(5)));
    let RunState::Exited(why) = live.state() else {
        panic!("{:?}", live.state())
    };
    assert!(why.contains("lost"), "{why}");
    assert_eq!(run_command(&mut s, "k").unwrap_err().code, "target_gone");
}
