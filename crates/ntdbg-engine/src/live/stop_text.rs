//! How WinDbg words a stop: `Breakpoint 0 hit`, `Access violation - code c0000005 (first
//! chance)`, and the exit of the process.
//!
//! GDB stubs report Windows exceptions as signals (`winedbg --gdb` maps them the same way):
//! SIGTRAP for breakpoints and single steps, SIGINT for a break-in, SIGSEGV for an access
//! violation, SIGFPE, SIGILL.

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

/// Why the target stopped, in words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StopCause {
    /// A user breakpoint.
    Breakpoint(u32),
    /// The end of a step, or a temporary breakpoint of `p`, `gu`, `pa`, `g ADDR`.
    StepDone,
    /// A signal (exception) that is not a breakpoint.
    Signal(u8),
}

/// The WinDbg line for a stop; `None` for the end of a step (WinDbg prints only the next
/// instruction). `ids` is `(pid, tid)` when known, printed as `(pid.tid): `.
pub fn describe(cause: StopCause, ids: Option<(u64, u64)>) -> Option<String> {
    let prefix = match ids {
        Some((pid, tid)) => format!("({pid:x}.{tid:x}): "),
        None => String::new(),
    };
    let exception =
        |name: &str, code: u32| format!("{prefix}{name} - code {code:08x} (first chance)");
    Some(match cause {
        StopCause::Breakpoint(n) => format!("Breakpoint {n} hit"),
        StopCause::StepDone => return None,
        StopCause::Signal(signal::TRAP) | StopCause::Signal(signal::INT) => {
            exception("Break instruction exception", 0x8000_0003)
        }
        StopCause::Signal(signal::SEGV) => format!(
            "{}\nFirst chance exceptions are reported before any exception handling.\n\
             This exception may be expected and handled.",
            exception("Access violation", 0xc000_0005)
        ),
        StopCause::Signal(signal::FPE) => exception("Integer divide-by-zero", 0xc000_0094),
        StopCause::Signal(signal::ILL) => exception("Illegal instruction", 0xc000_001d),
        StopCause::Signal(other) => format!("{prefix}Stopped by signal {other}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windbg_words() {
        assert_eq!(
            describe(StopCause::Breakpoint(3), None).as_deref(),
            Some("Breakpoint 3 hit")
        );
        assert_eq!(describe(StopCause::StepDone, None), None);
        let av = describe(StopCause::Signal(signal::SEGV), Some((0x1a, 0x2b))).unwrap();
        assert!(av.starts_with("(1a.2b): Access violation - code c0000005 (first chance)"));
        assert_eq!(
            describe(StopCause::Signal(signal::INT), None).as_deref(),
            Some("Break instruction exception - code 80000003 (first chance)")
        );
    }
}
