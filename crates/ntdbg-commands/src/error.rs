//! Command errors: a stable code, a message in WinDbg's words where it has them, and a hint.

use ntdbg_engine::EngineError;
pub use ntdbg_engine::ErrorCode;

/// Why a command failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandError {
    /// Stable key ([`ErrorCode::UnknownCommand`], [`ErrorCode::SyntaxError`],
    /// [`ErrorCode::MemoryUnavailable`], …).
    pub code: ErrorCode,
    /// What went wrong.
    pub message: String,
    /// What to do instead, when there is something to suggest.
    pub hint: Option<String>,
}

impl CommandError {
    /// An error with a code and message. `code` is an [`ErrorCode`] (or, for code written
    /// against the string API, its snake_case key).
    pub fn new(code: impl Into<ErrorCode>, message: impl Into<String>) -> CommandError {
        CommandError {
            code: code.into(),
            message: message.into(),
            hint: None,
        }
    }

    /// Adds a hint.
    pub fn with_hint(mut self, hint: impl Into<String>) -> CommandError {
        self.hint = Some(hint.into());
        self
    }

    /// The same error with another message (code and hint kept).
    pub fn with_message(mut self, message: impl Into<String>) -> CommandError {
        self.message = message.into();
        self
    }

    /// A syntax error in the arguments.
    pub fn syntax(message: impl Into<String>) -> CommandError {
        CommandError::new(ErrorCode::SyntaxError, message)
    }
}

/// User input as error messages quote it: at most 80 characters, with `…` when cut.
pub(crate) fn excerpt(text: &str) -> String {
    const MAX: usize = 80;
    match text.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_string(),
    }
}

impl std::fmt::Display for CommandError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)?;
        if let Some(h) = &self.hint {
            write!(f, " (hint: {h})")?;
        }
        Ok(())
    }
}

impl std::error::Error for CommandError {}

impl From<EngineError> for CommandError {
    fn from(e: EngineError) -> CommandError {
        CommandError::new(e.code(), e.to_string())
    }
}

impl From<ntdbg_engine::Cancelled> for CommandError {
    fn from(e: ntdbg_engine::Cancelled) -> CommandError {
        CommandError::from(EngineError::from(e))
    }
}

impl From<ntdbg_engine::expr::ExprError> for CommandError {
    fn from(e: ntdbg_engine::expr::ExprError) -> CommandError {
        CommandError::new(e.kind.error_code(), e.to_string())
    }
}
