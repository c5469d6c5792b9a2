//! A Windows process under `winedbg --gdb` (Wine, x64): the repository's own crash program
//! (testdata/crashy.exe + crashy.pdb, built by tools/crashgen) is attached, its modules listed
//! from the PEB loader list, broken on a function by symbol, walked with PDB symbols, and run
//! into its access violation; steps from a breakpoint on its one-byte `push rsi` leave every
//! register as steps of the untouched code do (issue 34). testdata/livectl/livectl.exe's
//! unhandled write to 0x10 is named by live `!analyze`, and its second chance stops the target.
//! Skipped loudly without Wine (a failure with `NTDBG_REQUIRE_WINEDBG=1`). The first run
//! creates a Wine prefix (about 15 s here); the tests share it, one at a time.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use ntdbg_commands::run_command;
use ntdbg_engine::live::{AttachOptions, Chance, RunState, StopCause};
use ntdbg_engine::Session;
use ntdbg_testutil::gdbserver::{host_tool_missing, skip_unless_required};

use crate::live_control::{
    assert_same_steps, instruction_starts, registers, run_to_a_breakpoint_hit_by_threads, value,
    FirstInstruction, Tap, Workers, STEPS, THREAD_STOPS,
};

/// Where Debian's Wine keeps its x64 PE DLLs.
const WINE_PE_DIR: &str = "/usr/lib/x86_64-linux-gnu/wine/x86_64-windows";

/// winedbg and its Wine prefix, shut down on drop.
struct WineDbg {
    child: Child,
    prefix: PathBuf,
}

impl Drop for WineDbg {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = Command::new("wineserver")
            .arg("-k")
            .env("WINEPREFIX", &self.prefix)
            .status();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// Serialises the tests of this file: they share one Wine prefix, which each ends with
/// `wineserver -k`.
static WINE: Mutex<()> = Mutex::new(());

/// `PROGRAM ARGS` (a sample of testdata/, copied with its PDB into the tests' folder) started
/// under `winedbg --gdb` and attached, with Wine's own DLLs on the symbol path; `None` (with a
/// SKIP line) without Wine.
fn start(sample: &str, args: &[&str]) -> Option<(MutexGuard<'static, ()>, WineDbg, Session)> {
    let (guard, wine, port) = start_winedbg(sample, args)?;
    let session = attach(&format!("gdb:127.0.0.1:{port}"));
    Some((guard, wine, session))
}

/// [`start`] with a [`Tap`] between ntdbg and winedbg.
fn start_tapped(
    sample: &str,
    args: &[&str],
) -> Option<(MutexGuard<'static, ()>, WineDbg, Tap, Session)> {
    let (guard, wine, port) = start_winedbg(sample, args)?;
    let tap = Tap::start(port);
    let session = attach(&tap.target());
    Some((guard, wine, tap, session))
}

/// The tests' folder, where the samples are copied and the Wine prefix is.
fn folder() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("winedbg-tier")
}

/// Starts `winedbg --gdb` on `PROGRAM ARGS`; returns the port it will listen on.
fn start_winedbg(sample: &str, args: &[&str]) -> Option<(MutexGuard<'static, ()>, WineDbg, u16)> {
    if let Some(why) = host_tool_missing("winedbg").or_else(|| host_tool_missing("wineserver")) {
        skip_unless_required(
            "NTDBG_REQUIRE_WINEDBG",
            "winedbg tier",
            &format!("{why} (apt-get install -y wine wine64)"),
        );
        return None;
    }
    let guard = WINE.lock().unwrap_or_else(PoisonError::into_inner);
    let dir = folder();
    std::fs::create_dir_all(&dir).unwrap();
    let exe = Path::new(sample);
    let pdb = exe.with_extension("pdb");
    for f in [exe, pdb.as_path()] {
        let name = f.file_name().unwrap();
        std::fs::copy(ntdbg_testutil::sample(&f.to_string_lossy()), dir.join(name)).unwrap();
    }
    let prefix = dir.join("prefix");
    let port = free_port();
    let child = Command::new("winedbg")
        .args(["--gdb", "--no-start", "--port", &port.to_string()])
        .arg(exe.file_name().unwrap())
        .args(args)
        .current_dir(&dir)
        .env("WINEPREFIX", &prefix)
        .env("WINEDEBUG", "-all")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("winedbg starts");
    Some((guard, WineDbg { child, prefix }, port))
}

/// Attaches to `target`, waiting (bounded) until winedbg listens: longer the first time,
/// while the prefix is made. Wine's own PE files are on the symbol path: unwind data and
/// exports of ntdll/kernel32 from disk instead of ~5 MB of images read over the (slow)
/// winedbg connection.
fn attach(target: &str) -> Session {
    let t = Instant::now();
    let opts = AttachOptions {
        timeout: Duration::from_secs(20),
        read_only: false,
    };
    let mut sympath = folder().display().to_string();
    if Path::new(WINE_PE_DIR).is_dir() {
        sympath = format!("{sympath};{WINE_PE_DIR}");
    }
    let s = loop {
        match Session::attach(target, Some(&sympath), &opts) {
            Ok(s) => break s,
            Err(e) if e.code() == "connect_failed" && t.elapsed() < Duration::from_secs(120) => {
                std::thread::sleep(Duration::from_millis(250));
            }
            Err(e) => panic!("attach: {e}"),
        }
    };
    eprintln!("winedbg up and attached: {:?}", t.elapsed());
    s.live().unwrap().set_command_wait(Duration::from_secs(60));
    s
}

#[test]
fn winedbg_attach_modules_symbol_breakpoint_stack_and_crash() {
    let Some((_guard, _wine, mut s)) = start("crashy.exe", &["null", "C:\\ntdbg-test.dmp"]) else {
        return;
    };
    let mut run = |line: &str| {
        let t = Instant::now();
        let out = run_command(&mut s, line).unwrap_or_else(|e| panic!("{line}: {e}"));
        eprintln!("{line}: {:?}", t.elapsed());
        out.text
    };

    let lm = run("lm");
    assert!(lm.contains("crashy"), "{lm}");
    assert!(lm.contains("ntdll"), "{lm}");
    run("bp crashy!write_null");
    assert!(run("bl").contains("crashy!write_null"));
    let hit = run("g");
    assert!(
        hit.starts_with("Breakpoint 0 hit\ncrashy!write_null:\n"),
        "{hit}"
    );
    assert!(
        !hit.contains("int     3"),
        "the debugger's int3 is hidden: {hit}"
    );
    let k = run("k");
    assert!(k.contains("crashy!mode_null"), "{k}");
    assert!(k.contains("crashy.c @ "), "PDB line numbers: {k}");
    let crash = run("g");
    assert!(
        crash.contains("Access violation - code c0000005 (first chance)"),
        "{crash}"
    );
    let live = s.live().unwrap().clone();
    let RunState::Halted(h) = live.state() else {
        panic!("{:?}", live.state())
    };
    assert_eq!(
        h.cause,
        StopCause::Exception {
            code: 0xC000_0005,
            chance: Chance::First
        }
    );
    assert!(
        s.trailer().contains("crashy!write_null+0x"),
        "{}",
        s.trailer()
    );
    let t = Instant::now();
    live.close(Duration::from_secs(10)).unwrap();
    eprintln!("close: {:?}", t.elapsed());
}

/// crashy.exe's `recurse` (`stack` mode), instruction by instruction from its first call,
/// `p` and `t` in turn (the tenth, a `t`, follows its call into itself), from a breakpoint on
/// its first instruction, a one-byte `push rsi` (`on_entry`), or from one on `mode_stack`
/// that calls it; returns the registers at its entry and after each step.
fn steps_through_recurse(on_entry: bool) -> Option<Vec<Vec<(&'static str, u64)>>> {
    let (_guard, _wine, mut s) = start("crashy.exe", &["stack", "C:\\ntdbg-stack.dmp"])?;
    let run = |s: &mut Session, line: &str| {
        run_command(s, line)
            .unwrap_or_else(|e| panic!("{line}: {e}"))
            .text
    };
    let recurse = s.resolve_symbol("crashy!recurse").expect("crashy!recurse");
    assert_eq!(s.read_virtual(recurse, 1), [Some(0x56)], "push rsi");
    if on_entry {
        run(&mut s, "bp crashy!recurse");
        let hit = run(&mut s, "g");
        assert!(hit.starts_with("Breakpoint 0 hit"), "{hit}");
    } else {
        run(&mut s, "bp crashy!mode_stack");
        let hit = run(&mut s, "g");
        assert!(hit.starts_with("Breakpoint 0 hit"), "{hit}");
        for _ in 0..3 {
            run(&mut s, "t");
        }
    }
    assert_eq!(s.instruction_pointer(), Some(recurse));
    let context = |s: &Session| registers(&s.context().expect("a context"));
    let mut seen = vec![context(&s)];
    for step in 0..STEPS {
        run(&mut s, if step % 2 == 0 { "p" } else { "t" });
        seen.push(context(&s));
    }
    s.live().unwrap().close(Duration::from_secs(10)).unwrap();
    Some(seen)
}

#[test]
fn winedbg_steps_from_a_breakpoint_on_push_rsi_match_steps_of_the_untouched_code() {
    let Some(reference) = steps_through_recurse(false) else {
        return;
    };
    let Some(from_breakpoint) = steps_through_recurse(true) else {
        return;
    };
    assert_same_steps(&from_breakpoint, &reference);
    // push rsi, then the frame, then the call into itself: the stack as the code made it.
    let entry_rsp = value(&reference[0], "rsp");
    assert_eq!(value(&reference[1], "rsp"), entry_rsp - 8, "push rsi");
    assert_eq!(value(&reference[STEPS], "rsp"), entry_rsp - 8 - 0x220 - 8);
    assert_eq!(value(&reference[STEPS], "rip"), value(&reference[0], "rip"));
}

#[test]
fn winedbg_second_chance_stops_the_target_and_analyze_names_the_write_to_0x10() {
    let Some((_guard, _wine, mut s)) = start("livectl/livectl.exe", &["av10"]) else {
        return;
    };
    let run = |s: &mut Session, line: &str| {
        run_command(s, line)
            .unwrap_or_else(|e| panic!("{line}: {e}"))
            .text
    };
    let first = run(&mut s, "g");
    assert!(
        first.contains("Access violation - code c0000005 (first chance)"),
        "{first}"
    );
    let analysis = run(&mut s, "!analyze -v");
    for line in [
        "TARGET_KIND:    live (x64)",
        "EXCEPTION_CODE: 0xc0000005 (EXCEPTION_ACCESS_VIOLATION)",
        "EXCEPTION_PARAMETERS: 0x1 0x10\n",
        "DESCRIPTION:    write to 0x0000000000000010\n",
        "livectl!write_at_0x10",
    ] {
        assert!(analysis.contains(line), "{line:?} in\n{analysis}");
    }
    // `g` hands the fault to the program, which does not handle it: its second chance stops
    // the target where it faulted, and the process is still there to inspect.
    let second = run(&mut s, "g");
    assert!(
        second.contains("Access violation - code c0000005 (!!! second chance !!!)"),
        "{second}"
    );
    let live = s.live().unwrap().clone();
    let RunState::Halted(h) = live.state() else {
        panic!("{:?}", live.state())
    };
    assert_eq!(
        h.cause,
        StopCause::Exception {
            code: 0xC000_0005,
            chance: Chance::Second
        }
    );
    assert!(
        s.trailer().contains("livectl!write_at_0x10"),
        "{}",
        s.trailer()
    );
    let k = run(&mut s, "k");
    assert!(k.contains("livectl!main"), "{k}");
    // Past its second chance the fault ends the process (with the debugger attached, Wine
    // starts no crash handler of its own).
    let end = run(&mut s, "g");
    assert!(end.contains("process exited"), "{end}");
    assert!(s.trailer().starts_with("[target exited"), "{}", s.trailer());
    live.close(Duration::from_secs(10)).unwrap();
}

#[test]
fn winedbg_a_breakpoint_hit_by_four_threads_stops_on_the_thread_the_stub_names_50_times() {
    let Some((_guard, _wine, tap, mut s)) = start_tapped("livectl/livectl.exe", &["threads"])
    else {
        return;
    };
    let hit_fn = s.resolve_symbol("livectl!mt_hit").expect("livectl!mt_hit");
    let worker = s
        .resolve_symbol("livectl!mt_worker")
        .expect("livectl!mt_worker");
    // mt_hit is `add [mt_total], rcx; ret`; mt_worker's loop calls it.
    let hit = instruction_starts(&mut s, hit_fn, 2);
    assert_eq!(hit[1] - hit[0], 7, "add qword ptr [rip+X], rcx: {hit:x?}");
    let workers = Workers {
        hit_fn,
        first: FirstInstruction::Arithmetic { len: 7 },
        code: vec![hit, instruction_starts(&mut s, worker, 7)],
    };
    let (passed, threads) =
        run_to_a_breakpoint_hit_by_threads(&mut s, &|| tap.last_stop_thread(), &workers);
    eprintln!(
        "winedbg: {passed} of {THREAD_STOPS} stops on the reporting thread; {threads} threads hit"
    );
    assert!(threads > 1, "only one thread ever hit the breakpoint");
    s.live().unwrap().close(Duration::from_secs(10)).unwrap();
}
