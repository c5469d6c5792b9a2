//! `windbg_context`, `windbg_analyze` and `windbg_backtrace`: the target's state, the crash
//! analysis and the stack, from the typed results of `r`, `k`, `.lastevent`, `lm`, `~`,
//! `!process`, `!analyze`, `.frame` and `dv`.

use super::args::{count, AnalyzeArgs, AnalyzeScope, BacktraceArgs, ContextArgs, ContextScope};
use super::envelope::{args, Envelope, Reply, Stage, Verification};
use super::run::{Ran, Target};
use crate::Host;
use serde_json::{json, Value};

/// Frames Windbg-MCP's crash analysis shows.
const CRASH_FRAMES: u64 = 30;

/// A frame as Windbg-MCP's `kP` shows it: index, child SP, return address and call site
/// (`module!function+0xoff [file @ line]`), plus ntdbg's own facts on how it was found.
fn frame(f: &Value) -> Value {
    let text = |key: &str| f.get(key).and_then(Value::as_str).unwrap_or("");
    let hex = |key: &str| u64::from_str_radix(text(key).trim_start_matches("0x"), 16).ok();
    let mut call_site = match (text("module"), text("function")) {
        ("", "") => text("instruction").to_string(),
        // No symbol: the offset from the module's base, as WinDbg writes `module+0x1a2b`.
        (module, "") => match (hex("instruction"), hex("module_base")) {
            (Some(at), Some(base)) if at >= base => format!("{module}+0x{:x}", at - base),
            _ => text("instruction").to_string(),
        },
        (module, function) => format!("{module}!{function}+{}", text("function_offset")),
    };
    if let (file, Some(line)) = (text("source_file"), f.get("source_line")) {
        if !file.is_empty() {
            call_site.push_str(&format!(" [{file} @ {line}]"));
        }
    }
    let index = f.get("index").and_then(Value::as_u64).unwrap_or(0);
    json!({
        "index": format!("{index:02x}"),
        "child_sp": f.get("stack_pointer"),
        "ret_addr": f.get("return_address"),
        "call_site": call_site,
        "module": f.get("module"),
        "function": f.get("function"),
        "instruction": f.get("instruction"),
        "found_by": f.get("found_by"),
        "trust": f.get("trust"),
    })
}

/// The frames of a typed stack result.
fn frames(ran: Option<&Ran>) -> Vec<Value> {
    ran.and_then(|r| r.get("frames"))
        .and_then(Value::as_array)
        .map(|f| f.iter().map(frame).collect())
        .unwrap_or_default()
}

/// Puts at most `limit` items of the typed result's `key` at `data.<name>`, with the count
/// and a limitation when cut.
fn bounded(reply: &mut Reply, ran: Option<&Ran>, key: &str, name: &str, limit: u64) {
    let Some(items) = ran.and_then(|r| r.get(key)).and_then(Value::as_array) else {
        return;
    };
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let shown: Vec<Value> = items.iter().take(limit).cloned().collect();
    reply
        .set(name, shown)
        .set(&format!("{name}_total"), items.len())
        .set(&format!("{name}_truncated"), items.len() > limit);
    if items.len() > limit {
        reply.limitation(
            "list_truncated",
            format!("{} of {} {name} shown", limit, items.len()),
            Some(&format!("data.{name}")),
        );
    }
}

impl Host {
    pub(super) async fn cs_context(&self, a: ContextArgs) -> Envelope {
        let mut reply = Reply::new("windbg_context");
        let limits = (
            count(&a.module_limit, "module_limit", Some(20), 1, 500),
            count(&a.list_limit, "list_limit", Some(50), 1, 500),
        );
        let (module_limit, list_limit) = match limits {
            (Ok(m), Ok(l)) => (m, l),
            (m, l) => {
                for e in [m.err(), l.err()].into_iter().flatten() {
                    reply.error(&e.code, e.message, e.stage, e.recoverable);
                }
                return reply.finish();
            }
        };
        let Some(target) = self.chensiling_target(&mut reply) else {
            return reply.finish();
        };
        let threads = matches!(a.scope, ContextScope::Threads | ContextScope::All);
        let processes = matches!(a.scope, ContextScope::Processes | ContextScope::All);
        let include_raw = a.include_raw.unwrap_or(false);
        let essentials: Vec<String> = ["vertarget", "r", "k 0n1"].map(String::from).to_vec();
        let mut ran = self
            .chensiling_run(&target, &essentials, include_raw, &mut reply)
            .await;
        let mut commands = essentials;
        // The rest each on its own: a dump without an exception has no last event, a kernel
        // dump without its PDB no process list; what is missing is a limitation.
        let mut optional = vec![(".lastevent", "no_last_event", "data.last_event")];
        if a.include_modules {
            optional.push(("lm", "modules_unavailable", "data.modules"));
        }
        if threads {
            optional.push(("~", "threads_unavailable", "data.threads"));
        }
        if processes && target.target_mode() == "kernel" {
            optional.push(("!process 0 0", "processes_unavailable", "data.processes"));
        }
        for (command, code, path) in optional {
            let one = self
                .chensiling_run(&target, &[command.to_string()], include_raw, &mut reply)
                .await;
            if let Some(failed) = one.first().filter(|r| !r.ok) {
                let why = failed
                    .error
                    .clone()
                    .unwrap_or_else(|| format!("{command} did not run"));
                reply.tolerate_last(code, why, path);
            }
            commands.push(command.to_string());
            ran.extend(one);
        }
        let by = |name: &str| {
            commands
                .iter()
                .position(|c| c == name)
                .and_then(|i| ran.get(i))
        };
        reply.set("debugger_connected", true);
        target.describe(&mut reply);
        reply
            .set("target_state", target_state(&target))
            .set("target_file", target.path.clone())
            .set("arch", target.arch.clone());
        // Windbg-MCP's `target` is vertarget's own words (OS, CPU, times): kept as printed.
        if let Some(version) = by("vertarget").filter(|r| r.ok) {
            reply.set("target", version.text.trim());
        }
        if let Some(regs) = by("r").and_then(|r| r.get("registers")) {
            reply.set("registers", regs.clone());
        }
        if let Some(top) = frames(by("k 0n1")).into_iter().next() {
            reply.set("current", top);
        }
        if let Some(event) = by(".lastevent").and_then(|r| r.typed.clone()) {
            reply.set("last_event", event);
        }
        bounded(&mut reply, by("lm"), "modules", "modules", module_limit);
        bounded(&mut reply, by("~"), "threads", "threads", list_limit);
        bounded(
            &mut reply,
            by("!process 0 0"),
            "processes",
            "processes",
            list_limit,
        );
        if processes && target.target_mode() != "kernel" {
            reply.limitation(
                "command_unsupported_for_target",
                "the process list (!process 0 0) needs a kernel target",
                Some("data.processes"),
            );
        }
        if target.session_kind().ends_with("_dump") {
            reply.next(
                "windbg_analyze",
                args([("scope", "crash")]),
                "The target is a dump: analyse the crash.",
            );
        }
        reply.finish()
    }

    pub(super) async fn cs_analyze(&self, a: AnalyzeArgs) -> Envelope {
        let mut reply = Reply::new("windbg_analyze");
        let Some(target) = self.chensiling_target(&mut reply) else {
            return reply.finish();
        };
        let scope = match a.scope {
            AnalyzeScope::Crash => "crash",
            AnalyzeScope::Hang => "hang",
            AnalyzeScope::Quick => "quick",
        };
        reply.set("scope", scope);
        // ntdbg's `!analyze` has no -hang switch: a hang is read from the wait chains.
        let first = match a.scope {
            AnalyzeScope::Hang => "!waits",
            _ => "!analyze -v",
        };
        let ran = self
            .chensiling_run(
                &target,
                &[first.to_string()],
                a.include_raw.unwrap_or(false),
                &mut reply,
            )
            .await;
        let Some(result) = ran.first().filter(|r| r.ok) else {
            return reply.finish();
        };
        if a.scope == AnalyzeScope::Hang {
            if let Some(threads) = result.get("threads") {
                reply.set("waits", threads.clone());
            }
            for cycle in result
                .get("deadlocks")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                reply.inference(
                    "deadlock",
                    cycle.get("text").cloned().unwrap_or(Value::Null),
                    cycle.get("basis").and_then(Value::as_str).unwrap_or(""),
                );
            }
            return reply.finish();
        }
        target.describe(&mut reply);
        let exception = result
            .get("event")
            .and_then(|e| e.get("type"))
            .and_then(Value::as_str)
            == Some("exception");
        // The crash scope of a user dump walks the exception context's stack (`backtrace`):
        // the report's own stack would repeat it.
        let exception_context =
            a.scope == AnalyzeScope::Crash && exception && target.session_kind() == "user_dump";
        analysis_data(&mut reply, result, !exception_context);
        if a.scope == AnalyzeScope::Crash {
            let mut context_kind = "current_context";
            if exception_context {
                let commands = [".ecxr", "r", &format!("k 0n{CRASH_FRAMES}")].map(String::from);
                let ran = self
                    .chensiling_run(
                        &target,
                        &commands,
                        a.include_raw.unwrap_or(false),
                        &mut reply,
                    )
                    .await;
                if ran.first().is_some_and(|r| r.ok) {
                    context_kind = "exception_context";
                }
                if let Some(regs) = ran.get(1).and_then(|r| r.get("registers")) {
                    reply.set("registers", regs.clone());
                }
                reply.set("backtrace", frames(ran.get(2)));
            }
            reply.set("context_kind", context_kind);
        }
        reply.next(
            "windbg_context",
            args([("scope", "default")]),
            "Correlate analysis evidence with current target context.",
        );
        if exception {
            reply.next(
                "windbg_disassemble",
                args([("at", "@rip"), ("count", "8")]),
                "Inspect the faulting instruction region.",
            );
        }
        reply.finish()
    }

    pub(super) async fn cs_backtrace(&self, a: BacktraceArgs) -> Envelope {
        let mut reply = Reply::new("windbg_backtrace");
        if let Some(frame) = a.frame.as_deref().filter(|f| !f.trim().is_empty()) {
            return self.cs_frame_locals(frame, reply).await;
        }
        let depth = match count(&a.depth, "depth", Some(20), 1, 200) {
            Ok(d) => d,
            Err(e) => {
                reply.error(&e.code, e.message, e.stage, e.recoverable);
                return reply.finish();
            }
        };
        let show_params = match a.show_params.trim().to_ascii_lowercase().as_str() {
            "true" | "1" | "yes" | "on" => true,
            "false" | "0" | "no" | "off" => false,
            _ => {
                reply.error(
                    "invalid_argument",
                    "'show_params' must be true or false.",
                    Stage::Input,
                    true,
                );
                return reply.finish();
            }
        };
        let Some(target) = self.chensiling_target(&mut reply) else {
            return reply.finish();
        };
        let command = format!("{} 0n{depth}", if show_params { "kP" } else { "k" });
        let ran = self
            .chensiling_run(&target, &[command], false, &mut reply)
            .await;
        let stack = ran.first().filter(|r| r.ok);
        reply.set("depth", depth).set("show_params", show_params);
        if let Some(stack) = stack {
            let mut frames = frames(Some(stack));
            if show_params {
                let raw = stack.get("frames").and_then(Value::as_array);
                for (f, typed) in frames.iter_mut().zip(raw.into_iter().flatten()) {
                    f["parameters"] = typed.get("args").cloned().unwrap_or(Value::Null);
                }
            }
            if let Some(note) = stack.get("note").filter(|n| !n.is_null()) {
                reply.limitation(
                    "stack_note",
                    note.as_str().unwrap_or(""),
                    Some("data.frames"),
                );
            }
            let any = !frames.is_empty();
            reply.set("frames", frames).set("has_params", show_params);
            if any {
                reply.next(
                    "windbg_disassemble",
                    args([("at", "@rip"), ("count", "8")]),
                    "Inspect instructions near the current frame.",
                );
            }
        }
        reply.finish()
    }

    /// `windbg_backtrace(frame=N)`: selects frame N and reads its locals; the selection is
    /// verified against the frame `.frame` reports and the one `dv` read.
    async fn cs_frame_locals(&self, frame: &str, mut reply: Reply) -> Envelope {
        let n = match count(frame, "frame", None, 0, 200) {
            Ok(n) => n,
            Err(e) => {
                reply.error(&e.code, e.message, e.stage, e.recoverable);
                return reply.finish();
            }
        };
        reply.set("requested_frame", n);
        let Some(target) = self.chensiling_target(&mut reply) else {
            return reply.finish();
        };
        let commands = [format!(".frame 0n{n}"), "dv /t /i".to_string()];
        let ran = self
            .chensiling_run(&target, &commands, false, &mut reply)
            .await;
        let selected = ran
            .first()
            .filter(|r| r.ok)
            .and_then(|r| r.get("frames"))
            .and_then(Value::as_array)
            .and_then(|f| f.first())
            .and_then(|f| f.get("index"))
            .and_then(Value::as_u64);
        let Some(selected) = selected else {
            let rejected = ran.first().is_some_and(|r| !r.ok);
            reply.verification(if rejected {
                Verification::Failed
            } else {
                Verification::Indeterminate
            });
            if rejected {
                reply.error(
                    "frame_selection_failed",
                    "The debugger rejected the requested frame.",
                    Stage::Verification,
                    false,
                );
            }
            return reply.finish();
        };
        reply.set("selected_frame", selected);
        let locals = ran.get(1).filter(|r| r.ok);
        let read_frame = locals.and_then(|r| r.get("frame")).and_then(Value::as_u64);
        if selected != n || read_frame.is_some_and(|f| f != n) {
            reply.verification(Verification::Failed).error(
                "frame_selection_mismatch",
                "The debugger selected a different frame than requested.",
                Stage::Verification,
                false,
            );
            return reply.finish();
        }
        reply.set("frame", n).verification(Verification::Verified);
        if let Some(locals) = locals {
            reply.set(
                "function",
                locals.get("function").cloned().unwrap_or(Value::Null),
            );
            reply.set(
                "locals",
                locals
                    .get("variables")
                    .cloned()
                    .unwrap_or_else(|| json!([])),
            );
        }
        reply.finish()
    }
}

/// `broken` for a stopped target (a dump never runs), `running` for a running live one.
fn target_state(target: &Target) -> &'static str {
    match target.run_state {
        "running" => "running",
        "dump" | "halted" => "broken",
        _ => "unknown",
    }
}

/// The analysis report's facts under Windbg-MCP's names (its stack too when `with_stack`),
/// its inferences and limitations.
fn analysis_data(reply: &mut Reply, report: &Ran, with_stack: bool) {
    let get = |key: &str| report.get(key).cloned().unwrap_or(Value::Null);
    let event = get("event");
    let stack = get("stack");
    let top = stack.as_array().and_then(|s| s.first()).cloned();
    if event.get("type").and_then(Value::as_str) == Some("bugcheck") {
        reply.set(
            "bugcheck_code",
            event.get("code").cloned().unwrap_or(Value::Null),
        );
    }
    if let Some(top) = &top {
        let module = top.get("module").and_then(Value::as_str).unwrap_or("");
        let function = top.get("function").and_then(Value::as_str).unwrap_or("");
        let offset = top.get("offset").and_then(Value::as_str).unwrap_or("");
        reply.set(
            "faulting_ip",
            json!({
                "module": module,
                "rest": format!("{function}+{offset}"),
                "address": top.get("address"),
            }),
        );
    }
    if let Some(module) = report.get("faulting_module").filter(|m| !m.is_null()) {
        reply.set(
            "image_name",
            module.get("name").cloned().unwrap_or(Value::Null),
        );
        reply.set("faulting_module", module.clone());
    }
    reply
        .set("event", event)
        .set("signature", get("signature"))
        .set("dump", get("dump"));
    if with_stack {
        reply.set("stack", stack);
    }
    for inference in report
        .get("inferences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        reply.inference(
            inference
                .get("kind")
                .and_then(Value::as_str)
                .unwrap_or("inference"),
            inference.get("text").cloned().unwrap_or(Value::Null),
            inference.get("basis").and_then(Value::as_str).unwrap_or(""),
        );
    }
    for limitation in report
        .get("limitations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
    {
        reply.limitation("analysis_limitation", limitation, None);
    }
}
