//! Tokens of WinDbg's C++ expression syntax: C numbers (decimal by default, `0x` hex, `0`
//! octal, `0n` decimal, suffixes `u l ll i64`), identifiers with an optional `module!`,
//! `@register`, `@@masm(…)`/`@@c++(…)` and C's operators.

use std::ops::Range;

use crate::expr::{ExprError, ExprErrorKind};

/// One token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Tok {
    /// A number literal: its value and whether it is unsigned (`u` suffix) or 64-bit
    /// (`i64`, `ll` suffix).
    Number {
        value: u64,
        unsigned: bool,
        wide: bool,
        decimal: bool,
    },
    /// An identifier, possibly qualified (`crashy!g_sink`, `ns::name`).
    Ident(String),
    /// `@rcx`, `@$ip`: the name without `@`.
    Register(String),
    /// `@@masm(TEXT)` (`cpp` false) or `@@c++(TEXT)`: the text inside and its offset.
    Switch {
        cpp: bool,
        text: String,
        offset: usize,
    },
    /// An operator or punctuation (`->`, `<=`, `(`, `[`).
    Punct(&'static str),
    /// The end of the input.
    Eof,
}

/// A token and its byte span.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Token {
    pub tok: Tok,
    pub span: Range<usize>,
}

/// Operators, longest first so that `->` wins over `-`.
const PUNCTS: &[&str] = &[
    "->", "<<", ">>", "<=", ">=", "==", "!=", "&&", "||", "+", "-", "*", "/", "%", "<", ">", "&",
    "|", "^", "!", "~", "(", ")", "[", "]", ".", "?", ":",
];

/// Splits `src` into tokens (ending with [`Tok::Eof`]).
pub(crate) fn tokens(src: &str) -> Result<Vec<Token>, ExprError> {
    let bytes = src.as_bytes();
    let mut out = Vec::new();
    let mut pos = 0;
    loop {
        while pos < bytes.len() && bytes[pos].is_ascii_whitespace() {
            pos += 1;
        }
        if pos >= bytes.len() {
            out.push(Token {
                tok: Tok::Eof,
                span: src.len()..src.len(),
            });
            return Ok(out);
        }
        let rest = &src[pos..];
        let (tok, len) = if let Some((cpp, prefix)) = [(true, "@@c++("), (false, "@@masm(")]
            .into_iter()
            .find(|(_, p)| {
                rest.get(..p.len())
                    .is_some_and(|h| h.eq_ignore_ascii_case(p))
            }) {
            let inner = pos + prefix.len();
            let close = matching_paren(src, inner)
                .ok_or_else(|| error(ExprErrorKind::Syntax, pos..src.len(), src))?;
            (
                Tok::Switch {
                    cpp,
                    text: src[inner..close].to_string(),
                    offset: inner,
                },
                close + 1 - pos,
            )
        } else if let Some(name) = rest.strip_prefix('@') {
            let len = name
                .bytes()
                .enumerate()
                .take_while(|&(i, b)| is_ident(b) || (i == 0 && b == b'$'))
                .count();
            if len == 0 {
                return Err(error(ExprErrorKind::Syntax, pos..pos + 1, src));
            }
            (Tok::Register(name[..len].to_ascii_lowercase()), len + 1)
        } else if bytes[pos].is_ascii_digit() {
            let len = rest
                .bytes()
                .take_while(|b| b.is_ascii_alphanumeric() || *b == b'`')
                .count();
            let tok = number(&rest[..len]).map_err(|kind| error(kind, pos..pos + len, src))?;
            (tok, len)
        } else if is_ident(bytes[pos]) || bytes[pos] == b'$' {
            let len = ident_len(rest);
            (Tok::Ident(rest[..len].to_string()), len)
        } else if let Some(p) = PUNCTS.iter().find(|p| rest.starts_with(**p)) {
            (Tok::Punct(p), p.len())
        } else {
            let len = rest.chars().next().map_or(1, char::len_utf8);
            return Err(error(ExprErrorKind::Syntax, pos..pos + len, src));
        };
        out.push(Token {
            tok,
            span: pos..pos + len,
        });
        pos += len;
    }
}

/// An error of `kind` quoting `span` of `src`.
pub(crate) fn error(kind: ExprErrorKind, span: Range<usize>, src: &str) -> ExprError {
    let quoted = src.get(span.clone()).unwrap_or_default();
    ExprError::at(kind, span, quoted)
}

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The length of an identifier at the start of `s`: word characters, `$`, a `module!`
/// qualifier and `::` scopes.
fn ident_len(s: &str) -> usize {
    let bytes = s.as_bytes();
    let mut i = 0;
    let mut qualified = false;
    while i < bytes.len() {
        let b = bytes[i];
        if is_ident(b) || b == b'$' {
            i += 1;
        } else if b == b'!'
            && !qualified
            && i > 0
            && bytes.get(i + 1).is_some_and(|n| is_ident(*n) || *n == b'$')
        {
            qualified = true;
            i += 1;
        } else if b == b':'
            && bytes.get(i + 1) == Some(&b':')
            && bytes.get(i + 2).is_some_and(|n| is_ident(*n))
        {
            i += 2;
        } else {
            break;
        }
    }
    i
}

/// The index of the `)` closing a parenthesis opened just before `from`.
fn matching_paren(src: &str, from: usize) -> Option<usize> {
    let mut depth = 1usize;
    for (i, b) in src.bytes().enumerate().skip(from) {
        match b {
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(i);
                }
            }
            _ => {}
        }
    }
    None
}

/// A C number literal.
fn number(text: &str) -> Result<Tok, ExprErrorKind> {
    let lower = text.to_ascii_lowercase().replace('`', "");
    let (digits, radix, decimal) = if let Some(h) = lower.strip_prefix("0x") {
        (h, 16, false)
    } else if let Some(d) = lower.strip_prefix("0n") {
        (d, 10, true)
    } else if lower.len() > 1 && lower.starts_with('0') && lower.as_bytes()[1].is_ascii_digit() {
        (&lower[1..], 8, false)
    } else {
        (lower.as_str(), 10, true)
    };
    // Suffixes: u, l, ul, lu, ll, ull, i64, ui64.
    let body_len = digits
        .bytes()
        .take_while(|b| (*b as char).is_digit(radix))
        .count();
    let (body, suffix) = digits.split_at(body_len);
    let (unsigned, wide) = match suffix {
        "" | "l" => (false, false),
        "u" | "ul" | "lu" => (true, false),
        "ll" | "i64" => (false, true),
        "ull" | "llu" | "ui64" => (true, true),
        _ => return Err(ExprErrorKind::Syntax),
    };
    if body.is_empty() {
        return Err(ExprErrorKind::Syntax);
    }
    let value = u64::from_str_radix(body, radix).map_err(|_| ExprErrorKind::Overflow)?;
    Ok(Tok::Number {
        value,
        unsigned,
        wide,
        decimal,
    })
}
