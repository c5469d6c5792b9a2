//! `windbg_thread`, `windbg_memory_mapping`, `windbg_pool`, `windbg_blackbox` and
//! `windbg_image_verify`: the kernel-only inspections. On a user-mode target each answers
//! `command_unsupported_for_target`; where ntdbg has no engine for the command (`!pte`,
//! `!pool`, `!blackbox*`, `!chkimg`) it answers `not_available` naming what to use instead.

use super::args::{intent_text, BlackboxArgs, MappingArgs, ModuleArgs, PoolArgs, ThreadArgs};
use super::code::module_name;
use super::envelope::{args, CoreResult, Envelope, Reply, Stage};
use super::run::Target;
use crate::Host;
use serde_json::{Map, Value};

/// Refuses a kernel-only tool on a user-mode target; says whether it did.
fn user_mode_refused(reply: &mut Reply, target: &Target, what: &str) -> bool {
    if target.target_mode() == "kernel" {
        return false;
    }
    reply
        .error(
            "command_unsupported_for_target",
            format!("{what} requires a kernel target."),
            Stage::Target,
            true,
        )
        .core(CoreResult::Unavailable)
        .next(
            "windbg_backtrace",
            Map::new(),
            "This is a user-mode target: inspect its stack and memory instead.",
        );
    true
}

/// Answers that ntdbg has no engine for `command`, and what to call instead.
fn not_available(reply: &mut Reply, command: &str, instead: (&str, Map<String, Value>, &str)) {
    reply
        .error(
            "not_available",
            format!("ntdbg does not implement {command}, so this tool cannot be served."),
            Stage::Target,
            false,
        )
        .core(CoreResult::Unavailable)
        .next(instead.0, instead.1, instead.2);
}

impl Host {
    pub(super) async fn cs_thread(&self, a: ThreadArgs) -> Envelope {
        let mut reply = Reply::new("windbg_thread");
        let include_raw = a.include_raw.unwrap_or(false);
        let thread = a.thread.unwrap_or_default();
        if let Err(e) = intent_text(&thread, "thread", false) {
            reply.error(&e.code, e.message, e.stage, e.recoverable);
            return reply.finish();
        }
        let Some(target) = self.chensiling_target(&mut reply) else {
            return reply.finish();
        };
        let input = if thread.trim().is_empty() {
            "current"
        } else {
            thread.trim()
        };
        reply.set("input", input);
        target.describe(&mut reply);
        if user_mode_refused(&mut reply, &target, "Kernel thread inspection") {
            return reply.finish();
        }
        if thread.trim().is_empty() {
            not_available(
                &mut reply,
                "!thread without an address (the current kernel thread)",
                (
                    "windbg_context",
                    args([("scope", "processes")]),
                    "List the processes and pass an _ETHREAD address as 'thread'.",
                ),
            );
            return reply.finish();
        }
        let Some(address) = self
            .chensiling_resolve(&target, &thread, include_raw, &mut reply)
            .await
        else {
            return reply.finish();
        };
        reply.set("resolved_thread", address.clone());
        let command = format!("!thread {address}");
        let ran = self
            .chensiling_run(&target, &[command], include_raw, &mut reply)
            .await;
        if let Some(thread) = ran.first().filter(|r| r.ok).and_then(|r| r.typed.clone()) {
            reply.set("available", true).set("thread", thread);
        }
        reply.finish()
    }

    pub(super) async fn cs_memory_mapping(&self, a: MappingArgs) -> Envelope {
        let mut reply = Reply::new("windbg_memory_mapping");
        if let Err(e) = intent_text(&a.address, "address", true) {
            reply.error(&e.code, e.message, e.stage, e.recoverable);
            return reply.finish();
        }
        let Some(target) = self.chensiling_target(&mut reply) else {
            return reply.finish();
        };
        reply.set("input", a.address.trim());
        target.describe(&mut reply);
        if !user_mode_refused(&mut reply, &target, "Page-table inspection (!pte)") {
            not_available(
                &mut reply,
                "!pte",
                (
                    "windbg_read_memory",
                    args([("address", a.address.trim())]),
                    "Read the address: a page the dump lacks is reported as dump_data_unavailable.",
                ),
            );
        }
        reply.finish()
    }

    pub(super) async fn cs_pool(&self, a: PoolArgs) -> Envelope {
        let mut reply = Reply::new("windbg_pool");
        if let Err(e) = intent_text(&a.address, "address", true) {
            reply.error(&e.code, e.message, e.stage, e.recoverable);
            return reply.finish();
        }
        let Some(target) = self.chensiling_target(&mut reply) else {
            return reply.finish();
        };
        let force = a.force.unwrap_or(false);
        reply.set("input", a.address.trim()).set("forced", force);
        target.describe(&mut reply);
        if user_mode_refused(&mut reply, &target, "Pool inspection") {
            return reply.finish();
        }
        let supported = target.capabilities()["supports_kernel_pool"] == Value::Bool(true);
        if !supported && !force {
            let message = "This dump type does not reliably retain pool metadata; set force=true to attempt the command anyway.";
            reply
                .error(
                    "command_unsupported_for_dump_type",
                    message,
                    Stage::Target,
                    true,
                )
                .core(CoreResult::Unavailable);
            reply.limitation("dump_data_unavailable", message, Some("data.allocations"));
            return reply.finish();
        }
        not_available(
            &mut reply,
            "!pool",
            (
                "windbg_read_memory",
                args([("address", a.address.trim()), ("format", "qword")]),
                "Read the pool header's memory directly.",
            ),
        );
        reply.finish()
    }

    pub(super) async fn cs_blackbox(&self, a: BlackboxArgs) -> Envelope {
        let mut reply = Reply::new("windbg_blackbox");
        let Some(target) = self.chensiling_target(&mut reply) else {
            return reply.finish();
        };
        let kind = serde_json::to_value(a.kind).unwrap_or(Value::Null);
        reply.set("kind", kind).set("records", Map::new());
        target.describe(&mut reply);
        if !user_mode_refused(&mut reply, &target, "Kernel blackbox records") {
            not_available(
                &mut reply,
                "!blackboxpnp, !blackboxntfs and !blackboxwinlogon",
                (
                    "windbg_analyze",
                    args([("scope", "crash")]),
                    "The bugcheck analysis covers what ntdbg reads from a kernel dump.",
                ),
            );
        }
        reply.finish()
    }

    pub(super) async fn cs_image_verify(&self, a: ModuleArgs) -> Envelope {
        let mut reply = Reply::new("windbg_image_verify");
        if let Err(e) = module_name(&a.module) {
            reply.error(&e.code, e.message, e.stage, e.recoverable);
            return reply.finish();
        }
        if self.chensiling_target(&mut reply).is_none() {
            return reply.finish();
        }
        reply.set("input", a.module.trim());
        not_available(
            &mut reply,
            "!chkimg",
            (
                "windbg_module",
                args([("module", a.module.trim())]),
                "Check the module's identity (timestamp, size, symbols) instead.",
            ),
        );
        reply.finish()
    }
}
