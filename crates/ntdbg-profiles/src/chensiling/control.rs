//! The tools that change the debugger or the target: `windbg_control`, `windbg_breakpoint`,
//! `windbg_write_memory`, `windbg_sympath` and `windbg_session`. Each checks its
//! post-condition after the change and says `verified`, `failed` or `indeterminate`; on a
//! dump, run control and breakpoints answer that the target never runs.

use super::args::{
    count, intent_text, BreakpointAction, BreakpointArgs, ControlAction, ControlArgs,
    SessionAction, SessionArgs, SympathAction, SympathArgs, WriteMemoryArgs,
};
use super::code::module_name;
use super::envelope::{args, CoreResult, Envelope, Reply, Stage, Verification};
use super::run::Target;
use crate::Host;
use ntdbg_engine::live::{BreakKind, Breakpoint};
use ntdbg_mcp::dto::SessionParams;
use serde_json::{json, Value};

/// A breakpoint as Windbg-MCP lists it: id, address, enabled, plus ntdbg's kind and hits.
fn breakpoint_json(b: &Breakpoint) -> Value {
    json!({
        "id": b.id.map(|i| i.to_string()),
        "address": format!("0x{:x}", b.address),
        "enabled": b.enabled,
        "kind": if b.kind == BreakKind::Software { "software" } else { "hardware" },
        "hits": b.hits,
    })
}

/// Whether the table `after` shows the change `action` made: `set`, an enabled breakpoint at
/// `address`; `clear`, `id` (or every one, `*`) existed before and is gone; `enable` /
/// `disable`, `id` (or every one) exists and is in the wanted state.
fn breakpoint_post_condition(
    action: BreakpointAction,
    address: &str,
    id: &str,
    before: &[Breakpoint],
    after: &[Breakpoint],
) -> bool {
    let is = |b: &&Breakpoint| id == "*" || b.id.map(|i| i.to_string()).as_deref() == Some(id);
    match action {
        BreakpointAction::List => true,
        BreakpointAction::Set => after
            .iter()
            .any(|b| b.enabled && format!("0x{:x}", b.address) == address),
        BreakpointAction::Clear => before.iter().any(|b| is(&b)) && !after.iter().any(|b| is(&b)),
        BreakpointAction::Enable | BreakpointAction::Disable => {
            let wanted = action == BreakpointAction::Enable;
            let changed: Vec<&Breakpoint> = after.iter().filter(is).collect();
            before.iter().any(|b| is(&b))
                && !changed.is_empty()
                && changed.iter().all(|b| b.enabled == wanted)
        }
    }
}

/// Refuses a change a dump cannot take; says whether it did.
fn dump_refused(reply: &mut Reply, target: &Target, what: &str) -> bool {
    if target.live() {
        return false;
    }
    reply
        .error(
            "command_unsupported_for_target",
            format!("{what} needs a live target; this is a dump, which never runs."),
            Stage::Target,
            false,
        )
        .core(CoreResult::Unavailable)
        .verification(Verification::NotRun)
        .next(
            "windbg_analyze",
            args([("scope", "crash")]),
            "Inspect the dump instead: analysis, stack, memory.",
        );
    true
}

impl Host {
    /// The profile's target as it is now (its run state after a command).
    fn cs_refresh(&self, fallback: &Target) -> Target {
        let mut scratch = Reply::new("windbg_session");
        self.chensiling_target(&mut scratch)
            .unwrap_or_else(|| fallback.clone())
    }

    pub(super) async fn cs_control(&self, a: ControlArgs) -> Envelope {
        let mut reply = Reply::new("windbg_control");
        reply.verification(Verification::NotRun);
        let action = a.action.name();
        let n = match count(&a.count, "count", Some(1), 1, 1000) {
            Ok(n) if action == "go" && n != 1 => {
                reply.error(
                    "invalid_argument",
                    "'go' does not support count values other than 1.",
                    Stage::Input,
                    true,
                );
                return reply.finish();
            }
            Ok(n) => n,
            Err(e) => {
                reply.error(&e.code, e.message, e.stage, e.recoverable);
                return reply.finish();
            }
        };
        let Some(target) = self.chensiling_target(&mut reply) else {
            return reply.finish();
        };
        if dump_refused(&mut reply, &target, "Execution control") {
            return reply.finish();
        }
        let commands: Vec<String> = match a.action {
            ControlAction::Go | ControlAction::G => vec!["g".into()],
            ControlAction::StepInto | ControlAction::T => vec![format!("t 0n{n}")],
            ControlAction::StepOver | ControlAction::P => vec![format!("p 0n{n}")],
            ControlAction::StepOut | ControlAction::Gu => {
                vec!["gu".to_string(); usize::try_from(n).unwrap_or(1)]
            }
        };
        // A `go` that does not stop within the time limit leaves the target running: it is
        // never interrupted here (windbg_session interrupt does that).
        self.chensiling_run(&target, &commands, false, &mut reply)
            .await;
        let after = self.cs_refresh(&target);
        let state = match after.run_state {
            "halted" => "broken",
            "running" => "running",
            _ => "indeterminate",
        };
        reply
            .set("action", action)
            .set("count", n)
            .set("target_state", state)
            .verification(if state == "broken" {
                Verification::Verified
            } else {
                Verification::Indeterminate
            });
        if state == "running" {
            reply.next(
                "windbg_session",
                args([("action", "interrupt")]),
                "The target is still running: break in explicitly.",
            );
        }
        reply.finish()
    }

    pub(super) async fn cs_breakpoint(&self, a: BreakpointArgs) -> Envelope {
        let mut reply = Reply::new("windbg_breakpoint");
        reply.verification(Verification::NotRun);
        let (target_text, condition, id) = (
            a.target.unwrap_or_default(),
            a.condition.unwrap_or_default(),
            a.id.unwrap_or_default(),
        );
        for (value, name) in [
            (&target_text, "target"),
            (&condition, "condition"),
            (&id, "id"),
        ] {
            if let Err(e) = intent_text(value, name, false) {
                reply.error(&e.code, e.message, e.stage, e.recoverable);
                return reply.finish();
            }
        }
        let Some(target) = self.chensiling_target(&mut reply) else {
            return reply.finish();
        };
        if dump_refused(&mut reply, &target, "Breakpoints") {
            return reply.finish();
        }
        let id = id.trim().to_string();
        let command = match a.action {
            BreakpointAction::List => "bl".to_string(),
            BreakpointAction::Set if !condition.trim().is_empty() => {
                reply.error(
                    "not_available",
                    "ntdbg's bp has no condition (/w): set it without one.",
                    Stage::Input,
                    true,
                );
                return reply.finish();
            }
            BreakpointAction::Set => {
                let Some(address) = self
                    .chensiling_resolve(&target, &target_text, false, &mut reply)
                    .await
                else {
                    return reply.finish();
                };
                reply
                    .set("input", target_text.trim())
                    .set("resolved_address", address.clone());
                format!("bp {address}")
            }
            action => {
                if id != "*" && (id.is_empty() || !id.chars().all(|c| c.is_ascii_digit())) {
                    reply.error(
                        "invalid_argument",
                        "'id' must be a decimal breakpoint id or '*'.",
                        Stage::Input,
                        true,
                    );
                    return reply.finish();
                }
                let verb = match action {
                    BreakpointAction::Clear => "bc",
                    BreakpointAction::Enable => "be",
                    _ => "bd",
                };
                reply.set("id", id.as_str());
                format!("{verb} {id}")
            }
        };
        let before = self.cs_breakpoints(&target);
        let ran = self
            .chensiling_run(&target, &[command], false, &mut reply)
            .await;
        let after = self.cs_breakpoints(&target);
        let listed: Vec<Value> = after.iter().map(breakpoint_json).collect();
        reply.set("breakpoints", listed);
        if a.action == BreakpointAction::List {
            reply.verification(Verification::NotRequired);
            return reply.finish();
        }
        if !ran.first().is_some_and(|r| r.ok) {
            reply.verification(Verification::Indeterminate).error(
                "verification_not_run",
                "Breakpoint mutation did not complete.",
                Stage::Verification,
                true,
            );
            return reply.finish();
        }
        let address = reply
            .get("resolved_address")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let verified = breakpoint_post_condition(a.action, &address, &id, &before, &after);
        if verified {
            reply.verification(Verification::Verified);
        } else {
            reply.verification(Verification::Failed).error(
                "verification_failed",
                "The breakpoint table after the change does not show it.",
                Stage::Verification,
                false,
            );
        }
        reply.finish()
    }

    /// The user breakpoints of a live target's table (what `bl` lists), typed.
    fn cs_breakpoints(&self, target: &Target) -> Vec<Breakpoint> {
        self.api()
            .sessions()
            .into_iter()
            .find(|s| s.id == target.id)
            .and_then(|s| s.live.clone())
            .map(|live| {
                live.breakpoints()
                    .into_iter()
                    .filter(|b| b.id.is_some())
                    .collect()
            })
            .unwrap_or_default()
    }

    pub(super) async fn cs_write_memory(&self, a: WriteMemoryArgs) -> Envelope {
        let mut reply = Reply::new("windbg_write_memory");
        reply.verification(Verification::NotRun);
        for (value, name) in [(&a.address, "address"), (&a.values, "values")] {
            if let Err(e) = intent_text(value, name, true) {
                reply.error(&e.code, e.message, e.stage, e.recoverable);
                return reply.finish();
            }
        }
        let Some(target) = self.chensiling_target(&mut reply) else {
            return reply.finish();
        };
        reply.set("input", a.address.trim());
        if dump_refused(&mut reply, &target, "Writing memory") {
            return reply.finish();
        }
        reply
            .error(
                "not_available",
                "ntdbg has no memory-write command (eb), so this tool cannot be served.",
                Stage::Target,
                false,
            )
            .core(CoreResult::Unavailable)
            .next(
                "windbg_read_memory",
                args([("address", a.address.trim()), ("format", "byte")]),
                "Read the bytes instead.",
            );
        reply.finish()
    }

    pub(super) async fn cs_sympath(&self, a: SympathArgs) -> Envelope {
        let mut reply = Reply::new("windbg_sympath");
        let (path, module) = (a.path.unwrap_or_default(), a.module.unwrap_or_default());
        let checks = [
            intent_text(&path, "path", a.action == SympathAction::Set),
            if module.trim().is_empty() {
                Ok(())
            } else {
                module_name(&module)
            },
        ];
        for e in checks.iter().filter_map(|c| c.as_ref().err()) {
            reply.error(&e.code, e.message.clone(), e.stage, e.recoverable);
        }
        if reply.has_errors() {
            reply.verification(Verification::NotRun);
            return reply.finish();
        }
        let Some(target) = self.chensiling_target(&mut reply) else {
            return reply.finish();
        };
        let module = module.trim();
        let lm = if module.is_empty() {
            "lm".to_string()
        } else {
            format!("lm m {module}")
        };
        match a.action {
            SympathAction::Show => {
                let ran = self
                    .chensiling_run(&target, &[".sympath".into()], false, &mut reply)
                    .await;
                if let Some(r) = ran.first().filter(|r| r.ok) {
                    reply.set("sympath", r.text.trim());
                }
            }
            SympathAction::Set => {
                let path = path.trim();
                reply.set("requested_path", path);
                let commands = [format!(".sympath {path}"), ".sympath".into()];
                let ran = self
                    .chensiling_run(&target, &commands, false, &mut reply)
                    .await;
                let shown = ran
                    .get(1)
                    .filter(|r| r.ok)
                    .map(|r| r.text.trim().to_string());
                let verification = match &shown {
                    None if ran.first().is_some_and(|r| !r.ok) => Verification::Failed,
                    None => Verification::Indeterminate,
                    // `.sympath` prints the path in effect after its label.
                    Some(text) if text.ends_with(path) => Verification::Verified,
                    Some(_) => Verification::Failed,
                };
                if verification == Verification::Failed && shown.is_some() {
                    reply.error(
                        "verification_failed",
                        "The effective symbol path did not equal the requested path.",
                        Stage::Verification,
                        false,
                    );
                }
                reply
                    .set("sympath", shown.unwrap_or_default())
                    .verification(verification);
            }
            SympathAction::Reload | SympathAction::Check => {
                let reload = a.action == SympathAction::Reload;
                let mut commands = Vec::new();
                if reload {
                    commands.push(if module.is_empty() {
                        ".reload /f".to_string()
                    } else {
                        format!(".reload /f {module}")
                    });
                }
                commands.push(lm);
                let ran = self
                    .chensiling_run(&target, &commands, false, &mut reply)
                    .await;
                let modules: Vec<Value> = ran
                    .last()
                    .filter(|r| r.ok)
                    .and_then(|r| r.get("modules"))
                    .and_then(Value::as_array)
                    .cloned()
                    .unwrap_or_default();
                let states: Vec<&str> = modules
                    .iter()
                    .map(|m| {
                        m.get("symbols")
                            .and_then(Value::as_str)
                            .unwrap_or("unknown")
                    })
                    .collect();
                let missing = states.iter().filter(|s| **s == "none").count();
                if reload {
                    reply.verification(if modules.is_empty() {
                        Verification::Indeterminate
                    } else if missing > 0 {
                        Verification::Failed
                    } else if states.iter().any(|s| *s == "deferred" || *s == "unknown") {
                        Verification::Indeterminate
                    } else {
                        Verification::Verified
                    });
                }
                reply.inference(
                    "symbol_health",
                    json!({ "modules": modules.len(), "without_symbols": missing }),
                    "symbol state of each module in ntdbg's lm result",
                );
                reply
                    .set(
                        "module",
                        if module.is_empty() {
                            Value::Null
                        } else {
                            module.into()
                        },
                    )
                    .set("modules", modules);
            }
        }
        reply.finish()
    }

    pub(super) async fn cs_session(&self, a: SessionArgs) -> Envelope {
        let mut reply = Reply::new("windbg_session");
        let Some(target) = self.chensiling_target(&mut reply) else {
            return reply.finish();
        };
        if a.action == SessionAction::Interrupt {
            if let Some(id) = a
                .command_id
                .as_deref()
                .map(str::trim)
                .filter(|i| !i.is_empty())
            {
                reply.set("requested_command_id", id);
            }
            if !target.live() || target.run_state != "running" {
                reply.error(
                    "no_active_command",
                    "There is no running target or active command to interrupt.",
                    Stage::Input,
                    true,
                );
            } else {
                let params = SessionParams {
                    session_id: target.id.clone(),
                };
                if let Err(e) = self.api().break_in(params).await {
                    reply.tool_error(&e, Stage::Execution, "windbg_session");
                }
            }
        }
        let now = self.cs_refresh(&target);
        let busy = self
            .api()
            .sessions()
            .into_iter()
            .any(|s| s.id == now.id && s.busy());
        reply
            .set("session_state", if busy { "executing" } else { "idle" })
            .set("debugger_connected", true)
            .set("active_command_id", Value::Null)
            .set("interrupt_supported", now.live())
            .set("run_state", now.run_state);
        reply.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bp(id: u32, address: u64, enabled: bool) -> Breakpoint {
        Breakpoint {
            id: Some(id),
            address,
            kind: BreakKind::Software,
            enabled,
            hits: 0,
            owner: None,
        }
    }

    #[test]
    fn breakpoint_changes_are_checked_against_the_table() {
        let set = BreakpointAction::Set;
        assert!(breakpoint_post_condition(
            set,
            "0x401000",
            "",
            &[],
            &[bp(0, 0x401000, true)]
        ));
        assert!(!breakpoint_post_condition(
            set,
            "0x401000",
            "",
            &[],
            &[bp(0, 0x402000, true)]
        ));
        let before = [bp(0, 0x401000, true), bp(1, 0x402000, true)];
        let clear = BreakpointAction::Clear;
        assert!(breakpoint_post_condition(
            clear,
            "",
            "0",
            &before,
            &before[1..]
        ));
        assert!(!breakpoint_post_condition(clear, "", "0", &before, &before));
        assert!(!breakpoint_post_condition(clear, "", "7", &before, &before));
        assert!(breakpoint_post_condition(clear, "", "*", &before, &[]));
        let disabled = [bp(0, 0x401000, false), bp(1, 0x402000, false)];
        let disable = BreakpointAction::Disable;
        assert!(breakpoint_post_condition(
            disable, "", "*", &before, &disabled
        ));
        assert!(breakpoint_post_condition(
            disable,
            "",
            "1",
            &before,
            &[before[0].clone(), disabled[1].clone()]
        ));
        assert!(!breakpoint_post_condition(
            BreakpointAction::Enable,
            "",
            "1",
            &before,
            &disabled
        ));
        assert!(!breakpoint_post_condition(disable, "", "*", &[], &[]));
    }
}
