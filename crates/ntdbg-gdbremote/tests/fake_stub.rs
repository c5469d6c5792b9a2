//! The client against a scripted in-process stub on 127.0.0.1: checksums, run-length
//! encoding, escapes, acks and no-ack mode, holes, int3 fallback, interrupts, timeouts,
//! garbage and disconnects.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use ntdbg_gdbremote::packet::{frame, Event, PacketDecoder};
use ntdbg_gdbremote::{
    BreakpointKind, BreakpointMethod, ClientOptions, GdbClient, GdbError, ResumeAction, RunState,
    StopReply,
};

/// What the stub does in answer to one packet.
enum Act {
    /// A packet body, framed with a correct checksum.
    Reply(&'static str),
    /// A packet body built at run time.
    ReplyOwned(String),
    /// Raw bytes as they are.
    Raw(Vec<u8>),
    /// Wait.
    Sleep(u64),
    /// Close the connection.
    Close,
}

/// What the stub saw: packets (as text), and `+`/`-`/`^C` bytes.
type Log = Arc<Mutex<Vec<String>>>;

struct Stub {
    addr: String,
    log: Log,
    thread: Option<JoinHandle<()>>,
}

impl Stub {
    /// Starts a stub on a free port that answers with `handler`. The stub acks every packet
    /// with `+` until `QStartNoAckMode` is answered `OK`, unless `acks` is false.
    fn spawn<F>(acks: bool, mut handler: F) -> Stub
    where
        F: FnMut(&str) -> Vec<Act> + Send + 'static,
    {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let log: Log = Arc::default();
        let log2 = log.clone();
        let thread = std::thread::spawn(move || {
            let Ok((mut s, _)) = listener.accept() else {
                return;
            };
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let mut dec = PacketDecoder::new();
            let mut ack = acks;
            let mut buf = [0u8; 4096];
            loop {
                let n = match s.read(&mut buf) {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                };
                let mut evs = Vec::new();
                dec.feed(&buf[..n], &mut evs);
                for ev in evs {
                    let text = match ev {
                        Event::Ack => {
                            log2.lock().unwrap().push("+".into());
                            continue;
                        }
                        // The handler decides what to resend.
                        Event::Nack => "-".to_string(),
                        Event::Garbage(_) => continue,
                        Event::Interrupt => "^C".to_string(),
                        Event::Packet { data, checksum_ok } => {
                            assert!(checksum_ok, "client sent a bad checksum");
                            if ack {
                                let _ = s.write_all(b"+");
                            }
                            String::from_utf8(data).unwrap()
                        }
                    };
                    log2.lock().unwrap().push(text.clone());
                    for act in handler(&text) {
                        let res = match act {
                            Act::Reply(r) => s.write_all(&frame(r.as_bytes())),
                            Act::ReplyOwned(r) => s.write_all(&frame(r.as_bytes())),
                            Act::Raw(b) => s.write_all(&b),
                            Act::Sleep(ms) => {
                                std::thread::sleep(Duration::from_millis(ms));
                                Ok(())
                            }
                            Act::Close => return,
                        };
                        if res.is_err() {
                            return;
                        }
                    }
                    if text == "QStartNoAckMode" {
                        ack = false;
                    }
                }
            }
        });
        Stub {
            addr,
            log,
            thread: Some(thread),
        }
    }

    fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }

    /// Waits for the stub thread to end (the client closed) and returns the log.
    fn finish(mut self) -> Vec<String> {
        if let Some(t) = self.thread.take() {
            t.join().unwrap();
        }
        self.log()
    }
}

/// The answers every handshake needs.
fn handshake(p: &str, supported: &'static str) -> Option<Vec<Act>> {
    if p.starts_with("qSupported") {
        return Some(vec![Act::Reply(supported)]);
    }
    match p {
        "QStartNoAckMode" => Some(vec![Act::Reply("OK")]),
        "vCont?" => Some(vec![Act::Reply("vCont;c;C;s;S")]),
        "?" => Some(vec![Act::Reply("T05thread:1;")]),
        "D" => Some(vec![Act::Reply("OK"), Act::Close]),
        _ => None,
    }
}

fn opts() -> ClientOptions {
    ClientOptions {
        timeout: Duration::from_millis(1500),
        connect_timeout: Duration::from_secs(2),
        stall_nudge: Duration::from_millis(100),
        no_ack: true,
        drop_timeout: Duration::from_millis(500),
    }
}

#[test]
fn handshake_negotiates_no_ack_and_detaches_on_drop() {
    let stub = Stub::spawn(true, |p| {
        handshake(p, "PacketSize=4000;QStartNoAckMode+;qXfer:features:read+").unwrap_or_default()
    });
    let c = GdbClient::connect(&stub.addr, opts()).unwrap();
    assert!(!c.ack_mode());
    assert_eq!(c.packet_size(), 0x4000);
    assert!(c.features().supports("qXfer:features:read"));
    assert_eq!(c.vcont_actions().unwrap(), ["c", "C", "s", "S"]);
    assert_eq!(c.initial_stop().unwrap().signal(), Some(5));
    drop(c);
    let log = stub.finish();
    assert_eq!(log.last().map(String::as_str), Some("D"), "{log:?}");
    // After no-ack mode is on, the client sends no more acks.
    // (the '+' right after `QStartNoAckMode` acknowledges its `OK`, as the protocol says).
    let after = log.iter().position(|p| p == "vCont?").unwrap();
    assert!(!log[after..].iter().any(|p| p == "+"), "{log:?}");
}

#[test]
fn ack_mode_rle_plus_is_data_and_bad_checksum_is_retried() {
    let stub = Stub::spawn(true, move |p| {
        if let Some(a) = handshake(p, "PacketSize=200") {
            return a;
        }
        match p {
            "g" => {
                // Wrong checksum: the client must answer '-' and get it again.
                vec![Act::Raw(b"$0011#00".to_vec())]
            }
            // "0*+" is '0' plus 14 more: 15 '0's, then '1' → 16 hex digits = 8 bytes.
            "-" => vec![Act::Raw(frame(b"0*+1xxxx"))],
            _ => vec![Act::Reply("")],
        }
    });
    let mut c = GdbClient::connect(&stub.addr, opts()).unwrap();
    assert!(c.ack_mode());
    let regs = c.read_registers().unwrap();
    let mut want = vec![Some(0u8); 7];
    want.push(Some(1));
    want.extend([None, None]);
    assert_eq!(regs, want);
    c.detach().unwrap();
    let log = stub.finish();
    assert!(log.iter().any(|p| p == "-"), "client never nacked: {log:?}");
}

#[test]
fn memory_reads_split_by_packet_size_and_keep_holes() {
    // PacketSize 0x28 → at most (0x28-8)/2 = 16 bytes per 'm'.
    let stub = Stub::spawn(true, |p| {
        if let Some(a) = handshake(p, "PacketSize=28;QStartNoAckMode+") {
            return a;
        }
        let Some(rest) = p.strip_prefix('m') else {
            return vec![Act::Reply("")];
        };
        let (addr, len) = rest.split_once(',').unwrap();
        let addr = u64::from_str_radix(addr, 16).unwrap();
        let len = usize::from_str_radix(len, 16).unwrap();
        assert!(len <= 16, "chunk too big: {p}");
        // Readable: [0x1000, 0x1008) and [0x2000, ...). 0x1008..0x2000 unreadable.
        if (0x1008..0x2000).contains(&addr) {
            return vec![Act::Reply("E14")];
        }
        let end = if addr < 0x1008 {
            (addr + len as u64).min(0x1008)
        } else {
            addr + len as u64
        };
        let body: String = (addr..end).map(|a| format!("{:02x}", a as u8)).collect();
        vec![Act::ReplyOwned(body)]
    });
    let mut c = GdbClient::connect(&stub.addr, opts()).unwrap();
    let mem = c.read_memory(0x1000, 0x1010).unwrap();
    assert_eq!(mem.len(), 0x1010);
    assert_eq!(mem[0..8], (0..8).map(Some).collect::<Vec<_>>());
    assert!(mem[8..0x1000].iter().all(Option::is_none));
    assert_eq!(mem[0x1000], Some(0x00));
    assert_eq!(mem[0x100f], Some(0x0f));
    c.detach().unwrap();
    // Holes cost one request per page, not one per byte.
    let requests = stub.finish().iter().filter(|p| p.starts_with('m')).count();
    assert!(requests <= 4, "{requests} requests");
}

#[test]
fn target_xml_with_escapes_chunks_and_includes() {
    let top = "<target><architecture>i386:x86-64</architecture>\
               <xi:include href=\"core.xml\"/></target>";
    let core = "<feature name=\"org.gnu.gdb.i386.core\">\
                <reg name=\"rip\" bitsize=\"64\" regnum=\"16\"/>\
                <reg name=\"eflags\" bitsize=\"32\"/></feature><!-- }#$* -->";
    let stub = Stub::spawn(true, move |p| {
        if let Some(a) = handshake(p, "PacketSize=40;qXfer:features:read+;QStartNoAckMode+") {
            return a;
        }
        let Some(rest) = p.strip_prefix("qXfer:features:read:") else {
            return vec![Act::Reply("")];
        };
        let (annex, range) = rest.split_once(':').unwrap();
        let (off, len) = range.split_once(',').unwrap();
        let off = usize::from_str_radix(off, 16).unwrap();
        let len = usize::from_str_radix(len, 16).unwrap();
        let doc = match annex {
            "target.xml" => top,
            "core.xml" => core,
            _ => return vec![Act::Reply("E00")],
        };
        let piece = &doc.as_bytes()[off.min(doc.len())..(off + len).min(doc.len())];
        let last = off + len >= doc.len();
        let mut body = vec![if last { b'l' } else { b'm' }];
        body.extend(ntdbg_gdbremote::packet::escape(piece));
        vec![Act::Raw(frame(&body))]
    });
    let mut c = GdbClient::connect(&stub.addr, opts()).unwrap();
    let layout = c.register_layout().unwrap();
    assert_eq!(layout.architecture.as_deref(), Some("i386:x86-64"));
    assert_eq!(layout.by_name("eflags").unwrap().regnum, 17);
    c.detach().unwrap();
    let log = stub.finish();
    assert!(log.iter().filter(|p| p.contains("core.xml")).count() > 1);
}

#[test]
fn refused_z0_falls_back_to_int3_and_restores() {
    let mem = Arc::new(Mutex::new(vec![0x55u8, 0x48]));
    let m2 = mem.clone();
    let stub = Stub::spawn(true, move |p| {
        if let Some(a) = handshake(p, "PacketSize=100;QStartNoAckMode+") {
            return a;
        }
        if p.starts_with("Z0") {
            return vec![Act::Reply("")];
        }
        if p.starts_with("Z1") || p.starts_with("z1") {
            return vec![Act::Reply("OK")];
        }
        if p.starts_with("Z2") {
            return vec![Act::Reply("E16")];
        }
        if p == "m401000,1" {
            return vec![Act::ReplyOwned(format!("{:02x}", m2.lock().unwrap()[0]))];
        }
        if let Some(v) = p.strip_prefix("M401000,1:") {
            m2.lock().unwrap()[0] = u8::from_str_radix(v, 16).unwrap();
            return vec![Act::Reply("OK")];
        }
        vec![Act::Reply("")]
    });
    let mut c = GdbClient::connect(&stub.addr, opts()).unwrap();
    let how = c
        .insert_breakpoint(BreakpointKind::Software, 0x401000, 1)
        .unwrap();
    assert_eq!(how, BreakpointMethod::Int3Written);
    assert_eq!(mem.lock().unwrap()[0], 0xCC);
    assert_eq!(c.int3_original(0x401000), Some(0x55));
    assert_eq!(
        c.insert_breakpoint(BreakpointKind::Hardware, 0x401001, 1)
            .unwrap(),
        BreakpointMethod::Stub
    );
    c.remove_breakpoint(BreakpointKind::Hardware, 0x401001, 1)
        .unwrap();
    let err = c
        .insert_breakpoint(BreakpointKind::WriteWatch, 0x5000, 8)
        .unwrap_err();
    assert_eq!(err.code(), "remote_error");
    let err = c
        .insert_breakpoint(BreakpointKind::AccessWatch, 0x5000, 8)
        .unwrap_err();
    assert_eq!(err.code(), "unsupported");
    c.remove_breakpoint(BreakpointKind::Software, 0x401000, 1)
        .unwrap();
    assert_eq!(mem.lock().unwrap()[0], 0x55);
    // An int3 left in place is restored by detach.
    c.insert_breakpoint(BreakpointKind::Software, 0x401000, 1)
        .unwrap();
    drop(c);
    assert_eq!(mem.lock().unwrap()[0], 0x55);
    let log = stub.finish();
    assert_eq!(log.iter().filter(|p| p.starts_with("Z0")).count(), 1);
}

#[test]
fn resume_output_interrupt_and_stop() {
    let stub = Stub::spawn(true, |p| {
        if let Some(a) = handshake(p, "PacketSize=100;QStartNoAckMode+") {
            return a;
        }
        match p {
            // Output while running, then nothing until the interrupt.
            "vCont;c" => vec![Act::Reply("O68690a")],
            "^C" => vec![Act::Reply("T02thread:p2a.2b;")],
            "vCont;s:2b" => vec![Act::Reply("T05thread:2b;06:0010000000000000;swbreak:;")],
            "c" => unreachable!(),
            _ => vec![Act::Reply("")],
        }
    });
    let mut c = GdbClient::connect(&stub.addr, opts()).unwrap();
    c.resume(ResumeAction::Continue, None).unwrap();
    assert_eq!(c.state(), RunState::Running);
    assert!(matches!(c.read_registers(), Err(GdbError::Running)));
    assert!(matches!(
        c.resume(ResumeAction::Continue, None),
        Err(GdbError::Running)
    ));
    assert_eq!(c.wait_stop(Duration::from_millis(200)).unwrap(), None);
    assert_eq!(c.take_console_output(), b"hi\n");
    let handle = c.interrupt_handle().unwrap();
    handle.interrupt().unwrap();
    let stop = c.wait_stop(Duration::from_secs(2)).unwrap().unwrap();
    assert_eq!(stop.signal(), Some(2));
    assert_eq!(stop.thread().unwrap().tid(), Some(0x2b));
    let stop = c.step(Some(ntdbg_gdbremote::ThreadId::new(0x2b))).unwrap();
    let StopReply::Signal {
        registers, reason, ..
    } = stop
    else {
        panic!("{stop:?}")
    };
    assert_eq!(registers, vec![(6, vec![0, 0x10, 0, 0, 0, 0, 0, 0])]);
    assert_eq!(reason, Some(ntdbg_gdbremote::StopReason::SoftwareBreak));
    c.detach().unwrap();
    stub.finish();
}

#[test]
fn stalled_peer_gets_a_stray_plus() {
    // Like winedbg on some mid-size packets: no ack and no answer until a stray '+' arrives.
    let stub = Stub::spawn(false, |p| {
        match p {
            "+" => unreachable!(),
            _ if p.starts_with("qSupported") => {
                vec![Act::Raw(b"+".to_vec()), Act::Reply("PacketSize=100")]
            }
            _ => {
                let mut v = Vec::new();
                if p == "?" {
                    return v; // answered below when the '+' arrives
                }
                v.push(Act::Raw(b"+".to_vec()));
                v.extend(handshake(p, "").unwrap_or_else(|| vec![Act::Reply("")]));
                v
            }
        }
    });
    // The handler is called for packets only; watch the log for the '+' and answer then.
    let log = stub.log.clone();
    let addr = stub.addr.clone();
    let waiter = std::thread::spawn(move || GdbClient::connect(&addr, opts()));
    let t = Instant::now();
    let mut nudged = false;
    while t.elapsed() < Duration::from_secs(30) {
        let l = log.lock().unwrap().clone();
        if let Some(q) = l.iter().position(|p| p == "?") {
            if l[q + 1..].iter().any(|p| p == "+") {
                nudged = true;
                break;
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(nudged, "no stray '+' after a stall: {:?}", stub.log());
    // The stub never answers '?', so connect times out: bounded, with a clear error.
    let err = waiter.join().unwrap().unwrap_err();
    assert_eq!(err.code(), "timeout", "{err}");
    drop(stub);
}

#[test]
fn unresponsive_stub_times_out_and_garbage_is_skipped() {
    // Accepts, then says nothing.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let err = GdbClient::connect(&addr, opts()).unwrap_err();
    assert!(matches!(err, GdbError::Timeout { .. }), "{err}");
    drop(listener);

    // Garbage (and a '+' between packets) before real replies is skipped.
    let stub = Stub::spawn(true, |p| {
        let mut v = vec![Act::Raw(b"\r\nzz#00junk+".to_vec())];
        v.extend(handshake(p, "PacketSize=100").unwrap_or_else(|| {
            if p == "qfThreadInfo" {
                vec![Act::Reply("m1,2")]
            } else if p == "qsThreadInfo" {
                vec![Act::Reply("l")]
            } else {
                vec![Act::Reply("")]
            }
        }));
        v
    });
    let mut c = GdbClient::connect(&stub.addr, opts()).unwrap();
    let threads = c.threads().unwrap();
    assert_eq!(threads.len(), 2);
    c.detach().unwrap();
    stub.finish();
}

#[test]
fn disconnect_is_reported() {
    let stub = Stub::spawn(true, |p| {
        if p == "g" {
            return vec![Act::Sleep(20), Act::Close];
        }
        handshake(p, "PacketSize=100").unwrap_or_else(|| vec![Act::Reply("")])
    });
    let mut c = GdbClient::connect(&stub.addr, opts()).unwrap();
    let err = c.read_registers().unwrap_err();
    assert_eq!(err.code(), "disconnected", "{err}");
    assert_eq!(c.state(), RunState::Gone);
    drop(c); // no detach attempt on a dead connection, no hang
    stub.finish();
}

#[test]
fn connect_refused_is_a_clear_error() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let err = GdbClient::connect(&format!("127.0.0.1:{port}"), opts()).unwrap_err();
    assert_eq!(err.code(), "connect_failed");
    let _ = TcpStream::connect("127.0.0.1:1").err();
}

#[test]
fn nacked_request_is_sent_again() {
    // This stub acknowledges by hand: the first 'g' gets '-', so the client must resend it.
    let mut nacked = false;
    let stub = Stub::spawn(false, move |p| {
        if p == "g" && !nacked {
            nacked = true;
            return vec![Act::Raw(b"-".to_vec())];
        }
        let mut v = vec![Act::Raw(b"+".to_vec())];
        v.extend(handshake(p, "PacketSize=100").unwrap_or_else(|| {
            if p == "g" {
                vec![Act::Reply("0102")]
            } else {
                vec![Act::Reply("")]
            }
        }));
        v
    });
    let mut c = GdbClient::connect(&stub.addr, opts()).unwrap();
    assert_eq!(c.read_registers().unwrap(), vec![Some(1), Some(2)]);
    c.detach().unwrap();
    let log = stub.finish();
    assert_eq!(log.iter().filter(|p| *p == "g").count(), 2, "{log:?}");
}

#[test]
fn a_stub_that_stops_answering_mid_session_times_out() {
    let stub = Stub::spawn(true, |p| {
        if p.starts_with('m') {
            return vec![]; // acked, never answered
        }
        handshake(p, "PacketSize=100;QStartNoAckMode+").unwrap_or_else(|| vec![Act::Reply("")])
    });
    let mut c = GdbClient::connect(&stub.addr, opts()).unwrap();
    let t = Instant::now();
    let err = c.read_memory(0x1000, 4).unwrap_err();
    assert_eq!(err.code(), "timeout", "{err}");
    // It waited its whole timeout (1.5 s) first; how much longer a loaded machine took is
    // not the question.
    let took = t.elapsed();
    assert!(took >= Duration::from_millis(1400), "{took:?}");
    assert!(err.to_string().contains("m1000,4"), "{err}");
    drop(c); // the stub still answers `D`; Drop detaches within drop_timeout
}
