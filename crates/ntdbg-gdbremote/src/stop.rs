//! Stop replies (`T`, `S`, `W`, `X`, `N`) and thread ids, with the Windows debug event that
//! ntdbg's Win32 stub adds to a `T` stop in `ntdbg-*` pairs ([`WindowsEvent`]).

use crate::packet::{from_hex, parse_hex_u64};

/// One part of a thread id: a number, `-1` (all) or `0` (any).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum IdPart {
    /// `-1`: every process or thread.
    All,
    /// `0`: any process or thread.
    Any,
    /// A specific id.
    Id(u64),
}

impl IdPart {
    fn parse(text: &[u8]) -> Option<IdPart> {
        match text {
            b"-1" => Some(IdPart::All),
            _ => match parse_hex_u64(text)? {
                0 => Some(IdPart::Any),
                n => Some(IdPart::Id(n)),
            },
        }
    }
}

impl std::fmt::Display for IdPart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            IdPart::All => f.write_str("-1"),
            IdPart::Any => f.write_str("0"),
            IdPart::Id(n) => write!(f, "{n:x}"),
        }
    }
}

/// A thread id as the protocol writes it: `tid` or, with multiprocess extensions, `ppid.tid`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ThreadId {
    /// The process, when the stub used the `p` form.
    pub pid: Option<IdPart>,
    /// The thread.
    pub tid: IdPart,
}

impl ThreadId {
    /// A plain thread id.
    pub fn new(tid: u64) -> ThreadId {
        ThreadId {
            pid: None,
            tid: if tid == 0 {
                IdPart::Any
            } else {
                IdPart::Id(tid)
            },
        }
    }

    /// `-1`: all threads.
    pub const ALL: ThreadId = ThreadId {
        pid: None,
        tid: IdPart::All,
    };
    /// `0`: any thread.
    pub const ANY: ThreadId = ThreadId {
        pid: None,
        tid: IdPart::Any,
    };

    /// Parses `tid`, `-1`, `ppid`, `ppid.tid`.
    pub fn parse(text: &[u8]) -> Option<ThreadId> {
        if let Some(rest) = text.strip_prefix(b"p") {
            let mut parts = rest.splitn(2, |&b| b == b'.');
            let pid = IdPart::parse(parts.next()?)?;
            let tid = match parts.next() {
                Some(t) => IdPart::parse(t)?,
                None => IdPart::All,
            };
            Some(ThreadId {
                pid: Some(pid),
                tid,
            })
        } else {
            Some(ThreadId {
                pid: None,
                tid: IdPart::parse(text)?,
            })
        }
    }

    /// The thread number when it is a specific thread.
    pub fn tid(&self) -> Option<u64> {
        match self.tid {
            IdPart::Id(n) => Some(n),
            _ => None,
        }
    }
}

impl std::fmt::Display for ThreadId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.pid {
            Some(pid) => write!(f, "p{pid}.{}", self.tid),
            None => write!(f, "{}", self.tid),
        }
    }
}

/// Why a `T` stop happened, when the stub says.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StopReason {
    /// `watch:ADDR` — a write watchpoint.
    Watch(u64),
    /// `rwatch:ADDR` — a read watchpoint.
    ReadWatch(u64),
    /// `awatch:ADDR` — an access watchpoint.
    AccessWatch(u64),
    /// `swbreak:` — a software breakpoint.
    SoftwareBreak,
    /// `hwbreak:` — a hardware breakpoint.
    HardwareBreak,
    /// `library:` — the library list changed.
    Library,
    /// `fork`, `vfork`, `exec`, `create`, … — an event we do not model further.
    Other(String),
}

/// A parsed stop reply.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum StopReply {
    /// `S AA` or `T AA …`: the target stopped with a signal (5 = SIGTRAP, 2 = SIGINT…).
    Signal {
        /// The GDB signal number.
        signal: u8,
        /// `thread:` when given.
        thread: Option<ThreadId>,
        /// `core:` when given.
        core: Option<u64>,
        /// The reason, when given.
        reason: Option<StopReason>,
        /// Expedited registers `(regnum, bytes)`; unavailable registers are left out.
        registers: Vec<(u32, Vec<u8>)>,
        /// The Windows debug event, when the stub is ntdbg's Win32 stub (`ntdbg-event:`).
        windows: Option<WindowsEvent>,
    },
    /// `W AA`: the process exited with this status (a Windows stub sends the whole 32-bit
    /// exit code, `Wc0000005`).
    Exited {
        /// The exit status.
        status: u32,
        /// `;process:PID` when given.
        pid: Option<u64>,
    },
    /// `X AA`: the process was terminated by this signal.
    Terminated {
        /// The signal.
        signal: u8,
        /// `;process:PID` when given.
        pid: Option<u64>,
    },
    /// `N`: no resumed threads are left.
    NoResumed,
}

impl StopReply {
    /// Parses a stop reply; `None` when `data` is not one.
    pub fn parse(data: &[u8]) -> Option<StopReply> {
        let (&kind, rest) = data.split_first()?;
        match kind {
            b'S' => Some(StopReply::Signal {
                signal: parse_u8(rest.get(..2)?)?,
                thread: None,
                core: None,
                reason: None,
                registers: Vec::new(),
                windows: None,
            }),
            b'T' => parse_t(rest),
            b'W' | b'X' => {
                let mut parts = rest.split(|&b| b == b';');
                let code = parts.next()?;
                let pid = parts
                    .find_map(|p| p.strip_prefix(b"process:"))
                    .and_then(parse_hex_u64);
                Some(if kind == b'W' {
                    StopReply::Exited {
                        status: parse_exit_code(code)?,
                        pid,
                    }
                } else {
                    StopReply::Terminated {
                        // gdbserver writes one digit with the multiprocess extensions (`Xb`).
                        signal: u8::try_from(parse_exit_code(code)?).ok()?,
                        pid,
                    }
                })
            }
            b'N' if rest.is_empty() => Some(StopReply::NoResumed),
            _ => None,
        }
    }

    /// The signal, for `Signal` stops.
    pub fn signal(&self) -> Option<u8> {
        match self {
            StopReply::Signal { signal, .. } => Some(*signal),
            _ => None,
        }
    }

    /// The thread, for `Signal` stops that name one.
    pub fn thread(&self) -> Option<ThreadId> {
        match self {
            StopReply::Signal { thread, .. } => *thread,
            _ => None,
        }
    }

    /// Whether the process is gone (`W`/`X`).
    pub fn is_exit(&self) -> bool {
        matches!(
            self,
            StopReply::Exited { .. } | StopReply::Terminated { .. }
        )
    }
}

fn parse_u8(text: &[u8]) -> Option<u8> {
    if text.len() != 2 {
        return None;
    }
    u8::try_from(parse_hex_u64(text)?).ok()
}

/// A `W` exit status: GDB's two digits, or a Windows exit code of up to eight.
fn parse_exit_code(text: &[u8]) -> Option<u32> {
    if !(1..=8).contains(&text.len()) {
        return None;
    }
    u32::try_from(parse_hex_u64(text)?).ok()
}

fn parse_t(rest: &[u8]) -> Option<StopReply> {
    let signal = parse_u8(rest.get(..2)?)?;
    let mut thread = None;
    let mut core = None;
    let mut reason = None;
    let mut registers = Vec::new();
    let mut windows = WindowsPairs::default();
    for pair in rest[2..].split(|&b| b == b';') {
        if pair.is_empty() {
            continue;
        }
        let colon = pair.iter().position(|&b| b == b':')?;
        let (key, value) = (&pair[..colon], &pair[colon + 1..]);
        match key {
            b"thread" => thread = ThreadId::parse(value),
            b"core" => core = parse_hex_u64(value),
            b"watch" => reason = parse_hex_u64(value).map(StopReason::Watch),
            b"rwatch" => reason = parse_hex_u64(value).map(StopReason::ReadWatch),
            b"awatch" => reason = parse_hex_u64(value).map(StopReason::AccessWatch),
            b"swbreak" => reason = Some(StopReason::SoftwareBreak),
            b"hwbreak" => reason = Some(StopReason::HardwareBreak),
            b"library" => reason = Some(StopReason::Library),
            _ if key.starts_with(b"ntdbg-") => windows.add(&key[6..], value),
            _ => {
                if let Some(n) = parse_hex_u64(key) {
                    // A register; `xx…` (unavailable) is left out.
                    if let (Ok(n), Some(bytes)) = (u32::try_from(n), from_hex(value)) {
                        registers.push((n, bytes));
                    }
                } else if !key.is_empty() {
                    reason = Some(StopReason::Other(String::from_utf8_lossy(key).into_owned()));
                }
            }
        }
    }
    Some(StopReply::Signal {
        signal,
        thread,
        core,
        reason,
        registers,
        windows: windows.finish(),
    })
}

/// What kind of Windows debug event a stop is (`ntdbg-event:KIND`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WindowsEventKind {
    /// `exception`: an exception, first or second chance.
    Exception,
    /// `initial-breakpoint`: the loader's breakpoint in a started process, or the break-in
    /// of an attach.
    InitialBreakpoint,
    /// `load`: a module was loaded.
    Load,
    /// `unload`: a module was unloaded.
    Unload,
    /// `create-thread`: a thread started.
    CreateThread,
    /// `exit-thread`: a thread ended.
    ExitThread,
    /// `output`: the program wrote a debug string (`OutputDebugString`).
    Output,
}

impl WindowsEventKind {
    /// Every kind with its key in the pair, shared by the parser and by ntdbg's Win32 stub.
    const KEYS: [(WindowsEventKind, &'static str); 7] = [
        (WindowsEventKind::Exception, "exception"),
        (WindowsEventKind::InitialBreakpoint, "initial-breakpoint"),
        (WindowsEventKind::Load, "load"),
        (WindowsEventKind::Unload, "unload"),
        (WindowsEventKind::CreateThread, "create-thread"),
        (WindowsEventKind::ExitThread, "exit-thread"),
        (WindowsEventKind::Output, "output"),
    ];

    /// The kind by its key in the pair; `None` for one this client does not know.
    pub fn parse(key: &[u8]) -> Option<WindowsEventKind> {
        Self::KEYS
            .iter()
            .find(|(_, name)| name.as_bytes() == key)
            .map(|&(kind, _)| kind)
    }

    /// The key of the kind in the `ntdbg-event:` pair.
    pub fn name(self) -> &'static str {
        Self::KEYS
            .iter()
            .find(|(kind, _)| *kind == self)
            .map_or("exception", |&(_, name)| name)
    }
}

/// Most exception parameters a record has (`EXCEPTION_MAXIMUM_PARAMETERS`).
pub const MAX_EXCEPTION_PARAMETERS: usize = 15;

/// A Windows debug event as ntdbg's Win32 stub reports it in the `ntdbg-*` pairs of a `T`
/// stop. GDB and other stubs never send them; their stops have no `WindowsEvent`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WindowsEvent {
    /// What happened.
    pub kind: WindowsEventKind,
    /// `ntdbg-exc:`: the exception code (NTSTATUS).
    pub code: Option<u32>,
    /// `ntdbg-chance:`: 1 first chance, 2 second chance.
    pub chance: Option<u8>,
    /// `ntdbg-excaddr:`: where the exception happened.
    pub address: Option<u64>,
    /// `ntdbg-excparams:`: the exception's parameters (at most 15).
    pub parameters: Vec<u64>,
    /// `ntdbg-module:`: the module's base, for loads and unloads.
    pub module_base: Option<u64>,
    /// `ntdbg-name:`: the module's path, for loads and unloads.
    pub module_name: Option<String>,
    /// `ntdbg-text:`: the debug string, for `output`.
    pub text: Option<String>,
}

impl WindowsEvent {
    /// Whether this is a first-chance exception (a missing chance counts as first).
    pub fn first_chance(&self) -> bool {
        self.chance != Some(2)
    }
}

/// The `ntdbg-*` pairs of one stop as they are read; an unreadable value is left out.
#[derive(Debug, Default)]
struct WindowsPairs {
    kind: Option<WindowsEventKind>,
    event: Option<WindowsEvent>,
}

impl WindowsPairs {
    fn add(&mut self, key: &[u8], value: &[u8]) {
        let event = self.event.get_or_insert_with(|| WindowsEvent {
            kind: WindowsEventKind::Output,
            code: None,
            chance: None,
            address: None,
            parameters: Vec::new(),
            module_base: None,
            module_name: None,
            text: None,
        });
        match key {
            b"event" => self.kind = WindowsEventKind::parse(value),
            b"exc" => {
                event.code = (value.len() <= 8)
                    .then(|| parse_hex_u64(value))
                    .flatten()
                    .map(|c| c as u32)
            }
            b"chance" => event.chance = matches!(value, b"1" | b"2").then(|| value[0] - b'0'),
            b"excaddr" => event.address = parse_hex_u64(value),
            b"excparams" => {
                event.parameters = value
                    .split(|&b| b == b',')
                    .filter(|p| !p.is_empty())
                    .map_while(parse_hex_u64)
                    .take(MAX_EXCEPTION_PARAMETERS)
                    .collect()
            }
            b"module" => event.module_base = parse_hex_u64(value),
            b"name" => event.module_name = hex_text(value),
            b"text" => event.text = hex_text(value),
            _ => {}
        }
    }

    /// The event, when the stop named a kind this client knows.
    fn finish(self) -> Option<WindowsEvent> {
        let kind = self.kind?;
        let mut event = self.event?;
        event.kind = kind;
        Some(event)
    }
}

/// Hex-encoded UTF-8 text (invalid sequences replaced).
fn hex_text(value: &[u8]) -> Option<String> {
    from_hex(value).map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_t_stop() {
        let r = StopReply::parse(
            b"T0506:0000000000000000;07:e0e3ffffff7f0000;10:5611555555550000;thread:p1f4.1f4;core:3;swbreak:;",
        )
        .unwrap();
        let StopReply::Signal {
            signal,
            thread,
            core,
            reason,
            registers,
            windows,
        } = r
        else {
            panic!()
        };
        assert_eq!(signal, 5);
        assert_eq!(
            thread,
            Some(ThreadId {
                pid: Some(IdPart::Id(0x1f4)),
                tid: IdPart::Id(0x1f4)
            })
        );
        assert_eq!(core, Some(3));
        assert_eq!(reason, Some(StopReason::SoftwareBreak));
        assert_eq!(registers.len(), 3);
        assert_eq!(registers[2].0, 0x10);
        assert_eq!(windows, None);
    }

    #[test]
    fn parses_s_w_x_n() {
        assert_eq!(StopReply::parse(b"S02").unwrap().signal(), Some(2));
        assert_eq!(
            StopReply::parse(b"W00;process:1a").unwrap(),
            StopReply::Exited {
                status: 0,
                pid: Some(0x1a)
            }
        );
        assert_eq!(
            StopReply::parse(b"X09").unwrap(),
            StopReply::Terminated {
                signal: 9,
                pid: None
            }
        );
        assert_eq!(
            StopReply::parse(b"Xb;process:793e").unwrap(),
            StopReply::Terminated {
                signal: 11,
                pid: Some(0x793e)
            }
        );
        assert_eq!(StopReply::parse(b"X100"), None);
        assert_eq!(StopReply::parse(b"N"), Some(StopReply::NoResumed));
        assert_eq!(StopReply::parse(b"OK"), None);
        assert_eq!(StopReply::parse(b"T"), None);
        assert_eq!(StopReply::parse(b""), None);
    }

    #[test]
    fn windows_exit_codes_take_32_bits() {
        assert_eq!(
            StopReply::parse(b"Wc0000005;process:1a").unwrap(),
            StopReply::Exited {
                status: 0xc000_0005,
                pid: Some(0x1a)
            }
        );
        assert_eq!(StopReply::parse(b"W123456789"), None);
        assert_eq!(StopReply::parse(b"W"), None);
    }

    fn windows(reply: &[u8]) -> WindowsEvent {
        match StopReply::parse(reply).unwrap() {
            StopReply::Signal {
                windows: Some(w), ..
            } => w,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn parses_a_windows_exception() {
        let w = windows(
            b"T0bthread:p1a.2b;ntdbg-event:exception;ntdbg-exc:c0000005;ntdbg-chance:2;\
              ntdbg-excaddr:7ff612341000;ntdbg-excparams:1,0;",
        );
        assert_eq!(w.kind, WindowsEventKind::Exception);
        assert_eq!(w.code, Some(0xc000_0005));
        assert_eq!(w.chance, Some(2));
        assert!(!w.first_chance());
        assert_eq!(w.address, Some(0x7ff6_1234_1000));
        assert_eq!(w.parameters, [1, 0]);
    }

    #[test]
    fn parses_module_and_output_events() {
        // "C:\\x.dll" and "hi\n", hex-encoded.
        let w =
            windows(b"T05ntdbg-event:load;ntdbg-module:7ff812340000;ntdbg-name:433a5c782e646c6c;");
        assert_eq!(w.kind, WindowsEventKind::Load);
        assert_eq!(w.module_base, Some(0x7ff8_1234_0000));
        assert_eq!(w.module_name.as_deref(), Some("C:\\x.dll"));
        let w = windows(b"T05ntdbg-event:output;ntdbg-text:68690a;");
        assert_eq!(w.kind, WindowsEventKind::Output);
        assert_eq!(w.text.as_deref(), Some("hi\n"));
        assert_eq!(
            windows(b"T05ntdbg-event:initial-breakpoint;").kind,
            WindowsEventKind::InitialBreakpoint
        );
    }

    #[test]
    fn bad_or_unknown_windows_pairs_are_left_out() {
        // An unknown kind: a plain signal stop, as from any GDB stub.
        let r = StopReply::parse(b"T05ntdbg-event:reboot;ntdbg-exc:1;").unwrap();
        assert!(matches!(
            r,
            StopReply::Signal {
                windows: None,
                reason: None,
                ..
            }
        ));
        // Pairs without a kind are no event either.
        let r = StopReply::parse(b"T05ntdbg-exc:c0000005;").unwrap();
        assert!(matches!(r, StopReply::Signal { windows: None, .. }));
        let w = windows(
            b"T06ntdbg-event:exception;ntdbg-exc:123456789;ntdbg-chance:3;ntdbg-name:zz;\
              ntdbg-excparams:1,2,3,4,5,6,7,8,9,a,b,c,d,e,f,10,11;",
        );
        assert_eq!((w.code, w.chance, &w.module_name), (None, None, &None));
        assert_eq!(w.parameters.len(), MAX_EXCEPTION_PARAMETERS);
        assert!(w.first_chance());
    }

    #[test]
    fn thread_ids() {
        assert_eq!(ThreadId::parse(b"-1"), Some(ThreadId::ALL));
        assert_eq!(ThreadId::parse(b"0"), Some(ThreadId::ANY));
        assert_eq!(ThreadId::parse(b"1a").unwrap().tid(), Some(0x1a));
        assert_eq!(ThreadId::parse(b"p10.-1").unwrap().to_string(), "p10.-1");
        assert_eq!(ThreadId::new(0x2b).to_string(), "2b");
        assert!(ThreadId::parse(b"zz").is_none());
    }
}
