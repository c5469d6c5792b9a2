//! [`LiveControl`]: the run state of a live target, shared behind an `Arc` by the session and
//! by calls that must never wait for the session lock (`break_in`, `wait_for_event`).
//!
//! Resuming sends the resume packet and starts a waiter thread that keeps reading the stub
//! until the stop reply arrives, so a stop is recorded even when nobody is waiting for it.
//! Every stop, exit and resume goes into a bounded event log with timestamps; a condvar wakes
//! whoever waits for the next stop. The event filters (`sx`) decide which stops are shown:
//! one they pass over is logged (when it prints) and resumed at once by the waiter, without
//! counting as a stop. Lock order: client, then breakpoints, then filters, then state.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use ntdbg_gdbremote::{
    GdbClient, GdbError, InterruptHandle, RegisterLayout, ResumeAction, RunState as ClientState,
    StopReason, StopReply, ThreadId, WindowsEvent, WindowsEventKind,
};

use super::breakpoints::{BreakKind, Breakpoint, Breakpoints, MAX_BREAKPOINTS};
use super::filters::{
    Decision, EventFilterKind, EventFilters, FilterAction, FilterEvent, FilterSetting,
};
use super::stop_text::{self, signal, StopCause, StopDetails};
use crate::{EngineError, ErrorCode};

/// How long the waiter holds the client per read, so closing can take it in between.
const POLL: Duration = Duration::from_millis(100);
/// Events kept in the log.
const EVENT_CAPACITY: usize = 256;
/// How long the stub may take to write a dump (a full-memory dump of a big process is slow).
const DUMP_TIMEOUT: Duration = Duration::from_secs(120);
/// How long commands wait for a running target by default.
const DEFAULT_COMMAND_WAIT: Duration = Duration::from_secs(30);

/// Where a live target is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RunState {
    /// Stopped; commands may inspect it.
    Halted(Halt),
    /// Running; only `break_in` or a stop ends this.
    Running,
    /// The process is gone (exited, killed, or the connection was lost).
    Exited(String),
    /// The debugger detached.
    Detached,
}

impl RunState {
    /// Stable key: `halted`, `running`, `exited`, `detached`.
    pub fn name(&self) -> &'static str {
        match self {
            RunState::Halted(_) => "halted",
            RunState::Running => "running",
            RunState::Exited(_) => "exited",
            RunState::Detached => "detached",
        }
    }

    /// The run-state trailer without the session's help (`[target running]`,
    /// `[target halted @ 0x…]`), for when the session is busy; [`Session::trailer`] adds
    /// the thread and the symbol of a halted target.
    ///
    /// [`Session::trailer`]: crate::Session::trailer
    pub fn trailer(&self) -> String {
        match self {
            RunState::Running => "[target running]".into(),
            RunState::Halted(h) => match h.pc {
                Some(pc) => format!("[target halted @ {pc:#x}]"),
                None => "[target halted]".into(),
            },
            RunState::Exited(why) => format!("[target exited: {why}]"),
            RunState::Detached => "[target detached]".into(),
        }
    }
}

/// Why and where a live target stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Halt {
    /// The thread that stopped, when the stub says.
    pub thread: Option<ThreadId>,
    /// Its instruction pointer (moved back over an `int3` the debugger wrote).
    pub pc: Option<u64>,
    /// What stopped it.
    pub cause: StopCause,
    /// WinDbg's line for the stop (`Breakpoint 0 hit`); `None` after a step.
    pub reason: Option<String>,
    /// The event as `.lastevent` words it (`Access violation - code c0000005 (first
    /// chance)`, `Hit breakpoint 0`).
    pub event_text: String,
    /// The Windows debug event, when the stub is ntdbg's Win32 stub.
    pub event: Option<Box<WindowsEvent>>,
    /// `(pid, tid)` of the stop, when the stub named both.
    pub ids: Option<(u64, u64)>,
    /// When the debugger saw the stop (`.lastevent`'s debugger time).
    pub at: std::time::SystemTime,
}

/// What happened to a live target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    /// The debugger attached.
    Attached,
    /// The target was resumed.
    Resumed,
    /// The target stopped.
    Stopped,
    /// The process ended or the connection was lost.
    Exited,
    /// The debugger detached.
    Detached,
    /// An event the filters (`sx`) printed and resumed from at once (a module load, a
    /// debug string, a first-chance exception that breaks on second chance only).
    Event,
}

impl EventKind {
    /// Stable key.
    pub fn name(self) -> &'static str {
        match self {
            EventKind::Attached => "attached",
            EventKind::Resumed => "resumed",
            EventKind::Stopped => "stopped",
            EventKind::Exited => "exited",
            EventKind::Detached => "detached",
            EventKind::Event => "event",
        }
    }
}

/// One entry of the event log.
#[derive(Debug, Clone)]
pub struct LiveEvent {
    /// Increases by one per event.
    pub seq: u64,
    /// Wall-clock time.
    pub at: SystemTime,
    /// Time since the debugger attached.
    pub since_attach: Duration,
    /// What happened.
    pub kind: EventKind,
    /// What the debugger printed for it (filled in with symbols once a session renders it).
    pub text: String,
}

/// How to resume.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resume {
    /// Run; `pass_signal` hands the stop's exception to the program (`gn`), otherwise it is
    /// treated as handled (`gh`).
    Go {
        /// Deliver the signal of the last stop.
        pass_signal: bool,
    },
    /// Execute one instruction.
    Step,
}

/// What a detach leaves the process doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Leave {
    /// Running (the GDB protocol's detach).
    Running,
    /// Suspended, where the stub can (`Qntdbg.detach-suspended:1`); else running, and the
    /// close text says so.
    Suspended,
}

/// The kind of dump `.dump` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DumpKind {
    /// `/ma`: a minidump with all the process's memory.
    Full,
    /// `/m`: a minidump.
    Mini,
}

impl DumpKind {
    /// The kind in `Qntdbg.dump:KIND,…`.
    fn packet(self) -> &'static str {
        match self {
            DumpKind::Full => "ma",
            DumpKind::Mini => "m",
        }
    }
}

/// How many events the filters may still pass over once `break_in` sent its interrupt.
const INTERRUPT_GRACE: usize = 16;
/// Most events in a row the filters resume from before the waiter lets go of the client
/// for a moment (so a flood of debug strings never holds it for long).
const AUTO_RESUMES_PER_HOLD: usize = 64;
#[derive(Debug)]
struct Inner {
    state: RunState,
    stops: u64,
    stepping: bool,
    events: VecDeque<LiveEvent>,
    next_seq: u64,
    command_wait: Duration,
    pinned_thread: Option<ThreadId>,
    /// How the running target was last resumed (the filters resume the same way).
    last_action: Option<(ResumeAction, Option<ThreadId>)>,
}

/// The run control of one live target.
#[derive(Debug)]
pub struct LiveControl {
    client: Arc<Mutex<GdbClient>>,
    interrupt: InterruptHandle,
    layout: RegisterLayout,
    pc_name: &'static str,
    read_only: bool,
    breakpoints: Mutex<Breakpoints>,
    filters: Mutex<EventFilters>,
    inner: Mutex<Inner>,
    changed: Condvar,
    started: Instant,
    /// Set when closing gave up on a stop: the waiter thread ends.
    abandoned: AtomicBool,
    /// Set by `break_in` until the next stop: how many more events the filters may pass
    /// over, plus one (0: no interrupt pending). Past the grace every event breaks, so a
    /// flood of filtered events cannot swallow the interrupt.
    interrupt_grace: AtomicUsize,
}

fn live(e: GdbError) -> EngineError {
    EngineError::Live {
        code: ErrorCode::from_name(e.code()),
        message: e.to_string(),
    }
}

impl LiveControl {
    /// Takes over a connected, stopped client. `read_only` refuses run control and writes.
    pub fn new(
        client: Arc<Mutex<GdbClient>>,
        layout: RegisterLayout,
        read_only: bool,
    ) -> Result<Arc<LiveControl>, EngineError> {
        let pc_name = ["rip", "pc", "eip"]
            .into_iter()
            .find(|n| layout.by_name(n).is_some())
            .unwrap_or("pc");
        let (interrupt, stop) = {
            let c = client.lock().unwrap_or_else(PoisonError::into_inner);
            (c.interrupt_handle().map_err(live)?, c.last_stop().cloned())
        };
        let control = Arc::new(LiveControl {
            client,
            interrupt,
            layout,
            pc_name,
            read_only,
            breakpoints: Mutex::new(Breakpoints::default()),
            filters: Mutex::new(EventFilters::default()),
            inner: Mutex::new(Inner {
                state: RunState::Detached,
                stops: 0,
                stepping: false,
                events: VecDeque::new(),
                next_seq: 0,
                command_wait: DEFAULT_COMMAND_WAIT,
                pinned_thread: None,
                last_action: None,
            }),
            changed: Condvar::new(),
            started: Instant::now(),
            abandoned: AtomicBool::new(false),
            interrupt_grace: AtomicUsize::new(0),
        });
        let state = match stop {
            Some(stop) => control.process_stop(&mut control.lock_client(), &stop),
            None => RunState::Exited("the stub did not say why the target stopped".into()),
        };
        let text = match &state {
            RunState::Halted(h) => h.reason.clone().unwrap_or_default(),
            other => other.name().to_string(),
        };
        control.record(state, EventKind::Attached, text);
        Ok(control)
    }

    /// The run state now.
    pub fn state(&self) -> RunState {
        self.inner().state.clone()
    }

    /// How many stops were recorded so far (a session compares it with what it has shown).
    pub fn stops(&self) -> u64 {
        self.inner().stops
    }

    /// Whether run control and writes are refused (`--read-only`).
    pub fn read_only(&self) -> bool {
        self.read_only
    }

    /// How long commands wait for a running target to stop.
    pub fn command_wait(&self) -> Duration {
        self.inner().command_wait
    }

    /// Sets how long commands wait for a running target (a front end's `timeout_ms`).
    pub fn set_command_wait(&self, wait: Duration) {
        self.inner().command_wait = wait;
    }

    /// Makes the next resume run only `thread` (`~N g`, `~N p`).
    pub fn pin_thread(&self, thread: Option<ThreadId>) {
        self.inner().pinned_thread = thread;
    }

    /// The events logged within `window` before now (all of them without a window).
    pub fn events_since(&self, window: Option<Duration>) -> Vec<LiveEvent> {
        let now = self.started.elapsed();
        self.inner()
            .events
            .iter()
            .filter(|e| window.is_none_or(|w| now.saturating_sub(e.since_attach) <= w))
            .cloned()
            .collect()
    }

    /// The events after sequence number `seq`.
    pub fn events_after(&self, seq: Option<u64>) -> Vec<LiveEvent> {
        self.inner()
            .events
            .iter()
            .filter(|e| seq.is_none_or(|s| e.seq > s))
            .cloned()
            .collect()
    }

    /// Replaces the text of the latest stop event with what a session rendered for it.
    pub fn annotate_last_stop(&self, text: &str) {
        let mut inner = self.inner();
        if let Some(e) = inner
            .events
            .iter_mut()
            .rev()
            .find(|e| matches!(e.kind, EventKind::Stopped | EventKind::Attached))
        {
            e.text = text.to_string();
        }
    }

    /// Waits until more than `stops` stops were recorded or the target is gone; `false` when
    /// `timeout` passed first.
    pub fn wait_for_stop(&self, stops: u64, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut inner = self.inner();
        loop {
            if inner.stops > stops || !matches!(inner.state, RunState::Running) {
                return true;
            }
            let now = Instant::now();
            if now >= deadline {
                return false;
            }
            inner = self
                .changed
                .wait_timeout(inner, deadline - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
    }

    /// Resumes the target and returns once the stub took the request (the stop is recorded
    /// later by a waiter thread). Refused while running, after exit, and in read-only mode.
    pub fn resume(self: &Arc<Self>, how: Resume) -> Result<(), EngineError> {
        self.check_writable("resuming")?;
        let mut client = self.lock_client();
        let (pc, last_signal, thread) = {
            let mut inner = self.inner();
            let halt = match &inner.state {
                RunState::Halted(h) => h.clone(),
                other => return Err(not_halted(other)),
            };
            (halt.pc, halt.cause, inner.pinned_thread.take())
        };
        let last_stop_signal = client.last_stop().and_then(StopReply::signal).unwrap_or(0);
        // A breakpoint under the current instruction would stop the target again at once
        // (gdbserver leaves stepping over it to the client): take it out for one step.
        let under_pc: Vec<(ntdbg_gdbremote::BreakpointKind, usize)> = match pc {
            Some(pc) => self.lock_breakpoints().execution_slots_at(pc),
            None => Vec::new(),
        };
        if let (Some(pc), false) = (pc, under_pc.is_empty()) {
            for &(kind, len) in &under_pc {
                client.remove_breakpoint(kind, pc, len).map_err(live)?;
            }
            self.inner().stepping = true;
            let stepped = client.step(thread).map_err(live);
            let mut reinserted = Ok(());
            for &(kind, len) in &under_pc {
                if let Err(e) = client.insert_breakpoint(kind, pc, len) {
                    reinserted = Err(live(e));
                }
            }
            let stop = stepped?;
            reinserted?;
            let trapped = stop.signal() == Some(signal::TRAP);
            if how == Resume::Step || !trapped {
                let state = self.process_stop(&mut client, &stop);
                drop(client);
                self.record_stop(state);
                return Ok(());
            }
        }
        let action = match (how, last_signal) {
            (Resume::Step, _) => ResumeAction::Step,
            (Resume::Go { pass_signal: true }, StopCause::Signal(s))
                if s != signal::TRAP && s != signal::INT =>
            {
                ResumeAction::ContinueWithSignal(s)
            }
            (Resume::Go { pass_signal: true }, StopCause::Exception { code, .. })
                if !stop_text::is_debug_trap(code) =>
            {
                ResumeAction::ContinueWithSignal(last_stop_signal)
            }
            (Resume::Go { .. }, _) => ResumeAction::Continue,
        };
        client.resume(action, thread).map_err(live)?;
        drop(client);
        {
            let mut inner = self.inner();
            inner.last_action = Some((action, thread));
            inner.stepping = how == Resume::Step;
            inner.state = RunState::Running;
            self.push_event(&mut inner, EventKind::Resumed, String::new());
        }
        self.changed.notify_all();
        let me = Arc::clone(self);
        std::thread::Builder::new()
            .name("ntdbg-live-wait".into())
            .spawn(move || me.wait_loop())
            .map_err(|e| EngineError::Live {
                code: ErrorCode::InternalError,
                message: format!("cannot start the stop waiter: {e}"),
            })?;
        Ok(())
    }

    /// Interrupts a running target and waits up to `timeout` for it to stop; returns at once
    /// when it is not running.
    pub fn break_in(&self, timeout: Duration) -> Result<RunState, EngineError> {
        let stops = {
            let inner = self.inner();
            if !matches!(inner.state, RunState::Running) {
                return Ok(inner.state.clone());
            }
            inner.stops
        };
        self.interrupt_grace
            .store(INTERRUPT_GRACE + 1, Ordering::Relaxed);
        self.interrupt.interrupt().map_err(live)?;
        if !self.wait_for_stop(stops, timeout) {
            return Err(EngineError::Live {
                code: ErrorCode::TimedOut,
                message: format!(
                    "the target did not stop within {} ms of the interrupt",
                    timeout.as_millis()
                ),
            });
        }
        Ok(self.state())
    }

    /// Ends the session: breaks in if needed, removes every breakpoint and detaches (the GDB
    /// protocol resumes a target on detach). Returns what was done, for people.
    pub fn close(&self, timeout: Duration) -> Result<String, EngineError> {
        self.close_leaving(timeout, Leave::Running)
    }

    /// [`LiveControl::close`], leaving the process running or, where the stub can
    /// (`Qntdbg.detach-suspended:1`), suspended; the text says which it was.
    pub fn close_leaving(&self, timeout: Duration, leave: Leave) -> Result<String, EngineError> {
        match self.state() {
            RunState::Detached => return Ok("already detached".into()),
            RunState::Exited(why) => return Ok(format!("the process had ended ({why})")),
            RunState::Running => {
                if let Err(e) = self.break_in(timeout) {
                    // The stub does not stop: give up on it; the waiter thread ends and the
                    // client detaches (bounded) when it is dropped.
                    self.abandoned.store(true, Ordering::Relaxed);
                    self.record(RunState::Detached, EventKind::Detached, e.to_string());
                    return Err(e);
                }
            }
            RunState::Halted(_) => {}
        }
        let mut client = self.lock_client();
        let removed = {
            let mut bps = self.lock_breakpoints();
            let all: Vec<Breakpoint> = bps.list().to_vec();
            for b in all.iter().filter(|b| b.enabled) {
                let (kind, len) = b.kind.packet();
                let _ = client.remove_breakpoint(kind, b.address, len);
            }
            *bps = Breakpoints::default();
            all.iter().filter(|b| b.id.is_some()).count()
        };
        let suspended = match leave {
            Leave::Running => None,
            Leave::Suspended => Some(matches!(
                client.request(b"Qntdbg.detach-suspended:1").as_deref(),
                Ok(b"OK")
            )),
        };
        let detached = client.detach().map_err(live);
        drop(client);
        self.record(RunState::Detached, EventKind::Detached, String::new());
        detached?;
        let left = match suspended {
            None => "",
            Some(true) => ", leaving the process suspended",
            Some(false) => {
                "; the target was resumed because the stub always resumes on detach (GDB protocol)"
            }
        };
        Ok(format!(
            "removed {removed} breakpoint(s) and detached{left}"
        ))
    }

    /// Writes a dump of the halted process to `path` on the stub's host
    /// (`Qntdbg.dump:KIND,HEXPATH`, answered by ntdbg's Win32 stub through dbghelp).
    ///
    /// # Errors
    /// `unsupported` when the stub does not know the request (GDB stubs), `remote_error` with
    /// the stub's message when writing failed, and the usual run-state errors.
    pub fn write_dump(&self, kind: DumpKind, path: &str) -> Result<(), EngineError> {
        let mut client = self.lock_client();
        self.check_halted()?;
        let hex: String = path.bytes().map(|b| format!("{b:02x}")).collect();
        let request = format!("Qntdbg.dump:{},{hex}", kind.packet());
        let reply = client
            .request_within(request.as_bytes(), DUMP_TIMEOUT)
            .map_err(live)?;
        dump_reply(&reply)
    }

    /// The event filters (`sx`).
    pub fn filters(&self) -> EventFilters {
        self.lock_filters().clone()
    }

    /// Sets an event filter (`sxe av`, `sxi ld`, `sxe ld:NAME`, `sxd c0000409`).
    ///
    /// # Errors
    /// `syntax_error` when `what` names no filter.
    pub fn set_filter(
        &self,
        what: &str,
        action: FilterAction,
    ) -> Result<FilterSetting, EngineError> {
        self.lock_filters()
            .set(what, action)
            .map_err(|message| EngineError::Live {
                code: ErrorCode::SyntaxError,
                message,
            })
    }

    /// The breakpoints.
    pub fn breakpoints(&self) -> Vec<Breakpoint> {
        self.lock_breakpoints().list().to_vec()
    }

    /// Inserts a breakpoint in the halted target and records it. A user breakpoint that
    /// already exists at the same place is returned as is.
    pub fn add_breakpoint(
        &self,
        address: u64,
        kind: BreakKind,
        temporary: bool,
    ) -> Result<Breakpoint, EngineError> {
        self.check_writable("setting a breakpoint")?;
        let mut client = self.lock_client();
        self.check_halted()?;
        let mut bps = self.lock_breakpoints();
        if !temporary {
            if let Some(b) = bps.find(address, kind) {
                return Ok(b.clone());
            }
        }
        if bps.list().len() >= MAX_BREAKPOINTS {
            return Err(EngineError::Live {
                code: ErrorCode::TooManyBreakpoints,
                message: format!("at most {MAX_BREAKPOINTS} breakpoints"),
            });
        }
        if !bps.shares_slot(address, kind, None) {
            let (k, len) = kind.packet();
            client.insert_breakpoint(k, address, len).map_err(live)?;
        }
        Ok(bps.add(address, kind, temporary).clone())
    }

    /// Enables or disables a user breakpoint (inserting or removing it in the target).
    pub fn set_enabled(&self, id: u32, enabled: bool) -> Result<(), EngineError> {
        self.check_writable("changing a breakpoint")?;
        let mut client = self.lock_client();
        self.check_halted()?;
        let mut bps = self.lock_breakpoints();
        let b = bps.get_mut(id).ok_or_else(|| no_breakpoint(id))?.clone();
        if b.enabled == enabled {
            return Ok(());
        }
        if !bps.shares_slot(b.address, b.kind, Some(id)) {
            let (k, len) = b.kind.packet();
            if enabled {
                client.insert_breakpoint(k, b.address, len).map_err(live)?;
            } else {
                client.remove_breakpoint(k, b.address, len).map_err(live)?;
            }
        }
        if let Some(b) = bps.get_mut(id) {
            b.enabled = enabled;
        }
        Ok(())
    }

    /// Removes a user breakpoint from the target and the table.
    pub fn clear_breakpoint(&self, id: u32) -> Result<(), EngineError> {
        self.check_writable("clearing a breakpoint")?;
        let mut client = self.lock_client();
        self.check_halted()?;
        let mut bps = self.lock_breakpoints();
        let b = bps.remove(id).ok_or_else(|| no_breakpoint(id))?;
        if b.enabled && !bps.shares_slot(b.address, b.kind, None) {
            let (k, len) = b.kind.packet();
            client.remove_breakpoint(k, b.address, len).map_err(live)?;
        }
        Ok(())
    }

    fn check_writable(&self, what: &str) -> Result<(), EngineError> {
        if self.read_only {
            return Err(EngineError::Live {
                code: ErrorCode::ReadOnly,
                message: format!("{what} is refused: the session is read-only"),
            });
        }
        Ok(())
    }

    fn check_halted(&self) -> Result<(), EngineError> {
        match &self.inner().state {
            RunState::Halted(_) => Ok(()),
            other => Err(not_halted(other)),
        }
    }

    /// Reads stop replies until one the filters show arrives (run by the waiter thread after
    /// a resume); the others are logged when they print and resumed from at once.
    fn wait_loop(&self) {
        let mut held_resumes = 0;
        loop {
            let mut client = self.lock_client();
            if client.state() != ClientState::Running || self.abandoned.load(Ordering::Relaxed) {
                return;
            }
            match client.wait_stop(POLL) {
                Ok(None) => {
                    drop(client);
                    held_resumes = 0;
                    std::thread::yield_now();
                }
                Ok(Some(stop)) => {
                    let state = self.process_stop(&mut client, &stop);
                    let resumed = match self.passed_over(&state, &stop) {
                        Some((action, text)) => match self.resume_after_filter(&mut client, action)
                        {
                            Ok(()) => Some(text),
                            Err(e) => {
                                drop(client);
                                let why = format!("resuming after a filtered event failed: {e}");
                                self.record(RunState::Exited(why.clone()), EventKind::Exited, why);
                                return;
                            }
                        },
                        None => None,
                    };
                    drop(client);
                    let Some(text) = resumed else {
                        self.record_stop(state);
                        return;
                    };
                    if let Some(text) = text {
                        let mut inner = self.inner();
                        self.push_event(&mut inner, EventKind::Event, text);
                    }
                    held_resumes += 1;
                    if held_resumes >= AUTO_RESUMES_PER_HOLD {
                        held_resumes = 0;
                        std::thread::sleep(Duration::from_millis(1));
                    }
                }
                Err(e) => {
                    drop(client);
                    let why = format!("connection to the stub lost: {e}");
                    self.record(RunState::Exited(why.clone()), EventKind::Exited, why);
                    return;
                }
            }
        }
    }

    /// When the filters pass over the stop: how to resume, and the line to log (`None`:
    /// silently). `None` when the stop is shown: no filter applies, it breaks, or a pending
    /// `break_in` has let enough events pass.
    fn passed_over(
        &self,
        state: &RunState,
        stop: &StopReply,
    ) -> Option<(ResumeAction, Option<String>)> {
        let RunState::Halted(h) = state else {
            return None;
        };
        let event = filter_event(h)?;
        // An interrupt is pending: a few more events may pass (the thread a Windows break-in
        // creates, say), then the next one breaks.
        match self.interrupt_grace.load(Ordering::Relaxed) {
            0 => {}
            1 => return None,
            _ => {
                self.interrupt_grace.fetch_sub(1, Ordering::Relaxed);
            }
        }
        let decision = self.lock_filters().decide(event);
        let Decision::Continue { print, pass } = decision else {
            return None;
        };
        let (last, _) = self
            .inner()
            .last_action
            .unwrap_or((ResumeAction::Continue, None));
        let action = match (pass, stop.signal()) {
            (true, Some(sig)) => ResumeAction::ContinueWithSignal(sig),
            // A step interrupted by an event goes on stepping.
            _ if last == ResumeAction::Step => ResumeAction::Step,
            _ => ResumeAction::Continue,
        };
        Some((action, print.then(|| h.reason.clone().unwrap_or_default())))
    }

    /// Resumes after a stop the filters passed over, the way the target was resumed.
    fn resume_after_filter(
        &self,
        client: &mut GdbClient,
        action: ResumeAction,
    ) -> Result<(), GdbError> {
        let thread = self.inner().last_action.and_then(|(_, t)| t);
        client.resume(action, thread)
    }

    /// Turns a stop reply into a run state: reads the pc (moving it back over an `int3` the
    /// debugger wrote), finds the breakpoint, and removes temporary breakpoints.
    fn process_stop(&self, client: &mut GdbClient, stop: &StopReply) -> RunState {
        let StopReply::Signal {
            signal: sig,
            thread,
            reason,
            windows,
            ..
        } = stop
        else {
            return RunState::Exited(match stop {
                StopReply::Exited { status, .. } => {
                    format!("process exited with status {status:#x}")
                }
                StopReply::Terminated { signal, .. } => {
                    format!("process terminated by signal {signal}")
                }
                _ => "no threads are left to run".to_string(),
            });
        };
        if let Some(t) = thread {
            let _ = client.set_thread(*t);
        }
        let mut pc = self.read_pc(client);
        if *sig == signal::TRAP {
            if let Some(p) = pc.filter(|&p| {
                p > 0 && client.int3_original(p).is_none() && client.int3_original(p - 1).is_some()
            }) {
                if self.write_pc(client, p - 1).is_ok() {
                    pc = Some(p - 1);
                }
            }
        }
        let stepping = self.inner().stepping;
        let mut bps = self.lock_breakpoints();
        let watched = match reason {
            Some(StopReason::Watch(a) | StopReason::ReadWatch(a) | StopReason::AccessWatch(a)) => {
                Some(*a)
            }
            _ => None,
        };
        // Without a Windows event, what the signal says; with one, its exception (a
        // breakpoint or a single step still goes through the breakpoint table).
        let windows_cause = windows.as_ref().map(windows_cause);
        let fallback = windows_cause.unwrap_or(StopCause::Signal(*sig));
        let debug_trap = match windows_cause {
            None => *sig == signal::TRAP,
            Some(StopCause::Exception { code, .. }) => stop_text::is_debug_trap(code),
            Some(_) => false,
        };
        let cause = match (debug_trap, watched) {
            (true, Some(a)) => bps.watch_hit(a).map_or(fallback, StopCause::Breakpoint),
            (true, None) if stepping => StopCause::StepDone,
            (true, None) => match pc.and_then(|p| bps.hit_at(p)) {
                Some(Some(id)) => StopCause::Breakpoint(id),
                Some(None) => StopCause::StepDone,
                None => fallback,
            },
            (false, _) => fallback,
        };
        for b in bps.take_temporary() {
            if !bps.shares_slot(b.address, b.kind, None) {
                let (k, len) = b.kind.packet();
                let _ = client.remove_breakpoint(k, b.address, len);
            }
        }
        let ids = thread.and_then(|t| {
            let pid = match t.pid? {
                ntdbg_gdbremote::IdPart::Id(p) => p,
                _ => return None,
            };
            Some((pid, t.tid()?))
        });
        drop(bps);
        let module_end = match windows {
            Some(w) if w.kind == WindowsEventKind::Load => {
                w.module_base.and_then(|base| image_end(client, base))
            }
            _ => None,
        };
        let details = StopDetails {
            event: windows.as_ref(),
            module_end,
            pointer_size: self.pointer_size(),
        };
        RunState::Halted(Halt {
            thread: *thread,
            pc,
            cause,
            reason: stop_text::describe(cause, details, ids),
            event_text: stop_text::event_text(cause, details),
            event: windows.clone().map(Box::new),
            ids,
            at: std::time::SystemTime::now(),
        })
    }

    /// The target's pointer size: 4 when the pc register has 32 bits, else 8.
    pub fn pointer_size(&self) -> usize {
        match self.layout.by_name(self.pc_name) {
            Some(r) if r.bitsize == 32 => 4,
            _ => 8,
        }
    }

    fn read_pc(&self, client: &mut GdbClient) -> Option<u64> {
        let g = client.read_registers().ok()?;
        self.layout.value_u64(self.pc_name, &g)
    }

    fn write_pc(&self, client: &mut GdbClient, pc: u64) -> Result<(), GdbError> {
        let reg = self
            .layout
            .by_name(self.pc_name)
            .ok_or_else(|| GdbError::Unsupported("no pc register".into()))?;
        let size = (reg.bitsize as usize).div_ceil(8).min(8);
        let bytes = &pc.to_le_bytes()[..size];
        match client.write_register(reg.regnum, bytes) {
            Err(GdbError::Unsupported(_)) => {
                let mut g = client.read_registers()?;
                for (i, b) in bytes.iter().enumerate() {
                    if let Some(slot) = g.get_mut(reg.offset + i) {
                        *slot = Some(*b);
                    }
                }
                let all: Option<Vec<u8>> = g.into_iter().collect();
                let all = all.ok_or_else(|| {
                    GdbError::Unsupported("writing pc (some registers unreadable)".into())
                })?;
                client.write_registers(&all)
            }
            other => other,
        }
    }

    fn record_stop(&self, state: RunState) {
        let (kind, text) = match &state {
            RunState::Halted(h) => (EventKind::Stopped, h.reason.clone().unwrap_or_default()),
            RunState::Exited(why) => (EventKind::Exited, why.clone()),
            other => (EventKind::Stopped, other.name().to_string()),
        };
        self.record(state, kind, text);
    }

    fn record(&self, state: RunState, kind: EventKind, text: String) {
        self.interrupt_grace.store(0, Ordering::Relaxed);
        {
            let mut inner = self.inner();
            inner.state = state;
            inner.stops += 1;
            inner.stepping = false;
            self.push_event(&mut inner, kind, text);
        }
        self.changed.notify_all();
    }

    fn push_event(&self, inner: &mut Inner, kind: EventKind, text: String) {
        if inner.events.len() >= EVENT_CAPACITY {
            inner.events.pop_front();
        }
        let seq = inner.next_seq;
        inner.next_seq += 1;
        inner.events.push_back(LiveEvent {
            seq,
            at: SystemTime::now(),
            since_attach: self.started.elapsed(),
            kind,
            text,
        });
    }

    fn inner(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn lock_client(&self) -> MutexGuard<'_, GdbClient> {
        self.client.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn lock_filters(&self) -> MutexGuard<'_, EventFilters> {
        self.filters.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn lock_breakpoints(&self) -> MutexGuard<'_, Breakpoints> {
        self.breakpoints
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

fn not_halted(state: &RunState) -> EngineError {
    match state {
        RunState::Running => EngineError::Live {
            code: ErrorCode::TargetRunning,
            message: "the target is running: break in or wait for it to stop first".into(),
        },
        RunState::Exited(why) => EngineError::Live {
            code: ErrorCode::TargetGone,
            message: format!("the target is gone: {why}"),
        },
        _ => EngineError::Live {
            code: ErrorCode::TargetGone,
            message: "the debugger detached from the target".into(),
        },
    }
}

/// The cause a Windows debug event gives a stop.
fn windows_cause(event: &WindowsEvent) -> StopCause {
    match event.kind {
        WindowsEventKind::Exception => StopCause::Exception {
            code: event.code.unwrap_or(0),
            first_chance: event.first_chance(),
        },
        WindowsEventKind::InitialBreakpoint => StopCause::InitialBreakpoint,
        WindowsEventKind::Load => StopCause::ModuleLoad,
        WindowsEventKind::Unload => StopCause::ModuleUnload,
        WindowsEventKind::CreateThread => StopCause::ThreadCreate,
        WindowsEventKind::ExitThread => StopCause::ThreadExit,
        WindowsEventKind::Output => StopCause::DebugOutput,
    }
}

/// The event the filters decide on for a stop; `None` for stops no filter applies to
/// (breakpoints, steps, break-ins, signals that name no exception).
fn filter_event(h: &Halt) -> Option<FilterEvent<'_>> {
    let kind = match h.cause {
        StopCause::Breakpoint(_) | StopCause::StepDone => return None,
        StopCause::Signal(_) | StopCause::Exception { .. } => {
            let (code, first_chance) = h.cause.exception()?;
            return Some(FilterEvent::Exception { code, first_chance });
        }
        StopCause::InitialBreakpoint => EventFilterKind::InitialBreakpoint,
        StopCause::ModuleLoad => EventFilterKind::LoadModule,
        StopCause::ModuleUnload => EventFilterKind::UnloadModule,
        StopCause::ThreadCreate => EventFilterKind::CreateThread,
        StopCause::ThreadExit => EventFilterKind::ExitThread,
        StopCause::DebugOutput => EventFilterKind::Output,
    };
    Some(FilterEvent::Event {
        kind,
        module: h.event.as_ref().and_then(|e| e.module_name.as_deref()),
    })
}

/// Where a loaded module ends: its base plus the PE header's SizeOfImage, read from the
/// process; `None` when the header is unreadable or not a PE header.
fn image_end(client: &mut GdbClient, base: u64) -> Option<u64> {
    let read_u32 = |client: &mut GdbClient, at: u64| -> Option<u32> {
        let bytes: Option<Vec<u8>> = client.read_memory(at, 4).ok()?.into_iter().collect();
        Some(u32::from_le_bytes(bytes?.try_into().ok()?))
    };
    let lfanew = read_u32(client, base.checked_add(0x3c)?)?;
    let header = base.checked_add(u64::from(lfanew))?;
    if lfanew > 0x1000 || read_u32(client, header)? != 0x0000_4550 {
        return None;
    }
    // SizeOfImage: offset 56 of the optional header, after the 4-byte signature and the
    // 20-byte file header, in both PE32 and PE32+.
    let size = read_u32(client, header.checked_add(0x50)?)?;
    base.checked_add(u64::from(size))
}

/// The answer to `Qntdbg.dump`: `OK`, `E.MESSAGE`, `E NN`, or empty (not supported).
fn dump_reply(reply: &[u8]) -> Result<(), EngineError> {
    match reply {
        b"OK" => Ok(()),
        b"" => Err(EngineError::Live {
            code: ErrorCode::Unsupported,
            message:
                "not supported by this target: only pid:/exe: targets on Windows can write dumps"
                    .into(),
        }),
        _ => {
            let message = match reply.strip_prefix(b"E.") {
                Some(m) => String::from_utf8_lossy(m).into_owned(),
                None => format!("the stub answered '{}'", String::from_utf8_lossy(reply)),
            };
            Err(EngineError::Live {
                code: ErrorCode::RemoteError,
                message: format!("writing the dump failed: {message}"),
            })
        }
    }
}

fn no_breakpoint(id: u32) -> EngineError {
    EngineError::Live {
        code: ErrorCode::NoSuchBreakpoint,
        message: format!("breakpoint {id} does not exist (bl lists them)"),
    }
}
