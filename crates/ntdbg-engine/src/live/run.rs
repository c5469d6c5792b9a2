//! The run-control state machine of a live target: a resume is a [`Flight`] (what the user
//! asked for, and how far it got), which a waiter thread drives from stop reply to stop reply
//! until a stop is shown.
//!
//! Per thread it keeps what the debugger did to it: whether it sits on a breakpoint it hit
//! (it steps off alone, the breakpoint lifted, before it runs again) and whether a single
//! step it was given has not reported yet. A step runs its thread alone (`vCont;s:T`); each
//! stop is decided for the thread the stub names ([`trap::classify`]); the program counter
//! moves back only after a breakpoint trap. The same fault again on the same thread with the
//! same registers, after it was passed to the program, is its second chance.

mod pending;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use ntdbg_gdbremote::{
    GdbClient, GdbError, IdPart, ResumeAction, RunState as ClientState, StopReply, ThreadId,
    WindowsEvent, WindowsEventKind,
};

use super::breakpoints::Hit;
use super::control::{image_end, live, not_halted, EventKind, Halt, LiveControl, Resume, RunState};
use super::filters::{Decision, EventFilterKind, FilterEvent};
use super::run_book::{Flight, Intent, PassedFault, Phase, Registers, RunBook, ThreadRun};
use super::stop_text::{self, signal, Chance, StopCause, StopDetails};
use super::trap::{self, StepFacts, Trap, TrapFacts};
use crate::{EngineError, ErrorCode};

/// How long the waiter holds the client per read, so closing can take it in between.
const POLL: Duration = Duration::from_millis(100);
/// Most events in a row the waiter resumes from before it lets go of the client for a
/// moment (so a flood of debug strings never holds it for long).
const AUTO_RESUMES_PER_HOLD: usize = 64;
/// How often a step that did not run (a replayed event) is given again.
const STEP_RETRIES: u8 = 3;

/// What the waiter does after a stop reply.
enum Next {
    /// Show this stop: the resume is over.
    Show(RunState),
    /// A packet went out again: keep waiting. `text` is a line to log (an event the filters
    /// printed).
    Wait(Option<String>),
}

impl LiveControl {
    /// [`LiveControl::resume_thread`] stepping the thread that stopped.
    pub fn resume(self: &Arc<Self>, how: Resume) -> Result<(), EngineError> {
        self.resume_thread(how, None)
    }

    /// Resumes the target and returns once the stub took the request (the stop is recorded
    /// later by a waiter thread). A step executes one instruction of `thread` (the session's
    /// current thread; the thread that stopped when `None`) with every other thread held;
    /// `Go` runs every thread, or the one `~N` pinned. Refused while running, after exit,
    /// and in read-only mode.
    pub fn resume_thread(
        self: &Arc<Self>,
        how: Resume,
        thread: Option<u64>,
    ) -> Result<(), EngineError> {
        self.check_writable("resuming")?;
        let mut client = self.lock_client();
        let (halt, pinned) = {
            let mut inner = self.inner();
            let halt = match &inner.state {
                RunState::Halted(h) => h.clone(),
                other => return Err(not_halted(other)),
            };
            (halt, inner.pinned_thread.take())
        };
        let pinned = pinned.map(|t| match t.tid() {
            Some(tid) if t.pid.is_none() => self.thread_id_of_tid(tid),
            _ => t,
        });
        let event_thread = halt.thread.map(|t| self.thread_id_of(t));
        let intent = match how {
            Resume::Step => Intent::Step {
                thread: pinned
                    .or(thread.map(|t| self.thread_id_of_tid(t)))
                    .or(event_thread)
                    .unwrap_or(ThreadId::ANY),
            },
            Resume::Go { .. } => Intent::Go { only: pinned },
        };
        let pass = match (how, event_thread, halt.signal) {
            (Resume::Go { pass_signal: true }, Some(t), Some(sig)) if passes(&halt.cause) => {
                Some((t, sig))
            }
            _ => None,
        };
        let mut flight = Flight {
            intent,
            phase: Phase::Main {
                lifted: None,
                retries: 0,
            },
            pass,
            step_before: None,
        };
        self.launch(&mut client, &mut flight).map_err(live)?;
        drop(client);
        {
            let mut inner = self.inner();
            inner.run.flight = Some(flight);
            inner.state = RunState::Running;
            self.push_event(&mut inner, EventKind::Resumed, String::new());
        }
        self.changed.notify_all();
        let me = Arc::clone(self);
        std::thread::Builder::new()
            .name("ntdbg-live-wait".into())
            .spawn(move || me.wait_loop())
            .map_err(|e| {
                let message = format!("cannot start the stop waiter: {e}");
                EngineError::live_from(ErrorCode::InternalError, message, e)
            })?;
        Ok(())
    }

    /// Sends the next packet of `flight`: a thread steps off its breakpoint first when it
    /// sits on one, then the intent's own packet.
    fn launch(&self, client: &mut GdbClient, flight: &mut Flight) -> Result<(), GdbError> {
        let candidates: Vec<ThreadId> = match flight.intent {
            Intent::Step { .. } => Vec::new(),
            Intent::Go { only: Some(t) } => vec![t],
            Intent::Go { only: None } => {
                let inner = self.inner();
                let mut list: Vec<ThreadId> = Vec::new();
                if let RunState::Halted(Halt {
                    thread: Some(t), ..
                }) = &inner.state
                {
                    list.push(*t);
                }
                for (&tid, run) in &inner.run.threads {
                    let t = thread_id_in(&inner.run, tid);
                    if run.on_breakpoint.is_some() && !list.iter().any(|l| l.tid() == Some(tid)) {
                        list.push(t);
                    }
                }
                list
            }
        };
        for thread in candidates {
            let Some(regs) = self.registers_of(client, thread) else {
                continue;
            };
            let Some(pc) = self.layout.value_u64(self.pc_name, &regs) else {
                continue;
            };
            let slots = self.lock_breakpoints().execution_slots_at(pc);
            if slots.is_empty() {
                self.thread_run(thread, |r| r.on_breakpoint = None);
                continue;
            }
            for &(kind, len) in &slots {
                client.remove_breakpoint(kind, pc, len)?;
            }
            client.resume(ResumeAction::Step, Some(thread))?;
            flight.phase = Phase::SteppingOff {
                thread,
                pc,
                slots,
                before: regs,
                retries: 0,
            };
            return Ok(());
        }
        self.send_main(client, flight)
    }

    /// The intent's own packet.
    fn send_main(&self, client: &mut GdbClient, flight: &mut Flight) -> Result<(), GdbError> {
        match flight.intent {
            Intent::Step { thread } => {
                let regs = self.registers_of(client, thread).unwrap_or_default();
                let pc = self.layout.value_u64(self.pc_name, &regs);
                let lifted = match pc {
                    Some(pc) => {
                        let slots = self.lock_breakpoints().execution_slots_at(pc);
                        for &(kind, len) in &slots {
                            client.remove_breakpoint(kind, pc, len)?;
                        }
                        (!slots.is_empty()).then_some((pc, slots))
                    }
                    None => None,
                };
                if flight.step_before.is_none() {
                    flight.step_before = Some(regs);
                }
                self.thread_run(thread, |r| r.late_step = true);
                flight.phase = Phase::Main { lifted, retries: 0 };
                client.resume(ResumeAction::Step, Some(thread))
            }
            Intent::Go { only } => {
                flight.phase = Phase::Main {
                    lifted: None,
                    retries: 0,
                };
                match flight.pass.take() {
                    Some((thread, sig)) => {
                        self.remember_pass(client, thread, sig);
                        let action = ResumeAction::ContinueWithSignal(sig);
                        match only {
                            Some(t) => client.resume(action, Some(t)),
                            None => client.resume_with_others(action, thread),
                        }
                    }
                    None => client.resume(ResumeAction::Continue, only),
                }
            }
        }
    }

    /// Notes the fault passed to the program, for telling its second chance.
    fn remember_pass(&self, client: &mut GdbClient, thread: ThreadId, sig: u8) {
        let passed = self
            .registers_of(client, thread)
            .zip(thread.tid())
            .map(|(registers, tid)| PassedFault {
                thread: tid,
                signal: sig,
                registers,
            });
        self.inner().run.passed = passed;
    }

    /// Reads stop replies until one that is shown arrives (run by the waiter thread after a
    /// resume); the others are resumed from at once (and logged when they print).
    pub(crate) fn wait_loop(&self) {
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
                Ok(Some(stop)) => match self.on_stop(&mut client, &stop) {
                    Ok(Next::Show(state)) => {
                        if let RunState::Halted(h) = &state {
                            self.cancel_pending_hits(&mut client, h.thread);
                        }
                        drop(client);
                        self.inner().run.flight = None;
                        self.record_stop(state);
                        return;
                    }
                    Ok(Next::Wait(text)) => {
                        drop(client);
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
                        let why = format!("resuming after an event failed: {e}");
                        self.record(RunState::Exited(why.clone()), EventKind::Exited, why);
                        return;
                    }
                },
                Err(e) => {
                    drop(client);
                    let why = format!("connection to the stub lost: {e}");
                    self.record(RunState::Exited(why.clone()), EventKind::Exited, why);
                    return;
                }
            }
        }
    }

    /// One stop reply of a flight: finishes a step-off, gives a step that did not run again,
    /// resumes from stale traps and from events the filters pass over, or shows the stop.
    fn on_stop(&self, client: &mut GdbClient, stop: &StopReply) -> Result<Next, GdbError> {
        let Some(mut flight) = self.inner().run.flight.clone() else {
            return Ok(Next::Show(self.process_stop(client, stop, false)));
        };
        if stop.is_exit() || stop.signal().is_none() {
            self.put_back(client, &flight.phase);
            return Ok(Next::Show(self.process_stop(client, stop, false)));
        }
        let stopped =
            stop.thread()
                .filter(|t| t.tid().is_some())
                .or(match (&flight.phase, flight.intent) {
                    (Phase::SteppingOff { thread, .. }, _) => Some(*thread),
                    (_, Intent::Step { thread }) => Some(thread),
                    _ => None,
                });
        if let Some(t) = stopped {
            let _ = client.set_thread(t);
        }
        let registers = client.read_registers().ok();
        let facts = self.trap_facts(client, stop, stopped, registers.as_deref(), &flight);
        let verdict = trap::classify(&facts);
        let tid = stopped.and_then(|t| t.tid());
        // A Windows debug event (a module load, a debug string…) is not a trap a stub could
        // replay: only plain traps are remembered.
        let plain_trap = matches!(stop, StopReply::Signal { windows: None, .. });
        if let (Some(tid), Some(regs), Some(signal::TRAP), true) =
            (tid, &registers, stop.signal(), plain_trap)
        {
            let rewind = match verdict {
                Trap::Breakpoint { rewind_to } | Trap::Stale { rewind_to } => rewind_to,
                _ => None,
            };
            let snapshot = match rewind {
                Some(pc) => self.with_pc(regs, pc),
                None => regs.clone(),
            };
            self.thread_run_tid(tid, |r| r.last_trap = Some(snapshot));
        }

        // The step-off of a breakpoint.
        if let Phase::SteppingOff {
            thread,
            pc,
            slots,
            retries,
            ..
        } = &flight.phase
        {
            if stopped == Some(*thread) {
                match verdict {
                    Trap::StepAgain if *retries < STEP_RETRIES => {
                        let (thread, retries) = (*thread, *retries);
                        if let Phase::SteppingOff { retries: r, .. } = &mut flight.phase {
                            *r = retries + 1;
                        }
                        client.resume(ResumeAction::Step, Some(thread))?;
                        self.inner().run.flight = Some(flight);
                        return Ok(Next::Wait(None));
                    }
                    Trap::StepDone | Trap::StepAgain => {
                        let (thread, pc, slots) = (*thread, *pc, slots.clone());
                        for (kind, len) in slots {
                            client.insert_breakpoint(kind, pc, len)?;
                        }
                        self.thread_run(thread, |r| {
                            r.on_breakpoint = None;
                            r.late_step = false;
                            r.stepped_to = registers.clone();
                        });
                        self.launch(client, &mut flight)?;
                        self.inner().run.flight = Some(flight);
                        return Ok(Next::Wait(None));
                    }
                    _ => {}
                }
            }
            // The step-off ended otherwise (an exception of its instruction), or another
            // thread's event came first: the breakpoint goes back; in the second case that
            // thread's step is still owed.
            let thread = *thread;
            self.put_back(client, &flight.phase);
            if stopped != Some(thread) {
                self.thread_run(thread, |r| r.late_step = true);
            }
            flight.phase = Phase::Main {
                lifted: None,
                retries: 0,
            };
        } else if let Phase::Main { lifted, .. } = &mut flight.phase {
            if let Some((pc, slots)) = lifted.take() {
                for (kind, len) in slots {
                    client.insert_breakpoint(kind, pc, len)?;
                }
            }
        }
        // The stepped thread stopped: whatever it is, its step is no longer owed (a step
        // given again owes it anew).
        if let (Intent::Step { thread }, true) = (flight.intent, verdict != Trap::StepAgain) {
            if stopped == Some(thread) {
                self.finish_thread(tid);
            }
        }

        let sp = registers
            .as_deref()
            .and_then(|g| self.layout.value_u64(self.sp_name, g));
        match verdict {
            Trap::StepAgain => {
                if let Phase::Main { retries, .. } = &mut flight.phase {
                    if *retries < STEP_RETRIES {
                        *retries += 1;
                        let Intent::Step { thread } = flight.intent else {
                            unreachable!("only steps are given again")
                        };
                        client.resume(ResumeAction::Step, Some(thread))?;
                        self.inner().run.flight = Some(flight);
                        return Ok(Next::Wait(None));
                    }
                }
                self.finish_step(tid, registers);
                Ok(Next::Show(self.halt(client, stop, StopCause::StepDone)))
            }
            Trap::StepDone => {
                self.finish_step(tid, registers);
                Ok(Next::Show(self.halt(client, stop, StopCause::StepDone)))
            }
            Trap::Breakpoint { rewind_to } => {
                let pc = match rewind_to {
                    Some(at) => {
                        self.write_pc(client, at)?;
                        Some(at)
                    }
                    None => facts.pc,
                };
                if let Some(tid) = tid {
                    self.thread_run_tid(tid, |r| {
                        r.late_step = false;
                        r.on_breakpoint = pc;
                        r.cancelled_hit = None;
                    });
                }
                let hit = match (pc, tid) {
                    (Some(pc), Some(tid)) => self.lock_breakpoints().hit_at(pc, tid, sp),
                    _ => Hit::None,
                };
                match hit {
                    Hit::User(id) => Ok(Next::Show(self.halt(
                        client,
                        stop,
                        StopCause::Breakpoint(id),
                    ))),
                    Hit::Temporary => Ok(Next::Show(self.halt(client, stop, StopCause::StepDone))),
                    Hit::Foreign | Hit::None => self.resume_again(client, flight, None),
                }
            }
            Trap::Watch(addr) => match self.watch_hit(addr) {
                Some(id) => Ok(Next::Show(self.halt(
                    client,
                    stop,
                    StopCause::Breakpoint(id),
                ))),
                None => self.show_or_filter(client, stop, flight, registers),
            },
            Trap::Stale { rewind_to } => {
                if let Some(at) = rewind_to {
                    self.write_pc(client, at)?;
                }
                let pc = rewind_to.or(facts.pc);
                if let Some(tid) = tid {
                    // A thread sitting on a breakpoint steps off it, unless its hit there was
                    // cancelled: then it executes the breakpoint again.
                    let on_bp =
                        pc.filter(|&pc| !self.lock_breakpoints().execution_slots_at(pc).is_empty());
                    self.thread_run_tid(tid, |r| {
                        r.late_step = false;
                        r.on_breakpoint = on_bp.filter(|&at| r.cancelled_hit != Some(at));
                        r.cancelled_hit = None;
                    });
                }
                self.resume_again(client, flight, None)
            }
            Trap::Program => self.show_or_filter(client, stop, flight, registers),
        }
    }

    /// A stop of the program: shown, unless the filters pass over it (then resumed from,
    /// passing the exception on when they say so).
    fn show_or_filter(
        &self,
        client: &mut GdbClient,
        stop: &StopReply,
        flight: Flight,
        registers: Option<Registers>,
    ) -> Result<Next, GdbError> {
        let chance = self.chance_of(stop, registers.as_ref());
        let state = self.process_stop_with(client, stop, None, chance);
        let Some((pass, text)) = self.passed_over(&state) else {
            return Ok(Next::Show(state));
        };
        let pass = match (&state, pass) {
            (RunState::Halted(h), true) => h.thread.map(|t| self.thread_id_of(t)).zip(h.signal),
            _ => None,
        };
        self.resume_again(client, flight, pass)
            .map(|next| match next {
                Next::Wait(_) => Next::Wait(text),
                show => show,
            })
    }

    /// Resumes the flight again after a stop that is not shown.
    fn resume_again(
        &self,
        client: &mut GdbClient,
        mut flight: Flight,
        pass: Option<(ThreadId, u8)>,
    ) -> Result<Next, GdbError> {
        flight.pass = pass;
        self.launch(client, &mut flight)?;
        self.inner().run.flight = Some(flight);
        Ok(Next::Wait(None))
    }

    /// The user watchpoint covering `addr`, counted.
    fn watch_hit(&self, addr: u64) -> Option<u32> {
        self.lock_breakpoints().watch_hit(addr)
    }

    /// Puts back breakpoints a phase had lifted.
    fn put_back(&self, client: &mut GdbClient, phase: &Phase) {
        let (pc, slots) = match phase {
            Phase::SteppingOff { pc, slots, .. } => (*pc, slots.clone()),
            Phase::Main {
                lifted: Some((pc, slots)),
                ..
            } => (*pc, slots.clone()),
            Phase::Main { .. } => return,
        };
        for (kind, len) in slots {
            let _ = client.insert_breakpoint(kind, pc, len);
        }
    }

    /// What is known about a stop, for [`trap::classify`].
    fn trap_facts(
        &self,
        client: &mut GdbClient,
        stop: &StopReply,
        stopped: Option<ThreadId>,
        registers: Option<&[Option<u8>]>,
        flight: &Flight,
    ) -> TrapFacts {
        let StopReply::Signal {
            signal: sig,
            reason,
            windows,
            ..
        } = stop
        else {
            unreachable!("exits are shown before")
        };
        let pc = registers.and_then(|g| self.layout.value_u64(self.pc_name, g));
        let stepped_thread = match (&flight.phase, flight.intent) {
            (Phase::SteppingOff { thread, .. }, _) => Some(*thread),
            (Phase::Main { .. }, Intent::Step { thread }) => Some(thread),
            _ => None,
        };
        let before = match &flight.phase {
            Phase::SteppingOff { before, .. } => Some(before),
            Phase::Main { .. } => flight.step_before.as_ref(),
        };
        let step = match (stepped_thread, stopped, before, registers) {
            (Some(a), Some(b), Some(before), Some(now)) if a == b => Some(StepFacts {
                registers_unchanged: self.same_general_registers(before, now),
                stepped_program_int3: self.stepped_program_int3(client, before, pc),
            }),
            _ => None,
        };
        // Only a plain trap can be a replay: a Windows debug event (ntdbg's Win32 stub) is
        // reported once, and two of them on one thread may well find the same registers (two
        // module loads in a row, say).
        let replayed = *sig == signal::TRAP
            && windows.is_none()
            && step.is_none()
            && match (stopped.and_then(|t| t.tid()), registers) {
                (Some(tid), Some(now)) => {
                    let last = self
                        .inner()
                        .run
                        .threads
                        .get(&tid)
                        .and_then(|r| r.last_trap.clone());
                    last.is_some_and(|last| self.same_general_registers(&last, now))
                }
                _ => false,
            };
        let late_step = stopped.and_then(|t| t.tid()).is_some_and(|tid| {
            self.inner()
                .run
                .threads
                .get(&tid)
                .is_some_and(|r| r.late_step)
        }) && step.is_none();
        let before_pc = pc.and_then(|p| p.checked_sub(1));
        let cancelled = stopped
            .and_then(|t| t.tid())
            .and_then(|tid| self.inner().run.threads.get(&tid)?.cancelled_hit);
        // A breakpoint lifted for a step is still the user's: a thread that executed its
        // int3 before it was lifted hit it.
        let lifted = match &flight.phase {
            Phase::SteppingOff { pc, .. } => Some(*pc),
            Phase::Main {
                lifted: Some((pc, _)),
                ..
            } => Some(*pc),
            Phase::Main { .. } => None,
        }
        .filter(|_| client.writes_int3());
        let lifted_before = lifted.is_some() && lifted == before_pc;
        TrapFacts {
            signal: *sig,
            reason: reason.clone(),
            windows_code: windows
                .as_ref()
                .filter(|w| w.kind == WindowsEventKind::Exception)
                .and_then(|w| w.code),
            pc,
            step,
            late_step,
            int3_before: lifted_before
                || before_pc.is_some_and(|a| client.int3_original(a).is_some()),
            removed_int3_before: !lifted_before
                && before_pc.is_some_and(|a| client.int3_removed(a)),
            // The debugger's int3 at the pc, in place, lifted for this step, or the one this
            // thread's cancelled hit was on (the stub reports the event it held).
            int3_here: client.writes_int3()
                && pc.is_some_and(|a| {
                    client.int3_original(a).is_some() || lifted == Some(a) || cancelled == Some(a)
                }),
            replayed,
        }
    }

    /// Whether a step from the registers `before` executed an `int3` of the program's own
    /// (the byte at the old pc is `0xCC`, the new pc just past it, and no breakpoint of the
    /// debugger is there).
    fn stepped_program_int3(
        &self,
        client: &mut GdbClient,
        before: &[Option<u8>],
        pc: Option<u64>,
    ) -> bool {
        let Some(old) = self.layout.value_u64(self.pc_name, before) else {
            return false;
        };
        if pc != old.checked_add(1) || client.int3_original(old).is_some() {
            return false;
        }
        matches!(client.read_memory(old, 1).as_deref(), Ok([Some(0xCC)]))
    }

    /// First or second chance of a fault a GDB stub reports (which has no chances): second
    /// when the same thread stops with the same signal and the same registers after the
    /// fault was passed to the program, else first. A Windows event says it itself.
    fn chance_of(&self, stop: &StopReply, registers: Option<&Registers>) -> Chance {
        if let StopReply::Signal {
            windows: Some(w), ..
        } = stop
        {
            return if w.first_chance() {
                Chance::First
            } else {
                Chance::Second
            };
        }
        let passed = self.inner().run.passed.take();
        let same = match (passed, stop.thread().and_then(|t| t.tid()), registers) {
            (Some(p), Some(tid), Some(regs)) => {
                p.thread == tid
                    && Some(p.signal) == stop.signal()
                    && self.same_general_registers(&p.registers, regs)
            }
            _ => false,
        };
        if same {
            Chance::Second
        } else {
            Chance::First
        }
    }

    /// Whether two register snapshots hold the same general registers (the program counter,
    /// the stack pointer and the pointer-sized integer registers of the core feature).
    /// Segment registers, flags and the x87 control registers are left out: Wine reloads `ds`/`es` when it raises an exception again, and
    /// the trap flag is the debugger's.
    fn same_general_registers(&self, a: &[Option<u8>], b: &[Option<u8>]) -> bool {
        const LEFT_OUT: [&str; 8] = ["cs", "ss", "ds", "es", "fs", "gs", "eflags", "cpsr"];
        let bits = self.layout.by_name(self.pc_name).map(|r| r.bitsize);
        self.layout
            .registers
            .iter()
            .filter(|r| {
                r.feature.ends_with(".core")
                    && Some(r.bitsize) == bits
                    && r.group.as_deref() != Some("float")
                    && !r.name.starts_with('f')
                    && !LEFT_OUT.contains(&r.name.as_str())
            })
            .all(|r| self.layout.value(&r.name, a) == self.layout.value(&r.name, b))
    }

    /// A register snapshot with the program counter set to `pc`.
    fn with_pc(&self, regs: &[Option<u8>], pc: u64) -> Registers {
        let mut out = regs.to_vec();
        if let Some(r) = self.layout.by_name(self.pc_name) {
            let size = (r.bitsize as usize).div_ceil(8).min(8);
            for (i, b) in pc.to_le_bytes()[..size].iter().enumerate() {
                if let Some(slot) = out.get_mut(r.offset + i) {
                    *slot = Some(*b);
                }
            }
        }
        out
    }

    /// The thread's step is over: nothing is owed it.
    fn finish_thread(&self, tid: Option<u64>) {
        if let Some(tid) = tid {
            self.thread_run_tid(tid, |r| r.late_step = false);
        }
    }

    /// The thread's step ran to its end, leaving `registers`.
    fn finish_step(&self, tid: Option<u64>, registers: Option<Registers>) {
        if let Some(tid) = tid {
            self.thread_run_tid(tid, |r| {
                r.late_step = false;
                r.stepped_to = registers;
            });
        }
    }

    /// A halt with this cause (a step, a breakpoint), worded for people.
    fn halt(&self, client: &mut GdbClient, stop: &StopReply, cause: StopCause) -> RunState {
        self.process_stop_with(client, stop, Some(cause), Chance::First)
    }

    /// Turns a stop reply into a run state (the attach-time stop, exits, and stops outside a
    /// flight): the cause from the signal or the Windows event.
    pub(crate) fn process_stop(
        &self,
        client: &mut GdbClient,
        stop: &StopReply,
        at_attach: bool,
    ) -> RunState {
        let chance = if at_attach {
            Chance::Unknown
        } else {
            Chance::First
        };
        if let Some(t) = stop.thread() {
            let _ = client.set_thread(t);
        }
        self.process_stop_with(client, stop, None, chance)
    }

    /// The run state of a stop: `cause` when run control decided it, else what the signal
    /// or the Windows event says (with `chance` for a fault a GDB stub reports). Temporary
    /// breakpoints are removed.
    fn process_stop_with(
        &self,
        client: &mut GdbClient,
        stop: &StopReply,
        cause: Option<StopCause>,
        chance: Chance,
    ) -> RunState {
        let StopReply::Signal {
            signal: sig,
            thread,
            windows,
            ..
        } = stop
        else {
            self.remove_temporary(client);
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
        self.remove_temporary(client);
        if let Some(t) = thread {
            self.thread_id_of(*t);
        }
        let pc = client
            .read_registers()
            .ok()
            .and_then(|g| self.layout.value_u64(self.pc_name, &g));
        let cause = cause.unwrap_or_else(|| match windows {
            Some(w) => windows_cause(w),
            None => stop_text::signal_cause(*sig, chance),
        });
        let ids = thread.and_then(|t| Some((self.pid_of(&t)?, t.tid()?)));
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
            signal: Some(*sig),
            cause,
            reason: stop_text::describe(cause, details, ids),
            event_text: stop_text::event_text(cause, details),
            event: windows.clone().map(Box::new),
            ids,
            at: std::time::SystemTime::now(),
        })
    }

    /// Removes the temporary breakpoints (`p` over a call, `gu`, `pa`, `g ADDR`) once a stop
    /// is shown.
    fn remove_temporary(&self, client: &mut GdbClient) {
        let mut bps = self.lock_breakpoints();
        for b in bps.take_temporary() {
            if !bps.shares_slot(b.address, b.kind, None) {
                let (k, len) = b.kind.packet();
                let _ = client.remove_breakpoint(k, b.address, len);
            }
        }
    }

    /// When the filters pass over the stop: whether to pass the exception on, and the line
    /// to log (`None`: silently). `None` when the stop is shown: no filter applies, it
    /// breaks, or a pending `break_in` has let enough events pass.
    fn passed_over(&self, state: &RunState) -> Option<(bool, Option<String>)> {
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
        let Decision::Continue { print, pass } = self.lock_filters().decide(event) else {
            return None;
        };
        Some((pass, print.then(|| h.reason.clone().unwrap_or_default())))
    }

    /// The registers of `thread` (selecting it).
    fn registers_of(&self, client: &mut GdbClient, thread: ThreadId) -> Option<Registers> {
        if thread.tid().is_some() {
            client.set_thread(thread).ok()?;
        }
        client.read_registers().ok()
    }

    /// Changes what the debugger keeps about `thread`.
    fn thread_run(&self, thread: ThreadId, change: impl FnOnce(&mut ThreadRun)) {
        if let Some(tid) = thread.tid() {
            self.thread_run_tid(tid, change);
        }
    }

    fn thread_run_tid(&self, tid: u64, change: impl FnOnce(&mut ThreadRun)) {
        let mut inner = self.inner();
        let run = inner.run.threads.entry(tid).or_default();
        change(run);
        if *run == ThreadRun::default() {
            inner.run.threads.remove(&tid);
        }
    }

    /// The stub's id of thread `tid`, in the form the stub uses (`p1234.5678` or `5678`).
    pub(crate) fn thread_id_of_tid(&self, tid: u64) -> ThreadId {
        thread_id_in(&self.inner().run, tid)
    }

    /// `thread` in the form the stub uses (a stop's id as is, learning the form).
    fn thread_id_of(&self, thread: ThreadId) -> ThreadId {
        if thread.pid.is_some() {
            self.inner().run.pid_part = thread.pid;
        }
        thread
    }

    /// The process id of a stop's thread: its `p` part, else what the stub said at attach.
    fn pid_of(&self, thread: &ThreadId) -> Option<u64> {
        match thread.pid {
            Some(IdPart::Id(pid)) => Some(pid),
            _ => self.process_id,
        }
    }

    fn write_pc(&self, client: &mut GdbClient, pc: u64) -> Result<(), GdbError> {
        let reg = self
            .layout
            .by_name(self.pc_name)
            .ok_or_else(|| GdbError::Unsupported("no pc register".into()))?;
        let size = (reg.bitsize as usize).div_ceil(8).min(8);
        self.write_register_bytes(client, reg.regnum, reg.offset, &pc.to_le_bytes()[..size])
    }

    /// Writes one register: `P`, or `G` with the whole set where the stub refuses `P`.
    pub(crate) fn write_register_bytes(
        &self,
        client: &mut GdbClient,
        regnum: u32,
        offset: usize,
        bytes: &[u8],
    ) -> Result<(), GdbError> {
        match client.write_register(regnum, bytes) {
            Err(GdbError::Unsupported(_)) => {
                let mut g = client.read_registers()?;
                for (i, b) in bytes.iter().enumerate() {
                    if let Some(slot) = g.get_mut(offset + i) {
                        *slot = Some(*b);
                    }
                }
                let all: Option<Vec<u8>> = g.into_iter().collect();
                let all = all.ok_or_else(|| {
                    GdbError::Unsupported("writing a register (some registers unreadable)".into())
                })?;
                client.write_registers(&all)
            }
            other => other,
        }
    }
}

/// The stub's id of thread `tid`, in the form its ids take.
fn thread_id_in(book: &RunBook, tid: u64) -> ThreadId {
    ThreadId {
        pid: book.pid_part,
        tid: IdPart::Id(tid),
    }
}

/// Whether `g` passes the stop's exception to the program: a fault, never a debugger trap
/// or a break-in.
fn passes(cause: &StopCause) -> bool {
    match *cause {
        StopCause::Exception { code, .. } => !stop_text::is_debug_trap(code),
        StopCause::Signal(s) => s != signal::TRAP && s != signal::INT,
        _ => false,
    }
}

/// The cause a Windows debug event gives a stop.
fn windows_cause(event: &WindowsEvent) -> StopCause {
    match event.kind {
        WindowsEventKind::Exception => StopCause::Exception {
            code: event.code.unwrap_or(0),
            chance: if event.first_chance() {
                Chance::First
            } else {
                Chance::Second
            },
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
        StopCause::Breakpoint(_) | StopCause::StepDone | StopCause::Signal(_) => return None,
        StopCause::Exception { code, chance } => {
            return Some(FilterEvent::Exception {
                code,
                first_chance: chance != Chance::Second,
            });
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
