//! The synchronous client: one TCP connection to one stub.

use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use crate::error::{GdbError, Result};
use crate::packet::{
    self, from_hex, from_hex_opt, parse_hex_u64, to_hex, unescape, Event, PacketDecoder,
};
use crate::stop::{StopReply, ThreadId};
use crate::target_xml::{parse_features, RegisterLayout};

/// What this client tells the stub it supports: `multiprocess+` (thread ids that name their
/// process), `swbreak+` (stops say when a software breakpoint was hit) and
/// `xmlRegisters=i386` (gdbserver sends x86 target descriptions only then). Kept under 64
/// bytes framed: winedbg hangs on some 64–127-byte packets. `hwbreak+` is left out for
/// that; hardware breakpoints are recognised by address.
const QSUPPORTED: &str = "qSupported:multiprocess+;swbreak+;xmlRegisters=i386";

/// How many restored `int3` sites the client remembers (see [`GdbClient::int3_removed`]).
const REMOVED_INT3_MEMORY: usize = 256;

/// Connection settings.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// How long a connection attempt may take.
    pub connect_timeout: Duration,
    /// How long any single request may wait for its answer.
    pub timeout: Duration,
    /// In ack mode, how long to wait before sending a stray `+` to wake a stalled peer
    /// (winedbg can hang on some 64–127-byte packets until it gets one).
    pub stall_nudge: Duration,
    /// Ask for `QStartNoAckMode` when the stub offers it.
    pub no_ack: bool,
    /// How long the detach in `Drop` may take in total.
    pub drop_timeout: Duration,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            connect_timeout: Duration::from_secs(5),
            timeout: Duration::from_secs(5),
            stall_nudge: Duration::from_millis(300),
            no_ack: true,
            drop_timeout: Duration::from_secs(2),
        }
    }
}

/// What the stub said in its `qSupported` reply.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Features {
    /// `PacketSize` (the largest packet the stub accepts), if given.
    pub packet_size: Option<usize>,
    /// Every `name+`, `name-` and `name=value` feature, in order.
    pub raw: Vec<(String, FeatureValue)>,
}

/// The value of one `qSupported` feature.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FeatureValue {
    /// `name+`
    Supported,
    /// `name-`
    Unsupported,
    /// `name?`
    Maybe,
    /// `name=value`
    Value(String),
}

impl Features {
    /// Parses a `qSupported` reply.
    pub fn parse(reply: &[u8]) -> Features {
        let text = String::from_utf8_lossy(reply);
        let mut f = Features::default();
        for item in text.split(';').filter(|s| !s.is_empty()) {
            let (name, value) = if let Some((n, v)) = item.split_once('=') {
                (n, FeatureValue::Value(v.to_string()))
            } else if let Some(n) = item.strip_suffix('+') {
                (n, FeatureValue::Supported)
            } else if let Some(n) = item.strip_suffix('-') {
                (n, FeatureValue::Unsupported)
            } else if let Some(n) = item.strip_suffix('?') {
                (n, FeatureValue::Maybe)
            } else {
                (item, FeatureValue::Supported)
            };
            if name == "PacketSize" {
                if let FeatureValue::Value(v) = &value {
                    f.packet_size = parse_hex_u64(v.as_bytes())
                        .and_then(|n| usize::try_from(n).ok())
                        .filter(|n| *n >= 16);
                }
            }
            f.raw.push((name.to_string(), value));
        }
        f
    }

    /// Whether `name+` was in the reply.
    pub fn supports(&self, name: &str) -> bool {
        self.raw
            .iter()
            .any(|(n, v)| n == name && *v == FeatureValue::Supported)
    }
}

/// Kinds of breakpoint and watchpoint (`Z0`–`Z4`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BreakpointKind {
    /// `Z0`: software breakpoint (falls back to writing `int3` when refused).
    Software,
    /// `Z1`: hardware execution breakpoint.
    Hardware,
    /// `Z2`: write watchpoint.
    WriteWatch,
    /// `Z3`: read watchpoint.
    ReadWatch,
    /// `Z4`: access watchpoint.
    AccessWatch,
}

impl BreakpointKind {
    fn z(self) -> u8 {
        match self {
            BreakpointKind::Software => 0,
            BreakpointKind::Hardware => 1,
            BreakpointKind::WriteWatch => 2,
            BreakpointKind::ReadWatch => 3,
            BreakpointKind::AccessWatch => 4,
        }
    }
}

/// How a breakpoint was put in place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakpointMethod {
    /// The stub accepted the `Z` packet.
    Stub,
    /// The stub refused `Z0`; an `int3` (`0xCC`) was written over the original byte. When it is
    /// hit, the program counter is one past the breakpoint: the caller must move it back.
    Int3Written,
}

/// What to do when resuming.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResumeAction {
    /// Run (`c` / `vCont;c`).
    Continue,
    /// Run one instruction (`s` / `vCont;s`).
    Step,
    /// Continue, delivering this signal (`C sig` / `vCont;C sig`).
    ContinueWithSignal(u8),
}

/// The run state as far as this client knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunState {
    /// Stopped; requests may be sent.
    Stopped,
    /// Resumed; only an interrupt or a stop reply is expected.
    Running,
    /// The process exited or was killed, or the client detached.
    Gone,
}

/// A handle that can interrupt the target from another thread while the client waits.
#[derive(Debug)]
pub struct InterruptHandle {
    stream: TcpStream,
}

impl InterruptHandle {
    /// Sends `0x03`. The stop reply arrives on the client ([`GdbClient::wait_stop`]).
    pub fn interrupt(&self) -> Result<()> {
        (&self.stream).write_all(&[0x03])?;
        Ok(())
    }
}

/// A connection to a GDB remote stub (gdbserver, `winedbg --gdb`, QEMU's gdbstub…).
///
/// Every call is bounded by [`ClientOptions::timeout`]; waiting for a stop takes its own
/// timeout. Dropping the client detaches (interrupting a running target first), so a stub is
/// never left waiting for a client that is gone.
#[derive(Debug)]
pub struct GdbClient {
    stream: TcpStream,
    peer: SocketAddr,
    decoder: PacketDecoder,
    pending: std::collections::VecDeque<Event>,
    opts: ClientOptions,
    ack_mode: bool,
    features: Features,
    vcont: Option<Vec<String>>,
    state: RunState,
    console: Vec<u8>,
    int3_saved: HashMap<u64, u8>,
    int3_removed: std::collections::VecDeque<u64>,
    z0_refused: bool,
    initial_stop: Option<StopReply>,
    last_stop: Option<StopReply>,
    nudge_at: Option<Instant>,
}

impl GdbClient {
    /// Connects to `addr` (e.g. `127.0.0.1:1234`), negotiates features (`qSupported`, then
    /// `QStartNoAckMode` when offered) and asks why the target stopped (`?`).
    pub fn connect(addr: &str, opts: ClientOptions) -> Result<GdbClient> {
        let addrs: Vec<SocketAddr> = addr
            .to_socket_addrs()
            .map_err(|source| GdbError::Connect {
                addr: addr.to_string(),
                source,
            })?
            .collect();
        let mut last = std::io::Error::new(ErrorKind::NotFound, "no address");
        for a in addrs {
            match TcpStream::connect_timeout(&a, opts.connect_timeout) {
                Ok(stream) => return Self::handshake(stream, opts),
                Err(e) => last = e,
            }
        }
        Err(GdbError::Connect {
            addr: addr.to_string(),
            source: last,
        })
    }

    /// Uses an already connected stream and runs the same handshake as [`GdbClient::connect`].
    pub fn handshake(stream: TcpStream, opts: ClientOptions) -> Result<GdbClient> {
        stream.set_nodelay(true)?;
        stream.set_write_timeout(Some(opts.timeout.max(Duration::from_millis(1))))?;
        let peer = stream.peer_addr()?;
        let mut c = GdbClient {
            stream,
            peer,
            decoder: PacketDecoder::new(),
            pending: Default::default(),
            opts,
            ack_mode: true,
            features: Features::default(),
            vcont: None,
            state: RunState::Stopped,
            console: Vec::new(),
            int3_saved: HashMap::new(),
            int3_removed: std::collections::VecDeque::new(),
            z0_refused: false,
            initial_stop: None,
            last_stop: None,
            nudge_at: None,
        };
        // GDB opens with a '+', which also flushes a stub that waits for one.
        c.write_raw(b"+")?;
        let reply = c.request_str(QSUPPORTED)?;
        c.features = Features::parse(&reply);
        if c.opts.no_ack && c.features.supports("QStartNoAckMode") {
            let r = c.request_str("QStartNoAckMode")?;
            if r == b"OK" {
                c.ack_mode = false;
            }
        }
        c.vcont = match c.request_str("vCont?") {
            Ok(r) if r.starts_with(b"vCont") => Some(
                String::from_utf8_lossy(&r[5..])
                    .split(';')
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect(),
            ),
            Ok(_) | Err(GdbError::Unsupported(_)) => None,
            Err(e) => return Err(e),
        };
        let stop = c.halt_reason()?;
        c.last_stop = Some(stop.clone());
        c.initial_stop = Some(stop);
        Ok(c)
    }

    /// The stub's address.
    pub fn peer(&self) -> SocketAddr {
        self.peer
    }

    /// The `qSupported` reply.
    pub fn features(&self) -> &Features {
        &self.features
    }

    /// The actions `vCont?` listed (`c`, `C`, `s`, `S`, `t`, `r`), or `None` without vCont.
    pub fn vcont_actions(&self) -> Option<&[String]> {
        self.vcont.as_deref()
    }

    /// Whether packets are still acknowledged (no-ack mode was not negotiated).
    pub fn ack_mode(&self) -> bool {
        self.ack_mode
    }

    /// The stop reply to `?` at connection time.
    pub fn initial_stop(&self) -> Option<&StopReply> {
        self.initial_stop.as_ref()
    }

    /// The latest stop reply: the answer to `?` at connection time, then each stop that
    /// [`GdbClient::wait_stop`] received.
    pub fn last_stop(&self) -> Option<&StopReply> {
        self.last_stop.as_ref()
    }

    /// The run state as this client knows it.
    pub fn state(&self) -> RunState {
        self.state
    }

    /// The largest packet the stub accepts (4000 bytes when it does not say).
    pub fn packet_size(&self) -> usize {
        self.features.packet_size.unwrap_or(4000)
    }

    /// Takes the console output (`O` packets) collected so far.
    pub fn take_console_output(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.console)
    }

    /// A handle that sends `0x03` on this connection from another thread.
    pub fn interrupt_handle(&self) -> Result<InterruptHandle> {
        Ok(InterruptHandle {
            stream: self.stream.try_clone()?,
        })
    }

    // ---- wire ----

    fn write_raw(&mut self, bytes: &[u8]) -> Result<()> {
        match self.stream.write_all(bytes) {
            Ok(()) => Ok(()),
            Err(e) if is_timeout(&e) => Err(GdbError::Timeout {
                what: "a write".into(),
                after: self.opts.timeout,
            }),
            Err(e) if is_disconnect(&e) => Err(GdbError::Disconnected),
            Err(e) => Err(GdbError::Io(e)),
        }
    }

    fn next_event(&mut self, deadline: Instant, what: &str) -> Result<Event> {
        let mut buf = [0u8; 8192];
        loop {
            if let Some(ev) = self.pending.pop_front() {
                return Ok(ev);
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(GdbError::Timeout {
                    what: what.to_string(),
                    after: self.opts.timeout,
                });
            }
            let mut wait = deadline - now;
            if let Some(n) = self.nudge_at {
                wait = wait.min(n.saturating_duration_since(now));
            }
            self.stream
                .set_read_timeout(Some(wait.max(Duration::from_millis(1))))?;
            match self.stream.read(&mut buf) {
                Ok(0) => {
                    self.state = RunState::Gone;
                    return Err(GdbError::Disconnected);
                }
                Ok(n) => {
                    let mut evs = Vec::new();
                    self.decoder.feed(&buf[..n], &mut evs);
                    self.pending.extend(evs);
                }
                Err(e) if is_timeout(&e) => {
                    if let Some(n) = self.nudge_at {
                        if Instant::now() >= n && !self.decoder.in_packet() {
                            self.nudge_at = None;
                            if self.ack_mode {
                                self.write_raw(b"+")?;
                            }
                        }
                    }
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if is_disconnect(&e) => {
                    self.state = RunState::Gone;
                    return Err(GdbError::Disconnected);
                }
                Err(e) => return Err(GdbError::Io(e)),
            }
        }
    }

    /// Sends one packet (text, without `$`/`#`); in ack mode waits for `+`, resending on `-`.
    fn send_packet(&mut self, data: &[u8], deadline: Instant) -> Result<()> {
        if data.iter().any(|b| matches!(b, b'$' | b'#')) {
            return Err(GdbError::InvalidArgument(
                "packet contains '$' or '#'".into(),
            ));
        }
        let framed = packet::frame(data);
        self.write_raw(&framed)?;
        if !self.ack_mode {
            return Ok(());
        }
        self.nudge_at = Some(Instant::now() + self.opts.stall_nudge);
        let mut resends = 0;
        loop {
            match self.next_event(deadline, "an acknowledgement")? {
                Event::Ack => return Ok(()),
                Event::Nack => {
                    resends += 1;
                    if resends > 5 {
                        return Err(GdbError::Protocol("stub keeps rejecting a packet".into()));
                    }
                    self.write_raw(&framed)?;
                }
                ev @ Event::Packet { .. } => {
                    // Some stubs answer without acknowledging: treat the answer as the ack.
                    self.pending.push_front(ev);
                    return Ok(());
                }
                Event::Interrupt | Event::Garbage(_) => {}
            }
        }
    }

    /// Receives one packet (acknowledging it in ack mode); `O` console packets are collected
    /// when `collect_output` is set.
    fn recv_packet(
        &mut self,
        deadline: Instant,
        what: &str,
        collect_output: bool,
    ) -> Result<Vec<u8>> {
        loop {
            match self.next_event(deadline, what)? {
                Event::Packet { data, checksum_ok } => {
                    if !checksum_ok {
                        if self.ack_mode {
                            self.write_raw(b"-")?;
                            continue;
                        }
                        return Err(GdbError::Protocol("packet with a bad checksum".into()));
                    }
                    if self.ack_mode {
                        self.write_raw(b"+")?;
                    }
                    if collect_output && is_console_output(&data) {
                        if let Some(text) = from_hex(&data[1..]) {
                            self.console.extend_from_slice(&text);
                        }
                        continue;
                    }
                    return Ok(data);
                }
                Event::Ack | Event::Nack | Event::Interrupt | Event::Garbage(_) => {}
            }
        }
    }

    /// Sends `data` and returns the reply packet, raw (run-length expanded, not unescaped).
    /// An empty reply is returned as is; `O` output packets before the reply are collected.
    pub fn request(&mut self, data: &[u8]) -> Result<Vec<u8>> {
        match self.state {
            RunState::Running => return Err(GdbError::Running),
            RunState::Gone => return Err(GdbError::Disconnected),
            RunState::Stopped => {}
        }
        let deadline = Instant::now() + self.opts.timeout;
        self.send_packet(data, deadline)?;
        let what = format!("'{}'", short(data));
        let r = self.recv_packet(deadline, &what, true);
        self.nudge_at = None;
        r
    }

    /// [`GdbClient::request`] with its own time limit, for a request the stub takes long to
    /// answer (writing a dump).
    pub fn request_within(&mut self, data: &[u8], timeout: Duration) -> Result<Vec<u8>> {
        let saved = std::mem::replace(&mut self.opts.timeout, timeout);
        let r = self.request(data);
        self.opts.timeout = saved;
        r
    }

    fn request_str(&mut self, data: &str) -> Result<Vec<u8>> {
        self.request(data.as_bytes())
    }

    /// Sends `data` and expects `OK`; `E NN` and empty replies become errors.
    fn request_ok(&mut self, data: &str) -> Result<()> {
        let r = self.request_str(data)?;
        check_ok(data, &r)
    }

    // ---- queries ----

    /// `?`: why the target is stopped.
    pub fn halt_reason(&mut self) -> Result<StopReply> {
        let r = self.request_str("?")?;
        let stop = StopReply::parse(&r)
            .ok_or_else(|| GdbError::Protocol(format!("'?' answered with '{}'", short(&r))))?;
        if stop.is_exit() {
            self.state = RunState::Gone;
        }
        Ok(stop)
    }

    /// Reads an object through `qXfer:OBJECT:read:ANNEX:offset,length` until the last piece.
    pub fn read_xfer(&mut self, object: &str, annex: &str) -> Result<Vec<u8>> {
        const MAX_OBJECT: usize = 16 << 20;
        let chunk = self.packet_size().saturating_sub(16).clamp(64, 0x10000);
        let mut out = Vec::new();
        loop {
            let req = format!("qXfer:{object}:read:{annex}:{:x},{chunk:x}", out.len());
            let r = self.request_str(&req)?;
            match r.first() {
                Some(b'm') | Some(b'l') => {
                    let piece = unescape(&r[1..]);
                    let last = r[0] == b'l';
                    if !last && piece.is_empty() {
                        return Err(GdbError::Protocol(format!("empty 'm' piece for {req}")));
                    }
                    out.extend_from_slice(&piece);
                    if out.len() > MAX_OBJECT {
                        return Err(GdbError::Protocol(format!("{object}:{annex} is too big")));
                    }
                    if last {
                        return Ok(out);
                    }
                }
                None => return Err(GdbError::Unsupported(format!("qXfer:{object}:read"))),
                _ => check_ok(&req, &r)
                    .and_then(|_| Err(GdbError::Protocol(format!("unexpected reply to {req}"))))?,
            }
        }
    }

    /// Reads `target.xml` and the files it includes, as a register layout. A description that
    /// names `i386:x86-64` but lists no registers gets GDB's built-in x86-64 core layout
    /// ([`RegisterLayout::amd64_core`]).
    pub fn register_layout(&mut self) -> Result<RegisterLayout> {
        if !self.features.supports("qXfer:features:read") {
            return Err(GdbError::Unsupported("qXfer:features:read".into()));
        }
        let top = self.read_xfer("features", "target.xml")?;
        let top = String::from_utf8_lossy(&top).into_owned();
        let layout = parse_features(&top, &mut |href| {
            if href.contains(':') || href.contains(',') {
                return Err(GdbError::TargetXml(format!("bad include name {href:?}")));
            }
            let bytes = self.read_xfer("features", href)?;
            Ok(String::from_utf8_lossy(&bytes).into_owned())
        })?;
        if layout.registers.is_empty() && layout.architecture.as_deref() == Some("i386:x86-64") {
            return Ok(RegisterLayout::amd64_core());
        }
        Ok(layout)
    }

    // ---- registers ----

    /// `g`: all registers, as bytes in target order; `None` for bytes the stub marks `xx`.
    pub fn read_registers(&mut self) -> Result<Vec<Option<u8>>> {
        let r = self.request_str("g")?;
        check_error("g", &r)?;
        from_hex_opt(&r).ok_or_else(|| GdbError::Protocol("'g' reply is not hex".into()))
    }

    /// `p n`: one register; `None` when the stub says it is unavailable.
    pub fn read_register(&mut self, regnum: u32) -> Result<Option<Vec<u8>>> {
        let req = format!("p{regnum:x}");
        let r = self.request_str(&req)?;
        check_error(&req, &r)?;
        let bytes = from_hex_opt(&r)
            .ok_or_else(|| GdbError::Protocol(format!("'{req}' reply is not hex")))?;
        Ok(bytes.into_iter().collect())
    }

    /// `P n=v`: writes one register (bytes in target order).
    pub fn write_register(&mut self, regnum: u32, value: &[u8]) -> Result<()> {
        self.request_ok(&format!("P{regnum:x}={}", to_hex(value)))
    }

    /// `G`: writes all registers.
    pub fn write_registers(&mut self, bytes: &[u8]) -> Result<()> {
        self.request_ok(&format!("G{}", to_hex(bytes)))
    }

    // ---- memory ----

    /// Largest data length of one `m` request.
    fn mem_chunk(&self) -> usize {
        (self.packet_size().saturating_sub(8) / 2).clamp(16, 0x8000)
    }

    /// `m`: reads `len` bytes at `addr`; every byte the stub could not read is `None`.
    /// Requests are split by packet size. A refused (`E NN`) request that spans pages is
    /// retried up to the next page boundary (gdbserver refuses a whole request that runs
    /// into unmapped memory); a refused single-page request, or an empty reply, makes the rest
    /// of that page holes and the read carries on at the next page. Nothing is invented.
    pub fn read_memory(&mut self, addr: u64, len: usize) -> Result<Vec<Option<u8>>> {
        const PAGE: u64 = 0x1000;
        let mut out: Vec<Option<u8>> = Vec::with_capacity(len.min(1 << 24));
        let mut page_only = false;
        while out.len() < len {
            let pos = addr.wrapping_add(out.len() as u64);
            let to_page = (PAGE - (pos % PAGE)) as usize;
            let mut want = (len - out.len()).min(self.mem_chunk());
            if page_only {
                want = want.min(to_page);
            }
            let req = format!("m{pos:x},{want:x}");
            let r = self.request_str(&req)?;
            let got = if r.is_empty() || (r.first() == Some(&b'E') && r.len() == 3) {
                Vec::new()
            } else {
                from_hex(&r)
                    .ok_or_else(|| GdbError::Protocol(format!("'{req}' reply is not hex")))?
            };
            if got.len() > want {
                return Err(GdbError::Protocol(format!(
                    "'{req}' returned too many bytes"
                )));
            }
            if !got.is_empty() {
                out.extend(got.into_iter().map(Some));
                page_only = false;
            } else if want > to_page {
                page_only = true;
            } else {
                out.extend(std::iter::repeat_n(None, to_page.min(len - out.len())));
            }
        }
        Ok(out)
    }

    /// `M`: writes `data` at `addr` (split by packet size).
    pub fn write_memory(&mut self, addr: u64, data: &[u8]) -> Result<()> {
        let chunk = self.mem_chunk().saturating_sub(16).max(1);
        for (i, piece) in data.chunks(chunk).enumerate() {
            let pos = addr.wrapping_add((i * chunk) as u64);
            self.request_ok(&format!("M{pos:x},{:x}:{}", piece.len(), to_hex(piece)))?;
        }
        Ok(())
    }

    /// [`GdbClient::write_memory`] for the program: where this client keeps an `int3` of a
    /// breakpoint, the new byte becomes the original byte it restores, and the `int3` stays.
    pub fn write_program_memory(&mut self, addr: u64, data: &[u8]) -> Result<()> {
        let mut bytes = data.to_vec();
        for (i, b) in bytes.iter_mut().enumerate() {
            if let Some(orig) = self.int3_saved.get_mut(&addr.wrapping_add(i as u64)) {
                *orig = *b;
                *b = 0xCC;
            }
        }
        self.write_memory(addr, &bytes)
    }

    // ---- breakpoints ----

    /// `Z`: inserts a breakpoint or watchpoint. `len` is the kind for `Z0`/`Z1` (1 on x86) or
    /// the watched length. A refused (empty-reply) `Z0` falls back to writing `int3`.
    pub fn insert_breakpoint(
        &mut self,
        kind: BreakpointKind,
        addr: u64,
        len: usize,
    ) -> Result<BreakpointMethod> {
        if kind == BreakpointKind::Software && self.z0_refused {
            return self.write_int3(addr);
        }
        let req = format!("Z{},{addr:x},{len:x}", kind.z());
        let r = self.request_str(&req)?;
        if r.is_empty() && kind == BreakpointKind::Software {
            self.z0_refused = true;
            return self.write_int3(addr);
        }
        check_ok(&req, &r)?;
        Ok(BreakpointMethod::Stub)
    }

    fn write_int3(&mut self, addr: u64) -> Result<BreakpointMethod> {
        if self.int3_saved.contains_key(&addr) {
            return Ok(BreakpointMethod::Int3Written);
        }
        let orig = self.read_memory(addr, 1)?;
        let Some(Some(orig)) = orig.first().copied() else {
            return Err(GdbError::Remote {
                request: format!("int3 at {addr:#x} (memory unreadable)"),
                code: 0,
            });
        };
        self.write_memory(addr, &[0xCC])?;
        self.int3_saved.insert(addr, orig);
        self.int3_removed.retain(|&a| a != addr);
        Ok(BreakpointMethod::Int3Written)
    }

    /// `z`: removes a breakpoint or watchpoint (restoring the byte under a written `int3`).
    pub fn remove_breakpoint(&mut self, kind: BreakpointKind, addr: u64, len: usize) -> Result<()> {
        if kind == BreakpointKind::Software {
            if let Some(orig) = self.int3_saved.remove(&addr) {
                if self.int3_removed.len() >= REMOVED_INT3_MEMORY {
                    self.int3_removed.pop_front();
                }
                self.int3_removed.push_back(addr);
                return self.write_memory(addr, &[orig]);
            }
        }
        self.request_ok(&format!("z{},{addr:x},{len:x}", kind.z()))
    }

    /// Whether this client wrote an `int3` at `addr` and later put the original byte back
    /// (and has not written one there again). A thread that executed that `int3` before it
    /// was removed may still report the trap, one byte past it.
    pub fn int3_removed(&self, addr: u64) -> bool {
        self.int3_removed.contains(&addr)
    }

    /// Whether software breakpoints are `int3` bytes this client writes (the stub refused
    /// `Z0`): a hit then leaves the program counter one past the breakpoint.
    pub fn writes_int3(&self) -> bool {
        self.z0_refused
    }

    /// Every `int3` this client wrote: `(address, original byte)`.
    pub fn int3_sites(&self) -> Vec<(u64, u8)> {
        self.int3_saved.iter().map(|(&a, &b)| (a, b)).collect()
    }

    /// The original byte under an `int3` this client wrote, if any.
    pub fn int3_original(&self, addr: u64) -> Option<u8> {
        self.int3_saved.get(&addr).copied()
    }

    // ---- threads ----

    /// `qfThreadInfo`/`qsThreadInfo`: every thread.
    pub fn threads(&mut self) -> Result<Vec<ThreadId>> {
        let mut out = Vec::new();
        let mut req = "qfThreadInfo";
        loop {
            let r = self.request_str(req)?;
            match r.first() {
                Some(b'm') => {
                    for t in r[1..].split(|&b| b == b',') {
                        out.push(ThreadId::parse(t).ok_or_else(|| {
                            GdbError::Protocol(format!("bad thread id '{}'", short(t)))
                        })?);
                    }
                    if out.len() > 100_000 {
                        return Err(GdbError::Protocol("too many threads".into()));
                    }
                }
                Some(b'l') => return Ok(out),
                None => return Err(GdbError::Unsupported("qfThreadInfo".into())),
                _ => {
                    check_error(req, &r)?;
                    return Err(GdbError::Protocol(format!("unexpected reply to {req}")));
                }
            }
            req = "qsThreadInfo";
        }
    }

    /// The debugged process's id: `qProcessInfo`'s `pid:` (winedbg, lldb-server), else the
    /// process part of the thread ids (stubs that speak the multiprocess extensions:
    /// gdbserver, ntdbg's Win32 stub). `Ok(None)` when the stub does not say.
    pub fn process_id(&mut self) -> Result<Option<u64>> {
        match self.request_str("qProcessInfo") {
            Ok(r) => {
                let pid = String::from_utf8_lossy(&r).split(';').find_map(|kv| {
                    kv.strip_prefix("pid:")
                        .and_then(|v| parse_hex_u64(v.as_bytes()))
                });
                if pid.is_some() {
                    return Ok(pid);
                }
            }
            Err(GdbError::Unsupported(_) | GdbError::Remote { .. }) => {}
            Err(e) => return Err(e),
        }
        let from_stop = self.last_stop.as_ref().and_then(StopReply::thread);
        let thread = match from_stop {
            Some(t) => Some(t),
            None => self.threads()?.first().copied(),
        };
        Ok(thread.and_then(|t| match t.pid {
            Some(crate::stop::IdPart::Id(pid)) => Some(pid),
            _ => None,
        }))
    }

    /// `qRcmd`: runs a stub's monitor command (winedbg's `mem`, QEMU's `info …`) and returns
    /// what it printed. `Ok(None)` when the stub has no such command.
    pub fn monitor(&mut self, command: &str) -> Result<Option<String>> {
        self.console.clear();
        let r = self.request_str(&format!("qRcmd,{}", to_hex(command.as_bytes())))?;
        let printed = String::from_utf8_lossy(&self.take_console_output()).into_owned();
        if r == b"OK" {
            return Ok(Some(printed));
        }
        if r.is_empty() || r.first() == Some(&b'E') {
            return Ok(None);
        }
        // A stub may answer with the text itself, hex-encoded.
        Ok(from_hex(&r).map(|t| String::from_utf8_lossy(&t).into_owned()))
    }

    /// Reads a whole file on the stub's host (`vFile:open`/`pread`/`close`: gdbserver's host
    /// I/O, which serves `/proc/PID/maps`), up to `max` bytes. `Ok(None)` when the stub has
    /// no host I/O or cannot open the file.
    pub fn read_host_file(&mut self, path: &str, max: usize) -> Result<Option<Vec<u8>>> {
        let r = self.request_str(&format!("vFile:open:{},0,0", to_hex(path.as_bytes())))?;
        let Some(fd) = r
            .strip_prefix(b"F")
            .filter(|v| !v.starts_with(b"-"))
            .and_then(|v| parse_hex_u64(v.split(|&b| b == b';').next().unwrap_or(v)))
        else {
            return Ok(None);
        };
        let mut out = Vec::new();
        let chunk = self.packet_size().saturating_sub(64).clamp(256, 0x4000);
        while out.len() < max {
            let r = self.request_str(&format!("vFile:pread:{fd:x},{chunk:x},{:x}", out.len()))?;
            let Some(rest) = r.strip_prefix(b"F") else {
                break;
            };
            let (count, data) = match rest.iter().position(|&b| b == b';') {
                Some(i) => (&rest[..i], &rest[i + 1..]),
                None => (rest, &[][..]),
            };
            if count.starts_with(b"-") {
                break;
            }
            let data = unescape(data);
            if parse_hex_u64(count) == Some(0) || data.is_empty() {
                break;
            }
            out.extend_from_slice(&data);
        }
        let _ = self.request_str(&format!("vFile:close:{fd:x}"));
        out.truncate(max);
        Ok(Some(out))
    }

    /// The process id when the stub speaks the multiprocess extensions (its thread ids
    /// name their process).
    fn multiprocess_pid(&self) -> Option<u64> {
        if !self.features.supports("multiprocess") {
            return None;
        }
        match self.last_stop.as_ref()?.thread()?.pid? {
            crate::stop::IdPart::Id(pid) => Some(pid),
            _ => None,
        }
    }

    /// `qC`: the current thread, when the stub says.
    pub fn current_thread(&mut self) -> Result<Option<ThreadId>> {
        let r = self.request_str("qC")?;
        Ok(r.strip_prefix(b"QC").and_then(ThreadId::parse))
    }

    /// `qGetTIBAddr`: the Windows thread information block (TEB) of `thread`, when the stub
    /// knows it (`Ok(None)` when it does not support the query).
    pub fn tib_address(&mut self, thread: ThreadId) -> Result<Option<u64>> {
        let Some(tid) = thread.tid() else {
            return Ok(None);
        };
        let req = format!("qGetTIBAddr:{tid:x}");
        match self.request_str(&req) {
            Ok(r) if r.is_empty() => Ok(None),
            Ok(r) => {
                check_error(&req, &r)?;
                Ok(parse_hex_u64(&r))
            }
            Err(GdbError::Unsupported(_)) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// `Hg`: selects the thread for register and memory requests.
    pub fn set_thread(&mut self, thread: ThreadId) -> Result<()> {
        self.request_ok(&format!("Hg{thread}"))
    }

    // ---- run control ----

    /// Resumes the target (all threads, or `thread` alone with vCont) and returns at once.
    /// Use [`GdbClient::wait_stop`] for the stop and [`GdbClient::interrupt`] to break in.
    pub fn resume(&mut self, action: ResumeAction, thread: Option<ThreadId>) -> Result<()> {
        let (select, packet) = match thread {
            Some(t) => self.resume_packet(action, t, false),
            None => (None, self.resume_all_packet(action)),
        };
        self.send_resume(select, &packet)
    }

    /// Resumes `thread` with `action` and every other thread with a plain continue (`vCont;
    /// A:T;c`): passing an exception to the thread that raised it while the others run.
    /// Without vCont, selects the thread (`Hc`) and sends the action.
    pub fn resume_with_others(&mut self, action: ResumeAction, thread: ThreadId) -> Result<()> {
        let (select, packet) = self.resume_packet(action, thread, true);
        self.send_resume(select, &packet)
    }

    /// The packet that applies `action` to `thread` (and continues the others when
    /// `others_run`), and the thread to select with `Hc` first (a stub without vCont).
    fn resume_packet(
        &self,
        action: ResumeAction,
        thread: ThreadId,
        others_run: bool,
    ) -> (Option<ThreadId>, String) {
        let letter = match action {
            ResumeAction::Continue => "c".to_string(),
            ResumeAction::Step => "s".to_string(),
            ResumeAction::ContinueWithSignal(sig) => format!("C{sig:02x}"),
        };
        if self.has_vcont(&letter[..1]) {
            let mut p = format!("vCont;{letter}:{thread}");
            if others_run && self.has_vcont("c") {
                p.push_str(";c");
            }
            return (None, p);
        }
        (Some(thread), letter)
    }

    /// The packet that applies `action` to every thread.
    fn resume_all_packet(&self, action: ResumeAction) -> String {
        match action {
            ResumeAction::Continue if self.has_vcont("c") => "vCont;c".into(),
            ResumeAction::Step if self.has_vcont("s") => "vCont;s".into(),
            ResumeAction::ContinueWithSignal(sig) if self.has_vcont("C") => {
                format!("vCont;C{sig:02x}")
            }
            ResumeAction::Continue => "c".into(),
            ResumeAction::Step => "s".into(),
            ResumeAction::ContinueWithSignal(sig) => format!("C{sig:02x}"),
        }
    }

    fn has_vcont(&self, action: &str) -> bool {
        self.vcont
            .as_ref()
            .is_some_and(|v| v.iter().any(|x| x == action))
    }

    fn send_resume(&mut self, select: Option<ThreadId>, packet: &str) -> Result<()> {
        match self.state {
            RunState::Running => return Err(GdbError::Running),
            RunState::Gone => return Err(GdbError::Disconnected),
            RunState::Stopped => {}
        }
        if let Some(t) = select {
            self.request_ok(&format!("Hc{t}"))?;
        }
        let deadline = Instant::now() + self.opts.timeout;
        self.send_packet(packet.as_bytes(), deadline)?;
        self.nudge_at = None;
        self.state = RunState::Running;
        Ok(())
    }

    /// Waits up to `timeout` for the running target to stop. `Ok(None)` means it is still
    /// running (not an error). `O` output that arrives meanwhile is collected.
    pub fn wait_stop(&mut self, timeout: Duration) -> Result<Option<StopReply>> {
        if self.state != RunState::Running {
            return Err(GdbError::NotRunning);
        }
        let deadline = Instant::now() + timeout;
        loop {
            match self.recv_packet(deadline, "a stop reply", true) {
                Ok(data) => {
                    if let Some(stop) = StopReply::parse(&data) {
                        self.state = if stop.is_exit() {
                            RunState::Gone
                        } else {
                            RunState::Stopped
                        };
                        self.last_stop = Some(stop.clone());
                        return Ok(Some(stop));
                    }
                    // `OK` and other stray replies while running are ignored.
                }
                Err(GdbError::Timeout { .. }) => return Ok(None),
                Err(e) => return Err(e),
            }
        }
    }

    /// Sends the interrupt byte `0x03`. Follow with [`GdbClient::wait_stop`].
    pub fn interrupt(&mut self) -> Result<()> {
        self.write_raw(&[0x03])
    }

    /// Interrupts a running target and waits up to the request timeout for it to stop.
    pub fn break_in(&mut self) -> Result<StopReply> {
        if self.state != RunState::Running {
            return Err(GdbError::NotRunning);
        }
        self.interrupt()?;
        self.wait_stop(self.opts.timeout)?
            .ok_or_else(|| GdbError::Timeout {
                what: "a stop after the interrupt".into(),
                after: self.opts.timeout,
            })
    }

    /// Single-steps (all threads, or `thread` with vCont) and waits for the stop.
    pub fn step(&mut self, thread: Option<ThreadId>) -> Result<StopReply> {
        self.resume(ResumeAction::Step, thread)?;
        self.wait_stop(self.opts.timeout)?
            .ok_or_else(|| GdbError::Timeout {
                what: "the end of a single step".into(),
                after: self.opts.timeout,
            })
    }

    /// `D`: detaches, leaving the target running, and closes the connection. Restores bytes
    /// under written `int3`s first. A running target is interrupted before.
    pub fn detach(&mut self) -> Result<()> {
        if self.state == RunState::Gone {
            return Ok(());
        }
        if self.state == RunState::Running {
            self.break_in()?;
        }
        let saved: Vec<(u64, u8)> = self.int3_saved.drain().collect();
        for (addr, orig) in saved {
            self.write_memory(addr, &[orig])?;
        }
        // With the multiprocess extensions, gdbserver wants the process named.
        let request = match self.multiprocess_pid() {
            Some(pid) => format!("D;{pid:x}"),
            None => "D".to_string(),
        };
        let r = self.request_str(&request);
        self.state = RunState::Gone;
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
        match r {
            Ok(r) => check_ok(&request, &r),
            // Some stubs close the connection at once.
            Err(GdbError::Disconnected) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// `k`: kills the target and closes the connection. The stub may answer or just close.
    pub fn kill(&mut self) -> Result<()> {
        if self.state == RunState::Gone {
            return Ok(());
        }
        if self.state == RunState::Running {
            self.interrupt()?;
            let _ = self.wait_stop(self.opts.timeout)?;
        }
        let deadline = Instant::now() + self.opts.timeout;
        self.send_packet(b"k", deadline)?;
        self.state = RunState::Gone;
        // gdbserver answers `X09` (or nothing and closes); either is fine.
        let short_deadline = Instant::now() + self.opts.timeout.min(Duration::from_secs(1));
        let r = self.recv_packet(short_deadline, "the answer to 'k'", true);
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
        match r {
            Ok(_) | Err(GdbError::Timeout { .. }) | Err(GdbError::Disconnected) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

impl Drop for GdbClient {
    fn drop(&mut self) {
        if self.state != RunState::Gone {
            let t = self.opts.drop_timeout;
            self.opts.timeout = t;
            let _ = self.detach();
        }
        let _ = self.stream.shutdown(std::net::Shutdown::Both);
    }
}

fn is_console_output(data: &[u8]) -> bool {
    data.len() > 1
        && data[0] == b'O'
        && data.len() % 2 == 1
        && data[1..].iter().all(u8::is_ascii_hexdigit)
}

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
}

fn is_disconnect(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::ConnectionReset
            | ErrorKind::ConnectionAborted
            | ErrorKind::BrokenPipe
            | ErrorKind::UnexpectedEof
    )
}

fn short(data: &[u8]) -> String {
    let s = String::from_utf8_lossy(&data[..data.len().min(40)]).into_owned();
    if data.len() > 40 {
        format!("{s}…")
    } else {
        s
    }
}

/// `E NN` → [`GdbError::Remote`], empty → [`GdbError::Unsupported`].
fn check_error(req: &str, r: &[u8]) -> Result<()> {
    if r.is_empty() {
        return Err(GdbError::Unsupported(short(req.as_bytes())));
    }
    if r.len() == 3 && r[0] == b'E' {
        if let Some(code) = parse_hex_u64(&r[1..]) {
            return Err(GdbError::Remote {
                request: short(req.as_bytes()),
                code: code as u8,
            });
        }
    }
    if r.starts_with(b"E.") {
        return Err(GdbError::Remote {
            request: short(req.as_bytes()),
            code: 0,
        });
    }
    Ok(())
}

fn check_ok(req: &str, r: &[u8]) -> Result<()> {
    check_error(req, r)?;
    if r == b"OK" {
        Ok(())
    } else {
        Err(GdbError::Protocol(format!(
            "'{}' answered '{}'",
            short(req.as_bytes()),
            short(r)
        )))
    }
}
