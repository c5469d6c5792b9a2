//! `analyze_crash`, `list_sessions` and `close_session`.

use crate::client::ClientId;
use crate::dto::{
    AnalyzeCrashParams, CloseSessionParams, CloseSessionResult, ListSessionsResult, OutputFormat,
    SessionInfo, SharedSymbolsInfo,
};
use crate::error::ToolError;
use crate::rendered::Rendered;
use crate::report_text::{event_line, frame_text, how_found};
use crate::state::{blocking, State};
use crate::state::{busy, BUSY_WAIT};
use ntdbg_analysis::Report;
use ntdbg_engine::live::Leave;
use ntdbg_engine::{ErrorCode, Interrupt};
use std::fmt::Write;
use std::sync::Arc;

/// Frames shown in the text of `analyze_crash` (`kb` and the typed report have all).
const TEXT_FRAMES: usize = 12;

/// Full triage of a session's dump: the text, and the typed report with format "json".
pub async fn analyze_crash(
    state: &Arc<State>,
    p: AnalyzeCrashParams,
) -> Result<Rendered<Report>, ToolError> {
    analyze_crash_with(state, p, Interrupt::new()).await
}

/// [`analyze_crash`] under `interrupt`, which cancels its symbol downloads.
pub async fn analyze_crash_with(
    state: &Arc<State>,
    p: AnalyzeCrashParams,
    interrupt: Interrupt,
) -> Result<Rendered<Report>, ToolError> {
    let slot = state.sessions.get(&ClientId::current(), &p.session_id)?;
    let mut guard = tokio::time::timeout(BUSY_WAIT, slot.session.clone().lock_owned())
        .await
        .map_err(|_| busy(&slot.id))?;
    let report = blocking("analysing the crash", move || {
        // A cancel stops the analysis's symbol downloads.
        let before = guard.set_interrupt(interrupt);
        // A live target is analysed at its latest stop (which is logged with its text, as
        // `wait_for_event` shows it).
        let _ = ntdbg_commands::live::pending_stop(&mut guard);
        let report = ntdbg_analysis::analyze_checked(&guard, &Default::default());
        guard.set_interrupt(before);
        Ok(report?)
    })
    .await?;
    let text = render_report(&slot.id, &report);
    Ok(Rendered::new(report, text).text_only(p.format == OutputFormat::Text))
}

fn render_report(id: &str, r: &Report) -> String {
    let mut t = String::new();
    let what = if r.dump.kind == "live" {
        "live target".to_string()
    } else {
        format!("{} dump", r.dump.kind)
    };
    let os = if r.dump.os_build.is_empty() {
        String::new()
    } else {
        format!(", Windows {}", r.dump.os_build)
    };
    let _ = writeln!(
        t,
        "session {id}: {} ({} {what}{os})",
        r.dump.path, r.dump.arch
    );
    let _ = writeln!(t, "signature: {}", r.signature);
    let _ = writeln!(t, "event: {}", event_line(r));
    if let Some(m) = &r.faulting_module {
        let version = m.version.as_deref().unwrap_or("unknown");
        let _ = writeln!(
            t,
            "faulting module: {} base {} size {} timestamp {} version {version}",
            m.name, m.base, m.size, m.timestamp
        );
    }
    t.push_str("stack:\n");
    for f in r.stack.iter().take(TEXT_FRAMES) {
        let _ = writeln!(t, "  {:02} {} ({})", f.frame, frame_text(f), how_found(f));
    }
    if r.stack.len() > TEXT_FRAMES {
        let _ = writeln!(
            t,
            "  … {} more frame(s): kb, or format \"json\"",
            r.stack.len() - TEXT_FRAMES
        );
    }
    for l in &r.frame_locals {
        let vars: Vec<String> = l
            .variables
            .iter()
            .map(|v| format!("{} {} = {}", v.type_name, v.name, v.value))
            .collect();
        let more = match l.omitted {
            0 => String::new(),
            n => format!("; {n} more: .frame {:x}; dv", l.frame),
        };
        let function = l.function.as_deref().unwrap_or("?");
        let _ = writeln!(
            t,
            "locals of {:02} {function}: {}{more}",
            l.frame,
            vars.join("; ")
        );
    }
    for w in &r.waits {
        let _ = writeln!(t, "wait: {} (basis: {})", w.text, w.basis);
    }
    for i in &r.inferences {
        let _ = writeln!(t, "inference: {} (basis: {})", i.text, i.basis);
    }
    for l in &r.limitations {
        let _ = writeln!(t, "limitation: {l}");
    }
    let _ = writeln!(t, "next commands: {}", r.next_commands.join("; "));
    t
}

/// The open sessions of the calling client.
pub fn list_sessions(state: &Arc<State>) -> Rendered<ListSessionsResult> {
    let client = ClientId::current();
    let sessions: Vec<SessionInfo> = state
        .sessions
        .list(&client)
        .iter()
        .map(|s| SessionInfo {
            session_id: s.id.clone(),
            target: s.path.display().to_string(),
            kind: s.kind.clone(),
            arch: s.arch.clone(),
            run_state: s.run_state().into(),
            busy: s.busy(),
            symbols_path: s.symbols_path.clone(),
            age_seconds: s.opened.elapsed().as_secs(),
        })
        .collect();
    let mut text = if client == ClientId::Anonymous {
        // Nothing tells this client from another: listing would hand out the ids.
        "sessions are not listed to a stateless HTTP client without a bearer token: each is reachable by its session_id alone (the server's --token-env gives clients an identity)\n".to_string()
    } else if sessions.is_empty() {
        "no open sessions (open_dump opens one)\n".to_string()
    } else {
        format!("{} open session(s)\n", sessions.len())
    };
    for s in &sessions {
        let _ = writeln!(
            text,
            "{}  {}  {} {}  {}{}  age {}s",
            s.session_id,
            s.target,
            s.kind,
            s.arch,
            s.run_state,
            if s.busy { " (busy)" } else { "" },
            s.age_seconds
        );
    }
    let stats = state.shared_symbols.stats();
    let shared_symbols = SharedSymbolsInfo {
        modules: stats.entries,
        bytes: stats.bytes,
        limit: stats.limit,
        hits: stats.hits,
        loads: stats.loads,
        evictions: stats.evictions,
    };
    let _ = writeln!(
        text,
        "shared symbols: {} module(s), {:.1} of {:.0} MiB; {} load(s) parsed, {} answered from memory, {} evicted",
        shared_symbols.modules,
        mib(shared_symbols.bytes),
        mib(shared_symbols.limit),
        shared_symbols.loads,
        shared_symbols.hits,
        shared_symbols.evictions
    );
    Rendered::new(
        ListSessionsResult {
            sessions,
            shared_symbols,
        },
        text,
    )
}

/// Bytes in MiB, for display.
fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// Closes a session and drops its cached outputs; a live target gets its breakpoints
/// removed and is detached, running, or with `resume: false` suspended where the stub can
/// (the GDB remote protocol resumes it; the text says so).
pub async fn close_session(
    state: &Arc<State>,
    p: CloseSessionParams,
) -> Result<Rendered<CloseSessionResult>, ToolError> {
    let client = ClientId::current();
    let (state_for_close, session_id, closer) =
        (state.clone(), p.session_id.clone(), client.clone());
    let leave = if p.resume == Some(false) {
        Leave::Suspended
    } else {
        Leave::Running
    };
    let outcome = blocking("closing the session", move || {
        crate::memory::close_session(
            &state_for_close,
            &closer,
            &session_id,
            "close_session",
            leave,
        )
    })
    .await;
    // Closing is idempotent (as the tool's annotation says): a session this server already
    // closed (by close_session or the idle timeout) is answered "already closed".
    let (closed, detach, already_closed) = match outcome {
        Ok(closed) => (closed.id, closed.detach, false),
        Err(e)
            if e.code == ErrorCode::UnknownSession
                && state.sessions.was_closed(&client, &p.session_id) =>
        {
            (p.session_id.trim().to_string(), None, true)
        }
        Err(e) => return Err(e),
    };
    let open_sessions: Vec<String> = state
        .sessions
        .list(&client)
        .iter()
        .map(|s| s.id.clone())
        .collect();
    let verb = if already_closed {
        "already closed"
    } else {
        "closed"
    };
    let mut text = if open_sessions.is_empty() {
        format!("{verb} {closed}; no sessions remain open\n")
    } else {
        format!(
            "{verb} {closed}; still open: {}\n",
            open_sessions.join(", ")
        )
    };
    if let Some(d) = &detach {
        let _ = writeln!(text, "{d}");
    }
    Ok(Rendered::new(
        CloseSessionResult {
            session_id: closed,
            already_closed,
            open_sessions,
            detach,
        },
        text,
    ))
}
