//! `attach`, `break_in` and `wait_for_event`: live targets over the GDB remote protocol.
//!
//! `break_in` and `wait_for_event` use the session's [`LiveControl`] without taking the
//! session lock, so neither waits for a `g` (or anything else) in progress on the same
//! session. Afterwards they take the lock briefly, when they can, to print the stop the way
//! `run_command` would (symbols, next instruction).

use crate::client::ClientId;
use crate::dto::{
    AttachParams, AttachResult, LiveEventInfo, RunStateResult, SessionParams, WaitForEventParams,
};
use crate::error::ToolError;
use crate::rendered::Rendered;
use crate::sessions::SessionSlot;
use crate::state::{blocking, State};
use crate::tools::commands::MAX_TIMEOUT_MS;
use ntdbg_engine::live::{AttachOptions, EventKind, LiveControl, LiveEvent, RunState};
use ntdbg_engine::ErrorCode;
use ntdbg_engine::Session;
use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// Default and longest connection timeout of `attach`.
const ATTACH_TIMEOUT: (u64, u64) = (10, 120);
/// Default wait of `wait_for_event`.
const DEFAULT_WAIT_MS: u64 = 30_000;
/// How long `break_in` waits for the stop after the interrupt.
const BREAK_IN_WAIT: Duration = Duration::from_secs(10);
/// How long the tools wait for the session lock to print a stop with symbols.
const RENDER_WAIT: Duration = Duration::from_secs(3);

/// Attaches to `gdb:HOST:PORT`, `pid:N` or `exe:PATH ARGS` and opens a live session.
pub async fn attach(
    state: &Arc<State>,
    p: AttachParams,
) -> Result<Rendered<AttachResult>, ToolError> {
    let target = p.target.trim().to_string();
    let secs = p
        .timeout_seconds
        .unwrap_or(ATTACH_TIMEOUT.0)
        .clamp(1, ATTACH_TIMEOUT.1);
    let opts = AttachOptions {
        timeout: Duration::from_secs(secs),
        read_only: state.read_only,
    };
    let symbols = p.symbols_path.clone().filter(|s| !s.trim().is_empty());
    if let Some(s) = &symbols {
        crate::tools::dumps::check_symbol_path(s, state)?;
    }
    if is_target_kind(&target) && !state.attach.allows(&target) {
        tracing::info!(target = %target, "attach refused: not allowed by --allow-attach ({})", state.attach);
        return Err(attach_refused(&target));
    }
    let offline = state.offline;
    let t = target.clone();
    let (session, stop, trailer, threads) = blocking("attaching", move || {
        let session = Session::attach(&t, symbols.as_deref(), &opts).map_err(|e| {
            if is_network_target(&t) {
                // Unreachable or not a stub: said as a refusal is, so that the answer tells
                // nothing about what listens where; the log has the cause.
                tracing::info!(target = %t, "attach failed: {e}");
                attach_refused(&t)
            } else {
                ToolError::from(e).with_hint(
                    "give pid:N of a running process or exe:PATH ARGS; raise timeout_seconds \
                     for a slow start",
                )
            }
        })?;
        if offline {
            session.symbols().set_offline(true);
        }
        let stop = match session.live().map(|l| l.state()) {
            Some(RunState::Halted(h)) => h.reason.unwrap_or_default(),
            Some(other) => other.name().to_string(),
            None => String::new(),
        };
        let trailer = session.trailer();
        let threads = session.target().threads().len();
        Ok((session, stop, trailer, threads))
    })
    .await?;
    let slot = state.sessions.insert(
        session,
        PathBuf::from(&target),
        p.symbols_path,
        ClientId::current(),
    );
    tracing::info!(session = %slot.id, target = %target, "attached");
    let result = AttachResult {
        session_id: slot.id.clone(),
        target,
        kind: slot.kind.clone(),
        arch: slot.arch.clone(),
        run_state: slot.run_state().to_string(),
        threads,
        stop,
        trailer,
    };
    let mut text = format!(
        "{}\nattached to {} ({} {}, {} thread(s)), {}\n",
        slot.id, result.target, result.kind, result.arch, result.threads, result.run_state
    );
    if !result.stop.is_empty() {
        let _ = writeln!(text, "{}", result.stop);
    }
    text.push_str(&result.trailer);
    Ok(Rendered::new(result, text))
}

/// Whether `target` names a kind of target ntdbg attaches (`gdb:`, `pid:`, `exe:`); another
/// is answered `unsupported_target` by the engine, which says nothing about the network.
fn is_target_kind(target: &str) -> bool {
    target.split_once(':').is_some_and(|(kind, _)| {
        ["gdb", "pid", "exe"]
            .iter()
            .any(|k| kind.eq_ignore_ascii_case(k))
    })
}

/// Whether `target` is reached over the network (a GDB stub), whose failures say nothing more
/// than a refusal does.
fn is_network_target(target: &str) -> bool {
    target
        .split_once(':')
        .is_some_and(|(kind, _)| kind.eq_ignore_ascii_case("gdb"))
}

/// The one answer to an attach the policy refuses or whose stub does not answer.
fn attach_refused(target: &str) -> ToolError {
    ToolError::new(
        ErrorCode::AttachRefused,
        format!(
            "cannot attach to {target}: no stub that this server may attach answered there"
        ),
    )
    .with_hint(
        "start the stub first (gdbserver, winedbg --gdb, QEMU -s) and give gdb:HOST:PORT of a \
         target the server allows (ntdbg mcp --allow-attach; by default stubs on this machine's \
         loopback addresses, and on Windows pid:N and exe:PATH); the server's log says which it was",
    )
}

/// Stops a running live target; returns at once when it is already stopped.
pub async fn break_in(
    state: &Arc<State>,
    p: SessionParams,
) -> Result<Rendered<RunStateResult>, ToolError> {
    let slot = state.sessions.get(&ClientId::current(), &p.session_id)?;
    let live = live_of(&slot)?;
    let last = live.events_after(None).last().map(|e| e.seq);
    let control = live.clone();
    blocking("breaking in", move || {
        control.break_in(BREAK_IN_WAIT).map_err(ToolError::from)
    })
    .await?;
    Ok(report(&slot, &live, last, None, false).await)
}

/// Waits until a running live target stops (or `timeout_ms` passes) and replays the events
/// of the last `since_ms`.
pub async fn wait_for_event(
    state: &Arc<State>,
    p: WaitForEventParams,
) -> Result<Rendered<RunStateResult>, ToolError> {
    let slot = state.sessions.get(&ClientId::current(), &p.session_id)?;
    let live = live_of(&slot)?;
    let window = p.since_ms.map(Duration::from_millis);
    let last = live.events_after(None).last().map(|e| e.seq);
    let replayed = window.is_some_and(|w| {
        live.events_since(Some(w))
            .iter()
            .any(|e| matches!(e.kind, EventKind::Stopped | EventKind::Exited))
    });
    let mut timed_out = false;
    if live.state() == RunState::Running && !replayed {
        let wait =
            Duration::from_millis(p.timeout_ms.unwrap_or(DEFAULT_WAIT_MS).min(MAX_TIMEOUT_MS));
        let control = live.clone();
        let stops = live.stops();
        timed_out = !blocking("waiting for an event", move || {
            Ok(control.wait_for_stop(stops, wait))
        })
        .await?;
    }
    Ok(report(&slot, &live, last, window, timed_out).await)
}

fn live_of(slot: &SessionSlot) -> Result<Arc<LiveControl>, ToolError> {
    slot.live.clone().ok_or_else(|| {
        ToolError::new(
            ErrorCode::NotLive,
            format!("session {} is a dump: it does not run", slot.id),
        )
        .with_hint("attach(target=\"gdb:HOST:PORT\") opens a live session")
        .unrecoverable()
    })
}

/// The run state, the events after `last` (and those of the `window`), and the trailer;
/// stops are printed through the session when its lock is free soon.
async fn report(
    slot: &Arc<SessionSlot>,
    live: &Arc<LiveControl>,
    last: Option<u64>,
    window: Option<Duration>,
    timed_out: bool,
) -> Rendered<RunStateResult> {
    let mut trailer = live.state().trailer();
    if live.state() != RunState::Running {
        if let Ok(guard) =
            tokio::time::timeout(RENDER_WAIT, slot.session.clone().lock_owned()).await
        {
            let rendered = blocking("printing the stop", move || {
                let mut session = guard;
                let _ = ntdbg_commands::live::pending_stop(&mut session);
                Ok(session.trailer())
            })
            .await;
            if let Ok(t) = rendered {
                trailer = t;
            }
        }
    }
    let mut events: BTreeMap<u64, LiveEvent> = BTreeMap::new();
    for e in live.events_after(last) {
        events.insert(e.seq, e);
    }
    if window.is_some() {
        for e in live.events_since(window) {
            events.insert(e.seq, e);
        }
    }
    let events: Vec<LiveEventInfo> = events
        .into_values()
        .map(|e| LiveEventInfo {
            kind: e.kind.name().to_string(),
            ms_ago: e.at.elapsed().map_or(0, |d| d.as_millis() as u64),
            text: e.text,
        })
        .collect();
    let run_state = live.state().name().to_string();
    let mut text = String::new();
    if timed_out {
        text.push_str("(no stop within the wait: the target is still running)\n");
    }
    for e in &events {
        let _ = writeln!(
            text,
            "[{} {} ms ago] {}",
            e.kind,
            e.ms_ago,
            e.text.trim_end()
        );
    }
    text.push_str(&trailer);
    Rendered::new(
        RunStateResult {
            session_id: slot.id.clone(),
            run_state,
            timed_out,
            events,
            trailer,
        },
        text,
    )
}
