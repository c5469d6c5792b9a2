//! Splits a batch of WinDbg commands on top-level `;` and newlines.
//!
//! Double-quoted strings (with `\"` and `\\` escapes) and `{ ... }` blocks are kept whole,
//! even across newlines, so `.if (c) { r; k } .else { g }` and `bp x "k; g"` stay one
//! command each. A command starting with `*` is a comment up to the end of the line
//! (semicolons included); one starting with `$$` is a comment up to the next `;` or newline,
//! and quotes or braces inside it are not special.

use std::ops::Range;

use super::error::{ParseError, ParseErrorKind};

/// A value and the byte range of the text it came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spanned<T> {
    /// The value.
    pub value: T,
    /// Byte range in the source string.
    pub span: Range<usize>,
}

/// Splits `line` into commands. Each result is trimmed and spans its text in `line`; empty
/// commands are dropped. An unterminated quote or block, or a stray `}`, is an error.
pub fn split_commands(line: &str) -> Result<Vec<Spanned<&str>>, ParseError> {
    let bytes = line.as_bytes();
    let mut commands = Vec::new();
    let mut start = 0;
    let mut blocks: Vec<usize> = Vec::new();
    let mut quote: Option<usize> = None;
    // Whether the current command has any non-blank text yet.
    let mut content = false;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if quote.is_some() {
            match b {
                b'\\' if matches!(bytes.get(i + 1), Some(b'"' | b'\\')) => i += 1,
                b'"' => quote = None,
                _ => {}
            }
            i += 1;
            continue;
        }
        let at_command_start = !content;
        if at_command_start && b == b'*' {
            i = line_end(bytes, i);
            continue;
        }
        if at_command_start && starts_dollar_comment(&bytes[i..]) {
            i = bytes[i..]
                .iter()
                .position(|&c| c == b';' || c == b'\n')
                .map_or(bytes.len(), |n| i + n);
            continue;
        }
        match b {
            b'"' => quote = Some(i),
            b'{' => blocks.push(i),
            b'}' => {
                let Some(_) = blocks.pop() else {
                    return Err(ParseError::new(
                        ParseErrorKind::UnmatchedBrace,
                        i..i + 1,
                        "Syntax error: unmatched '}'",
                    ));
                };
            }
            b';' | b'\n' if blocks.is_empty() => {
                push_trimmed(&mut commands, line, start..i);
                start = i + 1;
                content = false;
                i += 1;
                continue;
            }
            _ => {}
        }
        content |= !b.is_ascii_whitespace();
        i += 1;
    }
    if let Some(open) = quote {
        return Err(ParseError::new(
            ParseErrorKind::UnterminatedQuote,
            open..line.len(),
            "Syntax error: unterminated quote",
        ));
    }
    if let Some(&open) = blocks.last() {
        return Err(ParseError::new(
            ParseErrorKind::UnterminatedBlock,
            open..open + 1,
            "Syntax error: unterminated '{' block",
        ));
    }
    push_trimmed(&mut commands, line, start..line.len());
    Ok(commands)
}

/// Whether `rest` starts a `$$` comment (and not a `$$<`/`$$>` script command).
fn starts_dollar_comment(rest: &[u8]) -> bool {
    rest.starts_with(b"$$") && !matches!(rest.get(2), Some(b'<' | b'>'))
}

/// The offset of the newline ending the line that holds `from` (or the end of `bytes`).
fn line_end(bytes: &[u8], from: usize) -> usize {
    bytes[from..]
        .iter()
        .position(|&c| c == b'\n')
        .map_or(bytes.len(), |n| from + n)
}

/// Pushes the trimmed text of `range` unless it is blank.
fn push_trimmed<'a>(out: &mut Vec<Spanned<&'a str>>, line: &'a str, range: Range<usize>) {
    let text = &line[range.clone()];
    let trimmed_start = text.len() - text.trim_start().len();
    let trimmed = text.trim();
    if trimmed.is_empty() {
        return;
    }
    let start = range.start + trimmed_start;
    out.push(Spanned {
        value: trimmed,
        span: start..start + trimmed.len(),
    });
}
