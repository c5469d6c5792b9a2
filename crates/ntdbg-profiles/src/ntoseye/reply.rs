//! ntoseye's `command` answer: the `{ok, output, result, target, debug_output}` object, sent
//! as structured content (in both formats, so it always matches the tool's `outputSchema`), and
//! as text the output with ntoseye's trailer (`format: text`) or the object (`format: json`).

use super::args::Format;
use super::target::TargetSnapshot;
use crate::push_capped;
use ntdbg_engine::ErrorCode;
use ntdbg_mcp::dto::CommandStatus;
use ntdbg_mcp::BatchOutput;
use rmcp::handler::server::tool::IntoCallToolResult;
use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock};
use rmcp::ErrorData;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::Value;

/// ntoseye's `command` answer in JSON.
#[derive(Debug, Serialize, JsonSchema)]
pub struct CommandValue {
    /// Whether every command ran and succeeded.
    pub ok: bool,
    /// The commands' output.
    pub output: String,
    /// The typed result of a single command that has one, else null.
    #[schemars(schema_with = "free_value")]
    pub result: Option<Value>,
    /// Where the target is after the line.
    pub target: TargetSnapshot,
    /// Guest debug output captured since the previous call (ntdbg captures none).
    pub debug_output: Vec<Value>,
}

fn free_value(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({})
}

/// A `command` answer: the text as `format` asks, the JSON object as structured content,
/// and `isError` when a command failed or did not run.
pub struct CommandReply {
    /// The answer.
    pub value: CommandValue,
    /// How the text shows it.
    pub format: Format,
}

impl IntoCallToolResult for CommandReply {
    fn into_call_tool_result(self) -> Result<CallToolResponse, rmcp::ErrorData> {
        let ok = self.value.ok;
        let text = match self.format {
            Format::Text => {
                let mut text = self.value.output.clone();
                text.push_str(&self.value.target.trailer());
                text
            }
            Format::Json => serde_json::to_string(&self.value).unwrap_or_default(),
        };
        let value = serde_json::to_value(&self.value)
            .map_err(|e| ErrorData::internal_error(format!("cannot serialize: {e}"), None))?;
        let mut result = CallToolResult::structured(value);
        result.content = vec![ContentBlock::text(text)];
        if !ok {
            result.is_error = Some(true);
        }
        Ok(result.into())
    }
}

/// The output of a batch as ntoseye's console shows it: each command's whole output, a
/// command that did not run named; whether every command succeeded.
pub fn line_output(ran: &BatchOutput) -> (String, bool) {
    let mut text = String::new();
    let mut ok = true;
    for (r, full) in ran.rendered.value.results.iter().zip(&ran.full) {
        ok &= r.status == CommandStatus::Succeeded;
        let body = match &r.error {
            _ if r.status == CommandStatus::NotExecuted && full.thread.is_none() => format!(
                "not run: {} (an earlier command failed or timed out)",
                r.command
            ),
            // ntdbg's hint names its own tools; ntoseye's users have `break` and waiting.
            Some(e) if e.code == ErrorCode::TargetRunning => e
                .clone()
                .with_hint(
                    "send break to stop it, or the command again (or an empty line) to wait longer",
                )
                .render(),
            _ => full.text.clone(),
        };
        if !push_capped(&mut text, &body) {
            break;
        }
    }
    (text, ok)
}

/// A live tool's text without ntdbg's trailer, which the ntoseye one replaces.
pub fn without_trailer(text: &str, trailer: &str) -> String {
    text.strip_suffix(trailer).unwrap_or(text).to_string()
}

/// The typed result of a line of one command.
pub fn single_result(ran: &BatchOutput) -> Option<Value> {
    match ran.rendered.value.results.as_slice() {
        [only] => only.result.clone(),
        _ => None,
    }
}
