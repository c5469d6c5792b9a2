//! Event filters, `.lastevent`, `.dump` and `.abandon` through the command language against a
//! real `gdbserver` (started by each test): what a GDB stub shows of them (`.dump` is written
//! by ntdbg from the memory the stub reads). Skipped loudly without gdbserver or cc.

use std::ops::ControlFlow;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ntdbg_commands::{run_command, Batch, CommandError, CommandOutput, Policy};
use ntdbg_engine::live::{AttachOptions, EventKind};
use ntdbg_engine::{ErrorCode, Session};
use ntdbg_testutil::gdbserver::{live_program, GdbServer};

fn setup(args: &[&str]) -> Option<(GdbServer, Session)> {
    let prog = live_program()?;
    let server = GdbServer::start(prog, args);
    let opts = AttachOptions {
        timeout: Duration::from_secs(5),
        read_only: false,
    };
    let session = Session::attach(&server.target(), Some("."), &opts).expect("attach");
    session
        .live()
        .unwrap()
        .set_command_wait(Duration::from_secs(5));
    Some((server, session))
}

fn run(session: &mut Session, line: &str) -> CommandOutput {
    run_command(session, line).unwrap_or_else(|e| panic!("{line}: {e}"))
}

#[test]
fn sxi_av_lets_the_crash_end_the_process() {
    let Some((_server, mut s)) = setup(&["crash"]) else {
        return;
    };
    run(&mut s, "sxi av");
    let out = run(&mut s, "g").text;
    assert!(!out.contains("Access violation"), "{out}");
    assert!(out.contains("terminated by signal 11"), "{out}");
    assert!(s.trailer().starts_with("[target exited"), "{}", s.trailer());
    let live = s.live().unwrap();
    assert!(live
        .events_after(None)
        .iter()
        .all(|e| e.kind != EventKind::Event));
}

#[test]
fn sxd_av_prints_the_first_chance_and_passes_it_on() {
    let Some((_server, mut s)) = setup(&["crash"]) else {
        return;
    };
    let set = run(&mut s, "sxd av").text;
    assert_eq!(
        set,
        "  av - Access violation - second-chance break - not handled\n"
    );
    // `g` prints the first chance it passed on, then the end of the process.
    let out = run(&mut s, "g").text;
    let first = out
        .find("Access violation - code c0000005 (first chance)")
        .unwrap_or_else(|| panic!("{out}"));
    assert!(out[first..].contains("terminated by signal 11"), "{out}");
    let live = s.live().unwrap();
    let logged: Vec<String> = live
        .events_after(None)
        .into_iter()
        .filter(|e| e.kind == EventKind::Event)
        .map(|e| e.text)
        .collect();
    assert_eq!(logged.len(), 1, "{logged:?}");
    assert!(
        logged[0].contains("Access violation - code c0000005 (first chance)"),
        "{logged:?}"
    );
}

#[test]
fn exr_shows_the_live_exception_and_lastevent_its_chance() {
    let Some((_server, mut s)) = setup(&["crash"]) else {
        return;
    };
    let e = run_command(&mut s, ".exr -1").unwrap_err();
    assert_eq!(e.code, ErrorCode::NoException, "{e}");
    run(&mut s, "g");
    let exr = run(&mut s, ".exr -1").text;
    assert!(
        exr.contains("   ExceptionCode: c0000005 (Access violation)"),
        "{exr}"
    );
    // A GDB stub reports a signal only: the access and the address come from the faulting
    // instruction (`ntdbg_crash` writes through a null pointer).
    for line in [
        "NumberParameters: 2\n",
        "   Parameter[0]: 0000000000000001\n",
        "   Parameter[1]: 0000000000000000\n",
        "Attempt to write to address 0000000000000000",
    ] {
        assert!(exr.contains(line), "{line:?} in\n{exr}");
    }
    let last = run(&mut s, ".lastevent").text;
    assert!(
        last.lines()
            .next()
            .unwrap()
            .ends_with(": Access violation - code c0000005 (first chance)"),
        "{last}"
    );
}

#[test]
fn sx_lists_the_filters_like_windbg() {
    let Some((_server, mut s)) = setup(&[]) else {
        return;
    };
    let sx = run(&mut s, "sx").text;
    for line in [
        "  ct - Create thread - ignore\n",
        "  ld - Load module - output\n",
        " out - Debuggee output - output\n",
        "  av - Access violation - break - not handled\n",
        " bpe - Break instruction exception - break - handled\n",
        "  eh - C++ EH exception - second-chance break - not handled\n",
        "\n   * - Other exception - second-chance break - not handled\n",
    ] {
        assert!(sx.contains(line), "{line:?} in\n{sx}");
    }
    run(&mut s, "sxe ld:late.dll");
    run(&mut s, "sxe c0001234");
    let sx = run(&mut s, "sx").text;
    assert!(
        sx.contains("  ld - Load module - output\n       (break for late.dll)\n"),
        "{sx}"
    );
    assert!(
        sx.contains("c0001234 - Exception - break - not handled\n"),
        "{sx}"
    );
    for bad in ["sxe", "sxe zz", "sxi ld:x", "sxe -c \"k\" av"] {
        let e = run_command(&mut s, bad).expect_err(bad);
        assert_eq!(e.code, ErrorCode::SyntaxError, "{bad}: {e}");
    }
    let help = run(&mut s, "help sx").text;
    assert!(help.contains("GDB stubs"), "{help}");
}

#[test]
fn lastevent_names_the_stop_and_the_time() {
    let Some((_server, mut s)) = setup(&[]) else {
        return;
    };
    let prog = live_program().unwrap();
    let out = run(&mut s, ".lastevent").text;
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(lines[0].starts_with("Last event: "), "{out}");
    assert!(
        lines[0].ends_with(": Break instruction exception - code 80000003 (first chance)"),
        "{out}"
    );
    assert!(lines[1].starts_with("  debugger time: "), "{out}");
    run(
        &mut s,
        &format!("bp {:#x}", prog.symbol("ntdbg_target_func")),
    );
    run(&mut s, "g");
    let out = run(&mut s, ".lastevent").text;
    assert!(
        out.lines().next().unwrap().ends_with(": Hit breakpoint 0"),
        "{out}"
    );
}

#[test]
fn dump_is_written_by_ntdbg_and_abandon_says_what_a_gdb_stub_cannot_do() {
    let Some((_server, mut s)) = setup(&[]) else {
        return;
    };
    let dir = tempdir();
    let file = dir.join("x.dmp");
    // gdbserver writes no dumps: ntdbg writes it from what the stub reads, every readable
    // page of the stub's memory map (/proc/PID/maps through host I/O) for `/ma`.
    let out = run(&mut s, &format!(".dump /ma {}", file.display())).text;
    assert!(
        out.starts_with(&format!("Creating {} - full user dump\n", file.display())),
        "{out}"
    );
    assert!(
        out.contains("Written by ntdbg from the memory the stub reads: "),
        "{out}"
    );
    assert!(
        out.contains("(every readable page of the stub's memory map)"),
        "{out}"
    );
    assert!(out.ends_with("Dump successfully written\n"), "{out}");
    // It opens as a user dump with the stopped thread, and holds the program's code (far from
    // any pc: there through the memory map) as the live target reads it.
    let mut dumped = Session::open_dump(&file, None).expect("the written dump opens");
    assert_eq!(dumped.trailer(), "[dump]");
    let threads = run(&mut dumped, "~").text;
    assert!(threads.starts_with(".  0  Id: "), "{threads}");
    let code = format!("db {:#x} L20", live_program().unwrap().symbol("main"));
    let live_bytes = run(&mut s, &code).text;
    let dumped_bytes = run(&mut dumped, &code).text;
    assert!(!live_bytes.contains('?'), "{live_bytes}");
    assert_eq!(dumped_bytes, live_bytes);
    drop(dumped);
    for bad in [".dump", ".dump x.dmp", ".dump /f x.dmp", ".dump /ma"] {
        let e = run_command(&mut s, bad).unwrap_err();
        assert_eq!(e.code, ErrorCode::SyntaxError, "{bad}: {e}");
    }
    // An existing file needs /o; a front end's gate refuses paths outside its folders.
    std::fs::write(&file, b"old").unwrap();
    let e = run_command(&mut s, &format!(".dump /m {}", file.display())).unwrap_err();
    assert_eq!(e.code, ErrorCode::FileExists, "{e}");
    let gate = Policy {
        file_gate: Some(Arc::new(|p: &std::path::Path| {
            Err(CommandError::new(
                ErrorCode::PathNotAllowed,
                format!("{} is outside the allowed directories", p.display()),
            ))
        })),
        ..Policy::default()
    };
    let results = Batch::split(".dump /ma /tmp/elsewhere.dmp")
        .unwrap()
        .run(&mut s, gate, |_| ControlFlow::Continue(()));
    let e = results[0].error.as_ref().expect("refused");
    assert_eq!(e.code, ErrorCode::PathNotAllowed, "{e}");

    let out = run(&mut s, ".abandon").text;
    assert!(
        out.contains(
            "the target was resumed because the stub always resumes on detach (GDB protocol)"
        ),
        "{out}"
    );
    assert!(
        s.trailer().starts_with("[target detached"),
        "{}",
        s.trailer()
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn dump_sessions_refuse_dump_and_filters() {
    let path = ntdbg_testutil::sample("crashy-x64-null.dmp");
    let mut s = Session::open_dump(&path, None).expect("sample opens");
    let e = run_command(&mut s, ".dump /ma x.dmp").unwrap_err();
    assert_eq!(
        e.message,
        "`.dump` writes a dump of a live target; this session is already a dump"
    );
    assert_eq!(
        run_command(&mut s, "sx").unwrap_err().code,
        ErrorCode::NotLive
    );
    assert_eq!(
        run_command(&mut s, "sxe av").unwrap_err().code,
        ErrorCode::NotLive
    );
}

fn tempdir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ntdbg-live-filters-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
