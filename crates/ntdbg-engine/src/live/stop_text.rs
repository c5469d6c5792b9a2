//! How WinDbg words a stop: `Breakpoint 0 hit`, `Access violation - code c0000005 (first
//! chance)`, `ModLoad: …`, a debug string, and the exit of the process.
//!
//! GDB stubs report Windows exceptions as signals (`winedbg --gdb` maps them the same way):
//! SIGTRAP for breakpoints and single steps, SIGINT for a break-in, SIGSEGV for an access
//! violation, SIGFPE, SIGILL. ntdbg's Win32 stub adds the debug event itself
//! ([`WindowsEvent`]): the exception code and chance, module loads, thread events, output.

use ntdbg_gdbremote::WindowsEvent;

use crate::ntstatus::exception_name;
use crate::text::{address, unreadable_address};

/// GDB's signal numbers for the stops that matter here.
pub mod signal {
    /// SIGINT: the target was interrupted.
    pub const INT: u8 = 2;
    /// SIGILL.
    pub const ILL: u8 = 4;
    /// SIGTRAP: breakpoint or single step.
    pub const TRAP: u8 = 5;
    /// SIGFPE.
    pub const FPE: u8 = 8;
    /// SIGSEGV.
    pub const SEGV: u8 = 11;
}

/// Which chance of an exception a stop is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Chance {
    /// Reported before the program's handlers ran.
    First,
    /// No handler handled it: continuing ends the process.
    Second,
    /// Not known (the target was already stopped at the fault when the debugger attached).
    Unknown,
}

impl Chance {
    /// WinDbg's words: `(first chance)`, `(!!! second chance !!!)`, `(chance unknown)`.
    pub fn words(self) -> &'static str {
        match self {
            Chance::First => "(first chance)",
            Chance::Second => "(!!! second chance !!!)",
            Chance::Unknown => "(chance unknown)",
        }
    }

    /// Stable key: `first`, `second`, `unknown`.
    pub fn name(self) -> &'static str {
        match self {
            Chance::First => "first",
            Chance::Second => "second",
            Chance::Unknown => "unknown",
        }
    }
}

/// Why the target stopped, in words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopCause {
    /// A user breakpoint.
    Breakpoint(u32),
    /// The end of a step, or a temporary breakpoint of `p`, `gu`, `pa`, `g ADDR`.
    StepDone,
    /// A signal that names no exception (a break-in, an unexplained trap, `SIGABRT`…), from
    /// a stub that does not say more.
    Signal(u8),
    /// An exception: named by a Windows debug event (ntdbg's Win32 stub), or the fault a
    /// GDB stub's signal stands for.
    Exception {
        /// The NTSTATUS code.
        code: u32,
        /// First or second chance, or unknown.
        chance: Chance,
    },
    /// The initial breakpoint of a started process, or the break-in of an attach.
    InitialBreakpoint,
    /// A module was loaded.
    ModuleLoad,
    /// A module was unloaded.
    ModuleUnload,
    /// A thread started.
    ThreadCreate,
    /// A thread ended.
    ThreadExit,
    /// The program wrote a debug string.
    DebugOutput,
}

impl StopCause {
    /// The exception a stop is, as `(code, chance)`.
    pub fn exception(self) -> Option<(u32, Chance)> {
        match self {
            StopCause::Exception { code, chance } => Some((code, chance)),
            _ => None,
        }
    }
}

/// The cause a GDB stub's signal gives a stop: the fault it stands for (an access
/// violation, a divide by zero, an illegal instruction), with `chance`, or the signal.
pub fn signal_cause(sig: u8, chance: Chance) -> StopCause {
    match signal_code(sig) {
        Some(code) => StopCause::Exception { code, chance },
        None => StopCause::Signal(sig),
    }
}

/// The exception code GDB's signal stands for, where it stands for one.
fn signal_code(sig: u8) -> Option<u32> {
    match sig {
        signal::SEGV => Some(0xC000_0005),
        signal::FPE => Some(0xC000_0094),
        signal::ILL => Some(0xC000_001D),
        _ => None,
    }
}

/// Breakpoint and single-step codes (also WOW64's): the debugger's own traps, which WinDbg
/// reports without the note about exception handling and never passes to the program.
pub fn is_debug_trap(code: u32) -> bool {
    matches!(code, 0x8000_0003 | 0x8000_0004 | 0x4000_001F | 0x4000_001E)
}

/// WinDbg's name of an exception in an event line (`Unknown exception` without one).
pub fn exception_event_name(code: u32) -> &'static str {
    exception_name(code).map_or("Unknown exception", |(_, short)| short)
}

/// What the debugger knows about a stop beyond its cause: the Windows event, the end of a
/// loaded module (from its PE header), the pointer size.
#[derive(Debug, Clone, Copy)]
pub struct StopDetails<'a> {
    /// The Windows debug event, when the stub sent one.
    pub event: Option<&'a WindowsEvent>,
    /// For a module load: base + SizeOfImage, when the header was readable.
    pub module_end: Option<u64>,
    /// 4 or 8.
    pub pointer_size: usize,
}

impl StopDetails<'_> {
    /// No details: a GDB stub's stop.
    pub const NONE: StopDetails<'static> = StopDetails {
        event: None,
        module_end: None,
        pointer_size: 8,
    };
}

/// The WinDbg line for a stop; `None` for the end of a step (WinDbg prints only the next
/// instruction). `ids` is `(pid, tid)` when known, printed as `(pid.tid): `.
pub fn describe(
    cause: StopCause,
    details: StopDetails<'_>,
    ids: Option<(u64, u64)>,
) -> Option<String> {
    let prefix = match ids {
        Some((pid, tid)) => format!("({pid:x}.{tid:x}): "),
        None => String::new(),
    };
    let module = || {
        details
            .event
            .and_then(|e| e.module_name.as_deref())
            .unwrap_or("<unknown module>")
    };
    let base = || {
        details.event.and_then(|e| e.module_base).map_or_else(
            || unreadable_address(details.pointer_size).to_string(),
            |b| address(b, details.pointer_size),
        )
    };
    Some(match cause {
        StopCause::Breakpoint(n) => format!("Breakpoint {n} hit"),
        StopCause::StepDone => return None,
        StopCause::Signal(signal::TRAP) | StopCause::Signal(signal::INT) => {
            format!("{prefix}{}", event_text(cause, details))
        }
        StopCause::Signal(other) => format!("{prefix}Stopped by signal {other}"),
        StopCause::Exception { .. } | StopCause::InitialBreakpoint => {
            let mut line = format!("{prefix}{}", event_text(cause, details));
            if cause
                .exception()
                .is_some_and(|(code, chance)| chance == Chance::First && !is_debug_trap(code))
            {
                line.push_str(
                    "\nFirst chance exceptions are reported before any exception handling.\n\
                     This exception may be expected and handled.",
                );
            }
            line
        }
        StopCause::ModuleLoad => {
            let end = details.module_end.map_or_else(
                || unreadable_address(details.pointer_size).to_string(),
                |e| address(e, details.pointer_size),
            );
            format!("ModLoad: {} {end}   {}", base(), module())
        }
        StopCause::ModuleUnload => format!("Unload module {} at {}", module(), base()),
        StopCause::ThreadCreate | StopCause::ThreadExit => {
            format!("{prefix}{}", event_text(cause, details))
        }
        StopCause::DebugOutput => details
            .event
            .and_then(|e| e.text.as_deref())
            .unwrap_or("")
            .trim_end_matches(['\r', '\n'])
            .to_string(),
    })
}

/// The event in the words of `.lastevent` (`Access violation - code c0000005 (first
/// chance)`, `Hit breakpoint 0`, `Load module PATH at BASE`).
pub fn event_text(cause: StopCause, details: StopDetails<'_>) -> String {
    let exception = |code: u32, chance: Chance| {
        format!(
            "{} - code {code:08x} {}",
            exception_event_name(code),
            chance.words()
        )
    };
    let module = details
        .event
        .and_then(|e| e.module_name.as_deref())
        .unwrap_or("<unknown module>");
    let base = details.event.and_then(|e| e.module_base).map_or_else(
        || unreadable_address(details.pointer_size).to_string(),
        |b| address(b, details.pointer_size),
    );
    match cause {
        StopCause::Breakpoint(n) => format!("Hit breakpoint {n}"),
        StopCause::StepDone => exception(0x8000_0004, Chance::First),
        StopCause::Signal(signal::TRAP | signal::INT) | StopCause::InitialBreakpoint => {
            exception(0x8000_0003, Chance::First)
        }
        StopCause::Signal(sig) => format!("Stopped by signal {sig}"),
        StopCause::Exception { code, chance } => exception(code, chance),
        StopCause::ModuleLoad => format!("Load module {module} at {base}"),
        StopCause::ModuleUnload => format!("Unload module {module} at {base}"),
        StopCause::ThreadCreate => "Create thread".into(),
        StopCause::ThreadExit => "Exit thread".into(),
        StopCause::DebugOutput => "Debug output".into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windbg_words() {
        assert_eq!(
            describe(StopCause::Breakpoint(3), StopDetails::NONE, None).as_deref(),
            Some("Breakpoint 3 hit")
        );
        assert_eq!(describe(StopCause::StepDone, StopDetails::NONE, None), None);
        let av = describe(
            signal_cause(signal::SEGV, Chance::First),
            StopDetails::NONE,
            Some((0x1a, 0x2b)),
        )
        .unwrap();
        assert!(av.starts_with("(1a.2b): Access violation - code c0000005 (first chance)"));
        assert_eq!(
            describe(StopCause::Signal(signal::INT), StopDetails::NONE, None).as_deref(),
            Some("Break instruction exception - code 80000003 (first chance)")
        );
        assert_eq!(
            describe(
                signal_cause(signal::FPE, Chance::First),
                StopDetails::NONE,
                None
            )
            .as_deref(),
            Some(
                "Integer divide-by-zero - code c0000094 (first chance)\n\
                 First chance exceptions are reported before any exception handling.\n\
                 This exception may be expected and handled."
            )
        );
        assert_eq!(
            describe(StopCause::Signal(6), StopDetails::NONE, None).as_deref(),
            Some("Stopped by signal 6")
        );
        assert_eq!(
            describe(
                signal_cause(signal::SEGV, Chance::Unknown),
                StopDetails::NONE,
                None
            )
            .as_deref(),
            Some("Access violation - code c0000005 (chance unknown)")
        );
    }

    fn event(kind: ntdbg_gdbremote::WindowsEventKind) -> WindowsEvent {
        WindowsEvent {
            kind,
            code: None,
            chance: None,
            address: None,
            parameters: Vec::new(),
            module_base: Some(0x7ff8_1234_0000),
            module_name: Some("C:\\windows\\system32\\version.dll".into()),
            text: Some("hello\r\n".into()),
        }
    }

    #[test]
    fn windows_events_in_windbg_words() {
        use ntdbg_gdbremote::WindowsEventKind as K;
        let ids = Some((0x1a, 0x2b));
        let second = StopCause::Exception {
            code: 0xC000_0005,
            chance: Chance::Second,
        };
        assert_eq!(
            describe(second, StopDetails::NONE, ids).as_deref(),
            Some("(1a.2b): Access violation - code c0000005 (!!! second chance !!!)")
        );
        let eh = StopCause::Exception {
            code: 0xE06D_7363,
            chance: Chance::First,
        };
        assert!(describe(eh, StopDetails::NONE, ids)
            .unwrap()
            .starts_with("(1a.2b): C++ exception (MSVC) - code e06d7363 (first chance)\nFirst"));
        let unknown = StopCause::Exception {
            code: 0xE000_0001,
            chance: Chance::Second,
        };
        assert_eq!(
            event_text(unknown, StopDetails::NONE),
            "Unknown exception - code e0000001 (!!! second chance !!!)"
        );
        assert_eq!(
            describe(StopCause::InitialBreakpoint, StopDetails::NONE, ids).as_deref(),
            Some("(1a.2b): Break instruction exception - code 80000003 (first chance)")
        );
        let load = event(K::Load);
        let details = StopDetails {
            event: Some(&load),
            module_end: Some(0x7ff8_1235_6000),
            pointer_size: 8,
        };
        assert_eq!(
            describe(StopCause::ModuleLoad, details, ids).as_deref(),
            Some(
                "ModLoad: 00007ff8`12340000 00007ff8`12356000   C:\\windows\\system32\\version.dll"
            )
        );
        let unreadable_end = StopDetails {
            module_end: None,
            ..details
        };
        assert!(describe(StopCause::ModuleLoad, unreadable_end, ids)
            .unwrap()
            .contains("???????"));
        assert_eq!(
            describe(StopCause::ModuleUnload, details, ids).as_deref(),
            Some("Unload module C:\\windows\\system32\\version.dll at 00007ff8`12340000")
        );
        assert_eq!(
            describe(StopCause::DebugOutput, details, ids).as_deref(),
            Some("hello")
        );
        assert_eq!(
            event_text(StopCause::ModuleLoad, details),
            "Load module C:\\windows\\system32\\version.dll at 00007ff8`12340000"
        );
        assert_eq!(
            event_text(StopCause::Breakpoint(2), details),
            "Hit breakpoint 2"
        );
    }
}
