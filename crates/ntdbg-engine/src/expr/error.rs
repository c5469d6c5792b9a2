//! Expression errors: a kind with a stable code, a byte span into the evaluated text and a
//! WinDbg-style message, plus [`caret_line`] to point at the span under the source text.

use std::fmt;
use std::ops::Range;

use crate::ErrorCode;

/// How many characters of the offending text a message quotes before eliding the rest.
const QUOTE_LIMIT: usize = 64;

/// What went wrong while parsing or evaluating an expression.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ExprErrorKind {
    /// A token that does not fit the grammar (`Syntax error at '...'`).
    Syntax,
    /// An operand was expected but the text ended (`Numeric expression missing from '<EOL>'`).
    MissingExpression,
    /// A name that is neither a number, a symbol nor a register (`Couldn't resolve error at '...'`).
    Unresolved,
    /// `@name` or `$name` that the environment does not know (`Bad register error at '...'`).
    BadRegister,
    /// `poi()`/`by()`/`wo()`/`dwo()`/`qwo()` on unreadable memory (`Memory access error at '...'`).
    MemoryAccess,
    /// `/`, `%` or `mod` by zero (`Divide by zero error at '...'`).
    DivideByZero,
    /// A number literal that does not fit in 64 bits (`Numeric overflow error at '...'`).
    Overflow,
    /// The input is longer than [`MAX_EXPR_LEN`](super::MAX_EXPR_LEN) bytes.
    TooLong,
    /// Parentheses and unary operators nest deeper than [`MAX_DEPTH`](super::MAX_DEPTH).
    TooDeep,
    /// A C++ operand of the wrong type for its operator (`Type conflict error at '...'`).
    TypeConflict,
    /// A C++ operand whose value is not known at this instruction (a variable whose location
    /// is not valid here).
    Unavailable,
}

impl ExprErrorKind {
    /// A stable, machine-readable key for this kind, e.g. `"unresolved"`.
    pub fn code(self) -> &'static str {
        self.error_code().name()
    }

    /// The [`ErrorCode`] of this kind.
    pub fn error_code(self) -> ErrorCode {
        match self {
            Self::Syntax => ErrorCode::SyntaxError,
            Self::MissingExpression => ErrorCode::MissingExpression,
            Self::Unresolved => ErrorCode::Unresolved,
            Self::BadRegister => ErrorCode::BadRegister,
            Self::MemoryAccess => ErrorCode::MemoryAccess,
            Self::DivideByZero => ErrorCode::DivideByZero,
            Self::Overflow => ErrorCode::Overflow,
            Self::TooLong => ErrorCode::TooLong,
            Self::TooDeep => ErrorCode::TooDeep,
            Self::TypeConflict => ErrorCode::TypeConflict,
            Self::Unavailable => ErrorCode::ValueUnavailable,
        }
    }
}

/// An error from [`evaluate`](super::evaluate) or [`parse_range`](super::parse_range).
///
/// `span` is a byte range into the text that was passed in (for `parse_range`, the whole
/// argument string), always on `char` boundaries.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExprError {
    /// What went wrong.
    pub kind: ExprErrorKind,
    /// Byte range of the offending text in the input; empty at the end for a missing operand.
    pub span: Range<usize>,
    /// The WinDbg-style message, e.g. `Couldn't resolve error at 'foo!bar'`.
    pub message: String,
}

impl ExprError {
    /// A stable, machine-readable key for the error kind, e.g. `"syntax_error"`.
    pub fn code(&self) -> &'static str {
        self.kind.code()
    }

    /// The source line holding the error, a caret line under the span (see
    /// [`caret_line`]) and the message, ready to print.
    pub fn render(&self, source: &str) -> String {
        format!(
            "{}\n{}",
            caret_line(source, self.span.clone()),
            self.message
        )
    }

    /// Builds an error whose message quotes `quoted` after the WinDbg prefix for `kind`.
    pub(crate) fn at(kind: ExprErrorKind, span: Range<usize>, quoted: &str) -> Self {
        let prefix = match kind {
            ExprErrorKind::Syntax => "Syntax error",
            ExprErrorKind::MissingExpression => "Numeric expression missing",
            ExprErrorKind::Unresolved => "Couldn't resolve error",
            ExprErrorKind::BadRegister => "Bad register error",
            ExprErrorKind::MemoryAccess => "Memory access error",
            ExprErrorKind::DivideByZero => "Divide by zero error",
            ExprErrorKind::Overflow => "Numeric overflow error",
            ExprErrorKind::TooLong => "Expression too long",
            ExprErrorKind::TooDeep => "Expression too complex",
            ExprErrorKind::TypeConflict => "Type conflict error",
            ExprErrorKind::Unavailable => "Value unavailable error",
        };
        let preposition = if kind == ExprErrorKind::MissingExpression {
            "from"
        } else {
            "at"
        };
        let quoted = quoted.trim_end();
        let quoted = if quoted.is_empty() {
            "<EOL>".to_string()
        } else {
            elide(quoted)
        };
        ExprError {
            kind,
            span,
            message: format!("{prefix} {preposition} '{quoted}'"),
        }
    }

    /// Moves the span right by `by` bytes (for text evaluated inside a larger string).
    pub(crate) fn shifted(mut self, by: usize) -> Self {
        self.span = self.span.start.saturating_add(by)..self.span.end.saturating_add(by);
        self
    }
}

impl fmt::Display for ExprError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ExprError {}

/// Shortens `text` to [`QUOTE_LIMIT`] characters, marking the cut with `...`.
fn elide(text: &str) -> String {
    match text.char_indices().nth(QUOTE_LIMIT) {
        Some((cut, _)) => format!("{}...", &text[..cut]),
        None => text.to_string(),
    }
}

/// Renders the line of `source` that contains `span.start` with a caret line under the span:
///
/// ```text
/// poi(foo!bar)
///     ^^^^^^^
/// ```
///
/// Columns count `char`s; tabs in the prefix are copied so the carets line up. A span that is
/// empty or runs past the line gets a single caret / is clipped to the line. Out-of-range or
/// non-boundary spans are clamped, never a panic.
pub fn caret_line(source: &str, span: Range<usize>) -> String {
    let start = floor_boundary(source, span.start.min(source.len()));
    let end = floor_boundary(source, span.end.clamp(start, source.len()));
    let line_start = source[..start].rfind('\n').map_or(0, |i| i + 1);
    let line_end = source[start..]
        .find('\n')
        .map_or(source.len(), |i| start + i);
    let line = source[line_start..line_end].trim_end_matches('\r');
    let end = end.min(line_start + line.len()).max(start);
    let mut out = String::with_capacity(line.len() * 2 + 2);
    out.push_str(line);
    out.push('\n');
    for c in source[line_start..start].chars() {
        out.push(if c == '\t' { '\t' } else { ' ' });
    }
    let width = source[start..end].chars().count().max(1);
    out.extend(std::iter::repeat_n('^', width));
    out
}

/// The largest char boundary of `s` that is `<= at` (`at` must be `<= s.len()`).
fn floor_boundary(s: &str, mut at: usize) -> usize {
    while at > 0 && !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}
