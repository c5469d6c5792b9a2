//! Stop replies (`T`, `S`, `W`, `X`, `N`) and thread ids.

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
    },
    /// `W AA`: the process exited with this status.
    Exited {
        /// The exit status.
        status: u8,
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
            }),
            b'T' => parse_t(rest),
            b'W' | b'X' => {
                let mut parts = rest.split(|&b| b == b';');
                let code = parse_u8(parts.next()?)?;
                let pid = parts
                    .find_map(|p| p.strip_prefix(b"process:"))
                    .and_then(parse_hex_u64);
                Some(if kind == b'W' {
                    StopReply::Exited { status: code, pid }
                } else {
                    StopReply::Terminated { signal: code, pid }
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

fn parse_t(rest: &[u8]) -> Option<StopReply> {
    let signal = parse_u8(rest.get(..2)?)?;
    let mut thread = None;
    let mut core = None;
    let mut reason = None;
    let mut registers = Vec::new();
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
    })
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
        assert_eq!(StopReply::parse(b"N"), Some(StopReply::NoResumed));
        assert_eq!(StopReply::parse(b"OK"), None);
        assert_eq!(StopReply::parse(b"T"), None);
        assert_eq!(StopReply::parse(b""), None);
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
