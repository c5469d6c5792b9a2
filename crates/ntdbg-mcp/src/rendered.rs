//! A tool's successful answer: a structured value plus its short text rendering.
//!
//! rmcp's `Json<T>` sends the whole value again as text; agents read the text first, so each
//! tool writes its own concise rendering (WinDbg-shaped where it can) and the value goes to
//! `structuredContent`, matching the tool's declared output schema.

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
}

impl<T> Rendered<T> {
    /// Pairs a value with its text.
    pub fn new(value: T, text: impl Into<String>) -> Rendered<T> {
        Rendered {
            text: text.into(),
            value,
        }
    }
}

impl<T: Serialize> IntoCallToolResult for Rendered<T> {
    fn into_call_tool_result(self) -> Result<CallToolResponse, rmcp::ErrorData> {
        let value = serde_json::to_value(&self.value).map_err(|e| {
            rmcp::ErrorData::internal_error(format!("cannot serialize the tool result: {e}"), None)
        })?;
        let mut result = CallToolResult::structured(value);
        result.content = vec![ContentBlock::text(self.text)];
        Ok(result.into())
    }
}
