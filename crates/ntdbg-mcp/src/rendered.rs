//! A tool's successful answer: a structured value plus its short text rendering.
//!
//! rmcp's `Json<T>` sends the whole value again as text; agents read the text first, so each
//! tool writes its own concise rendering (WinDbg-shaped where it can).
//!
//! Which of the two goes on the wire is the rule of `ARCHITECTURE.md` ("What a model
//! receives"): clients forward either the text, or the structured content alone when there is
//! one, or both, so a result whose answer *is* text (command output, the analysis) sends only
//! the text unless the caller asked for the typed value ([`Rendered::text_only`]); a record
//! (a session, a live target's state) sends its value as `structuredContent`, matching the
//! tool's declared output schema, beside a one-line-per-fact text.

use rmcp::handler::server::tool::IntoCallToolResult;
use rmcp::model::{CallToolResponse, CallToolResult, ContentBlock};
use serde::Serialize;

/// A structured value and its text.
#[derive(Debug)]
pub struct Rendered<T> {
    /// The text content.
    pub text: String,
    /// The structured content.
    pub value: T,
    /// Whether the value goes on the wire as `structuredContent`.
    structured: bool,
    /// Whether the result says `isError` (a batch with a failed command), its structured
    /// content kept.
    is_error: bool,
}

impl<T> Rendered<T> {
    /// Pairs a value with its text; both are sent.
    pub fn new(value: T, text: impl Into<String>) -> Rendered<T> {
        Rendered {
            text: text.into(),
            value,
            structured: true,
            is_error: false,
        }
    }

    /// Marks the result `isError: true` when `failed` (its content is sent all the same).
    pub fn error_if(mut self, failed: bool) -> Rendered<T> {
        self.is_error = failed;
        self
    }

    /// Sends only the text when `text_only` (the tool then declares no output schema).
    pub fn text_only(mut self, text_only: bool) -> Rendered<T> {
        self.structured = !text_only;
        self
    }
}

impl<T: Serialize> IntoCallToolResult for Rendered<T> {
    fn into_call_tool_result(self) -> Result<CallToolResponse, rmcp::ErrorData> {
        if !self.structured {
            let mut result = CallToolResult::success(vec![ContentBlock::text(self.text)]);
            if self.is_error {
                result.is_error = Some(true);
            }
            return Ok(result.into());
        }
        let value = serde_json::to_value(&self.value).map_err(|e| {
            rmcp::ErrorData::internal_error(format!("cannot serialize the tool result: {e}"), None)
        })?;
        let mut result = CallToolResult::structured(value);
        result.content = vec![ContentBlock::text(self.text)];
        if self.is_error {
            result.is_error = Some(true);
        }
        Ok(result.into())
    }
}
