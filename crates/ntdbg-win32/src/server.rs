//! The GDB remote protocol side of the stub: reads packets from the loopback connection,
//! answers them from a [`Backend`], and sends stop replies while the debuggee runs.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use ntdbg_gdbremote::packet::{
    escape, frame, from_hex, parse_hex_u64, to_hex, Event, PacketDecoder,
};
use ntdbg_gdbremote::ThreadId;

use crate::backend::{
    target_xml, Backend, BreakType, DumpKind, Halt, Hit, Registers, Resume, Stop, REGISTERS,
};

/// How long one wait for a debug event takes while the debuggee runs.
const EVENT_POLL: Duration = Duration::from_millis(20);
/// How long one socket read waits while the debuggee runs (events are polled in between).
const READ_POLL_RUNNING: Duration = Duration::from_millis(10);
/// How long one socket read waits while the debuggee is stopped.
const READ_POLL_STOPPED: Duration = Duration::from_millis(250);
/// Largest memory read or write served at once.
const MAX_MEMORY: usize = 0x8000;
/// The packet size announced in `qSupported` (hex 10000 = 64 KiB).
const PACKET_SIZE: &str = "10000";

/// What handling a packet led to.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Action {
    /// Send this reply.
    Reply(Vec<u8>),
    /// The debuggee runs: no reply until it stops.
    Resumed,
    /// Send this reply (if any), then close the connection: the session is over.
    Close(Option<Vec<u8>>),
}

fn reply(text: impl Into<Vec<u8>>) -> Action {
    Action::Reply(text.into())
}

fn error(message: &str) -> Action {
    // `E.` + text: the message without the characters that would break the framing.
    let clean: String = message
        .chars()
        .map(|c| {
            if matches!(c, '$' | '#' | '*' | '}') {
                '?'
            } else {
                c
            }
        })
        .take(200)
        .collect();
    reply(format!("E.{clean}"))
}

/// The protocol state of one connection.
#[derive(Debug)]
pub(crate) struct Server<B: Backend> {
    backend: B,
    running: bool,
    ack_mode: bool,
    g_thread: Option<u32>,
    leave_suspended: bool,
    gone: bool,
}

impl<B: Backend> Server<B> {
    /// A server over a stopped backend.
    pub fn new(backend: B) -> Server<B> {
        Server {
            backend,
            running: false,
            ack_mode: true,
            g_thread: None,
            leave_suspended: false,
            gone: false,
        }
    }

    /// Serves `stream` until the client detaches, kills or goes away. A client that leaves
    /// without `D` or `k` is detached from (the process goes on).
    pub fn serve(mut self, mut stream: TcpStream) {
        let mut decoder = PacketDecoder::new();
        let mut buf = [0u8; 8192];
        let _ = stream.set_nodelay(true);
        let _ = stream.set_write_timeout(Some(Duration::from_secs(10)));
        loop {
            if self.running {
                match self.backend.wait(EVENT_POLL) {
                    Ok(Some(halt)) => {
                        self.running = false;
                        self.g_thread = None;
                        let exited = matches!(halt, Halt::Exited(_));
                        let sent = self.send(&mut stream, &stop_packet(self.backend.pid(), &halt));
                        if exited {
                            // Nothing is left to debug: a client that cannot read the `W`
                            // sees the connection end instead.
                            self.gone = true;
                            let _ = stream.shutdown(std::net::Shutdown::Both);
                            return;
                        }
                        if sent.is_err() {
                            break;
                        }
                    }
                    Ok(None) => {}
                    Err(_) => {
                        // The debug loop failed: report the process as gone.
                        self.running = false;
                        self.gone = true;
                        let _ = self.send(&mut stream, b"X09");
                        break;
                    }
                }
            }
            let wait = if self.running {
                READ_POLL_RUNNING
            } else {
                READ_POLL_STOPPED
            };
            let _ = stream.set_read_timeout(Some(wait));
            let n = match stream.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => n,
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                    continue
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(_) => break,
            };
            let mut events = Vec::new();
            decoder.feed(&buf[..n], &mut events);
            let mut close = false;
            for event in events {
                match event {
                    Event::Packet { data, checksum_ok } => {
                        if self.ack_mode {
                            let ack: &[u8] = if checksum_ok { b"+" } else { b"-" };
                            if stream.write_all(ack).is_err() {
                                close = true;
                                break;
                            }
                        }
                        if !checksum_ok {
                            continue;
                        }
                        match self.handle(&data) {
                            Action::Reply(r) => {
                                if self.send(&mut stream, &r).is_err() {
                                    close = true;
                                }
                            }
                            Action::Resumed => self.running = true,
                            Action::Close(r) => {
                                if let Some(r) = r {
                                    let _ = self.send(&mut stream, &r);
                                }
                                close = true;
                            }
                        }
                        if data == b"QStartNoAckMode" {
                            self.ack_mode = false;
                        }
                    }
                    Event::Interrupt if self.running => {
                        // A failed break-in shows up as no stop; the client's wait is bounded.
                        let _ = self.backend.interrupt();
                    }
                    Event::Ack | Event::Nack | Event::Interrupt | Event::Garbage(_) => {}
                }
                if close {
                    break;
                }
            }
            if close {
                let _ = stream.shutdown(std::net::Shutdown::Both);
                return;
            }
        }
        // The client went away without `D` or `k`: leave the process running.
        if !self.gone {
            let _ = self.backend.detach(false);
        }
    }

    fn send(&self, stream: &mut TcpStream, data: &[u8]) -> std::io::Result<()> {
        stream.write_all(&frame(data))
    }

    /// The thread `g`/`p`/`m` requests use: the one `Hg` chose, else the stopped one.
    fn thread(&self) -> Option<u32> {
        self.g_thread.or(match self.backend.halt() {
            Halt::Stopped(s) => Some(s.tid),
            Halt::Exited(_) => None,
        })
    }

    /// Answers one packet.
    pub fn handle(&mut self, data: &[u8]) -> Action {
        if self.running {
            // Only an interrupt is expected while running.
            return error("the target is running");
        }
        if self.gone && !matches!(data.first(), Some(b'?' | b'D' | b'k' | b'v' | b'q')) {
            return error("the process has ended");
        }
        let text = String::from_utf8_lossy(data);
        match data.first().copied() {
            Some(b'?') => reply(stop_packet(self.backend.pid(), self.backend.halt())),
            Some(b'q') => self.query(&text),
            Some(b'Q') => self.set(&text),
            Some(b'g') => match self.thread().map(|t| self.backend.read_registers(t)) {
                Some(Ok(regs)) => reply(to_hex(&regs.to_bytes())),
                Some(Err(e)) => error(&e),
                None => error("no thread"),
            },
            Some(b'G') => self.write_all_registers(&data[1..]),
            Some(b'p') => self.read_one_register(&text[1..]),
            Some(b'P') => self.write_one_register(&text[1..]),
            Some(b'm') => self.read_memory(&text[1..]),
            Some(b'M') => self.write_memory(&text[1..]),
            Some(b'Z') | Some(b'z') => self.breakpoint(data[0] == b'Z', &text[1..]),
            Some(b'H') => self.select_thread(&data[1..]),
            Some(b'T') => match parse_thread(&data[1..]) {
                Some(tid) if self.backend.threads().contains(&tid) => reply("OK"),
                _ => reply("E01"),
            },
            Some(b'c') => self.resume(None, false, &data[1..]),
            Some(b's') => {
                let tid = self.thread();
                self.resume(tid, false, &data[1..])
            }
            Some(b'C') => self.resume_with_signal(None, &text[1..]),
            Some(b'v') => self.v_packet(&text),
            Some(b'D') => {
                let r = self.backend.detach(self.leave_suspended);
                self.gone = true;
                Action::Close(Some(match r {
                    Ok(()) => b"OK".to_vec(),
                    Err(e) => format!("E.{e}").into_bytes(),
                }))
            }
            Some(b'k') => {
                let _ = self.backend.kill();
                self.gone = true;
                Action::Close(None)
            }
            _ => reply(""),
        }
    }

    fn query(&mut self, text: &str) -> Action {
        if text.starts_with("qSupported") {
            return reply(format!(
                "PacketSize={PACKET_SIZE};qXfer:features:read+;QStartNoAckMode+;swbreak+;\
                 hwbreak+;multiprocess+;vContSupported+"
            ));
        }
        if let Some(rest) = text.strip_prefix("qXfer:features:read:") {
            return xfer(rest);
        }
        if text == "qfThreadInfo" {
            let pid = self.backend.pid();
            let list: Vec<String> = self
                .backend
                .threads()
                .into_iter()
                .map(|t| format!("p{pid:x}.{t:x}"))
                .collect();
            return reply(format!("m{}", list.join(",")));
        }
        if text == "qsThreadInfo" {
            return reply("l");
        }
        if text == "qC" {
            return match self.thread() {
                Some(t) => reply(format!("QCp{:x}.{t:x}", self.backend.pid())),
                None => reply(""),
            };
        }
        if text == "qAttached" {
            return reply("1");
        }
        if let Some(tid) = text.strip_prefix("qGetTIBAddr:") {
            return match parse_hex_u64(tid.as_bytes())
                .and_then(|t| u32::try_from(t).ok())
                .and_then(|t| self.backend.teb(t))
            {
                Some(teb) => reply(format!("{teb:x}")),
                None => reply("E01"),
            };
        }
        reply("")
    }

    fn set(&mut self, text: &str) -> Action {
        if text == "QStartNoAckMode" {
            return reply("OK");
        }
        if let Some(v) = text.strip_prefix("Qntdbg.detach-suspended:") {
            self.leave_suspended = v == "1";
            return reply("OK");
        }
        if let Some(rest) = text.strip_prefix("Qntdbg.dump:") {
            let Some((kind, path)) = rest.split_once(',') else {
                return error("Qntdbg.dump:KIND,HEXPATH");
            };
            let kind = match kind {
                "ma" => DumpKind::Full,
                "m" => DumpKind::Mini,
                _ => return error("the dump kind is ma or m"),
            };
            let Some(path) = from_hex(path.as_bytes()).and_then(|p| String::from_utf8(p).ok())
            else {
                return error("the dump path is not hex-encoded UTF-8");
            };
            return match self.backend.write_dump(kind, &path) {
                Ok(()) => reply("OK"),
                Err(e) => error(&e),
            };
        }
        reply("")
    }

    fn write_all_registers(&mut self, hex: &[u8]) -> Action {
        let Some(tid) = self.thread() else {
            return error("no thread");
        };
        match from_hex(hex).and_then(|b| Registers::from_bytes(&b)) {
            Some(regs) => match self.backend.write_registers(tid, &regs) {
                Ok(()) => reply("OK"),
                Err(e) => error(&e),
            },
            None => reply("E01"),
        }
    }

    fn read_one_register(&mut self, text: &str) -> Action {
        let (Some(n), Some(tid)) = (parse_regnum(text), self.thread()) else {
            return reply("E01");
        };
        match self.backend.read_registers(tid) {
            Ok(regs) => {
                let bytes = regs.0[n].to_le_bytes();
                reply(to_hex(&bytes[..REGISTERS[n].1 as usize / 8]))
            }
            Err(e) => error(&e),
        }
    }

    fn write_one_register(&mut self, text: &str) -> Action {
        let Some((num, value)) = text.split_once('=') else {
            return reply("E01");
        };
        let (Some(n), Some(tid)) = (parse_regnum(num), self.thread()) else {
            return reply("E01");
        };
        let size = REGISTERS[n].1 as usize / 8;
        let Some(bytes) = from_hex(value.as_bytes()).filter(|b| b.len() == size) else {
            return reply("E01");
        };
        let mut buf = [0u8; 8];
        buf[..size].copy_from_slice(&bytes);
        match self.backend.read_registers(tid) {
            Ok(mut regs) => {
                regs.0[n] = u64::from_le_bytes(buf);
                match self.backend.write_registers(tid, &regs) {
                    Ok(()) => reply("OK"),
                    Err(e) => error(&e),
                }
            }
            Err(e) => error(&e),
        }
    }

    fn read_memory(&mut self, text: &str) -> Action {
        let Some((addr, len)) = parse_addr_len(text) else {
            return reply("E01");
        };
        if len > MAX_MEMORY {
            return reply("E01");
        }
        let bytes = self.backend.read_memory(addr, len);
        if bytes.is_empty() && len > 0 {
            return reply("E14");
        }
        reply(to_hex(&bytes))
    }

    fn write_memory(&mut self, text: &str) -> Action {
        let Some((head, hex)) = text.split_once(':') else {
            return reply("E01");
        };
        let Some((addr, len)) = parse_addr_len(head) else {
            return reply("E01");
        };
        match from_hex(hex.as_bytes()) {
            Some(bytes) if bytes.len() == len && len <= MAX_MEMORY => {
                match self.backend.write_memory(addr, &bytes) {
                    Ok(()) => reply("OK"),
                    Err(_) => reply("E14"),
                }
            }
            _ => reply("E01"),
        }
    }

    fn breakpoint(&mut self, insert: bool, text: &str) -> Action {
        let mut parts = text.split([',', ';']);
        let kind = match parts.next() {
            Some("0") => BreakType::Software,
            Some("1") => BreakType::Hardware,
            Some("2") => BreakType::Write,
            Some("3") => BreakType::Read,
            Some("4") => BreakType::Access,
            _ => return reply(""),
        };
        let addr = parts.next().and_then(|a| parse_hex_u64(a.as_bytes()));
        let len = parts.next().and_then(|l| parse_hex_u64(l.as_bytes()));
        let (Some(addr), Some(len)) = (addr, len) else {
            return reply("E01");
        };
        let r = if insert {
            self.backend.insert_breakpoint(kind, addr, len)
        } else {
            self.backend.remove_breakpoint(kind, addr, len)
        };
        match r {
            Ok(()) => reply("OK"),
            Err(e) => error(&e),
        }
    }

    fn select_thread(&mut self, rest: &[u8]) -> Action {
        let Some((&which, id)) = rest.split_first() else {
            return reply("E01");
        };
        let Some(parsed) = ThreadId::parse(id) else {
            return reply("E01");
        };
        if which == b'g' {
            match parsed.tid() {
                Some(t) => match u32::try_from(t) {
                    Ok(t) if self.backend.threads().contains(&t) => self.g_thread = Some(t),
                    _ => return reply("E01"),
                },
                // `-1`/`0`: back to the stopped thread.
                None => self.g_thread = None,
            }
        }
        reply("OK")
    }

    fn resume_with_signal(&mut self, tid: Option<u32>, text: &str) -> Action {
        // `C sig[;addr]`: resuming with a signal passes the exception on.
        let sig = text.split(';').next().unwrap_or("");
        if parse_hex_u64(sig.as_bytes()).is_none() {
            return reply("E01");
        }
        self.resume(tid, true, b"")
    }

    fn resume(&mut self, step: Option<u32>, pass_exception: bool, addr: &[u8]) -> Action {
        if !addr.is_empty() {
            // `c ADDR`/`s ADDR` (resume elsewhere) is not offered.
            return reply("E01");
        }
        if self.gone {
            return error("the process has ended");
        }
        match self.backend.resume(Resume {
            step,
            pass_exception,
        }) {
            Ok(()) => Action::Resumed,
            Err(e) => error(&e),
        }
    }

    fn v_packet(&mut self, text: &str) -> Action {
        if text == "vCont?" {
            return reply("vCont;c;C;s;S");
        }
        if let Some(actions) = text.strip_prefix("vCont;") {
            // The first action decides (ntdbg sends one); a step runs its thread alone, the
            // others held (GDB's vCont: a thread without an action stays stopped).
            let first = actions.split(';').next().unwrap_or("");
            let (action, thread) = match first.split_once(':') {
                Some((a, t)) => (a, parse_thread(t.as_bytes())),
                None => (first, None),
            };
            let step_thread = thread.or_else(|| self.thread());
            return match action.as_bytes().first() {
                Some(b'c') => self.resume(None, false, b""),
                Some(b'C') => self.resume_with_signal(None, &action[1..]),
                Some(b's') => self.resume(step_thread, false, b""),
                Some(b'S') if parse_hex_u64(&action.as_bytes()[1..]).is_some() => {
                    self.resume(step_thread, true, b"")
                }
                _ => reply("E01"),
            };
        }
        if text.starts_with("vKill") {
            let _ = self.backend.kill();
            self.gone = true;
            return Action::Close(Some(b"OK".to_vec()));
        }
        reply("")
    }
}

/// `qXfer:features:read:ANNEX:OFFSET,LENGTH`.
fn xfer(rest: &str) -> Action {
    let Some((annex, range)) = rest.split_once(':') else {
        return reply("E01");
    };
    if annex != "target.xml" {
        return reply("E00");
    }
    let Some((offset, len)) = parse_addr_len(range) else {
        return reply("E01");
    };
    let xml = target_xml().into_bytes();
    let start = usize::try_from(offset).unwrap_or(usize::MAX).min(xml.len());
    let end = start.saturating_add(len).min(xml.len());
    let mut out = vec![if end == xml.len() { b'l' } else { b'm' }];
    out.extend(escape(&xml[start..end]));
    Action::Reply(out)
}

fn parse_addr_len(text: &str) -> Option<(u64, usize)> {
    let (a, l) = text.split_once(',')?;
    let addr = parse_hex_u64(a.as_bytes())?;
    let len = usize::try_from(parse_hex_u64(l.as_bytes())?).ok()?;
    Some((addr, len))
}

fn parse_regnum(text: &str) -> Option<usize> {
    let n = usize::try_from(parse_hex_u64(text.as_bytes())?).ok()?;
    (n < REGISTERS.len()).then_some(n)
}

fn parse_thread(text: &[u8]) -> Option<u32> {
    ThreadId::parse(text)?
        .tid()
        .and_then(|t| u32::try_from(t).ok())
}

/// The stop reply for a halt: `T` with the standard pairs and the `ntdbg-*` pairs, or `W`
/// with the full 32-bit exit code.
pub(crate) fn stop_packet(pid: u32, halt: &Halt) -> Vec<u8> {
    let stop = match halt {
        Halt::Exited(code) => return format!("W{code:02x};process:{pid:x}").into_bytes(),
        Halt::Stopped(stop) => stop,
    };
    let Stop {
        signal,
        tid,
        event,
        hit,
        exception,
        module,
        text,
    } = stop;
    let mut t = format!("T{signal:02x}thread:p{pid:x}.{tid:x};");
    t.push_str(&format!("ntdbg-event:{};", event.name()));
    if let Some(e) = exception {
        t.push_str(&format!(
            "ntdbg-exc:{:08x};ntdbg-chance:{};ntdbg-excaddr:{:x};",
            e.code,
            if e.first_chance { 1 } else { 2 },
            e.address
        ));
        if !e.params.is_empty() {
            let params: Vec<String> = e.params.iter().take(15).map(|p| format!("{p:x}")).collect();
            t.push_str(&format!("ntdbg-excparams:{};", params.join(",")));
        }
    }
    if let Some((base, name)) = module {
        t.push_str(&format!(
            "ntdbg-module:{base:x};ntdbg-name:{};",
            to_hex(name.as_bytes())
        ));
    }
    if let Some(text) = text {
        t.push_str(&format!("ntdbg-text:{};", to_hex(text.as_bytes())));
    }
    // The standard reason goes last: parsers that keep one reason keep this one.
    match hit {
        Some(Hit::Software) => t.push_str("swbreak:;"),
        Some(Hit::Hardware) => t.push_str("hwbreak:;"),
        Some(Hit::Write(a)) => t.push_str(&format!("watch:{a:x};")),
        Some(Hit::Read(a)) => t.push_str(&format!("rwatch:{a:x};")),
        Some(Hit::Access(a)) => t.push_str(&format!("awatch:{a:x};")),
        None => {}
    }
    t.into_bytes()
}
