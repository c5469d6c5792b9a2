//! The MASM tokenizer: numbers in WinDbg radix syntax, `@registers`, `$pseudo` registers,
//! symbol words (`mod!name`, `ns::f`, `mod!f<int>`), bare names, keyword and punctuation
//! operators. Tokens are produced on demand, so text after the end of an expression is never
//! rejected before the parser decides it needs it.

use std::ops::Range;

use super::error::ExprErrorKind;

/// An operator, as written; the parser decides whether `+`/`-` are unary or binary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Shl,
    Shr,
    Sar,
    Eq,
    Ne,
    Lt,
    Gt,
    Le,
    Ge,
    And,
    Xor,
    Or,
    /// `~`
    Complement,
    /// `!` or `not`
    Not,
    Hi,
    Low,
    By,
    Wo,
    Dwo,
    Qwo,
    Poi,
}

/// One token. Text payloads borrow the source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Tok<'a> {
    /// A number literal, or why it is not one.
    Number(Result<u64, ExprErrorKind>),
    /// `@name` / `@$name`: the name without `@`, as written.
    Register(&'a str),
    /// `$name`: the name including `$`, as written.
    Pseudo(&'a str),
    /// A qualified symbol word (`mod!name`, `a::b`, templates).
    Symbol(&'a str),
    /// A bare identifier that is not a number or keyword (symbol, then register).
    Name(&'a str),
    /// An operator.
    Op(Op),
    /// `@@c++(TEXT)` (`cpp` true) or `@@masm(TEXT)`: the text inside the parentheses and
    /// its byte offset in the source.
    Switch {
        cpp: bool,
        text: &'a str,
        offset: usize,
    },
    /// `(`
    LParen,
    /// `)`
    RParen,
    /// A character that starts no token.
    Unknown,
    /// The end of the input.
    Eof,
}

/// A token and its byte span in the source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Token<'a> {
    pub tok: Tok<'a>,
    pub span: Range<usize>,
}

/// An on-demand tokenizer over one source string.
#[derive(Debug, Clone)]
pub(crate) struct Lexer<'a> {
    src: &'a str,
    pos: usize,
}

impl<'a> Lexer<'a> {
    /// A lexer at the start of `src`.
    pub fn new(src: &'a str) -> Self {
        Lexer { src, pos: 0 }
    }

    /// The source being tokenized.
    pub fn src(&self) -> &'a str {
        self.src
    }

    /// The next token, without consuming it.
    pub fn peek(&self) -> Token<'a> {
        lex_at(self.src, self.pos)
    }

    /// Consumes `token` (which must come from [`Lexer::peek`]).
    pub fn consume(&mut self, token: &Token<'a>) {
        self.pos = token.span.end;
    }
}

/// Whether `b` may start or continue an identifier or number word.
pub(crate) fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

/// The token that starts at or after `pos` (whitespace skipped).
fn lex_at(src: &str, mut pos: usize) -> Token<'_> {
    let bytes = src.as_bytes();
    while pos < bytes.len() && bytes[pos].is_ascii_whitespace() {
        pos += 1;
    }
    let Some(&b) = bytes.get(pos) else {
        return Token {
            tok: Tok::Eof,
            span: src.len()..src.len(),
        };
    };
    let next = |i: usize| bytes.get(pos + i).copied();
    let punct = |op: Op, len: usize| Token {
        tok: Tok::Op(op),
        span: pos..pos + len,
    };
    match b {
        b'(' => Token {
            tok: Tok::LParen,
            span: pos..pos + 1,
        },
        b')' => Token {
            tok: Tok::RParen,
            span: pos..pos + 1,
        },
        b'+' => punct(Op::Add, 1),
        b'-' => punct(Op::Sub, 1),
        b'*' => punct(Op::Mul, 1),
        b'/' => punct(Op::Div, 1),
        b'%' => punct(Op::Mod, 1),
        b'~' => punct(Op::Complement, 1),
        b'&' => punct(Op::And, 1),
        b'^' => punct(Op::Xor, 1),
        b'|' => punct(Op::Or, 1),
        b'!' if next(1) == Some(b'=') => punct(Op::Ne, 2),
        b'!' => punct(Op::Not, 1),
        b'=' if next(1) == Some(b'=') => punct(Op::Eq, 2),
        b'=' => punct(Op::Eq, 1),
        b'<' if next(1) == Some(b'<') => punct(Op::Shl, 2),
        b'<' if next(1) == Some(b'=') => punct(Op::Le, 2),
        b'<' => punct(Op::Lt, 1),
        b'>' if next(1) == Some(b'>') && next(2) == Some(b'>') => punct(Op::Sar, 3),
        b'>' if next(1) == Some(b'>') => punct(Op::Shr, 2),
        b'>' if next(1) == Some(b'=') => punct(Op::Ge, 2),
        b'>' => punct(Op::Gt, 1),
        b'@' if next(1) == Some(b'@') => switch(src, pos),
        b'@' => {
            let name_start = if next(1) == Some(b'$') {
                pos + 2
            } else {
                pos + 1
            };
            let end = ident_end(bytes, name_start);
            if end == name_start {
                unknown(src, pos)
            } else {
                Token {
                    tok: Tok::Register(&src[pos + 1..end]),
                    span: pos..end,
                }
            }
        }
        b'$' => {
            let end = ident_end(bytes, pos + 1);
            if end == pos + 1 {
                unknown(src, pos)
            } else {
                Token {
                    tok: Tok::Pseudo(&src[pos..end]),
                    span: pos..end,
                }
            }
        }
        b if is_ident(b) => {
            let (end, qualified) = word_end(bytes, pos);
            let text = &src[pos..end];
            Token {
                tok: classify_word(text, qualified),
                span: pos..end,
            }
        }
        _ => unknown(src, pos),
    }
}

/// `@@c++(…)` or `@@masm(…)` at `pos`, up to the matching `)`; an unknown token when the
/// evaluator name is not one of those or the parenthesis is not closed.
fn switch(src: &str, pos: usize) -> Token<'_> {
    let rest = &src[pos..];
    let Some((cpp, prefix)) = [(true, "@@c++("), (false, "@@masm(")]
        .into_iter()
        .find(|(_, p)| {
            rest.get(..p.len())
                .is_some_and(|h| h.eq_ignore_ascii_case(p))
        })
    else {
        return unknown(src, pos);
    };
    let inner = pos + prefix.len();
    let mut depth = 1usize;
    for (i, b) in src.bytes().enumerate().skip(inner) {
        match b {
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    return Token {
                        tok: Tok::Switch {
                            cpp,
                            text: &src[inner..i],
                            offset: inner,
                        },
                        span: pos..i + 1,
                    };
                }
            }
            _ => {}
        }
    }
    unknown(src, pos)
}

/// An [`Tok::Unknown`] token covering the whole character at `pos`.
fn unknown(src: &str, pos: usize) -> Token<'_> {
    let len = src[pos..].chars().next().map_or(1, char::len_utf8);
    Token {
        tok: Tok::Unknown,
        span: pos..pos + len,
    }
}

/// The end of a run of identifier bytes starting at `from`.
fn ident_end(bytes: &[u8], mut from: usize) -> usize {
    while from < bytes.len() && is_ident(bytes[from]) {
        from += 1;
    }
    from
}

/// The end of the word starting at `start`, and whether it is a qualified symbol
/// (contains `!`, `::` or a template argument list).
fn word_end(bytes: &[u8], start: usize) -> (usize, bool) {
    let at = |i: usize| bytes.get(i).copied();
    let mut i = start;
    let mut qualified = false;
    let mut seen_bang = false;
    while let Some(b) = at(i) {
        if is_ident(b) || b == b'`' {
            i += 1;
        } else if b == b'!' && !seen_bang && at(i + 1).is_some_and(is_ident) {
            seen_bang = true;
            qualified = true;
            i += 1;
        } else if b == b':'
            && at(i + 1) == Some(b':')
            && at(i + 2).is_some_and(|c| is_ident(c) || c == b'~')
        {
            qualified = true;
            i += if at(i + 2) == Some(b'~') { 3 } else { 2 };
        } else if b == b'<' && qualified {
            match template_end(bytes, i) {
                Some(end) => i = end,
                None => break,
            }
        } else {
            break;
        }
    }
    (i, qualified)
}

/// If a C++ template argument list starts at `open` (a `<`), the index just past its `>`.
///
/// The list may hold identifiers, digits, `:`, `,`, spaces, `*`, `&` and nested lists; it
/// must be followed by something that is not an identifier character. Anything else is a
/// comparison operator instead.
fn template_end(bytes: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0usize;
    for (i, &b) in bytes.iter().enumerate().skip(open) {
        match b {
            b'<' => depth += 1,
            b'>' => {
                depth -= 1;
                if depth == 0 {
                    let after = bytes.get(i + 1).copied();
                    return match after {
                        Some(c) if is_ident(c) => None,
                        _ => Some(i + 1),
                    };
                }
            }
            b if is_ident(b) || matches!(b, b':' | b',' | b' ' | b'*' | b'&') => {}
            _ => return None,
        }
    }
    None
}

/// Decides what a scanned word is: symbol, keyword operator, number or bare name.
fn classify_word(text: &str, qualified: bool) -> Tok<'_> {
    if qualified {
        return Tok::Symbol(text);
    }
    if let Some(op) = keyword(text) {
        return Tok::Op(op);
    }
    let starts_with_digit = text.as_bytes().first().is_some_and(u8::is_ascii_digit);
    if starts_with_digit || text.bytes().all(|b| b.is_ascii_hexdigit() || b == b'`') {
        Tok::Number(parse_literal(text))
    } else {
        Tok::Name(text)
    }
}

/// The operator a keyword stands for (`mod`, `and`, `poi`, ...), case-insensitively.
fn keyword(text: &str) -> Option<Op> {
    const KEYWORDS: [(&str, Op); 12] = [
        ("mod", Op::Mod),
        ("and", Op::And),
        ("xor", Op::Xor),
        ("or", Op::Or),
        ("not", Op::Not),
        ("hi", Op::Hi),
        ("low", Op::Low),
        ("by", Op::By),
        ("wo", Op::Wo),
        ("dwo", Op::Dwo),
        ("qwo", Op::Qwo),
        ("poi", Op::Poi),
    ];
    KEYWORDS
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(text))
        .map(|&(_, op)| op)
}

/// Parses a MASM number literal: default radix 16, `0x`/`0n`/`0t`/`0y` prefixes, an `h`
/// suffix after a leading digit, and `` ` `` separators between digits.
pub(crate) fn parse_literal(text: &str) -> Result<u64, ExprErrorKind> {
    let bytes = text.as_bytes();
    let (radix, digits) = match bytes {
        [b'0', p, ..] => match p.to_ascii_lowercase() {
            b'x' => (16, &text[2..]),
            b'n' => (10, &text[2..]),
            b't' => (8, &text[2..]),
            b'y' => (2, &text[2..]),
            _ => default_radix(text),
        },
        _ => default_radix(text),
    };
    let mut value: u64 = 0;
    let mut any = false;
    let mut overflow = false;
    for c in digits.chars() {
        if c == '`' {
            continue;
        }
        let d = c.to_digit(radix).ok_or(ExprErrorKind::Syntax)?;
        any = true;
        match value
            .checked_mul(u64::from(radix))
            .and_then(|v| v.checked_add(u64::from(d)))
        {
            Some(v) => value = v,
            None => overflow = true,
        }
    }
    if !any {
        Err(ExprErrorKind::Syntax)
    } else if overflow {
        Err(ExprErrorKind::Overflow)
    } else {
        Ok(value)
    }
}

/// Radix 16 digits of an unprefixed literal, dropping an `h` suffix after a leading digit.
fn default_radix(text: &str) -> (u32, &str) {
    let starts_with_digit = text.as_bytes().first().is_some_and(u8::is_ascii_digit);
    match text.strip_suffix(['h', 'H']) {
        Some(rest) if starts_with_digit => (16, rest),
        _ => (16, text),
    }
}
