//! The `ToolEnvelope` every structured chensiling tool answers with: four independent stage
//! statuses (execution, core result, parse, verification), the observations in `data`,
//! per-command `sources` with their `command_id`, and errors with the stage they happened at.
//!
//! [`Reply`] collects one tool's facts and derives the statuses the way Windbg-MCP does: the
//! execution status is the first source that did not complete, the core result is `usable`
//! when there are observations and no errors, and `ok` needs every stage to be good.

use ntdbg_mcp::ToolError;
use rmcp::handler::server::tool::IntoCallToolResult;
use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock, JsonObject};
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{Map, Value};

/// The envelope contract version Windbg-MCP clients check.
pub const SCHEMA_VERSION: &str = "2.0";

/// How far running the commands got (every value of Windbg-MCP's enum is declared, so the
/// output schema lists them, though ntdbg's in-process engine never disconnects).
#[allow(dead_code)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Execution {
    /// Every command ran to its end.
    Completed,
    /// A command was cancelled.
    Cancelled,
    /// The session was running another call.
    Busy,
    /// A command ran out of time.
    Timeout,
    /// The target is gone.
    Disconnected,
    /// A command failed.
    Failed,
    /// Whether it ran cannot be told.
    Indeterminate,
    /// Nothing was run.
    NotRun,
}

/// Whether the tool's main result can be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CoreResult {
    /// It can.
    Usable,
    /// It ran and found nothing.
    Empty,
    /// It could not be obtained.
    Unavailable,
    /// Nothing was run.
    NotRun,
}

/// Whether the command output was turned into data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Parse {
    /// All of it (ntdbg: a typed result).
    Complete,
    /// Some of it.
    Partial,
    /// None of it.
    Failed,
    /// No output was turned into data (text only, or not run).
    NotRun,
}

/// Whether a change's post-condition was checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Verification {
    /// Checked and true.
    Verified,
    /// Checked and false.
    Failed,
    /// Could not be checked.
    Indeterminate,
    /// Nothing to check (no change).
    NotRequired,
    /// The change was not made.
    NotRun,
}

/// Where an error happened (all of Windbg-MCP's stages; ntdbg parses no text, so never
/// `parsing`).
#[allow(dead_code)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Stage {
    /// The arguments.
    Input,
    /// Running a command.
    Execution,
    /// Reading its output.
    Parsing,
    /// What the target can give.
    Target,
    /// The stored output.
    Output,
    /// Checking a change.
    Verification,
}

/// A failure.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct EnvelopeError {
    /// Stable key.
    pub code: String,
    /// What went wrong.
    pub message: String,
    /// Where.
    pub stage: Stage,
    /// Whether another call can succeed.
    pub recoverable: bool,
}

/// A fact the target lacks or a bound that cut the data.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Limitation {
    /// Stable key.
    pub code: String,
    /// The limitation.
    pub message: String,
    /// The data field it applies to (`data.frames`).
    pub path: Option<String>,
}

/// A conclusion drawn by a rule, not observed.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Inference {
    /// What is inferred.
    pub name: String,
    /// The conclusion.
    pub value: Value,
    /// The observations it rests on.
    pub basis: String,
    /// Always `inferred`.
    pub certainty: &'static str,
}

/// A suggested next call (never run by the server).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct NextAction {
    /// The tool.
    pub tool: String,
    /// Its arguments.
    pub args: Map<String, Value>,
    /// Why.
    pub reason: String,
}

/// One command a tool ran, with the id its whole output is read back by (`windbg_output`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Source {
    /// Id for windbg_output ("" when it did not run).
    pub command_id: String,
    /// The WinDbg command.
    pub command: String,
    /// How it ended.
    pub execution_status: Execution,
    /// Its output, only with include_raw.
    pub raw: String,
    /// Whether it ran to its end.
    pub complete: bool,
    /// Why it failed.
    pub error: Option<String>,
    /// Times it was sent (ntdbg never resends).
    pub attempts: u32,
    /// Always false: ntdbg's engine is in process.
    pub session_restarted: bool,
    /// The command channel after it.
    pub session_state: &'static str,
    /// Whether a cancel was asked for.
    pub cancellation_status: &'static str,
    /// Bytes of output.
    pub raw_size: usize,
    /// Whether raw holds the output.
    pub raw_included: bool,
    /// Whether raw was cut.
    pub raw_truncated: bool,
    /// Output that arrived outside the command (none in ntdbg).
    pub async_output: String,
    /// complete: a typed result; not_run: text only.
    pub parse_status: Parse,
    /// Lines not turned into data (none: typed results are not parsed from text).
    pub unparsed_lines: Vec<String>,
    /// Count of those lines.
    pub unparsed_line_count: usize,
    /// Whether that list was cut.
    pub unparsed_lines_truncated: bool,
    /// Notes on this command.
    pub warnings: Vec<String>,
}

/// A warning: not fatal, but the answer is less than it could be.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Warning {
    /// Stable key.
    pub code: String,
    /// The warning.
    pub message: String,
    /// Where.
    pub stage: Stage,
}

/// The answer of every structured chensiling tool.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct Envelope {
    /// "2.0".
    pub schema_version: &'static str,
    /// Every stage good and no errors.
    pub ok: bool,
    /// The tool that answered.
    pub tool: &'static str,
    /// How far running got.
    pub execution_status: Execution,
    /// Whether data can be used.
    pub core_result_status: CoreResult,
    /// Whether output became data.
    pub parse_status: Parse,
    /// Whether a change was checked.
    pub verification_status: Verification,
    /// The observations.
    pub data: Map<String, Value>,
    /// Rule-based conclusions.
    pub inferences: Vec<Inference>,
    /// The commands run.
    pub sources: Vec<Source>,
    /// Failures.
    pub errors: Vec<EnvelopeError>,
    /// Non-fatal notes.
    pub warnings: Vec<Warning>,
    /// Missing data and bounds.
    pub limitations: Vec<Limitation>,
    /// Suggested calls.
    pub next_actions: Vec<NextAction>,
    /// Kept empty: read outputs with windbg_output.
    pub raw: String,
}

impl IntoCallToolResult for Envelope {
    /// The envelope as structured content, beside a one-line summary (the statuses and error
    /// codes) so clients that forward only text still see the outcome.
    fn into_call_tool_result(self) -> Result<CallToolResponse, rmcp::ErrorData> {
        let codes: Vec<&str> = self.errors.iter().map(|e| e.code.as_str()).collect();
        let summary = serde_json::json!({
            "tool": self.tool,
            "ok": self.ok,
            "execution_status": self.execution_status,
            "core_result_status": self.core_result_status,
            "parse_status": self.parse_status,
            "errors": codes,
            "structured_content": true,
        });
        let value = serde_json::to_value(&self).map_err(|e| {
            rmcp::ErrorData::internal_error(format!("cannot serialize the envelope: {e}"), None)
        })?;
        let mut result = CallToolResult::structured(value);
        result.content = vec![ContentBlock::text(summary.to_string())];
        Ok(result.into())
    }
}

/// The fields [`output_schema`] requires: the envelope's identity, its four stage statuses
/// and the data.
const REQUIRED: [&str; 8] = [
    "schema_version",
    "ok",
    "tool",
    "execution_status",
    "core_result_status",
    "parse_status",
    "verification_status",
    "data",
];

/// The output schema every structured tool declares: an object with the envelope's identity,
/// statuses and data required. Nineteen tools declare it, so it stays this small (the
/// shallow schema of every field with its enums would more than double this profile's
/// `tools/list`); the descriptions and the workflow name the rest.
pub fn output_schema() -> std::sync::Arc<JsonObject> {
    let mut schema = JsonObject::new();
    schema.insert("type".into(), Value::String("object".into()));
    schema.insert("required".into(), serde_json::json!(REQUIRED));
    std::sync::Arc::new(schema)
}

/// One tool's answer in the making.
#[derive(Debug)]
pub struct Reply {
    tool: &'static str,
    data: Map<String, Value>,
    inferences: Vec<Inference>,
    sources: Vec<Source>,
    errors: Vec<EnvelopeError>,
    limitations: Vec<Limitation>,
    next_actions: Vec<NextAction>,
    core: Option<CoreResult>,
    verification: Verification,
    /// Sources whose failure is a limitation, not a failed answer (optional lists).
    tolerated: Vec<usize>,
}

impl Reply {
    /// An empty answer of `tool`, with nothing to verify.
    pub fn new(tool: &'static str) -> Reply {
        Reply {
            tool,
            data: Map::new(),
            inferences: Vec::new(),
            sources: Vec::new(),
            errors: Vec::new(),
            limitations: Vec::new(),
            next_actions: Vec::new(),
            core: None,
            verification: Verification::NotRequired,
            tolerated: Vec::new(),
        }
    }

    /// Records an observation.
    pub fn set(&mut self, key: &str, value: impl Into<Value>) -> &mut Reply {
        self.data.insert(key.to_string(), value.into());
        self
    }

    /// An observation recorded so far.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.data.get(key)
    }

    /// Records a command run.
    pub fn source(&mut self, source: Source) -> &mut Reply {
        self.sources.push(source);
        self
    }

    /// Records a failure.
    pub fn error(
        &mut self,
        code: &str,
        message: impl Into<String>,
        stage: Stage,
        recoverable: bool,
    ) -> &mut Reply {
        self.errors.push(EnvelopeError {
            code: code.to_string(),
            message: message.into(),
            stage,
            recoverable,
        });
        self
    }

    /// Records an ntdbg tool error at `stage`, its hint as a next action on `hint_tool`.
    pub fn tool_error(&mut self, e: &ToolError, stage: Stage, hint_tool: &str) -> &mut Reply {
        self.error(e.code.name(), e.message.clone(), stage, e.recoverable);
        if let Some(hint) = &e.hint {
            self.next(hint_tool, Map::new(), hint.clone());
        }
        self
    }

    /// Records a limitation of the data at `path`.
    pub fn limitation(&mut self, code: &str, message: impl Into<String>, path: Option<&str>) {
        self.limitations.push(Limitation {
            code: code.to_string(),
            message: message.into(),
            path: path.map(str::to_string),
        });
    }

    /// Records an inference with its basis.
    pub fn inference(&mut self, name: &str, value: impl Into<Value>, basis: impl Into<String>) {
        self.inferences.push(Inference {
            name: name.to_string(),
            value: value.into(),
            basis: basis.into(),
            certainty: "inferred",
        });
    }

    /// Suggests a next call.
    pub fn next(
        &mut self,
        tool: &str,
        args: Map<String, Value>,
        reason: impl Into<String>,
    ) -> &mut Reply {
        self.next_actions.push(NextAction {
            tool: tool.to_string(),
            args,
            reason: reason.into(),
        });
        self
    }

    /// Makes the failure of the last source recorded a limitation of the data at `path`
    /// (`message` says what is missing) instead of a failed execution: for the optional
    /// parts of an answer.
    pub fn tolerate_last(&mut self, code: &str, message: impl Into<String>, path: &str) {
        if let Some(last) = self.sources.len().checked_sub(1) {
            self.tolerated.push(last);
            self.limitation(code, message, Some(path));
        }
    }

    /// Sets the core result status instead of deriving it.
    pub fn core(&mut self, status: CoreResult) -> &mut Reply {
        self.core = Some(status);
        self
    }

    /// Sets the verification status of a change.
    pub fn verification(&mut self, status: Verification) -> &mut Reply {
        self.verification = status;
        self
    }

    /// Whether an error has been recorded.
    pub fn has_errors(&self) -> bool {
        !self.errors.is_empty()
    }

    /// The envelope, with the statuses derived from the sources and errors.
    pub fn finish(self) -> Envelope {
        let counted: Vec<&Source> = self
            .sources
            .iter()
            .enumerate()
            .filter(|(i, _)| !self.tolerated.contains(i))
            .map(|(_, s)| s)
            .collect();
        let execution = counted
            .iter()
            .map(|s| s.execution_status)
            .find(|s| *s != Execution::Completed)
            .unwrap_or(if self.sources.is_empty() {
                Execution::NotRun
            } else {
                Execution::Completed
            });
        let mut errors: Vec<EnvelopeError> = counted
            .iter()
            .filter(|s| s.execution_status != Execution::Completed)
            .filter(|s| s.execution_status != Execution::NotRun)
            .map(|s| EnvelopeError {
                code: format!("execution_{}", status_key(s.execution_status)),
                message: s
                    .error
                    .clone()
                    .unwrap_or_else(|| format!("`{}` did not complete", s.command)),
                stage: Stage::Execution,
                recoverable: matches!(
                    s.execution_status,
                    Execution::Timeout
                        | Execution::Cancelled
                        | Execution::Busy
                        | Execution::Disconnected
                ),
            })
            .collect();
        errors.extend(self.errors);
        let parse = parse_of(&self.sources);
        let ran_fully = matches!(execution, Execution::Completed | Execution::NotRun);
        let core = self.core.unwrap_or(if !errors.is_empty() || !ran_fully {
            CoreResult::Unavailable
        } else if !self.data.is_empty() {
            CoreResult::Usable
        } else if !self.sources.is_empty() {
            CoreResult::Empty
        } else {
            CoreResult::NotRun
        });
        let ok = ran_fully
            && matches!(core, CoreResult::Usable | CoreResult::Empty)
            && parse != Parse::Failed
            && matches!(
                self.verification,
                Verification::Verified | Verification::NotRequired
            )
            && errors.is_empty();
        Envelope {
            schema_version: SCHEMA_VERSION,
            ok,
            tool: self.tool,
            execution_status: execution,
            core_result_status: core,
            parse_status: parse,
            verification_status: self.verification,
            data: self.data,
            inferences: self.inferences,
            sources: self.sources,
            errors,
            warnings: Vec::new(),
            limitations: self.limitations,
            next_actions: self.next_actions,
            raw: String::new(),
        }
    }
}

/// The snake_case key of an execution status.
fn status_key(status: Execution) -> String {
    serde_json::to_value(status)
        .ok()
        .and_then(|v| v.as_str().map(str::to_string))
        .unwrap_or_default()
}

/// The parse status of a set of sources: the worst of those that were parsed.
fn parse_of(sources: &[Source]) -> Parse {
    let parsed: Vec<Parse> = sources
        .iter()
        .map(|s| s.parse_status)
        .filter(|p| *p != Parse::NotRun)
        .collect();
    if parsed.is_empty() {
        Parse::NotRun
    } else if parsed.contains(&Parse::Failed) {
        Parse::Failed
    } else if parsed.contains(&Parse::Partial) {
        Parse::Partial
    } else {
        Parse::Complete
    }
}

/// `{key: value, …}` for next-action arguments.
pub fn args<const N: usize>(pairs: [(&str, &str); N]) -> Map<String, Value> {
    pairs
        .into_iter()
        .map(|(k, v)| (k.to_string(), Value::String(v.to_string())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(status: Execution, parse: Parse) -> Source {
        Source {
            command_id: "c1-abcd".into(),
            command: "k".into(),
            execution_status: status,
            raw: String::new(),
            complete: status == Execution::Completed,
            error: (status != Execution::Completed).then(|| "it broke".to_string()),
            attempts: 1,
            session_restarted: false,
            session_state: "idle",
            cancellation_status: "not_requested",
            raw_size: 10,
            raw_included: false,
            raw_truncated: false,
            async_output: String::new(),
            parse_status: parse,
            unparsed_lines: Vec::new(),
            unparsed_line_count: 0,
            unparsed_lines_truncated: false,
            warnings: Vec::new(),
        }
    }

    #[test]
    fn data_from_completed_commands_is_usable_and_ok() {
        let mut reply = Reply::new("windbg_backtrace");
        reply
            .source(source(Execution::Completed, Parse::Complete))
            .set("depth", 20);
        let e = reply.finish();
        assert!(e.ok);
        assert_eq!(e.schema_version, "2.0");
        assert_eq!(e.execution_status, Execution::Completed);
        assert_eq!(e.core_result_status, CoreResult::Usable);
        assert_eq!(e.parse_status, Parse::Complete);
        assert_eq!(e.verification_status, Verification::NotRequired);
    }

    #[test]
    fn a_failed_command_becomes_an_execution_error() {
        let mut reply = Reply::new("windbg_evaluate");
        reply.source(source(Execution::Failed, Parse::NotRun));
        let e = reply.finish();
        assert!(!e.ok);
        assert_eq!(e.execution_status, Execution::Failed);
        assert_eq!(e.core_result_status, CoreResult::Unavailable);
        assert_eq!(e.errors[0].code, "execution_failed");
        assert_eq!(e.errors[0].stage, Stage::Execution);
        assert!(!e.errors[0].recoverable);
    }

    #[test]
    fn a_timeout_is_recoverable_and_unverified_changes_are_not_ok() {
        let mut reply = Reply::new("windbg_control");
        reply
            .source(source(Execution::Timeout, Parse::NotRun))
            .verification(Verification::Indeterminate);
        let e = reply.finish();
        assert!(!e.ok);
        assert_eq!(e.errors[0].code, "execution_timeout");
        assert!(e.errors[0].recoverable);
        assert_eq!(e.verification_status, Verification::Indeterminate);
    }

    #[test]
    fn nothing_run_with_an_input_error_is_not_ok() {
        let mut reply = Reply::new("windbg_read_memory");
        reply.error(
            "invalid_argument",
            "'size' must be <= 1024.",
            Stage::Input,
            true,
        );
        let e = reply.finish();
        assert!(!e.ok);
        assert_eq!(e.execution_status, Execution::NotRun);
        assert_eq!(e.parse_status, Parse::NotRun);
        assert_eq!(e.core_result_status, CoreResult::Unavailable);
    }

    #[test]
    fn a_tolerated_failure_is_a_limitation_not_a_failed_answer() {
        let mut reply = Reply::new("windbg_context");
        reply
            .source(source(Execution::Completed, Parse::Complete))
            .set("registers", 1);
        reply.source(source(Execution::Failed, Parse::NotRun));
        reply.tolerate_last("no_last_event", "no exception record", "data.last_event");
        let e = reply.finish();
        assert!(e.ok, "{:?}", e.errors);
        assert_eq!(e.execution_status, Execution::Completed);
        assert_eq!(e.sources[1].execution_status, Execution::Failed);
        assert_eq!(e.limitations[0].path.as_deref(), Some("data.last_event"));
    }

    #[test]
    fn an_empty_lookup_is_ok_and_empty() {
        let mut reply = Reply::new("windbg_lookup");
        reply
            .source(source(Execution::Completed, Parse::Complete))
            .core(CoreResult::Empty);
        let e = reply.finish();
        assert!(e.ok);
        assert_eq!(e.core_result_status, CoreResult::Empty);
    }

    #[test]
    fn the_envelope_serializes_every_contract_field() {
        let value = serde_json::to_value(Reply::new("windbg_session").finish()).expect("json");
        let keys: Vec<&str> = value
            .as_object()
            .expect("object")
            .keys()
            .map(String::as_str)
            .collect();
        for key in [
            "schema_version",
            "ok",
            "tool",
            "execution_status",
            "core_result_status",
            "parse_status",
            "verification_status",
            "data",
            "inferences",
            "sources",
            "errors",
            "warnings",
            "limitations",
            "next_actions",
            "raw",
        ] {
            assert!(keys.contains(&key), "{key} missing");
        }
        assert_eq!(value["execution_status"], "not_run");
        for key in REQUIRED {
            assert!(keys.contains(&key), "{key} required but not sent");
        }
    }
}
