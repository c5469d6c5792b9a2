//! Tool errors: a stable code, a message, a hint and whether retrying differently can help.
//!
//! Every failure a tool reports reaches the client as a tool result with `isError: true` and
//! this value as its `structuredContent`, so an agent can branch on `code` and follow `hint`.
//! Library errors convert with `From`, keeping their own stable codes.

use ntdbg_commands::CommandError;
use ntdbg_engine::{EngineError, ErrorCode};
use ntdbg_targets::TargetError;
use rmcp::handler::server::tool::IntoCallToolResult;
use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock};
use serde::Serialize;

/// A tool failure, as agents see it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct ToolError {
    /// Stable snake_case key (`unknown_session`, `file_not_found`, `syntax_error`, …).
    #[schemars(with = "String")]
    pub code: ErrorCode,
    /// What went wrong.
    pub message: String,
    /// What to do instead.
    pub hint: Option<String>,
    /// Whether another call (with other arguments) can succeed.
    pub recoverable: bool,
}

impl ToolError {
    /// An error with a code and message, recoverable, without a hint.
    pub fn new(code: impl Into<ErrorCode>, message: impl Into<String>) -> ToolError {
        ToolError {
            code: code.into(),
            message: message.into(),
            hint: None,
            recoverable: true,
        }
    }

    /// Adds a hint.
    pub fn with_hint(mut self, hint: impl Into<String>) -> ToolError {
        self.hint = Some(hint.into());
        self
    }

    /// Marks the error as one that retrying cannot fix.
    pub fn unrecoverable(mut self) -> ToolError {
        self.recoverable = false;
        self
    }

    /// A path outside the directories the server may touch.
    pub fn path_not_allowed(path: &std::path::Path, allowed: &[String]) -> ToolError {
        ToolError::new(
            ErrorCode::PathNotAllowed,
            format!("{} is outside the allowed directories", path.display()),
        )
        .with_hint(format!(
            "use a path under {} (the server's --allow-dir list)",
            allowed.join(", ")
        ))
    }

    /// Arguments that do not match the tool's input schema.
    pub fn invalid_arguments(message: impl Into<String>) -> ToolError {
        ToolError::new(ErrorCode::InvalidArguments, message)
            .with_hint("check the tool's input schema: names, types and required fields")
    }

    /// The short text rendering sent beside the structured error.
    pub fn render(&self) -> String {
        let mut text = format!("error [{}]: {}", self.code, self.message);
        if let Some(hint) = &self.hint {
            text.push_str("\nhint: ");
            text.push_str(hint);
        }
        text
    }

    /// The tool result: `isError: true`, this error as `structuredContent`, and its text.
    pub fn into_result(self) -> CallToolResult {
        let text = self.render();
        let value = serde_json::to_value(&self).unwrap_or_else(|_| {
            serde_json::json!({ "code": self.code, "message": self.message, "recoverable": self.recoverable })
        });
        let mut result = CallToolResult::structured_error(value);
        result.content = vec![ContentBlock::text(text)];
        result
    }
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.render())
    }
}

impl std::error::Error for ToolError {}

impl IntoCallToolResult for ToolError {
    fn into_call_tool_result(self) -> Result<CallToolResponse, rmcp::ErrorData> {
        Ok(self.into_result().into())
    }
}

impl From<TargetError> for ToolError {
    fn from(e: TargetError) -> ToolError {
        let error = ToolError::new(e.code(), e.to_string());
        match error.code {
            ErrorCode::FileNotFound => {
                error.with_hint("check the path; list_dumps shows the dumps in a folder")
            }
            ErrorCode::NotADump => error
                .with_hint(
                    "give a Windows minidump (MDMP) file; list_dumps shows which files are dumps",
                )
                .unrecoverable(),
            ErrorCode::CorruptDump => error
                .with_hint("the file is damaged or cut short: get a fresh copy of the dump")
                .unrecoverable(),
            ErrorCode::NotARegularFile => error
                .with_hint("give a regular file: FIFOs, sockets and devices are never opened")
                .unrecoverable(),
            ErrorCode::UnsupportedDump => error
                .with_hint(
                    "this kind of dump cannot be opened yet; list_dumps still shows its header",
                )
                .unrecoverable(),
            _ => error.with_hint("check that the file exists and is readable"),
        }
    }
}

impl From<EngineError> for ToolError {
    fn from(e: EngineError) -> ToolError {
        match e {
            EngineError::Target(t) => t.into(),
            other => {
                let error = ToolError::new(other.code(), other.to_string());
                match error.code {
                    ErrorCode::BadSymbolPath => error.with_hint(
                        "use folders separated by ';' (cache*DIR and srv*CACHE*URL are accepted)",
                    ),
                    code => match mcp_hint(code) {
                        Some(hint) => error.with_hint(hint),
                        None => error,
                    },
                }
            }
        }
    }
}

impl From<CommandError> for ToolError {
    /// Keeps the command's code, message and hint; adds the MCP hint for its code when the
    /// command layer (which names no front end's tools) has none.
    fn from(e: CommandError) -> ToolError {
        let hint = e
            .hint
            .clone()
            .or_else(|| mcp_hint(e.code).map(str::to_string));
        ToolError {
            code: e.code,
            message: e.message,
            hint,
            recoverable: true,
        }
    }
}

/// What to do over MCP after a command error with `code`, naming this server's tools.
fn mcp_hint(code: ErrorCode) -> Option<&'static str> {
    Some(match code {
        ErrorCode::UnknownCommand => "run `help` for the list of supported commands",
        ErrorCode::SyntaxError => "check quotes, braces and arguments; `help` shows usage",
        ErrorCode::TargetRunning => "break_in stops it; wait_for_event waits for the next stop",
        ErrorCode::DumpChanged => {
            "close_session, then open_dump again to read the file as it is now"
        }
        ErrorCode::SymbolFileChanged => {
            "call again: the symbols are read again from what the files hold now"
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structured_error_has_the_four_fields() {
        let result = ToolError::new(ErrorCode::UnknownSession, "no session s9")
            .with_hint("open one")
            .into_result();
        assert_eq!(result.is_error, Some(true));
        let value = result.structured_content.unwrap_or_default();
        assert_eq!(value["code"], "unknown_session");
        assert_eq!(value["message"], "no session s9");
        assert_eq!(value["hint"], "open one");
        assert_eq!(value["recoverable"], true);
    }

    #[test]
    fn target_errors_keep_their_codes() {
        let e = TargetError::NotADump {
            path: "x".into(),
            signature: "ELF".into(),
        };
        let t = ToolError::from(e);
        assert_eq!(t.code, "not_a_dump");
        assert!(!t.recoverable);
        let e = TargetError::Io {
            path: "x".into(),
            cause: std::io::Error::from(std::io::ErrorKind::NotFound),
        };
        assert_eq!(ToolError::from(e).code, "file_not_found");
    }

    #[test]
    fn command_errors_get_a_hint() {
        let t = ToolError::from(CommandError::new(
            ErrorCode::UnknownCommand,
            "Unknown command 'zz'",
        ));
        assert_eq!(t.code, "unknown_command");
        assert!(t.hint.is_some());
    }
}
