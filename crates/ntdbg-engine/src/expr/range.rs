//! WinDbg address-range arguments (`ADDR`, `ADDR L20`, `ADDR L?80000`, `ADDR ADDR2`,
//! `L8`) and a whitespace argument splitter that keeps parenthesised and quoted text whole.

use super::error::{ExprError, ExprErrorKind};
use super::lexer::{is_ident, parse_literal};
use super::{check_length, evaluate_prefix, ExprEnv};

/// The size part of a range argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Extent {
    /// `L<count>`: a number of display units (bytes for `db`, dwords for `dd`,
    /// instructions for `u`, ...). The command decides the unit.
    Count(u64),
    /// A second address, as written (`db 1000 1100`); the command decides how the end is
    /// treated.
    End(u64),
}

/// A parsed range argument. Both parts are optional: `db` alone continues where the last
/// display stopped, and `db L20` keeps that start with a new size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RangeArg {
    /// The start address, if one was given.
    pub start: Option<u64>,
    /// The size or end address, if one was given.
    pub extent: Option<Extent>,
    /// `true` when the count was written `L?`: the user waived WinDbg's "range too large"
    /// check. The caller still caps sizes to what it can handle.
    pub no_size_limit: bool,
}

/// Parses `[start] [L[?]count | end]` from a command's argument text.
///
/// Expressions are read greedily, so `rsp - 8 L4` is a start of `rsp-8` and a count of 4.
/// A word starting with `L`/`l` is a count when what follows the `L` is `?`, whitespace,
/// punctuation, or a valid number (`L20`, `L0n10`, `Lff`); otherwise it is an expression
/// (`lstrlenW`). Errors carry spans into `args`; text left over after the range is a
/// syntax error.
pub fn parse_range(args: &str, env: &dyn ExprEnv) -> Result<RangeArg, ExprError> {
    check_length(args)?;
    let mut range = RangeArg {
        start: None,
        extent: None,
        no_size_limit: false,
    };
    let mut pos = skip_ws(args, 0);
    if pos < args.len() && length_spec(args, pos).is_none() {
        let (start, next) = expression_at(args, pos, env)?;
        range.start = Some(start);
        pos = skip_ws(args, next);
    }
    if pos < args.len() {
        if let Some((unchecked, count_at)) = length_spec(args, pos) {
            range.no_size_limit = unchecked;
            let (count, next) = expression_at(args, count_at, env)?;
            range.extent = Some(Extent::Count(count));
            pos = skip_ws(args, next);
        } else {
            let (end, next) = expression_at(args, pos, env)?;
            range.extent = Some(Extent::End(end));
            pos = skip_ws(args, next);
        }
    }
    if pos < args.len() {
        let span = pos..pos + char_len(args, pos);
        return Err(ExprError::at(ExprErrorKind::Syntax, span, &args[pos..]));
    }
    Ok(range)
}

/// Evaluates the longest expression at `pos` in `args`; returns its value and end offset.
fn expression_at(args: &str, pos: usize, env: &dyn ExprEnv) -> Result<(u64, usize), ExprError> {
    let rest = args.get(pos..).unwrap_or_default();
    let (value, used) = evaluate_prefix(rest, env).map_err(|e| e.shifted(pos))?;
    Ok((value, pos + used))
}

/// If an `L` length specifier starts at `pos`: whether it is `L?`, and where its count
/// expression starts.
fn length_spec(args: &str, pos: usize) -> Option<(bool, usize)> {
    let bytes = args.as_bytes();
    if !matches!(bytes.get(pos), Some(b'l' | b'L')) {
        return None;
    }
    match bytes.get(pos + 1) {
        Some(b'?') => Some((true, pos + 2)),
        Some(&b) if is_ident(b) => {
            let mut end = pos + 1;
            while end < bytes.len() && (is_ident(bytes[end]) || bytes[end] == b'`') {
                end += 1;
            }
            parse_literal(&args[pos + 1..end])
                .is_ok()
                .then_some((false, pos + 1))
        }
        _ => Some((false, pos + 1)),
    }
}

/// The first offset at or after `pos` that is not ASCII whitespace.
fn skip_ws(text: &str, mut pos: usize) -> usize {
    let bytes = text.as_bytes();
    while pos < bytes.len() && bytes[pos].is_ascii_whitespace() {
        pos += 1;
    }
    pos
}

/// The byte length of the character at `pos` (1 past the end).
fn char_len(text: &str, pos: usize) -> usize {
    text.get(pos..)
        .and_then(|rest| rest.chars().next())
        .map_or(1, char::len_utf8)
}

/// Splits an argument string on whitespace, keeping `( )`, `[ ]`, `{ }` groups and
/// double-quoted strings (with `\"` and `\\` escapes) whole: `poi( rsp + 8 ) "k; g"` gives
/// `["poi( rsp + 8 )", "\"k; g\""]`. Unbalanced brackets or quotes run to the end; it never
/// fails.
pub fn split_args(args: &str) -> Vec<&str> {
    split_args_indexed(args)
        .into_iter()
        .map(|(_, arg)| arg)
        .collect()
}

/// Like [`split_args`], with each argument's byte offset in `args` (for error spans).
pub fn split_args_indexed(args: &str) -> Vec<(usize, &str)> {
    let bytes = args.as_bytes();
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    let mut depth = 0usize;
    let mut in_quote = false;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if in_quote {
            match b {
                b'\\' if matches!(bytes.get(i + 1), Some(b'"' | b'\\')) => i += 1,
                b'"' => in_quote = false,
                _ => {}
            }
        } else if b.is_ascii_whitespace() && depth == 0 {
            if let Some(s) = start.take() {
                out.push((s, &args[s..i]));
            }
        } else {
            start.get_or_insert(i);
            match b {
                b'"' => in_quote = true,
                b'(' | b'[' | b'{' => depth += 1,
                b')' | b']' | b'}' => depth = depth.saturating_sub(1),
                _ => {}
            }
        }
        i += 1;
    }
    if let Some(s) = start {
        out.push((s, &args[s..]));
    }
    out
}
