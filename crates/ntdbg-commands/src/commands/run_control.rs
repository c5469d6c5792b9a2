//! Run control on live targets: `g`, `gh`, `gn`, `gc`, `gu`, `p`, `t`, `pa`, `ta`, and
//! leaving the target: `.detach`, `.abandon`.
//!
//! Each resumes the target, waits up to the session's command wait for the stop and prints
//! what WinDbg prints then: the reason (`Breakpoint 0 hit`, an exception) and the next
//! instruction. When the target is still running, the output is empty and the trailer says
//! `[target running]`; the stop is shown at the head of the next command.

use super::util::eval;
use crate::error::CommandError;
use crate::error::ErrorCode;
use crate::output::CommandOutput;
use crate::render::code::current_instruction;
use crate::spec::{CommandSpec, Effect, Invocation, Needs};
use ntdbg_engine::live::{EventKind, Leave, Resume, RunState};
use ntdbg_engine::Session;

/// How long leaving the target may take (breaking in first when it runs).
const DETACH_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// Most steps one `p COUNT` / `t COUNT` takes.
const MAX_STEPS: u64 = 1000;

const GO_DETAILS: &str = "Resumes a live target and waits up to the front end's time limit for \
the next stop; if none comes the trailer says [target running] and the stop is shown later (when \
the front end waits for events, or at the head of the next command). A second `g` while running is refused. `g` and `gn` pass the \
stop's exception to the program (like WinDbg's first-chance `g`); `gh` treats it as handled. \
`~N g` runs only thread N. `g =START` is not supported.";

pub(crate) const COMMANDS: &[CommandSpec] = &[
    CommandSpec::acting(
        &["g", "gn", "gc"],
        "g [ADDR]",
        "go: resume the live target (until ADDR)",
        GO_DETAILS,
        Effect::Run,
        go,
    ),
    CommandSpec::acting(
        &["gh"],
        "gh",
        "go with the exception handled",
        GO_DETAILS,
        Effect::Run,
        go_handled,
    ),
    CommandSpec::acting(
        &["gu"],
        "gu",
        "go up: run until the current function returns",
        "Sets a temporary breakpoint at the return address from the stack walk.",
        Effect::Run,
        go_up,
    )
    .no_args(),
    CommandSpec::acting(
        &["p"],
        "p [COUNT]",
        "step over: one instruction, calls run to their end",
        "Prints the next instruction after each step, as WinDbg does with register display \
         off. Calls and rep string instructions run to their end through a temporary \
         breakpoint after them.",
        Effect::Step,
        step_over,
    ),
    CommandSpec::acting(
        &["t"],
        "t [COUNT]",
        "trace: one instruction, into calls",
        "",
        Effect::Step,
        step_into,
    ),
    CommandSpec::acting(
        &["pa", "ta"],
        "pa ADDR",
        "step to an address",
        "Runs to ADDR through a temporary breakpoint and prints the instruction there \
         (WinDbg prints every step on the way).",
        Effect::Step,
        step_to,
    ),
    CommandSpec {
        needs: Needs::Any,
        ..CommandSpec::inspect(
            &[".detach"],
            ".detach",
            "detach from the live target, leaving it running",
            "Removes every breakpoint, then detaches; the session stays open for reading what was already shown.",
            detach,
        )
        .no_args()
    },
    CommandSpec {
        needs: Needs::Any,
        ..CommandSpec::inspect(
            &[".abandon"],
            ".abandon",
            "detach from the live target, leaving it suspended",
            "Like .detach, but ntdbg's Windows targets leave every thread suspended (another \
             debugger can attach). GDB stubs always resume a target on detach; the output says \
             so.",
            abandon,
        )
        .no_args()
    },
];

fn detach(session: &mut Session, _inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    leave(session, Leave::Running)
}

fn abandon(session: &mut Session, _inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    leave(session, Leave::Suspended)
}

/// `.detach` / `.abandon`: detaches, leaving the process running or suspended.
fn leave(session: &mut Session, how: Leave) -> Result<CommandOutput, CommandError> {
    let live = session.live().cloned().ok_or_else(|| {
        CommandError::new(
            ErrorCode::NotLive,
            "detaching needs a live target (this session is a dump)",
        )
    })?;
    let done = live.close_leaving(DETACH_WAIT, how)?;
    Ok(CommandOutput::text(format!("{done}\n")))
}

fn go(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    resume(session, inv.args, true)
}

fn go_handled(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    resume(session, inv.args, false)
}

/// `g`/`gh`: resumes, passing the stop's exception to the program or not, until `args`.
fn resume(
    session: &mut Session,
    args: &str,
    pass_signal: bool,
) -> Result<CommandOutput, CommandError> {
    let args = args.trim();
    if args.starts_with('=') {
        return Err(CommandError::syntax("g =START is not supported")
            .with_hint("set the instruction pointer with r first, or use `g ADDR`"));
    }
    let until = if args.is_empty() {
        None
    } else {
        Some(eval(session, args)?)
    };
    let how = Resume::Go { pass_signal };
    run_and_show(session, |s| s.go(how, until))
}

fn go_up(session: &mut Session, _inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    run_and_show(session, Session::step_out)
}

fn step_over(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    step(session, inv.args, true)
}

fn step_into(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    step(session, inv.args, false)
}

/// `p`/`t`: `args` steps (over calls or into them).
fn step(session: &mut Session, args: &str, over: bool) -> Result<CommandOutput, CommandError> {
    let args = args.trim();
    let count = if args.is_empty() {
        1
    } else {
        eval(session, args)?
    };
    if count == 0 || count > MAX_STEPS {
        return Err(CommandError::syntax(format!(
            "step count must be 1 to {MAX_STEPS}"
        )));
    }
    let mut text = String::new();
    for _ in 0..count {
        let stopped = if over {
            session.step_over()?
        } else {
            session.step_into()?
        };
        let out = shown_stop(session)?;
        text.push_str(&out.text);
        let halted = session
            .live()
            .is_some_and(|l| matches!(l.state(), RunState::Halted(_)));
        if !stopped || !halted {
            break;
        }
    }
    Ok(CommandOutput::text(text))
}

fn step_to(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    let args = inv.args.trim();
    if args.is_empty() {
        return Err(CommandError::syntax(format!(
            "{} needs an address",
            inv.name
        )));
    }
    let addr = eval(session, args)?;
    run_and_show(session, |s| s.go_to_in_frame(addr))
}

/// Runs `run` (a resume that waits for the stop), then shows what the target printed on the
/// way (module loads, debug strings, exceptions the filters passed on, as WinDbg prints them
/// during a `g`) and the stop.
fn run_and_show(
    session: &mut Session,
    run: impl FnOnce(&mut Session) -> Result<bool, ntdbg_engine::EngineError>,
) -> Result<CommandOutput, CommandError> {
    let live = session.live().cloned();
    let before = live
        .as_ref()
        .and_then(|l| l.events_after(None).last().map(|e| e.seq));
    run(session)?;
    let mut text = String::new();
    if let Some(live) = live {
        for e in live.events_after(before) {
            if e.kind == EventKind::Event {
                text.push_str(&e.text);
                text.push('\n');
            }
        }
    }
    text.push_str(&shown_stop(session)?.text);
    Ok(CommandOutput::text(text))
}

/// The stop the session has not shown yet, rendered; empty while the target runs.
pub(crate) fn shown_stop(session: &mut Session) -> Result<CommandOutput, CommandError> {
    let text = match session.sync_live()? {
        Some(state) => render_stop(session, &state),
        None => String::new(),
    };
    Ok(CommandOutput::text(text))
}

/// What WinDbg prints when a target stops: the reason, then the next instruction. Also
/// recorded as the text of the stop in the event log.
pub(crate) fn render_stop(session: &Session, state: &RunState) -> String {
    let mut text = String::new();
    match state {
        RunState::Halted(h) => {
            if let Some(reason) = &h.reason {
                text.push_str(reason);
                text.push('\n');
            }
            if let Some(ip) = session.instruction_pointer().or(h.pc) {
                text.push_str(&current_instruction(session, ip));
            }
        }
        RunState::Exited(why) => {
            text.push_str(why);
            text.push('\n');
        }
        RunState::Detached | RunState::Running => {}
    }
    if let Some(live) = session.live() {
        live.annotate_last_stop(text.trim_end());
    }
    text
}
