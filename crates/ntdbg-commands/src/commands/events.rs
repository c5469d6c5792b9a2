//! Events and exception context: `.lastevent`, `.exr`, `.ecxr`, `.cxr`, `!analyze`.

use super::util::eval;
use crate::error::{CommandError, ErrorCode};
use crate::output::{CommandOutput, TypedResult};
use crate::spec::{CommandSpec, Invocation};
use ntdbg_analysis::exception::decode;
use ntdbg_analysis::render::{render_exception_record, render_report};
use ntdbg_engine::live::RunState;
use ntdbg_engine::Session;

pub(crate) const COMMANDS: &[CommandSpec] = &[
    CommandSpec::inspect(
        &[".lastevent"],
        ".lastevent",
        "show the last event (the exception that caused the dump, or a live target's stop)",
        "On a live target: the event of the last stop (breakpoint, exception with its chance, \
         module load, …) and the debugger's time now.",
        lastevent,
    )
    .no_args(),
    CommandSpec::inspect(
        &[".exr"],
        ".exr -1 | .exr ADDR",
        "show an exception record (-1: the last event's)",
        "`.exr ADDR` reads an EXCEPTION_RECORD from memory. On a live target `.exr -1` shows the \
         stop's exception: code, address and parameters from ntdbg's Windows targets; for a GDB \
         stub's signal, the code and the pc, and for an access violation the access and the \
         address decoded from the faulting instruction and the registers.",
        exr,
    ),
    CommandSpec::inspect(
        &[".ecxr"],
        ".ecxr",
        "switch to the exception context of the last event and show its registers",
        "",
        ecxr,
    )
    .no_args(),
    CommandSpec::inspect(
        &[".cxr"],
        ".cxr [ADDR]",
        "use a CONTEXT record at ADDR as the register context; no ADDR: back to the thread's",
        "",
        cxr,
    ),
    CommandSpec::inspect(
        &["!analyze"],
        "!analyze [-v]",
        "crash triage: exception, faulting module and frame, stack, signature, inferences",
        "The text is ntdbg's own report in the spirit of `!analyze -v`; `-v` is accepted and implied.",
        analyze,
    ),
];

fn event_required(session: &Session) -> Result<&ntdbg_targets::ExceptionEvent, CommandError> {
    if let Some(e) = session.target().event() {
        return Ok(e);
    }
    if let Some(live) = session.live() {
        let why = match live.state() {
            RunState::Halted(h) => format!("The last event is not an exception ({})", h.event_text),
            other => format!("There is no exception: the target is {}", other.name()),
        };
        return Err(CommandError::new(ErrorCode::NoException, why)
            .with_hint("`.lastevent` says why the target stopped; `~*k` what every thread does"));
    }
    Err(CommandError::new(
        ErrorCode::NoException,
        "There is no exception record in this dump",
    )
    .with_hint("`~*k` shows what every thread was doing"))
}

fn event_typed(session: &Session) -> Option<TypedResult> {
    Some(exception_typed(session, session.target().event()?))
}

/// An exception record as the typed event.
fn exception_typed(session: &Session, e: &ntdbg_targets::ExceptionEvent) -> TypedResult {
    let d = decode(e, session.arch().pointer_size());
    TypedResult::Event {
        code: format!("{:#010x}", e.code),
        name: d.name,
        address: format!("{:#x}", e.address),
        thread_id: format!("{:#x}", e.thread_id),
        parameters: e.parameters.iter().map(|p| format!("{p:#x}")).collect(),
        description: d.description,
    }
}

fn lastevent(session: &mut Session, _inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    if let Some(live) = session.live().cloned() {
        return live_lastevent(session, &live.state());
    }
    let e = event_required(session)?;
    let d = decode(e, session.arch().pointer_size());
    let pid = session.target().system().process_id.unwrap_or(0);
    let mut text = format!(
        "Last event: {pid:x}.{:x}: {} - code {:08x} (first/second chance not available)\n",
        e.thread_id, d.short, e.code
    );
    if let Some(t) = session.target().system().dump_time {
        text.push_str(&format!(
            "  debugger time: {}\n",
            crate::render::windbg_time(t)
        ));
    }
    Ok(CommandOutput {
        text,
        typed: event_typed(session),
    })
}

/// `.lastevent` on a live target: the last stop's event, its `pid.tid`, and when it stopped.
fn live_lastevent(session: &Session, state: &RunState) -> Result<CommandOutput, CommandError> {
    let RunState::Halted(h) = state else {
        return Err(CommandError::new(
            ErrorCode::TargetGone,
            format!("Last event: none: the target is {}", state.name()),
        ));
    };
    let ids = h
        .ids
        .map(|(pid, tid)| format!("{pid:x}.{tid:x}: "))
        .or_else(|| {
            h.thread
                .and_then(|t| t.tid())
                .map(|tid| match session.target().system().process_id {
                    Some(pid) => format!("{pid:x}.{tid:x}: "),
                    None => format!("{tid:x}: "),
                })
        });
    let stopped_ms =
        h.at.duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    let text = format!(
        "Last event: {}{}\n  debugger time: {}\n",
        ids.unwrap_or_default(),
        h.event_text,
        crate::render::windbg_time_ms(stopped_ms)
    );
    let typed = event_typed(session);
    Ok(CommandOutput { text, typed })
}

fn exr(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    let arg = inv.args.trim();
    if !arg.is_empty() && arg != "-1" {
        let addr = eval(session, arg)?;
        let e = read_exception_record(session, addr)?;
        return Ok(CommandOutput::text(render_exception_record(session, &e)));
    }
    let e = event_required(session)?.clone();
    Ok(CommandOutput {
        text: render_exception_record(session, &e),
        typed: event_typed(session),
    })
}

/// Reads an EXCEPTION_RECORD (32- or 64-bit layout by target) from memory.
fn read_exception_record(
    session: &Session,
    addr: u64,
) -> Result<ntdbg_targets::ExceptionEvent, CommandError> {
    let ptr = session.arch().pointer_size() as u64;
    let t = session.target();
    let unreadable = || {
        CommandError::new(
            ErrorCode::MemoryUnavailable,
            format!(
                "Cannot read Exception record @ {}",
                crate::render::addr(session, addr)
            ),
        )
    };
    let code = t.read_uint(addr, 4).ok_or_else(unreadable)? as u32;
    let flags = t.read_uint(addr + 4, 4).ok_or_else(unreadable)? as u32;
    let nested = t.read_uint(addr + 8, ptr as usize).ok_or_else(unreadable)?;
    let address = t
        .read_uint(addr + 8 + ptr, ptr as usize)
        .ok_or_else(unreadable)?;
    let count_at = addr + 8 + 2 * ptr;
    let count = t.read_uint(count_at, 4).ok_or_else(unreadable)?.min(15);
    let params_at = count_at + if ptr == 8 { 8 } else { 4 };
    let parameters = (0..count)
        .map(|i| {
            t.read_uint(params_at + i * ptr, ptr as usize)
                .ok_or_else(unreadable)
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(ntdbg_targets::ExceptionEvent {
        thread_id: session.current_thread().map(|t| t.id).unwrap_or(0),
        code,
        flags,
        address,
        parameters,
        nested_record: nested,
        context: None,
    })
}

fn ecxr(session: &mut Session, _inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    session.select_exception_context().map_err(|e| {
        CommandError::from(e).with_hint("this dump has no exception; use `~` and `k` on threads")
    })?;
    crate::render::registers::show_current(session)
}

fn cxr(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    let arg = inv.args.trim();
    if arg.is_empty() {
        return Ok(super::util::reset_scope(session));
    }
    let addr = eval(session, arg)?;
    session.select_context_record(addr)?;
    crate::render::registers::show_current(session)
}

fn analyze(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    let args = inv.args.trim();
    if !(args.is_empty() || args == "-v") {
        return Err(CommandError::syntax(format!(
            "!analyze: unknown option '{args}' (use -v)"
        )));
    }
    let report = ntdbg_analysis::analyze(session);
    Ok(CommandOutput::with(
        render_report(&report),
        TypedResult::Analysis(Box::new(report)),
    ))
}
