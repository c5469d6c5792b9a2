//! Errors from splitting a command line and reading command words: a kind with a stable
//! code, a byte span into the parsed text and a WinDbg-style message.

use std::fmt;
use std::ops::Range;

use ntdbg_engine::expr::caret_line;
use ntdbg_engine::ErrorCode;

/// What went wrong while splitting or parsing a command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ParseErrorKind {
    /// A `"` with no closing quote.
    UnterminatedQuote,
    /// A `{` with no closing `}`.
    UnterminatedBlock,
    /// A `}` with no opening `{`.
    UnmatchedBrace,
    /// The command text is empty or blank.
    EmptyCommand,
    /// A malformed `~` thread prefix (`~~[zz]`, `~99999999999`, `~1 ~2 k`).
    BadThread,
    /// Text that does not start with a command word (`123`).
    Syntax,
}

impl ParseErrorKind {
    /// A stable, machine-readable key for this kind, e.g. `"unterminated_quote"`.
    pub fn code(self) -> &'static str {
        self.error_code().name()
    }

    /// The [`ErrorCode`] of this kind.
    pub fn error_code(self) -> ErrorCode {
        match self {
            Self::UnterminatedQuote => ErrorCode::UnterminatedQuote,
            Self::UnterminatedBlock => ErrorCode::UnterminatedBlock,
            Self::UnmatchedBrace => ErrorCode::UnmatchedBrace,
            Self::EmptyCommand => ErrorCode::EmptyCommand,
            Self::BadThread => ErrorCode::BadThread,
            Self::Syntax => ErrorCode::SyntaxError,
        }
    }
}

/// An error from [`split_commands`](super::split_commands) or
/// [`parse_command`](super::parse_command).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// What went wrong.
    pub kind: ParseErrorKind,
    /// Byte range of the offending text in the parsed string, on `char` boundaries.
    pub span: Range<usize>,
    /// The message, e.g. `Syntax error: unterminated quote`.
    pub message: String,
}

impl ParseError {
    /// An error of `kind` at `span` with `message`.
    pub(crate) fn new(
        kind: ParseErrorKind,
        span: Range<usize>,
        message: impl Into<String>,
    ) -> Self {
        ParseError {
            kind,
            span,
            message: message.into(),
        }
    }

    /// A stable, machine-readable key for the error kind, e.g. `"unmatched_brace"`.
    pub fn code(&self) -> &'static str {
        self.kind.code()
    }

    /// The error with its span moved right by `by` bytes: for an error from
    /// [`parse_command`](super::parse_command) on one command of a batch, pass the
    /// command's [`Spanned::span`](super::Spanned::span)`.start` to point into the batch.
    pub fn offset_by(mut self, by: usize) -> Self {
        self.span = self.span.start.saturating_add(by)..self.span.end.saturating_add(by);
        self
    }

    /// The source line holding the error with a caret line under the span, then the
    /// message:
    ///
    /// ```text
    /// .echo "oops
    ///       ^^^^^
    /// Syntax error: unterminated quote
    /// ```
    pub fn render(&self, source: &str) -> String {
        format!(
            "{}\n{}",
            caret_line(source, self.span.clone()),
            self.message
        )
    }
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ParseError {}
