//! Windows debug events through `LiveControl`, against a scripted in-process stub that speaks
//! like ntdbg's Win32 stub (`ntdbg-*` pairs, `Qntdbg.*` packets): the event filters log and
//! resume what they pass over, a break ends the wait with WinDbg's line, `break_in` wins over
//! a flood of debug strings, and `.dump` / detach-suspended reach the stub.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use ntdbg_engine::live::{
    Chance, DumpKind, EventKind, FilterAction, Leave, LiveControl, Resume, RunState, StopCause,
};
use ntdbg_gdbremote::packet::{frame, Event, PacketDecoder};
use ntdbg_gdbremote::{ClientOptions, GdbClient, RegisterLayout};

const MODULE_BASE: u64 = 0x1000_0000;
const THREAD: &str = "thread:p10.20;";

/// What the scripted stub answers to each resume, in order; when the script runs out, every
/// resume gets `flood` (a debug string) if set.
struct Script {
    stops: VecDeque<String>,
    flood: Option<String>,
    interrupted: bool,
}

type Log = Arc<Mutex<Vec<String>>>;

fn hex(text: &str) -> String {
    text.bytes().map(|b| format!("{b:02x}")).collect()
}

fn output(text: &str) -> String {
    format!("T05{THREAD}ntdbg-event:output;ntdbg-text:{};", hex(text))
}

fn exception(signal: u8, code: u32, chance: u8) -> String {
    format!("T{signal:02x}{THREAD}ntdbg-event:exception;ntdbg-exc:{code:08x};ntdbg-chance:{chance};ntdbg-excaddr:401000;")
}

/// The bytes of the `g` reply: zeros, with rip = 0x401000.
fn registers() -> String {
    let layout = RegisterLayout::amd64_core();
    let rip = layout.by_name("rip").expect("rip");
    let size = (0..200)
        .filter_map(|n| layout.by_regnum(n))
        .map(|r| r.offset + (r.bitsize as usize).div_ceil(8))
        .max()
        .expect("registers");
    let mut bytes = vec![0u8; size];
    bytes[rip.offset..rip.offset + 8].copy_from_slice(&0x401000u64.to_le_bytes());
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Memory of the stub: a PE header at MODULE_BASE whose SizeOfImage is 0x5000.
fn memory(addr: u64, len: usize) -> String {
    let mut header = vec![0u8; 0x100];
    header[0x3c..0x40].copy_from_slice(&0x80u32.to_le_bytes());
    header[0x80..0x84].copy_from_slice(b"PE\0\0");
    header[0xd0..0xd4].copy_from_slice(&0x5000u32.to_le_bytes());
    let Some(start) = addr.checked_sub(MODULE_BASE).map(|o| o as usize) else {
        return "E14".into();
    };
    match header.get(start..start + len) {
        Some(bytes) => bytes.iter().map(|b| format!("{b:02x}")).collect(),
        None => "E14".into(),
    }
}

/// Starts the stub; returns the client's address and the log of packets it received.
fn stub(script: Script) -> (String, Log) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let log: Log = Arc::default();
    let seen = log.clone();
    std::thread::spawn(move || {
        let Ok((mut s, _)) = listener.accept() else {
            return;
        };
        let mut script = script;
        let mut dec = PacketDecoder::new();
        let mut acks = true;
        let mut buf = [0u8; 4096];
        loop {
            let n = match s.read(&mut buf) {
                Ok(0) | Err(_) => return,
                Ok(n) => n,
            };
            let mut events = Vec::new();
            dec.feed(&buf[..n], &mut events);
            for event in events {
                let packet = match event {
                    Event::Packet { data, .. } => String::from_utf8(data).unwrap(),
                    // A Windows break-in: a thread starts, then breaks.
                    Event::Interrupt => {
                        script.interrupted = true;
                        continue;
                    }
                    _ => continue,
                };
                if acks {
                    let _ = s.write_all(b"+");
                }
                seen.lock().unwrap().push(packet.clone());
                let reply = match packet.as_str() {
                    p if p.starts_with("qSupported") => "PacketSize=1000;QStartNoAckMode+".into(),
                    "QStartNoAckMode" => {
                        acks = false;
                        "OK".into()
                    }
                    "?" => format!("T05{THREAD}ntdbg-event:initial-breakpoint;"),
                    "g" => registers(),
                    p if p.starts_with('H') => "OK".into(),
                    p if p.starts_with('m') => {
                        let (a, l) = p[1..].split_once(',').unwrap();
                        memory(
                            u64::from_str_radix(a, 16).unwrap(),
                            usize::from_str_radix(l, 16).unwrap(),
                        )
                    }
                    "Qntdbg.detach-suspended:1" => "OK".into(),
                    p if p.starts_with("Qntdbg.dump:") => "OK".into(),
                    "D" => {
                        let _ = s.write_all(&frame(b"OK"));
                        return;
                    }
                    p if p == "c" || p.starts_with('C') || p == "s" => {
                        if std::mem::take(&mut script.interrupted) {
                            script.stops.push_front(format!(
                                "T02{THREAD}ntdbg-event:exception;ntdbg-exc:80000003;ntdbg-chance:1;"
                            ));
                            format!("T05{THREAD}ntdbg-event:create-thread;")
                        } else {
                            match script.stops.pop_front().or_else(|| script.flood.clone()) {
                                Some(stop) => stop,
                                // Running until interrupted.
                                None => continue,
                            }
                        }
                    }
                    _ => String::new(),
                };
                if s.write_all(&frame(reply.as_bytes())).is_err() {
                    return;
                }
            }
        }
    });
    (addr, log)
}

fn control(script: Script) -> (Arc<LiveControl>, Log) {
    let (addr, log) = stub(script);
    let opts = ClientOptions {
        timeout: Duration::from_secs(5),
        ..ClientOptions::default()
    };
    let client = GdbClient::connect(&addr, opts).expect("connect");
    let live = LiveControl::new(
        Arc::new(Mutex::new(client)),
        RegisterLayout::amd64_core(),
        false,
        Some(0x10),
    )
    .expect("control");
    (live, log)
}

fn go(live: &Arc<LiveControl>, pass: bool) -> RunState {
    let stops = live.stops();
    live.resume(Resume::Go { pass_signal: pass })
        .expect("resume");
    assert!(live.wait_for_stop(stops, Duration::from_secs(5)), "no stop");
    live.state()
}

fn halt(state: RunState) -> ntdbg_engine::live::Halt {
    match state {
        RunState::Halted(h) => h,
        other => panic!("not halted: {other:?}"),
    }
}

fn resumes(log: &Log) -> Vec<String> {
    log.lock()
        .unwrap()
        .iter()
        .filter(|p| *p == "c" || p.starts_with('C') || *p == "s")
        .cloned()
        .collect()
}

#[test]
fn filters_log_and_resume_what_they_pass_over_and_break_in_windbg_words() {
    let name = "C:\\app\\late.dll";
    let script = Script {
        stops: VecDeque::from([
            output("hello from the program\n"),
            format!(
                "T05{THREAD}ntdbg-event:load;ntdbg-module:{MODULE_BASE:x};ntdbg-name:{};",
                hex(name)
            ),
            format!("T05{THREAD}ntdbg-event:create-thread;"),
            exception(6, 0xE06D_7363, 1),
            exception(0x0b, 0xC000_0005, 1),
            exception(0x0b, 0xC000_0005, 2),
        ]),
        flood: None,
        interrupted: false,
    };
    let (live, log) = control(script);
    let first = halt(live.state());
    assert_eq!(first.cause, StopCause::InitialBreakpoint);
    assert_eq!(
        first.reason.as_deref(),
        Some("(10.20): Break instruction exception - code 80000003 (first chance)")
    );

    // Output, a load, a thread and a first-chance C++ exception pass; the access violation
    // breaks on first chance.
    let h = halt(go(&live, false));
    assert_eq!(
        h.cause,
        StopCause::Exception {
            code: 0xC000_0005,
            chance: Chance::First
        }
    );
    assert!(h
        .reason
        .as_deref()
        .unwrap()
        .starts_with("(10.20): Access violation - code c0000005 (first chance)\nFirst chance"));
    assert_eq!(
        h.event_text,
        "Access violation - code c0000005 (first chance)"
    );
    assert_eq!(live.stops(), 2, "passed-over events are not stops");
    let logged: Vec<String> = live
        .events_after(None)
        .into_iter()
        .filter(|e| e.kind == EventKind::Event)
        .map(|e| e.text)
        .collect();
    assert_eq!(
        logged,
        [
            "hello from the program".to_string(),
            format!("ModLoad: 00000000`10000000 00000000`10005000   {name}"),
            "(10.20): C++ exception (MSVC) - code e06d7363 (first chance)\n\
             First chance exceptions are reported before any exception handling.\n\
             This exception may be expected and handled."
                .to_string(),
        ]
    );
    // The C++ exception was passed on (`C 06`), the rest resumed as handled.
    assert_eq!(resumes(&log), ["c", "c", "c", "c", "C06"]);

    // `g` passes the access violation on; its second chance breaks.
    let h = halt(go(&live, true));
    assert_eq!(resumes(&log).last().map(String::as_str), Some("C0b"));
    assert_eq!(
        h.reason.as_deref(),
        Some("(10.20): Access violation - code c0000005 (!!! second chance !!!)")
    );

    // The stub writes dumps and leaves the process suspended on request.
    live.write_dump(DumpKind::Full, "C:\\x.dmp").expect("dump");
    assert!(log
        .lock()
        .unwrap()
        .contains(&format!("Qntdbg.dump:ma,{}", hex("C:\\x.dmp"))));
    let closed = live
        .close_leaving(Duration::from_secs(5), Leave::Suspended)
        .expect("close");
    assert!(
        closed.ends_with("leaving the process suspended"),
        "{closed}"
    );
    let log = log.lock().unwrap().clone();
    let at = |p: &str| log.iter().position(|x| x == p).unwrap_or(usize::MAX);
    assert!(at("Qntdbg.detach-suspended:1") < at("D"), "{log:?}");
}

#[test]
fn ignored_exceptions_pass_silently_and_sxe_ld_breaks_on_its_module() {
    let script = Script {
        stops: VecDeque::from([
            exception(0x0b, 0xC000_0005, 1),
            format!(
                "T05{THREAD}ntdbg-event:load;ntdbg-module:{MODULE_BASE:x};ntdbg-name:{};",
                hex("C:\\app\\other.dll")
            ),
            format!(
                "T05{THREAD}ntdbg-event:load;ntdbg-module:{MODULE_BASE:x};ntdbg-name:{};",
                hex("C:\\app\\late.dll")
            ),
        ]),
        flood: None,
        interrupted: false,
    };
    let (live, log) = control(script);
    live.set_filter("av", FilterAction::Ignore).unwrap();
    live.set_filter("ld:late", FilterAction::Break).unwrap();
    let h = halt(go(&live, false));
    assert_eq!(h.cause, StopCause::ModuleLoad);
    assert_eq!(
        h.event_text,
        "Load module C:\\app\\late.dll at 00000000`10000000"
    );
    let logged: Vec<String> = live
        .events_after(None)
        .into_iter()
        .filter(|e| e.kind == EventKind::Event)
        .map(|e| e.text)
        .collect();
    assert_eq!(logged.len(), 1, "{logged:?}");
    assert!(logged[0].contains("other.dll"), "{logged:?}");
    assert_eq!(resumes(&log), ["c", "C0b", "c"]);
}

#[test]
fn break_in_wins_over_a_flood_of_debug_strings() {
    let script = Script {
        stops: VecDeque::new(),
        flood: Some(output("spam\n")),
        interrupted: false,
    };
    let (live, _log) = control(script);
    live.resume(Resume::Go { pass_signal: false }).unwrap();
    // The flood is under way once its strings are logged.
    let deadline = Instant::now() + Duration::from_secs(30);
    while !live
        .events_after(None)
        .iter()
        .any(|e| e.kind == EventKind::Event && e.text == "spam")
    {
        assert!(Instant::now() < deadline, "no debug string was logged");
        std::thread::yield_now();
    }
    assert_eq!(live.state(), RunState::Running);
    // The interrupt ends the flood: the break-in's stop comes within its wait.
    let state = live.break_in(Duration::from_secs(30)).expect("break in");
    // The break-in's own thread passed; its break instruction is the stop.
    let h = halt(state);
    assert_eq!(
        h.reason.as_deref(),
        Some("(10.20): Break instruction exception - code 80000003 (first chance)")
    );
    // The log stays bounded however many strings came.
    assert!(live.events_after(None).len() <= 256);
    assert!(live
        .events_after(None)
        .iter()
        .any(|e| e.kind == EventKind::Event && e.text == "spam"));
}
