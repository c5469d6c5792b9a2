//! Reads one command: an optional `~` thread prefix, the command word, and the argument
//! text. Resolving the word to a command is the command table's job.
//!
//! The command word is `.`/`!` followed by an identifier (letters, digits, `_`; `.sympath+`
//! style trailing `+`; `!ext.cmd` style module-qualified extension names), `?`, `??`, `|`,
//! `*` (comment), `#`, the `$$`/`$<` script and comment forms, or a run of ASCII letters
//! (`dd@rsp` is `dd` then `@rsp`; `kb20` is `kb` then `20`; `lmvm` stays one word).

use std::ops::Range;

use ntdbg_engine::expr::parse_number;

use super::error::{ParseError, ParseErrorKind};

/// Which threads a `~` prefix selects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ThreadSelector {
    /// `~.`: the current thread.
    Current,
    /// `~#`: the thread of the last event (the exception thread in a dump).
    Event,
    /// `~*`: every thread.
    All,
    /// `~N`: the thread with debugger index `N` (decimal).
    Index(u32),
    /// `~~[TID]`: the thread with system thread id `TID` (a MASM number, hex by default).
    Id(u32),
}

/// One parsed command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandLine<'a> {
    /// The `~` thread prefix, if any (`~3s`, `~*k`, `~~[0x1a2c] kb`).
    pub thread: Option<ThreadSelector>,
    /// The command word as written (`kP` and `kp` differ). With a thread prefix and no
    /// command (`~3`, `~*`) this is `~`; `~` directly followed by letters and no selector
    /// is one word (`~s`, `~f`).
    pub name: &'a str,
    /// [`name`](Self::name) in ASCII lower case, for case-insensitive lookup.
    pub name_lower: String,
    /// Byte range of the command word in the parsed text.
    pub name_span: Range<usize>,
    /// The rest of the text after the command word, trimmed.
    pub args: &'a str,
    /// Byte offset of [`args`](Self::args) in the parsed text, to shift argument errors.
    pub args_offset: usize,
}

/// Parses one command (as split by [`split_commands`](super::split_commands)). Errors span
/// into `text`.
pub fn parse_command(text: &str) -> Result<CommandLine<'_>, ParseError> {
    let start = skip_ws(text, 0);
    if start == text.len() {
        return Err(ParseError::new(
            ParseErrorKind::EmptyCommand,
            start..start,
            "Syntax error: empty command",
        ));
    }
    let (thread, word_start) = match thread_prefix(text, start)? {
        Some((selector, after)) => (Some(selector), skip_ws(text, after)),
        None => (None, start),
    };
    let name_span = if thread.is_some() {
        if word_start == text.len() {
            // `~3` alone: show the selected threads.
            start..start + 1
        } else if text.as_bytes()[word_start] == b'~' {
            return Err(ParseError::new(
                ParseErrorKind::BadThread,
                word_start..word_start + 1,
                "Syntax error: a thread prefix cannot follow a thread prefix",
            ));
        } else {
            word_start..word_end(text, word_start)?
        }
    } else {
        word_start..word_end(text, word_start)?
    };
    let name = &text[name_span.clone()];
    let args_start = if thread.is_some() && word_start == text.len() {
        text.len()
    } else {
        skip_ws(text, name_span.end)
    };
    let args = text[args_start..].trim_end();
    Ok(CommandLine {
        thread,
        name,
        name_lower: name.to_ascii_lowercase(),
        name_span,
        args,
        args_offset: args_start,
    })
}

/// Reads a `~` thread selector at `at`: the selector and the offset after it, or `None`
/// when the text does not start with `~` followed by a selector.
fn thread_prefix(text: &str, at: usize) -> Result<Option<(ThreadSelector, usize)>, ParseError> {
    let bytes = text.as_bytes();
    if bytes.get(at) != Some(&b'~') {
        return Ok(None);
    }
    let bad = |span: Range<usize>, what: &str| {
        ParseError::new(
            ParseErrorKind::BadThread,
            span,
            format!("Syntax error: bad thread selector: {what}"),
        )
    };
    let selector = match bytes.get(at + 1) {
        Some(b'.') => (ThreadSelector::Current, at + 2),
        Some(b'#') => (ThreadSelector::Event, at + 2),
        Some(b'*') => (ThreadSelector::All, at + 2),
        Some(b) if b.is_ascii_digit() => {
            let end = bytes[at + 1..]
                .iter()
                .position(|c| !c.is_ascii_digit())
                .map_or(bytes.len(), |n| at + 1 + n);
            let index = text[at + 1..end]
                .parse::<u32>()
                .map_err(|_| bad(at..end, "thread index out of range"))?;
            (ThreadSelector::Index(index), end)
        }
        Some(b'~') => {
            if bytes.get(at + 2) != Some(&b'[') {
                return Err(bad(at..at + 2, "expected `~~[TID]`"));
            }
            let close = bytes[at + 3..]
                .iter()
                .position(|&c| c == b']')
                .map(|n| at + 3 + n)
                .ok_or_else(|| bad(at..text.len(), "missing `]`"))?;
            let id = parse_number(text[at + 3..close].trim())
                .and_then(|id| u32::try_from(id).ok())
                .ok_or_else(|| bad(at..close + 1, "expected a thread id number"))?;
            (ThreadSelector::Id(id), close + 1)
        }
        _ => return Ok(None),
    };
    Ok(Some(selector))
}

/// The end of the command word starting at `at` (which is not whitespace).
fn word_end(text: &str, at: usize) -> Result<usize, ParseError> {
    let bytes = &text.as_bytes()[at..];
    let ident_end = |from: usize| {
        bytes[from..]
            .iter()
            .position(|c| !(c.is_ascii_alphanumeric() || *c == b'_'))
            .map_or(bytes.len(), |n| from + n)
    };
    let len = match bytes[0] {
        b'.' => {
            let end = ident_end(1);
            if end > 1 && bytes.get(end) == Some(&b'+') {
                end + 1
            } else {
                end
            }
        }
        b'!' => {
            let mut end = ident_end(1);
            if bytes.get(end) == Some(&b'.')
                && bytes
                    .get(end + 1)
                    .is_some_and(|c| c.is_ascii_alphanumeric() || *c == b'_')
            {
                end = ident_end(end + 1);
            }
            end
        }
        b'?' if bytes.get(1) == Some(&b'?') => 2,
        b'?' | b'|' | b'*' | b'#' => 1,
        b'$' => {
            const SCRIPT_WORDS: [&[u8]; 6] = [b"$$>a<", b"$$><", b"$$<", b"$><", b"$<", b"$$"];
            match SCRIPT_WORDS.iter().find(|w| bytes.starts_with(w)) {
                Some(word) => word.len(),
                None => return Err(no_command(text, at)),
            }
        }
        b'~' => {
            // `~` with no selector: alone, or glued to a letter command (`~s`, `~f`).
            1 + bytes[1..]
                .iter()
                .position(|c| !c.is_ascii_alphabetic())
                .unwrap_or(bytes.len() - 1)
        }
        b if b.is_ascii_alphabetic() => bytes
            .iter()
            .position(|c| !c.is_ascii_alphabetic())
            .unwrap_or(bytes.len()),
        _ => return Err(no_command(text, at)),
    };
    Ok(at + len)
}

/// The error for text at `at` that starts no command word.
fn no_command(text: &str, at: usize) -> ParseError {
    let rest = text[at..].trim_end();
    let first = rest.chars().next().map_or(0, char::len_utf8);
    let end = rest
        .find(char::is_whitespace)
        .unwrap_or(rest.len())
        .max(first);
    ParseError::new(
        ParseErrorKind::Syntax,
        at..at + end,
        format!("Syntax error in '{}'", &text[at..at + end]),
    )
}

/// The first offset at or after `pos` that is not ASCII whitespace.
fn skip_ws(text: &str, mut pos: usize) -> usize {
    let bytes = text.as_bytes();
    while pos < bytes.len() && bytes[pos].is_ascii_whitespace() {
        pos += 1;
    }
    pos
}
