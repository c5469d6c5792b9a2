//! Running WinDbg commands for a chensiling tool on the profile's one session: each command
//! goes through `run_command`'s own batch runner with typed results asked for, and becomes a
//! [`Source`] (its `command_id` pages the whole output in `windbg_output`) and, where the
//! command has one, its typed value.

use super::envelope::{args, Execution, Parse, Reply, Source, Stage};
use crate::Host;
use ntdbg_mcp::dto::{CommandStatus, OutputFormat, RunCommandParams};
use ntdbg_mcp::floor_char;
use serde_json::{json, Value};

/// Default time limit of one tool's commands, as Windbg-MCP's (30 s).
const DEFAULT_TIMEOUT_S: f64 = 30.0;

/// The time limit of one tool's commands in ms: Windbg-MCP's `WINDBG_MCP_TIMEOUT` (seconds)
/// when set to a positive number, else 30 s; at most `run_command`'s own limit. A `go` waits
/// this long for a stop, then answers with the target still running.
pub fn timeout_ms() -> u64 {
    static TIMEOUT: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *TIMEOUT.get_or_init(|| {
        let seconds = std::env::var("WINDBG_MCP_TIMEOUT")
            .ok()
            .and_then(|v| v.trim().parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s > 0.0)
            .unwrap_or(DEFAULT_TIMEOUT_S);
        // Float to integer casts saturate; the clamp keeps it within run_command's range.
        ((seconds * 1000.0) as u64).clamp(1, ntdbg_mcp::limits::MAX_TIMEOUT_MS)
    })
}
/// Most bytes of output `include_raw` puts inline in a source.
const INLINE_RAW: usize = 32_000;

/// One command a tool ran.
#[derive(Debug)]
pub struct Ran {
    /// The id its whole output is read back by ("" when it did not run).
    pub command_id: String,
    /// Its typed result, when the command has one.
    pub typed: Option<Value>,
    /// Whether it ran to its end.
    pub ok: bool,
    /// Why it did not.
    pub error: Option<String>,
    /// Its whole output (for the commands without a typed result).
    pub text: String,
}

impl Ran {
    /// The typed result's `key`.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.typed.as_ref().and_then(|t| t.get(key))
    }
}

/// The profile's session and what kind of target it is.
#[derive(Debug, Clone)]
pub struct Target {
    /// The ntdbg session id.
    pub id: String,
    /// ntdbg's kind: `user`, `kernel-small`, …, `live`.
    pub kind: String,
    /// The dump file or live target.
    pub path: String,
    /// `x86`, `x64`, `arm64`.
    pub arch: String,
    /// `dump`, or the live run state.
    pub run_state: &'static str,
}

impl Target {
    /// Whether it is a live target.
    pub fn live(&self) -> bool {
        self.kind == "live"
    }

    /// Windbg-MCP's session kind.
    pub fn session_kind(&self) -> &'static str {
        match self.kind.as_str() {
            "user" => "user_dump",
            "kernel-small" => "kernel_mini_dump",
            "kernel-triage" => "kernel_triage_dump",
            "kernel-full" => "complete_memory_dump",
            "kernel" | "kernel-bitmap" => "kernel_memory_dump",
            // pid:/exe: are Windows processes; a gdb stub may be a process or a whole VM.
            "live" if self.path.starts_with("pid:") || self.path.starts_with("exe:") => "live_user",
            _ => "unknown",
        }
    }

    /// `user`, `kernel` or `unknown`.
    pub fn target_mode(&self) -> &'static str {
        match self.session_kind() {
            "user_dump" | "live_user" => "user",
            "unknown" => "unknown",
            _ => "kernel",
        }
    }

    /// What the target can do, as Windbg-MCP names it.
    pub fn capabilities(&self) -> Value {
        let kind = self.session_kind();
        let is_dump = kind.ends_with("_dump");
        json!({
            "is_live": self.live(),
            "is_dump": is_dump,
            "can_resume": self.live(),
            "has_complete_memory": kind == "complete_memory_dump",
            "captured_memory_limited": matches!(kind, "user_dump" | "kernel_mini_dump" | "kernel_triage_dump" | "kernel_memory_dump"),
            "supports_kernel_pool": matches!(kind, "kernel_memory_dump" | "complete_memory_dump"),
        })
    }

    /// Records target_mode, session_kind and capabilities in `reply`.
    pub fn describe(&self, reply: &mut Reply) {
        reply
            .set("target_mode", self.target_mode())
            .set("session_kind", self.session_kind())
            .set("capabilities", self.capabilities());
    }
}

impl Host {
    /// The profile's session, or an error in `reply` saying why there is none.
    pub(super) fn chensiling_target(&self, reply: &mut Reply) -> Option<Target> {
        let found = self.implicit().id().and_then(|id| {
            self.api()
                .sessions()
                .into_iter()
                .find(|s| s.id == id)
                .ok_or_else(|| {
                    ntdbg_mcp::ToolError::new(
                        ntdbg_engine::ErrorCode::NotAttached,
                        "the target's session is no longer open (closed as idle?)",
                    )
                    .with_hint("restart the server to open the target again")
                })
        });
        match found {
            Ok(slot) => {
                slot.touch();
                Some(Target {
                    id: slot.id.clone(),
                    kind: slot.kind.clone(),
                    path: slot.path.display().to_string(),
                    arch: slot.arch.clone(),
                    run_state: slot.run_state(),
                })
            }
            Err(e) => {
                reply.tool_error(&e, Stage::Target, "windbg_session");
                None
            }
        }
    }

    /// Runs `commands` in order on `target` (the first failure stops the rest); each one's
    /// source goes into `reply`. A batch the session refuses (busy, closed) is an execution
    /// error in `reply` and an empty answer.
    pub(super) async fn chensiling_run(
        &self,
        target: &Target,
        commands: &[String],
        include_raw: bool,
        reply: &mut Reply,
    ) -> Vec<Ran> {
        let params = RunCommandParams {
            session_id: target.id.clone(),
            command: commands.join("\n"),
            timeout_ms: Some(timeout_ms()),
            format: OutputFormat::Json,
            output_file: None,
            on_error: None,
        };
        let batch = match self.api().run_batch(params).await {
            Ok(batch) => batch,
            Err(e) => {
                let busy = e.code == ntdbg_engine::ErrorCode::SessionBusy;
                let code = if busy {
                    "execution_busy"
                } else {
                    e.code.name()
                };
                reply.error(code, e.message.clone(), Stage::Execution, e.recoverable);
                if busy {
                    reply.next(
                        "windbg_session",
                        args([("action", "status")]),
                        "another call is running on the session",
                    );
                }
                return Vec::new();
            }
        };
        let mut ran = Vec::with_capacity(commands.len());
        for (r, full) in batch.rendered.value.results.iter().zip(&batch.full) {
            let execution = match r.status {
                CommandStatus::Succeeded => Execution::Completed,
                CommandStatus::Failed => Execution::Failed,
                CommandStatus::TimedOut => Execution::Timeout,
                CommandStatus::NotExecuted => Execution::NotRun,
            };
            let raw = if include_raw {
                full.text[..floor_char(&full.text, INLINE_RAW)].to_string()
            } else {
                String::new()
            };
            reply.source(Source {
                command_id: r.command_id.clone().unwrap_or_default(),
                command: r.command.clone(),
                execution_status: execution,
                raw_truncated: include_raw && raw.len() < r.bytes_total,
                raw,
                complete: execution == Execution::Completed,
                error: r.error.as_ref().map(|e| e.message.clone()),
                attempts: u32::from(execution != Execution::NotRun),
                session_restarted: false,
                session_state: "idle",
                cancellation_status: if execution == Execution::Timeout {
                    "requested"
                } else {
                    "not_requested"
                },
                raw_size: r.bytes_total,
                raw_included: include_raw,
                async_output: String::new(),
                parse_status: if r.result.is_some() {
                    Parse::Complete
                } else {
                    Parse::NotRun
                },
                unparsed_lines: Vec::new(),
                unparsed_line_count: 0,
                unparsed_lines_truncated: false,
                warnings: Vec::new(),
            });
            ran.push(Ran {
                command_id: r.command_id.clone().unwrap_or_default(),
                typed: r.result.clone(),
                ok: execution == Execution::Completed,
                error: r.error.as_ref().map(|e| e.message.clone()),
                text: full.text.clone(),
            });
        }
        ran
    }

    /// Evaluates an address expression with `?`: the `0x` value, or `None` (the failed
    /// source in `reply` says why). Bare hex (`7ff6…`, with or without backticks) is read as
    /// hex, as Windbg-MCP normalises it, whatever the radix.
    pub(super) async fn chensiling_resolve(
        &self,
        target: &Target,
        expression: &str,
        include_raw: bool,
        reply: &mut Reply,
    ) -> Option<String> {
        let command = format!("? {}", normalize_address(expression));
        let ran = self
            .chensiling_run(target, &[command], include_raw, reply)
            .await;
        ran.first()
            .filter(|r| r.ok)
            .and_then(|r| r.get("hex"))
            .and_then(Value::as_str)
            .map(str::to_string)
    }
}

/// Bare hex digits (with backticks) get a `0x` prefix, so an address never depends on the
/// radix.
fn normalize_address(expression: &str) -> String {
    let trimmed = expression.trim();
    let cleaned = trimmed.replace('`', "");
    let digits = cleaned.strip_prefix("0x").unwrap_or(&cleaned);
    if !digits.is_empty() && digits.chars().all(|c| c.is_ascii_hexdigit()) {
        format!("0x{}", digits.to_ascii_lowercase())
    } else {
        trimmed.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(kind: &str, path: &str) -> Target {
        Target {
            id: "s1".into(),
            kind: kind.into(),
            path: path.into(),
            arch: "x64".into(),
            run_state: "dump",
        }
    }

    #[test]
    fn bare_hex_addresses_are_read_as_hex() {
        assert_eq!(normalize_address("00000001`40001517"), "0x0000000140001517");
        assert_eq!(normalize_address("0X10".to_lowercase().as_str()), "0x10");
        assert_eq!(normalize_address("@rip"), "@rip");
        assert_eq!(normalize_address(" crashy!main+0x10 "), "crashy!main+0x10");
    }

    #[test]
    fn ntdbg_kinds_map_to_windbg_mcp_session_kinds() {
        assert_eq!(target("user", "a.dmp").session_kind(), "user_dump");
        assert_eq!(target("user", "a.dmp").target_mode(), "user");
        assert_eq!(
            target("kernel-triage", "m.dmp").session_kind(),
            "kernel_triage_dump"
        );
        assert_eq!(target("kernel-full", "m.dmp").target_mode(), "kernel");
        assert_eq!(target("live", "pid:42").session_kind(), "live_user");
        assert_eq!(
            target("live", "gdb:127.0.0.1:1234").target_mode(),
            "unknown"
        );
        let caps = target("kernel-bitmap", "m.dmp").capabilities();
        assert_eq!(caps["supports_kernel_pool"], true);
        assert_eq!(caps["is_live"], false);
    }
}
