//! Run control that never changes the program (issue 34), against a real `gdbserver` running
//! `testdata/live/live_target.c`: a breakpoint hit by four threads at once stops on the thread
//! the stub names, every time, and a step from it moves that thread alone; steps from a
//! breakpoint on a one-byte `push rbp` leave every register as steps of the untouched code do.
//! Between ntdbg and gdbserver sits a tap that records the stub's stop replies, so each stop is
//! checked against what the stub itself said. Live `!analyze` names the write to 0x10. Skipped
//! loudly without gdbserver or cc.

use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use minidump::{MinidumpContext, MinidumpRawContext};
use ntdbg_commands::{run_command, CommandOutput};
use ntdbg_engine::live::{AttachOptions, RunState, StopCause};
use ntdbg_engine::Session;
use ntdbg_gdbremote::packet::{Event, PacketDecoder};
use ntdbg_testutil::gdbserver::{live_program, GdbServer, LiveProgram};

/// How many times the breakpoint hit by four threads is run to.
pub(crate) const THREAD_STOPS: usize = 50;
/// How many instructions are stepped from the breakpoint on `push rbp`: the whole of
/// `ntdbg_target_func`, back into `main`.
pub(crate) const STEPS: usize = 10;
/// How long a stub may take to listen (winedbg: Wine's start, and the prefix made the first
/// time).
const STUB_START: Duration = Duration::from_secs(120);
/// The trap flag of `eflags`.
const TRAP_FLAG: u64 = 0x100;

/// A TCP relay between ntdbg and the stub that keeps the thread of every stop reply
/// (`T05thread:p1a.1b;…`) the stub sent, recorded before it is passed on.
pub(crate) struct Tap {
    port: u16,
    stops: Arc<Mutex<Vec<u64>>>,
}

impl Tap {
    /// Connects to the stub at `127.0.0.1:stub_port` (waiting, bounded, until it listens:
    /// winedbg does once Wine is up) and relays the one connection the tap then accepts.
    pub(crate) fn start(stub_port: u16) -> Tap {
        let deadline = Instant::now() + STUB_START;
        let stub = loop {
            match TcpStream::connect(("127.0.0.1", stub_port)) {
                Ok(stub) => break stub,
                Err(_) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(250));
                }
                Err(e) => panic!("the stub does not listen on port {stub_port}: {e}"),
            }
        };
        let listener = TcpListener::bind("127.0.0.1:0").expect("tap listens");
        let port = listener.local_addr().expect("tap address").port();
        let stops: Arc<Mutex<Vec<u64>>> = Arc::default();
        let seen = stops.clone();
        std::thread::spawn(move || {
            let Ok((client, _)) = listener.accept() else {
                return;
            };
            let (Ok(client_in), Ok(stub_out)) = (client.try_clone(), stub.try_clone()) else {
                return;
            };
            std::thread::spawn(move || relay(client_in, stub_out, |_| {}));
            let mut decoder = PacketDecoder::new();
            relay(stub, client, move |bytes| {
                let mut events = Vec::new();
                decoder.feed(bytes, &mut events);
                for event in events {
                    if let Event::Packet { data, .. } = event {
                        if let Some(tid) = stop_thread(&data) {
                            seen.lock().unwrap().push(tid);
                        }
                    }
                }
            });
        });
        Tap { port, stops }
    }

    /// `gdb:127.0.0.1:PORT` of the tap.
    pub(crate) fn target(&self) -> String {
        format!("gdb:127.0.0.1:{}", self.port)
    }

    /// The thread of the latest stop reply the stub sent.
    pub(crate) fn last_stop_thread(&self) -> Option<u64> {
        self.stops.lock().unwrap().last().copied()
    }
}

/// Copies `from` to `to` until either end closes, showing each chunk to `watch` first.
fn relay(mut from: TcpStream, mut to: TcpStream, mut watch: impl FnMut(&[u8])) {
    let mut buf = [0u8; 16384];
    loop {
        match from.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => {
                watch(&buf[..n]);
                if to.write_all(&buf[..n]).is_err() {
                    break;
                }
            }
        }
    }
    let _ = to.shutdown(Shutdown::Both);
}

/// The thread id a stop reply names (`T05…thread:p1a.1b;` or `thread:1b;`).
fn stop_thread(packet: &[u8]) -> Option<u64> {
    let text = std::str::from_utf8(packet).ok()?;
    let rest = text.strip_prefix('T')?;
    if rest.len() < 2 || !rest.as_bytes()[..2].iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    let id = rest[2..]
        .split(';')
        .find_map(|f| f.strip_prefix("thread:"))?;
    let tid = id.rsplit('.').next()?;
    u64::from_str_radix(tid, 16).ok()
}

fn attach(target: &str) -> Session {
    let opts = AttachOptions {
        timeout: Duration::from_secs(10),
        read_only: false,
    };
    let session = Session::attach(target, Some("."), &opts).expect("attach");
    session
        .live()
        .unwrap()
        .set_command_wait(Duration::from_secs(60));
    session
}

fn run(session: &mut Session, line: &str) -> CommandOutput {
    run_command(session, line).unwrap_or_else(|e| panic!("{line}: {e}"))
}

/// The integer, control and segment registers of an x64 context, by name.
pub(crate) fn registers(context: &MinidumpContext) -> Vec<(&'static str, u64)> {
    let MinidumpRawContext::Amd64(c) = &context.raw else {
        panic!("not an x64 context: {context:?}")
    };
    vec![
        ("rax", c.rax),
        ("rbx", c.rbx),
        ("rcx", c.rcx),
        ("rdx", c.rdx),
        ("rsi", c.rsi),
        ("rdi", c.rdi),
        ("rbp", c.rbp),
        ("rsp", c.rsp),
        ("r8", c.r8),
        ("r9", c.r9),
        ("r10", c.r10),
        ("r11", c.r11),
        ("r12", c.r12),
        ("r13", c.r13),
        ("r14", c.r14),
        ("r15", c.r15),
        ("rip", c.rip),
        ("eflags", u64::from(c.eflags)),
        ("cs", u64::from(c.cs)),
        ("ss", u64::from(c.ss)),
        ("ds", u64::from(c.ds)),
        ("es", u64::from(c.es)),
        ("fs", u64::from(c.fs)),
        ("gs", u64::from(c.gs)),
        ("mxcsr", u64::from(c.mx_csr)),
    ]
}

/// The register `name` of [`registers`]' list.
pub(crate) fn value(regs: &[(&str, u64)], name: &str) -> u64 {
    regs.iter()
        .find(|(n, _)| *n == name)
        .map(|&(_, v)| v)
        .unwrap_or_else(|| panic!("no register {name}"))
}

/// Checks that two runs of the same steps left every register alike after each step: equal,
/// or, for a register whose value at the entry is the run's own (what the process start left
/// in a register the code never reads, which differs between two runs under Wine), still
/// that entry value in both runs.
pub(crate) fn assert_same_steps(got: &[Vec<(&str, u64)>], want: &[Vec<(&str, u64)>]) {
    assert_eq!(got.len(), want.len(), "steps");
    for (step, (g, w)) in got.iter().zip(want).enumerate() {
        for (((name, a), (_, b)), ((_, a0), (_, b0))) in
            g.iter().zip(w).zip(got[0].iter().zip(&want[0]))
        {
            let untouched = a0 != b0 && a == a0 && b == b0;
            assert!(
                a == b || untouched,
                "{name} after step {step}: {a:#x}, the untouched code {b:#x} (entry {a0:#x} and \
                 {b0:#x})\n{g:x?}\n{w:x?}"
            );
        }
    }
}

/// Every thread's registers, by thread id.
fn all_registers(session: &Session) -> HashMap<u32, Vec<(&'static str, u64)>> {
    session
        .target()
        .threads()
        .iter()
        .map(|t| {
            let context = t.context.as_ref().expect("live threads have a context");
            (t.id, registers(context))
        })
        .collect()
}

/// The halt the target is in.
fn halt(session: &Session) -> ntdbg_engine::live::Halt {
    match session.live().unwrap().state() {
        RunState::Halted(h) => h,
        other => panic!("not halted: {other:?}"),
    }
}

/// The addresses of the instructions `u ADDR LCOUNT` lists.
pub(crate) fn instruction_starts(session: &mut Session, addr: u64, count: usize) -> Vec<u64> {
    run(session, &format!("u {addr:#x} L{count:x}"))
        .text
        .lines()
        .filter_map(|l| {
            let (high, rest) = l.split_once('`')?;
            let low = rest.split_whitespace().next()?;
            u64::from_str_radix(&format!("{high}{low}"), 16).ok()
        })
        .collect()
}

/// The first instruction of the function the workers call, and what a step of it does to the
/// stepping thread.
#[derive(Debug, Clone, Copy)]
pub(crate) enum FirstInstruction {
    /// `push rbp` (one byte): rsp goes down by 8 and rbp is on the stack.
    PushRbp,
    /// An instruction of `len` bytes that changes only memory and the arithmetic flags
    /// (`add [global], rcx`).
    Arithmetic {
        /// Its length.
        len: u64,
    },
}

/// What a test of a breakpoint hit by several threads knows of the program.
pub(crate) struct Workers {
    /// The function every worker calls in a tight loop, with the breakpoint on its first
    /// instruction.
    pub(crate) hit_fn: u64,
    /// That instruction.
    pub(crate) first: FirstInstruction,
    /// The instructions of the workers' code, a block per function: a pc inside a block is at
    /// one of them.
    pub(crate) code: Vec<Vec<u64>>,
}

/// Runs to the breakpoint on `w.hit_fn` `THREAD_STOPS` times and checks every stop: it is
/// the thread the stub's stop reply names (`reported`), the session's current thread, at the
/// breakpoint; no thread is inside an instruction or has the trap flag; thread numbers do not
/// change; a step (`t` and `p` in turn) moves that thread over the first instruction and no
/// other thread at all. Returns how many stops passed and how many threads hit.
pub(crate) fn run_to_a_breakpoint_hit_by_threads(
    s: &mut Session,
    reported: &dyn Fn() -> Option<u64>,
    w: &Workers,
) -> (usize, usize) {
    run(s, &format!("bp {:#x}", w.hit_fn));
    let mut numbers: HashMap<u32, usize> = HashMap::new();
    let mut threads_seen = std::collections::BTreeSet::new();
    let mut passed = 0;
    for stop in 0..THREAD_STOPS {
        let out = run(s, "g").text;
        assert!(out.starts_with("Breakpoint 0 hit\n"), "stop {stop}: {out}");
        let h = halt(s);
        assert_eq!(h.cause, StopCause::Breakpoint(0), "stop {stop}");
        let stub_said = reported().expect("the stub sent a stop reply");
        let tid = h
            .thread
            .and_then(|t| t.tid())
            .expect("the stop names a thread");
        assert_eq!(tid, stub_said, "stop {stop}: attributed to another thread");
        let current = s.current_thread().expect("a current thread").id;
        assert_eq!(
            u64::from(current),
            stub_said,
            "stop {stop}: the session did not switch to the thread that stopped"
        );
        assert_eq!(s.instruction_pointer(), Some(w.hit_fn), "stop {stop}");
        threads_seen.insert(current);

        // Thread numbers last the session.
        for (index, t) in s.target().threads().iter().enumerate() {
            let number = s.thread_number(index);
            assert_eq!(
                *numbers.entry(t.id).or_insert(number),
                number,
                "stop {stop}: thread {:#x} was renumbered",
                t.id
            );
        }
        // No thread was moved back into the middle of an instruction or left with the trap
        // flag: every pc in the workers' code is at an instruction.
        let before = all_registers(s);
        for (id, regs) in &before {
            let pc = value(regs, "rip");
            let inside = w.code.iter().any(|block| {
                (block[0]..=block[block.len() - 1]).contains(&pc) && !block.contains(&pc)
            });
            assert!(
                !inside,
                "stop {stop}: thread {id:#x} at {pc:#x}, inside an instruction"
            );
            assert_eq!(
                value(regs, "eflags") & TRAP_FLAG,
                0,
                "stop {stop}: thread {id:#x} has the trap flag"
            );
        }

        // A step from the breakpoint (`t`, then `p`, in turn) executes the stopped thread's
        // first instruction and nothing else.
        let step = if stop % 2 == 0 { "t" } else { "p" };
        let out = run(s, step).text;
        assert!(!out.contains("Breakpoint"), "stop {stop}, {step}: {out}");
        assert_eq!(halt(s).cause, StopCause::StepDone, "stop {stop}, {step}");
        assert_eq!(
            reported(),
            Some(stub_said),
            "stop {stop}, {step}: the stub reported another thread's stop"
        );
        assert_eq!(
            s.current_thread().map(|t| t.id),
            Some(current),
            "stop {stop}, {step}"
        );
        // Every thread is still there (a thread the program was creating may have been
        // reported meanwhile: it is new, and has not run).
        let after = all_registers(s);
        for (id, expected) in &before {
            let mut expected = expected.clone();
            let regs = after
                .get(id)
                .unwrap_or_else(|| panic!("stop {stop}, {step}: thread {id:#x} is gone"));
            if *id == current {
                stepped_over(s, w, &mut expected, regs);
            }
            assert_eq!(
                regs, &expected,
                "stop {stop}, {step}: thread {id:#x} (stepped: {current:#x})"
            );
        }
        passed += 1;
    }
    (passed, threads_seen.len())
}

/// `before`, a thread's registers at the breakpoint, as a step of `w.first` leaves them
/// (`after`: what the step left, for the flags an arithmetic instruction sets).
fn stepped_over(
    s: &Session,
    w: &Workers,
    before: &mut [(&'static str, u64)],
    after: &[(&'static str, u64)],
) {
    let rbp = value(before, "rbp");
    let (len, sp_change) = match w.first {
        FirstInstruction::PushRbp => (1, 8),
        FirstInstruction::Arithmetic { len } => (len, 0),
    };
    let rsp = value(before, "rsp") - sp_change;
    for (name, v) in before.iter_mut() {
        match *name {
            "rip" => *v = w.hit_fn + len,
            "rsp" => *v = rsp,
            "eflags" if matches!(w.first, FirstInstruction::Arithmetic { .. }) => {
                assert_eq!(value(after, "eflags") & TRAP_FLAG, 0, "the trap flag");
                *v = value(after, "eflags");
            }
            _ => {}
        }
    }
    if let FirstInstruction::PushRbp = w.first {
        let pushed: Option<Vec<u8>> = s.read_virtual(rsp, 8).into_iter().collect();
        let pushed = u64::from_le_bytes(pushed.unwrap().try_into().unwrap());
        assert_eq!(pushed, rbp, "push rbp");
    }
}

#[test]
fn a_breakpoint_hit_by_four_threads_stops_on_the_thread_the_stub_names_50_times() {
    let Some(prog) = live_program() else {
        return;
    };
    let server = GdbServer::start(prog, &["threads"]);
    let tap = Tap::start(server.port);
    let mut s = attach(&tap.target());
    let hit_fn = prog.symbol("ntdbg_mt_hit");
    // ntdbg_mt_hit (10 instructions) and mt_worker's loop (8) are where the workers are.
    let code = instruction_starts(&mut s, hit_fn, 18);
    assert_eq!(code.len(), 18, "{code:x?}");
    let workers = Workers {
        hit_fn,
        first: FirstInstruction::PushRbp,
        code: vec![code],
    };
    let (passed, threads) =
        run_to_a_breakpoint_hit_by_threads(&mut s, &|| tap.last_stop_thread(), &workers);
    eprintln!(
        "gdbserver: {passed} of {THREAD_STOPS} stops on the reporting thread; {threads} threads hit"
    );
    assert!(threads > 1, "only one thread ever hit the breakpoint");
    // The process id is the stub's, in `|` (hex, as WinDbg shows it).
    let pid = server.inferior.expect("gdbserver said the process id");
    let bar = run(&mut s, "|").text;
    assert!(bar.contains(&format!("id: {pid:x}\t")), "{bar}");
    s.live().unwrap().close(Duration::from_secs(10)).unwrap();
}

/// Runs `ntdbg_target_func` (the first call, whose registers are the same in every run: the
/// stub starts the program with the same environment and without address randomisation)
/// instruction by instruction, `t` and `p` in turn, from a breakpoint on its first
/// instruction (`on_entry`) or from one on the call to it; returns the registers at its entry
/// and after each step.
fn steps_through_target_func(prog: &LiveProgram, on_entry: bool) -> Vec<Vec<(&'static str, u64)>> {
    let server = GdbServer::start(prog, &[]);
    let mut s = attach(&server.target());
    let func = prog.symbol("ntdbg_target_func");
    if on_entry {
        run(&mut s, &format!("bp {func:#x}"));
        let out = run(&mut s, "g").text;
        assert!(out.starts_with("Breakpoint 0 hit"), "{out}");
    } else {
        // The call in main: the function's own code has no breakpoint in it.
        let main = prog.symbol("main");
        let listing = run(&mut s, &format!("u {main:#x} L60")).text;
        let call = listing
            .lines()
            .find(|l| l.contains("call") && l.contains(&format!("{func:08x}")))
            .unwrap_or_else(|| panic!("no call to {func:#x} in main:\n{listing}"));
        let (high, rest) = call.split_once('`').unwrap();
        let low = rest.split_whitespace().next().unwrap();
        let at = u64::from_str_radix(&format!("{high}{low}"), 16).unwrap();
        run(&mut s, &format!("bp {at:#x}"));
        assert!(run(&mut s, "g").text.starts_with("Breakpoint 0 hit"));
        run(&mut s, "t");
    }
    assert_eq!(s.instruction_pointer(), Some(func));
    let context = |s: &Session| registers(&s.context().expect("a context"));
    let mut seen = vec![context(&s)];
    for step in 0..STEPS {
        run(&mut s, if step % 2 == 0 { "t" } else { "p" });
        seen.push(context(&s));
    }
    s.live().unwrap().close(Duration::from_secs(10)).unwrap();
    seen
}

#[test]
fn steps_from_a_breakpoint_on_push_rbp_match_steps_of_the_untouched_code() {
    let Some(prog) = live_program() else {
        return;
    };
    let reference = steps_through_target_func(prog, false);
    let from_breakpoint = steps_through_target_func(prog, true);
    assert_same_steps(&from_breakpoint, &reference);
    // The steps ran the function to its end: back in main, the stack as it was before the
    // call, the return address popped.
    let entry_rsp = value(&reference[0], "rsp");
    assert_eq!(value(&reference[1], "rsp"), entry_rsp - 8, "push rbp");
    assert_eq!(value(&reference[STEPS], "rsp"), entry_rsp + 8, "ret");
    let main = prog.symbol("main");
    assert!((main..main + 0x100).contains(&value(&reference[STEPS], "rip")));
}

#[test]
fn live_analyze_names_the_write_to_0x10() {
    let Some(prog) = live_program() else {
        return;
    };
    let server = GdbServer::start(prog, &["av10"]);
    let mut s = attach(&server.target());
    let out = run(&mut s, "g").text;
    assert!(
        out.contains("Access violation - code c0000005 (first chance)"),
        "{out}"
    );
    // A GDB stub reports a signal only: the access and the address come from the faulting
    // instruction, and the target is said to be live, not a dump.
    let analysis = run(&mut s, "!analyze -v").text;
    for line in [
        "TARGET_KIND:    live (x64)",
        "EXCEPTION_CODE: 0xc0000005 (EXCEPTION_ACCESS_VIOLATION)",
        "EXCEPTION_PARAMETERS: 0x1 0x10\n",
        "DESCRIPTION:    write to 0x0000000000000010\n",
    ] {
        assert!(analysis.contains(line), "{line:?} in\n{analysis}");
    }
    let exr = run(&mut s, ".exr -1").text;
    assert!(
        exr.contains("Attempt to write to address 0000000000000010"),
        "{exr}"
    );
    s.live().unwrap().close(Duration::from_secs(10)).unwrap();
}
