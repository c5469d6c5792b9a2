//! The windbg-mcp profile: `wm_session`, `wm_run_cmd`, `wm_wait_event`, `wm_break_in`,
//! `wm_analyze_crash`, `wm_detach`, `wm_shutdown`, all on one implicit session that
//! `ntdbg mcp --profile windbg-mcp --dump PATH` (or `--attach TARGET`) opens at startup.
//!
//! Answers are JSON objects, as windbg-mcp's are: the text is the compact JSON and the same
//! value is the structured content. Failures are ntdbg's tool errors.

mod args;
mod implicit;

pub(crate) use implicit::Slot;
pub use implicit::{ImplicitSession, StartupTarget};

use args::{AnalyzeArgs, BreakInArgs, RunCmdArgs, WaitEventArgs};
use ntdbg_mcp::Api;

use crate::console_text;
use crate::Host;
use ntdbg_engine::ErrorCode;
use ntdbg_mcp::dto::{
    AnalyzeCrashParams, AttachParams, CloseSessionParams, CommandStatus, OpenDumpParams,
    OutputFormat, RunCommandParams, SessionParams, WaitForEventParams,
};
use ntdbg_mcp::floor_char;
use ntdbg_mcp::limits::PREVIEW_THRESHOLD;
use ntdbg_mcp::schema;
use ntdbg_mcp::BatchOutput;
use ntdbg_mcp::ToolError;
use rmcp::handler::server::tool::IntoCallToolResult;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock};
use rmcp::{tool, tool_router};
use serde_json::{json, Value};
use std::time::Duration;

/// The workflow sentence of the server instructions.
pub const WORKFLOW: &str = "Windows debugging (ntdbg, windbg-mcp tool names) on the one target this server opened at startup. Workflow: wm_session -> wm_analyze_crash -> wm_run_cmd (\"kb\", \"r\", \"lm\", \"!analyze -v\").";

const WM_SESSION: &str = "Snapshot of the debugger state: whether a target is attached, its kind (dump or live), file, arch and execution status. Cheap.";
const WM_RUN_CMD: &str = "Run WinDbg commands on the target, separated by ';' or newlines (at most 64; a failure stops the rest). Returns per-command results and the combined output; output_file also writes the whole output to a new file.";
const WM_WAIT_EVENT: &str = "Block until a debugger event of one of the kinds arrives on a live target. Dump targets never run, so this answers an error for them.";
const WM_BREAK_IN: &str =
    "Halt a running live target. Dump targets never run, so this answers an error for them.";
const WM_ANALYZE_CRASH: &str = "Structured crash report (like !analyze -v, kb and lm): exception or bugcheck, faulting module, stack, signature. output_file also writes the raw command output to a new file.";
const WM_DETACH: &str =
    "Detach from the target (a dump is closed); the server keeps running without a target.";
const WM_SHUTDOWN: &str = "End this server's debugging session: the target is released and every later call answers disconnected.";

/// Event kinds `wm_wait_event` accepts.
const EVENT_KINDS: &[&str] = &[
    "bugcheck",
    "break",
    "breakpoint_hit",
    "module_load",
    "module_unload",
    "session_status",
    "state_change",
];
/// Default batch time limit of `wm_run_cmd`.
const RUN_TIMEOUT_MS: u64 = 30_000;
/// Longest `wm_run_cmd` time limit.
const MAX_RUN_TIMEOUT_MS: u64 = 120_000;
/// Default `wm_wait_event` wait.
const WAIT_TIMEOUT_MS: u64 = 60_000;
/// Default `wm_break_in` wait.
const BREAK_TIMEOUT_MS: u64 = 30_000;
/// Combined output up to this size is sent whole when no output_file is asked for.
const WHOLE_OUTPUT: usize = 256 * 1024;
/// Default head of a cut combined output.
const PREVIEW_BYTES: usize = 8192;
/// Largest head a caller may ask for.
const MAX_PREVIEW_BYTES: usize = 1 << 20;
/// Tail of a cut combined output.
const TAIL_BYTES: usize = 2048;
/// The commands whose raw output `wm_analyze_crash` writes to its output_file.
const ANALYZE_COMMANDS: &str = ".lastevent; !analyze -v; kb; lm";

/// A windbg-mcp answer: a JSON object as text and as structured content.
#[derive(Debug)]
pub struct WmReply {
    value: Value,
    is_error: bool,
}

impl WmReply {
    fn ok(value: Value) -> WmReply {
        WmReply {
            value,
            is_error: false,
        }
    }
}

impl IntoCallToolResult for WmReply {
    fn into_call_tool_result(self) -> Result<CallToolResponse, rmcp::ErrorData> {
        let text = self.value.to_string();
        let mut result = if self.is_error {
            CallToolResult::structured_error(self.value)
        } else {
            CallToolResult::structured(self.value)
        };
        result.content = vec![ContentBlock::text(text)];
        Ok(result.into())
    }
}

fn timed_out(what: &str, ms: u64) -> ToolError {
    ToolError::new(
        ErrorCode::Timeout,
        format!("{what} did not finish within {ms} ms"),
    )
    .with_hint("raise timeout_ms")
}

/// Whether the session `id` is a kernel one.
fn is_kernel(api: &Api, id: &str) -> bool {
    api.session(id).is_ok_and(|s| s.kind.starts_with("kernel"))
}

/// The head and tail of `text` around a marker, or all of it when it fits `head + tail`.
fn head_tail(text: &str, head: usize, tail: usize) -> (String, bool) {
    if text.len() <= head + tail {
        return (text.to_string(), false);
    }
    let head_end = floor_char(text, head);
    let tail_start = floor_char(text, text.len() - tail).max(head_end);
    let omitted = tail_start - head_end;
    let out = format!(
        "{}\n[...truncated {omitted} bytes...]\n{}",
        &text[..head_end],
        &text[tail_start..]
    );
    (out, true)
}

/// The windbg-mcp shape of a batch result.
fn run_cmd_value(ran: &BatchOutput, kernel: bool, preview_bytes: usize) -> Value {
    let batch = &ran.rendered.value;
    let full = console_text(ran, kernel);
    let bytes_total = full.len();
    let (output, truncated) = if batch.output_file.is_none() && bytes_total <= WHOLE_OUTPUT {
        (full, false)
    } else {
        head_tail(&full, preview_bytes, TAIL_BYTES)
    };
    let failed = batch
        .results
        .iter()
        .position(|r| matches!(r.status, CommandStatus::Failed | CommandStatus::TimedOut));
    // Each command's own output, cut here (not the `run_command` preview, whose marker names
    // a tool this profile does not have).
    let results: Vec<Value> = batch
        .results
        .iter()
        .zip(&ran.full)
        .map(|(r, whole)| {
            let (text, truncated) =
                head_tail(&whole.text, PREVIEW_THRESHOLD - TAIL_BYTES, TAIL_BYTES);
            json!({
                "index": r.index,
                "command": r.command,
                "status": r.status,
                "output": text,
                "truncated": truncated,
                "error": r.error,
            })
        })
        .collect();
    let mut value = json!({
        "ok": failed.is_none(),
        "commands_total": batch.results.len(),
        "commands_executed": batch.commands_executed,
        "commands_skipped": batch.commands_skipped,
        "results": results,
        "output": output,
        "bytes_total": bytes_total,
        "truncated_in_response": truncated,
        "exec_status_after": "BREAK",
    });
    if let Some(index) = failed {
        value["failed_command_index"] = json!(index);
        value["err"] = json!(batch.results[index].error);
    }
    if let Some(f) = &batch.output_file {
        value["output_file"] = json!(f.path);
        value["output_file_written"] = json!(f.written);
        if let Some(e) = &f.error {
            value["output_file_error"] = json!(e);
        }
    }
    value
}

// The macro adds public `*_tool_attr` functions without docs.
#[allow(missing_docs)]
#[tool_router(router = windbg_mcp_tools, vis = "pub(crate)")]
impl Host {
    #[tool(
        description = WM_SESSION,
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn wm_session(&self) -> Result<WmReply, ToolError> {
        let id = match self.implicit().id() {
            Ok(id) => id,
            Err(e) if e.code == ErrorCode::NotAttached => {
                return Ok(WmReply::ok(json!({
                    "attached": false,
                    "target_kind": "none",
                    "exec_status": "NO_DEBUGGEE",
                    "reason": e.message,
                })));
            }
            Err(e) => return Err(e),
        };
        // Looked up without counting as a use, as `list_sessions` does.
        let slot = self
            .api()
            .sessions()
            .into_iter()
            .find(|s| s.id == id)
            .ok_or_else(|| {
                ToolError::new(
                    ErrorCode::NotAttached,
                    "the target's session is no longer open",
                )
                .with_hint("restart the server to open the target again")
            })?;
        let live = slot.kind == "live";
        Ok(WmReply::ok(json!({
            "attached": true,
            "target_kind": if live { "live" } else { "dump" },
            "dump_kind": slot.kind,
            "target": slot.path.display().to_string(),
            "arch": slot.arch,
            "exec_status": if slot.run_state() == "running" { "GO" } else { "BREAK" },
            "session_id": slot.id,
        })))
    }

    #[tool(
        input_schema = schema::input::<RunCmdArgs>(),
        description = WM_RUN_CMD,
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = true)
    )]
    async fn wm_run_cmd(
        &self,
        Parameters(a): Parameters<RunCmdArgs>,
    ) -> Result<WmReply, ToolError> {
        let id = self.implicit().id()?;
        let kernel = is_kernel(self.api(), &id);
        let params = RunCommandParams {
            session_id: id,
            command: a.cmd,
            timeout_ms: Some(
                a.timeout_ms
                    .unwrap_or(RUN_TIMEOUT_MS)
                    .clamp(1, MAX_RUN_TIMEOUT_MS),
            ),
            format: OutputFormat::Text,
            output_file: a.output_file,
            // windbg-mcp's batches stop at the first failure (failed_command_index).
            on_error: Some(ntdbg_mcp::dto::OnError::Stop),
        };
        let batch = self.api().run_batch(params).await?;
        let preview = a
            .preview_bytes
            .map_or(PREVIEW_BYTES, |b| {
                usize::try_from(b).unwrap_or(MAX_PREVIEW_BYTES)
            })
            .min(MAX_PREVIEW_BYTES);
        let value = run_cmd_value(&batch, kernel, preview);
        let is_error = value["ok"] == json!(false);
        Ok(WmReply { value, is_error })
    }

    #[tool(
        input_schema = schema::input::<WaitEventArgs>(),
        description = WM_WAIT_EVENT,
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = false, open_world_hint = true)
    )]
    async fn wm_wait_event(
        &self,
        Parameters(a): Parameters<WaitEventArgs>,
    ) -> Result<WmReply, ToolError> {
        if a.kinds.is_empty() {
            return Err(ToolError::invalid_arguments(
                "kinds must name at least one event kind",
            ));
        }
        if let Some(bad) = a.kinds.iter().find(|k| !EVENT_KINDS.contains(&k.as_str())) {
            return Err(ToolError::new(
                ErrorCode::InvalidArg,
                format!("unknown event kind {bad:?}"),
            )
            .with_hint(format!("kinds are: {}", EVENT_KINDS.join(", "))));
        }
        let id = self.implicit().id()?;
        let timeout_ms = a.timeout_ms.unwrap_or(WAIT_TIMEOUT_MS).max(1);
        let now_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
        let params = WaitForEventParams {
            session_id: id,
            timeout_ms: Some(timeout_ms),
            since_ms: a.since_ms.map(|since| now_ms.saturating_sub(since)),
        };
        let stopped = tokio::time::timeout(
            Duration::from_millis(timeout_ms),
            self.api().wait_for_event(params),
        )
        .await
        .map_err(|_| timed_out("wm_wait_event", timeout_ms))??;
        // A stop is a break; a target still running when the wait ends changed state only.
        let kind = if stopped.value.run_state == "running" {
            "state_change"
        } else {
            "break"
        };
        Ok(WmReply::ok(json!({
            "kind": kind,
            "run_state": stopped.value.run_state,
            "events": stopped.value.events,
        })))
    }

    #[tool(
        input_schema = schema::input::<BreakInArgs>(),
        description = WM_BREAK_IN,
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = true, open_world_hint = true)
    )]
    async fn wm_break_in(
        &self,
        Parameters(a): Parameters<BreakInArgs>,
    ) -> Result<WmReply, ToolError> {
        let id = self.implicit().id()?;
        let timeout_ms = a.timeout_ms.unwrap_or(BREAK_TIMEOUT_MS).max(1);
        let stopped = tokio::time::timeout(
            Duration::from_millis(timeout_ms),
            self.api().break_in(SessionParams { session_id: id }),
        )
        .await
        .map_err(|_| timed_out("wm_break_in", timeout_ms))??;
        Ok(WmReply::ok(json!({
            "ok": true,
            "current_status": "BREAK",
            "run_state": stopped.value.run_state,
            "events": stopped.value.events,
        })))
    }

    #[tool(
        input_schema = schema::input::<AnalyzeArgs>(),
        description = WM_ANALYZE_CRASH,
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = true, open_world_hint = true)
    )]
    async fn wm_analyze_crash(
        &self,
        Parameters(a): Parameters<AnalyzeArgs>,
    ) -> Result<WmReply, ToolError> {
        let id = self.implicit().id()?;
        let report = self
            .api()
            .analyze_crash(AnalyzeCrashParams {
                session_id: id.clone(),
                format: OutputFormat::Json,
            })
            .await?;
        let mut value = serde_json::to_value(&report.value).map_err(|e| {
            ToolError::new(
                ErrorCode::InternalError,
                format!("cannot serialize the report: {e}"),
            )
        })?;
        if let Some(file) = a.output_file.filter(|f| !f.trim().is_empty()) {
            let params = RunCommandParams {
                session_id: id,
                command: ANALYZE_COMMANDS.to_string(),
                timeout_ms: Some(MAX_RUN_TIMEOUT_MS),
                format: OutputFormat::Text,
                output_file: Some(file),
                on_error: None,
            };
            let batch = self.api().run_command(params).await?;
            if let Some(f) = batch.value.output_file {
                value["output_file"] = json!(f.path);
                value["output_file_written"] = json!(f.written);
                if let Some(e) = f.error {
                    value["output_file_error"] = json!(e);
                }
            }
        }
        Ok(WmReply::ok(value))
    }

    #[tool(
        description = WM_DETACH,
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = false, open_world_hint = false)
    )]
    async fn wm_detach(&self) -> Result<WmReply, ToolError> {
        let id = self.implicit().detach()?;
        let value = self.release(&id, "detach_target_only").await?;
        Ok(WmReply::ok(value))
    }

    #[tool(
        description = WM_SHUTDOWN,
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = false, open_world_hint = false)
    )]
    async fn wm_shutdown(&self) -> Result<WmReply, ToolError> {
        let mut value = match self.implicit().shut_down()? {
            Some(id) => self.release(&id, "session_shutdown").await?,
            None => json!({ "ok": true, "semantic": "session_shutdown", "target_detached": false }),
        };
        value["host_state"] = json!("running");
        Ok(WmReply::ok(value))
    }
}

impl Host {
    /// Opens the single-session profile's target given at startup ([`Self::with_startup_target`]);
    /// does nothing without one.
    ///
    /// # Errors
    /// The target cannot be opened (the message says why, for the command line).
    pub async fn open_startup_target(&self) -> std::io::Result<()> {
        let Some(pending) = self.implicit().pending() else {
            return Ok(());
        };
        // A form this build cannot serve is recorded, not an error: the server runs and its
        // tools answer not_available with the reason.
        if let StartupTarget::Unavailable(reason) = &pending {
            self.implicit().unavailable(reason.clone());
            return Ok(());
        }
        let opened = self.open_target(&pending).await;
        match opened {
            Ok(id) => {
                self.implicit().opened(id);
                Ok(())
            }
            Err(e) => {
                let flag = match &pending {
                    StartupTarget::Dump(path) => format!("--dump {}", path.display()),
                    StartupTarget::Attach(target) => format!("--attach {target}"),
                    StartupTarget::Unavailable(reason) => reason.clone(),
                };
                Err(std::io::Error::other(format!("{flag}: {}", e.render())))
            }
        }
    }

    /// Opens `target` (a dump, or a live target) as a new ntdbg session: its id. The session
    /// is the server's, shared by every client, as the one target of a single-session profile.
    pub(crate) async fn open_target(&self, target: &StartupTarget) -> Result<String, ToolError> {
        self.api().as_server(self.open_shared(target)).await
    }

    async fn open_shared(&self, target: &StartupTarget) -> Result<String, ToolError> {
        match target {
            StartupTarget::Dump(path) => {
                let params = OpenDumpParams {
                    path: path.display().to_string(),
                    symbols_path: None,
                    include_stack: false,
                    include_modules: false,
                    include_threads: false,
                    new_session: true,
                };
                self.api()
                    .open_dump(params)
                    .await
                    .map(|r| r.value.session_id)
            }
            StartupTarget::Attach(target) => {
                let params = AttachParams {
                    target: target.clone(),
                    symbols_path: None,
                    timeout_seconds: None,
                };
                self.api().attach(params).await.map(|r| r.value.session_id)
            }
            StartupTarget::Unavailable(reason) => {
                Err(ToolError::new(ErrorCode::NotAvailable, reason.clone()))
            }
        }
    }

    /// Closes session `id` for `wm_detach` / `wm_shutdown`.
    async fn release(&self, id: &str, semantic: &str) -> Result<Value, ToolError> {
        let params = CloseSessionParams {
            session_id: id.to_string(),
            resume: None,
        };
        let closed = self.api().close_session(params).await?;
        // Only a live session has a detach to report.
        let live = closed.value.detach.is_some();
        Ok(json!({
            "ok": true,
            "semantic": semantic,
            "target_detached": live,
            "target_kind": if live { "live" } else { "dump" },
            "session_id": id,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn head_tail_keeps_both_ends_on_char_boundaries() {
        assert_eq!(head_tail("short", 3, 3), ("short".to_string(), false));
        let text = "é".repeat(100);
        let (cut, truncated) = head_tail(&text, 11, 5);
        assert!(truncated);
        assert!(cut.starts_with("ééééé\n[...truncated "), "{cut}");
        assert!(cut.ends_with("éé"), "{cut}");
    }
}
