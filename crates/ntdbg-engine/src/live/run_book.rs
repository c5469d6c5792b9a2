//! The bookkeeping of run control, kept with a live target's run state: the resume in flight
//! (what the user asked for and how far it got), what the debugger did to each thread, and
//! the fault last passed to the program. [`super::run`] drives it; [`super::control`] holds it.

use std::collections::HashMap;

use ntdbg_gdbremote::{BreakpointKind, IdPart, ThreadId};

/// What the user asked the target to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Intent {
    /// Execute one instruction on `thread`, the other threads held.
    Step {
        /// The thread that steps.
        thread: ThreadId,
    },
    /// Run: every thread, or `only` one (`~N g`).
    Go {
        /// The one thread that runs.
        only: Option<ThreadId>,
    },
}

/// A register snapshot (the bytes of a `g` reply).
pub(crate) type Registers = Vec<Option<u8>>;

/// Where a resume is.
#[derive(Debug, Clone)]
pub(crate) enum Phase {
    /// `thread` steps alone off the execution breakpoint at `pc`, whose slots are lifted
    /// until the step ends; then the intent goes on.
    SteppingOff {
        thread: ThreadId,
        pc: u64,
        slots: Vec<(BreakpointKind, usize)>,
        before: Registers,
        retries: u8,
    },
    /// The intent's own packet is out; `lifted` are the slots lifted for a step that started
    /// on a breakpoint.
    Main {
        lifted: Option<(u64, Vec<(BreakpointKind, usize)>)>,
        retries: u8,
    },
}

/// A resume in progress.
#[derive(Debug, Clone)]
pub(crate) struct Flight {
    pub(crate) intent: Intent,
    pub(crate) phase: Phase,
    /// The exception to pass to the program with the first run packet: `(thread, signal)`.
    pub(crate) pass: Option<(ThreadId, u8)>,
    /// The stepped thread's registers before its step (kept across events of other
    /// threads, so a step that already ran is never given twice).
    pub(crate) step_before: Option<Registers>,
}

/// What the debugger did to one thread.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ThreadRun {
    /// The execution breakpoint this thread stopped on: it steps off it before it runs.
    pub(crate) on_breakpoint: Option<u64>,
    /// A single step it was given has not reported yet.
    pub(crate) late_step: bool,
    /// Its registers after its last plain trap (one without a Windows debug event; with the
    /// pc moved back where it was): a trap with the same registers is that event again,
    /// replayed by a stub that held it (winedbg answers the event of a thread it does not
    /// resume "reply later").
    pub(crate) last_trap: Option<Registers>,
    /// Its registers where its last single step ended: a thread one byte past a breakpoint
    /// with these registers executed the instruction under it and has not run since.
    pub(crate) stepped_to: Option<Registers>,
    /// The breakpoint whose pending hit was cancelled when another thread's stop was shown
    /// (the pc moved back to it): the trap the stub still holds is stale, and the thread
    /// executes the breakpoint again rather than stepping off it.
    pub(crate) cancelled_hit: Option<u64>,
}

/// A fault passed to the program: the same fault again, on the same thread with the same
/// registers, is its second chance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PassedFault {
    pub(crate) thread: u64,
    pub(crate) signal: u8,
    pub(crate) registers: Registers,
}

/// The run-control bookkeeping kept with the run state.
#[derive(Debug, Default)]
pub(crate) struct RunBook {
    pub(crate) flight: Option<Flight>,
    pub(crate) threads: HashMap<u64, ThreadRun>,
    pub(crate) passed: Option<PassedFault>,
    /// The process part of the stub's thread ids (`p1234.`), when it uses one.
    pub(crate) pid_part: Option<IdPart>,
}
