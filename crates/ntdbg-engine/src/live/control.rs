//! [`LiveControl`]: the run state of a live target, shared behind an `Arc` by the session and
//! by calls that must never wait for the session lock (`break_in`, `wait_for_event`).
//!
//! Resuming sends the resume packet and starts a waiter thread that keeps reading the stub
//! until the stop reply arrives, so a stop is recorded even when nobody is waiting for it
//! (the run-control state machine is in [`super::run`]). Every stop, exit and resume goes
//! into a bounded event log with timestamps; a condvar wakes whoever waits for the next
//! stop. The event filters (`sx`) decide which stops are shown: one they pass over is logged
//! (when it prints) and resumed at once by the waiter, without counting as a stop. Lock
//! order: client, then breakpoints, then filters, then state.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use ntdbg_gdbremote::{
    GdbClient, GdbError, InterruptHandle, RegisterLayout, ThreadId, WindowsEvent,
};

use super::breakpoints::{BreakKind, Breakpoint, Breakpoints, FrameOwner, MAX_BREAKPOINTS};
use super::filters::{EventFilters, FilterAction, FilterSetting};
use super::run_book::RunBook;
use super::stop_text::StopCause;
use crate::{EngineError, ErrorCode};
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
    /// The GDB signal of the stop (what `g` passes on to the program).
    pub signal: Option<u8>,
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

#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) state: RunState,
    stops: u64,
    events: VecDeque<LiveEvent>,
    next_seq: u64,
    command_wait: Duration,
    pub(crate) pinned_thread: Option<ThreadId>,
    /// The resume in progress and what the debugger did to each thread.
    pub(crate) run: RunBook,
}

/// The run control of one live target.
#[derive(Debug)]
pub struct LiveControl {
    client: Arc<Mutex<GdbClient>>,
    interrupt: InterruptHandle,
    pub(crate) layout: RegisterLayout,
    pub(crate) pc_name: &'static str,
    pub(crate) sp_name: &'static str,
    read_only: bool,
    /// The debugged process's id, when the stub says (`qProcessInfo`, `p` thread ids).
    pub(crate) process_id: Option<u64>,
    breakpoints: Mutex<Breakpoints>,
    filters: Mutex<EventFilters>,
    inner: Mutex<Inner>,
    pub(crate) changed: Condvar,
    started: Instant,
    /// Set when closing gave up on a stop: the waiter thread ends.
    pub(crate) abandoned: AtomicBool,
    /// Set by `break_in` until the next stop: how many more events the filters may pass
    /// over, plus one (0: no interrupt pending). Past the grace every event breaks, so a
    /// flood of filtered events cannot swallow the interrupt.
    pub(crate) interrupt_grace: AtomicUsize,
}

/// A protocol error as an engine error.
pub(crate) fn live(e: GdbError) -> EngineError {
    EngineError::live_from(e.code(), e.to_string(), e)
}

impl LiveControl {
    /// Takes over a connected, stopped client. `read_only` refuses run control and writes;
    /// `process_id` is the debugged process's id when known (for the `(pid.tid)` of stops).
    pub fn new(
        client: Arc<Mutex<GdbClient>>,
        layout: RegisterLayout,
        read_only: bool,
        process_id: Option<u64>,
    ) -> Result<Arc<LiveControl>, EngineError> {
        let pc_name = ["rip", "pc", "eip"]
            .into_iter()
            .find(|n| layout.by_name(n).is_some())
            .unwrap_or("pc");
        let sp_name = ["rsp", "sp", "esp"]
            .into_iter()
            .find(|n| layout.by_name(n).is_some())
            .unwrap_or("sp");
        let (interrupt, stop) = {
            let c = client.lock().unwrap_or_else(PoisonError::into_inner);
            (c.interrupt_handle().map_err(live)?, c.last_stop().cloned())
        };
        let control = Arc::new(LiveControl {
            client,
            interrupt,
            layout,
            pc_name,
            sp_name,
            read_only,
            process_id,
            breakpoints: Mutex::new(Breakpoints::default()),
            filters: Mutex::new(EventFilters::default()),
            inner: Mutex::new(Inner {
                state: RunState::Detached,
                stops: 0,
                events: VecDeque::new(),
                next_seq: 0,
                command_wait: DEFAULT_COMMAND_WAIT,
                pinned_thread: None,
                run: RunBook::default(),
            }),
            changed: Condvar::new(),
            started: Instant::now(),
            abandoned: AtomicBool::new(false),
            interrupt_grace: AtomicUsize::new(0),
        });
        let state = match stop {
            Some(stop) => control.process_stop(&mut control.lock_client(), &stop, true),
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
            return Err(EngineError::live(
                ErrorCode::TimedOut,
                format!(
                    "the target did not stop within {} ms of the interrupt",
                    timeout.as_millis()
                ),
            ));
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
            .map_err(|message| EngineError::live(ErrorCode::SyntaxError, message))
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
        self.insert_breakpoint(address, kind, temporary, None)
    }

    /// Inserts the temporary software breakpoint of a step (`p` over a call, `gu`, `pa`):
    /// it stops `owner`'s thread in `owner`'s frame only; other threads step off it and go
    /// on.
    pub fn add_step_breakpoint(
        &self,
        address: u64,
        owner: FrameOwner,
    ) -> Result<Breakpoint, EngineError> {
        self.insert_breakpoint(address, BreakKind::Software, true, Some(owner))
    }

    fn insert_breakpoint(
        &self,
        address: u64,
        kind: BreakKind,
        temporary: bool,
        owner: Option<FrameOwner>,
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
            return Err(EngineError::live(
                ErrorCode::TooManyBreakpoints,
                format!("at most {MAX_BREAKPOINTS} breakpoints"),
            ));
        }
        if !bps.shares_slot(address, kind, None) {
            let (k, len) = kind.packet();
            client.insert_breakpoint(k, address, len).map_err(live)?;
        }
        Ok(bps.add(address, kind, temporary, owner).clone())
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

    pub(crate) fn check_writable(&self, what: &str) -> Result<(), EngineError> {
        if self.read_only {
            return Err(EngineError::live(
                ErrorCode::ReadOnly,
                format!("{what} is refused: the session is read-only"),
            ));
        }
        Ok(())
    }

    pub(crate) fn check_halted(&self) -> Result<(), EngineError> {
        match &self.inner().state {
            RunState::Halted(_) => Ok(()),
            other => Err(not_halted(other)),
        }
    }

    /// The target's pointer size: 4 when the pc register has 32 bits, else 8.
    pub fn pointer_size(&self) -> usize {
        match self.layout.by_name(self.pc_name) {
            Some(r) if r.bitsize == 32 => 4,
            _ => 8,
        }
    }

    pub(crate) fn record_stop(&self, state: RunState) {
        let (kind, text) = match &state {
            RunState::Halted(h) => (EventKind::Stopped, h.reason.clone().unwrap_or_default()),
            RunState::Exited(why) => (EventKind::Exited, why.clone()),
            other => (EventKind::Stopped, other.name().to_string()),
        };
        self.record(state, kind, text);
    }

    pub(crate) fn record(&self, state: RunState, kind: EventKind, text: String) {
        self.interrupt_grace.store(0, Ordering::Relaxed);
        {
            let mut inner = self.inner();
            inner.state = state;
            inner.stops += 1;
            self.push_event(&mut inner, kind, text);
        }
        self.changed.notify_all();
    }

    pub(crate) fn push_event(&self, inner: &mut Inner, kind: EventKind, text: String) {
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

    pub(crate) fn inner(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn lock_client(&self) -> MutexGuard<'_, GdbClient> {
        self.client.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn lock_filters(&self) -> MutexGuard<'_, EventFilters> {
        self.filters.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn lock_breakpoints(&self) -> MutexGuard<'_, Breakpoints> {
        self.breakpoints
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// Why a command that needs a halted target cannot run.
pub(crate) fn not_halted(state: &RunState) -> EngineError {
    match state {
        RunState::Running => EngineError::live(
            ErrorCode::TargetRunning,
            "the target is running: break in or wait for it to stop first",
        ),
        RunState::Exited(why) => {
            EngineError::live(ErrorCode::TargetGone, format!("the target is gone: {why}"))
        }
        _ => EngineError::live(
            ErrorCode::TargetGone,
            "the debugger detached from the target",
        ),
    }
}

/// Where a loaded module ends: its base plus the PE header's SizeOfImage, read from the
/// process; `None` when the header is unreadable or not a PE header.
pub(crate) fn image_end(client: &mut GdbClient, base: u64) -> Option<u64> {
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
        b"" => Err(EngineError::live(
            ErrorCode::Unsupported,
            "not supported by this target: only pid:/exe: targets on Windows can write dumps",
        )),
        _ => {
            let message = match reply.strip_prefix(b"E.") {
                Some(m) => String::from_utf8_lossy(m).into_owned(),
                None => format!("the stub answered '{}'", String::from_utf8_lossy(reply)),
            };
            Err(EngineError::live(
                ErrorCode::RemoteError,
                format!("writing the dump failed: {message}"),
            ))
        }
    }
}

fn no_breakpoint(id: u32) -> EngineError {
    EngineError::live(
        ErrorCode::NoSuchBreakpoint,
        format!("breakpoint {id} does not exist (bl lists them)"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn a_protocol_error_stays_the_source_of_its_engine_error() {
        let io = std::io::Error::new(std::io::ErrorKind::ConnectionRefused, "refused");
        let gdb = GdbError::Connect {
            addr: "127.0.0.1:1".into(),
            source: io,
        };
        let (text, code) = (gdb.to_string(), gdb.code());
        let e = live(gdb);
        assert_eq!(e.to_string(), text);
        assert_eq!(e.code(), code);
        let cause = e.source().expect("the GdbError is the source");
        assert!(matches!(
            cause.downcast_ref::<GdbError>(),
            Some(GdbError::Connect { addr, .. }) if addr == "127.0.0.1:1"
        ));
        let io = cause
            .source()
            .and_then(|c| c.downcast_ref::<std::io::Error>());
        assert_eq!(
            io.map(std::io::Error::kind),
            Some(std::io::ErrorKind::ConnectionRefused)
        );
    }

    #[test]
    fn a_plain_message_has_no_source() {
        let e = no_breakpoint(7);
        assert_eq!(e.to_string(), "breakpoint 7 does not exist (bl lists them)");
        assert_eq!(e.code(), ErrorCode::NoSuchBreakpoint);
        assert!(e.source().is_none());
    }
}
