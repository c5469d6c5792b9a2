//! Whose trap is it? A pure decision over the facts of one stop: the thread's own single
//! step, a breakpoint (and whether the program counter must move back over an `int3` the
//! debugger wrote), a stale trap of the debugger's own to resume from silently, or an event
//! of the program to show.
//!
//! The rules, which make run control correct by construction:
//! - the program counter moves back only after a breakpoint trap: a thread that ran (was not
//!   single-stepped) and stopped one byte past an `int3` the debugger wrote; never after a
//!   completed single step, even when the step ends one byte past a breakpoint;
//! - a single step is the stepped thread's own: another thread's trap is never taken for it;
//! - traps the debugger caused earlier and no longer wants (a step that reported late, the
//!   `int3` of a breakpoint removed since, an event a stub replays for a thread it had held,
//!   recognised by registers that did not change since that thread's last trap) are resumed
//!   from without a word.

use ntdbg_gdbremote::StopReason;

use super::stop_text::signal;

/// A single step the debugger gave the thread that stopped, and what its registers were.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct StepFacts {
    /// Every register reads the same as before the step: the step did not run (a stub
    /// reported an event it had held back instead).
    pub registers_unchanged: bool,
    /// The instruction stepped was an `int3` of the program's own (not the debugger's):
    /// the trap is that breakpoint exception, not the end of the step.
    pub stepped_program_int3: bool,
}

/// What is known about one stop of one thread.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TrapFacts {
    /// The GDB signal of the stop.
    pub signal: u8,
    /// The stop reason the stub gave (`swbreak`, `hwbreak`, `watch:ADDR`…).
    pub reason: Option<StopReason>,
    /// The Windows exception code, when the stub reports Windows events (ntdbg's Win32
    /// stub); such a stub puts the program counter on a breakpoint itself.
    pub windows_code: Option<u32>,
    /// The thread's program counter as the stub reports it.
    pub pc: Option<u64>,
    /// The single step the debugger gave this thread, when this stop answers it.
    pub step: Option<StepFacts>,
    /// An earlier single step of this thread has not reported yet.
    pub late_step: bool,
    /// The debugger's `int3` is in place at `pc - 1`.
    pub int3_before: bool,
    /// The debugger wrote an `int3` at `pc - 1` and has removed it since.
    pub removed_int3_before: bool,
    /// The debugger's `int3` is in place at `pc` itself and software breakpoints are
    /// written `int3`s (a hit would leave the pc one past it).
    pub int3_here: bool,
    /// The thread's registers are those of its last trap: it has not run since, and the
    /// stub reports that event again.
    pub replayed: bool,
}

/// What a stop is, for run control.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Trap {
    /// The program's own event (an exception, a signal, an `int3` of its own, a break-in):
    /// the filters decide.
    Program,
    /// The single step the debugger asked for ran to its end.
    StepDone,
    /// The single step did not run: give it again.
    StepAgain,
    /// An execution breakpoint: the thread is at it once the pc is `rewind_to` (when set).
    Breakpoint {
        /// Where to put the program counter (one byte back over the debugger's `int3`).
        rewind_to: Option<u64>,
    },
    /// A watchpoint on this data address.
    Watch(u64),
    /// A trap the debugger caused and no longer wants: resume without showing it, after
    /// putting the program counter at `rewind_to` (when set).
    Stale {
        /// Where to put the program counter first.
        rewind_to: Option<u64>,
    },
}

/// Single-step exception codes (native and WOW64).
const SINGLE_STEP_CODES: [u32; 2] = [0x8000_0004, 0x4000_001E];
/// Breakpoint exception codes (native and WOW64).
const BREAKPOINT_CODES: [u32; 2] = [0x8000_0003, 0x4000_001F];

/// Decides what a stop is (see the module documentation for the rules).
pub(crate) fn classify(f: &TrapFacts) -> Trap {
    if let Some(code) = f.windows_code {
        return classify_windows(f, code);
    }
    if f.signal != signal::TRAP {
        return Trap::Program;
    }
    match f.reason {
        Some(StopReason::Watch(a) | StopReason::ReadWatch(a) | StopReason::AccessWatch(a)) => {
            return Trap::Watch(a);
        }
        Some(StopReason::SoftwareBreak | StopReason::HardwareBreak) => {
            return Trap::Breakpoint { rewind_to: None };
        }
        _ => {}
    }
    if let Some(step) = f.step {
        return if step.stepped_program_int3 {
            Trap::Program
        } else if step.registers_unchanged {
            Trap::StepAgain
        } else {
            Trap::StepDone
        };
    }
    if f.replayed {
        return Trap::Stale { rewind_to: None };
    }
    let before = f.pc.and_then(|pc| pc.checked_sub(1));
    if f.int3_before {
        return Trap::Breakpoint { rewind_to: before };
    }
    if f.removed_int3_before {
        return Trap::Stale { rewind_to: before };
    }
    if f.int3_here || f.late_step {
        return Trap::Stale { rewind_to: None };
    }
    Trap::Program
}

/// A stop with a Windows event: the stub names the exception and puts the pc on a
/// breakpoint itself.
fn classify_windows(f: &TrapFacts, code: u32) -> Trap {
    let hardware = match f.reason {
        Some(StopReason::Watch(a) | StopReason::ReadWatch(a) | StopReason::AccessWatch(a)) => {
            return Trap::Watch(a)
        }
        Some(StopReason::HardwareBreak) => true,
        _ => false,
    };
    if SINGLE_STEP_CODES.contains(&code) {
        return match f.step {
            Some(step) if step.registers_unchanged => Trap::StepAgain,
            Some(_) => Trap::StepDone,
            None if hardware => Trap::Breakpoint { rewind_to: None },
            None if f.late_step => Trap::Stale { rewind_to: None },
            None => Trap::Program,
        };
    }
    if BREAKPOINT_CODES.contains(&code) && f.reason == Some(StopReason::SoftwareBreak) {
        return Trap::Breakpoint { rewind_to: None };
    }
    Trap::Program
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trap() -> TrapFacts {
        TrapFacts {
            signal: signal::TRAP,
            reason: None,
            windows_code: None,
            pc: Some(0x1001),
            step: None,
            late_step: false,
            int3_before: false,
            removed_int3_before: false,
            int3_here: false,
            replayed: false,
        }
    }

    const STEPPED: StepFacts = StepFacts {
        registers_unchanged: false,
        stepped_program_int3: false,
    };

    #[test]
    fn a_completed_step_never_moves_the_pc_back() {
        // The step of a one-byte instruction under a breakpoint ends one byte past the
        // breakpoint's (re-inserted) int3: still the end of the step.
        let f = TrapFacts {
            step: Some(STEPPED),
            int3_before: true,
            ..trap()
        };
        assert_eq!(classify(&f), Trap::StepDone);
        // A step that did not run (a replayed event) is given again.
        let f = TrapFacts {
            step: Some(StepFacts {
                registers_unchanged: true,
                ..STEPPED
            }),
            ..trap()
        };
        assert_eq!(classify(&f), Trap::StepAgain);
        // Stepping the program's own int3 is its breakpoint exception.
        let f = TrapFacts {
            step: Some(StepFacts {
                stepped_program_int3: true,
                ..STEPPED
            }),
            ..trap()
        };
        assert_eq!(classify(&f), Trap::Program);
    }

    #[test]
    fn a_running_thread_past_the_debuggers_int3_hit_the_breakpoint() {
        let f = TrapFacts {
            int3_before: true,
            ..trap()
        };
        assert_eq!(
            classify(&f),
            Trap::Breakpoint {
                rewind_to: Some(0x1000)
            }
        );
        // The stub says so and has moved the pc itself (gdbserver with Z0).
        let f = TrapFacts {
            reason: Some(StopReason::SoftwareBreak),
            ..trap()
        };
        assert_eq!(classify(&f), Trap::Breakpoint { rewind_to: None });
        assert_eq!(
            classify(&TrapFacts {
                reason: Some(StopReason::Watch(0x20)),
                ..trap()
            }),
            Trap::Watch(0x20)
        );
    }

    #[test]
    fn stale_traps_of_the_debugger_are_resumed_from() {
        let removed = TrapFacts {
            removed_int3_before: true,
            ..trap()
        };
        assert_eq!(
            classify(&removed),
            Trap::Stale {
                rewind_to: Some(0x1000)
            }
        );
        let replayed = TrapFacts {
            int3_here: true,
            ..trap()
        };
        assert_eq!(classify(&replayed), Trap::Stale { rewind_to: None });
        let late = TrapFacts {
            late_step: true,
            ..trap()
        };
        assert_eq!(classify(&late), Trap::Stale { rewind_to: None });
        // The same trap again, the thread not having run: winedbg's "reply later" replay.
        let again = TrapFacts {
            replayed: true,
            int3_before: true,
            ..trap()
        };
        assert_eq!(classify(&again), Trap::Stale { rewind_to: None });
        // Anything else is the program's: an int3 of its own, a break-in, a signal.
        assert_eq!(classify(&trap()), Trap::Program);
        let segv = TrapFacts {
            signal: signal::SEGV,
            int3_before: true,
            ..trap()
        };
        assert_eq!(classify(&segv), Trap::Program);
    }

    #[test]
    fn windows_events_name_their_exception() {
        let step = TrapFacts {
            windows_code: Some(0x8000_0004),
            step: Some(STEPPED),
            ..trap()
        };
        assert_eq!(classify(&step), Trap::StepDone);
        let stale = TrapFacts {
            windows_code: Some(0x8000_0004),
            late_step: true,
            ..trap()
        };
        assert_eq!(classify(&stale), Trap::Stale { rewind_to: None });
        let own = TrapFacts {
            windows_code: Some(0x8000_0004),
            ..trap()
        };
        assert_eq!(classify(&own), Trap::Program);
        let hit = TrapFacts {
            windows_code: Some(0x8000_0003),
            reason: Some(StopReason::SoftwareBreak),
            int3_before: true,
            ..trap()
        };
        assert_eq!(classify(&hit), Trap::Breakpoint { rewind_to: None });
        let program = TrapFacts {
            windows_code: Some(0x8000_0003),
            ..trap()
        };
        assert_eq!(classify(&program), Trap::Program);
        let av = TrapFacts {
            windows_code: Some(0xC000_0005),
            signal: signal::SEGV,
            ..trap()
        };
        assert_eq!(classify(&av), Trap::Program);
    }
}
