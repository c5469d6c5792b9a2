//! WinDbg's default (MASM) expression syntax, evaluated to `u64` with wrapping arithmetic.
//!
//! * Numbers are hexadecimal unless prefixed: `0x10`, `0n16` (decimal), `0t20` (octal),
//!   `0y10000` (binary); `` ` `` separators are allowed (`` 00000001`40002134 ``), and an
//!   `h` suffix after a leading digit (`10h`).
//! * Operators, tightest first: unary `+ - ~ ! not hi low by wo dwo qwo poi`;
//!   `* / % mod`; `+ -`; `<< >> >>>`; `= == != < > <= >=` (1 or 0); `& and`; `^ xor`;
//!   `| or`. Keywords are case-insensitive. `hi`/`low` give bits 16..32 / 0..16;
//!   `by wo dwo qwo poi` read 1, 2, 4, 8 or pointer-size bytes of memory.
//! * `@rax`, `@$ip` and `$ip` are registers and pseudo-registers; a bare word is a number
//!   if it is valid hex (`ff`), else a symbol if one resolves, else a register (`rax`).
//! * `@@c++(EXPR)` evaluates EXPR with the C++ evaluator (typed: `@@c++(p->next)`),
//!   `@@masm(EXPR)` with this one.
//! * `mod!name`, `mod!ns::f`, `mod!f<int>`, `ns::f` and bare names are symbols; a module
//!   name alone is its base address.
//!
//! Errors carry a byte span and WinDbg's wording (`Couldn't resolve error at 'foo!bar'`).
//! Input is limited to [`MAX_EXPR_LEN`] bytes and [`MAX_DEPTH`] nested parentheses or
//! unary operators; no input makes the evaluator panic.
//!
//! ```
//! use ntdbg_engine::expr::{evaluate, ExprEnv};
//! struct Env;
//! impl ExprEnv for Env {
//!     fn register(&self, name: &str) -> Option<u64> { (name == "rax").then_some(0x1000) }
//!     fn read_memory(&self, _addr: u64, _size: usize) -> Option<u64> { None }
//!     fn pointer_size(&self) -> usize { 8 }
//!     fn symbol(&self, _name: &str) -> Option<u64> { None }
//! }
//! assert_eq!(evaluate("@rax + 0n16 * 2", &Env).unwrap(), 0x1020);
//! assert_eq!(evaluate("poi(0)", &Env).unwrap_err().code(), "memory_access");
//! ```

mod error;
mod eval;
mod lexer;
mod parser;
mod range;
#[cfg(test)]
mod tests;

pub use error::{caret_line, ExprError, ExprErrorKind};
pub use range::{parse_range, split_args, split_args_indexed, Extent, RangeArg};

/// The longest expression (or range argument string) accepted, in bytes.
pub const MAX_EXPR_LEN: usize = 4096;

/// The deepest nesting of parentheses and unary operators accepted.
pub const MAX_DEPTH: usize = 256;

/// What an expression can ask of the debugger: registers, memory and symbols.
/// The engine's session implements it; tests use a fake.
pub trait ExprEnv {
    /// The value of a register or pseudo-register, by lower-case name without `@`
    /// (`"rax"`, `"eip"`, `"$ip"`, `"$csp"`, `"$peb"`, `"$tid"`, ...).
    fn register(&self, name: &str) -> Option<u64>;
    /// The little-endian value of `size` (1, 2, 4 or 8) bytes at `addr`, or `None` when
    /// any of them is unreadable.
    fn read_memory(&self, addr: u64, size: usize) -> Option<u64>;
    /// The target's pointer size in bytes (4 or 8), the width `poi()` reads.
    fn pointer_size(&self) -> usize;
    /// The address of `"mod!sym"`, the base of module `"mod"`, or of `"sym"` in any module.
    fn symbol(&self, name: &str) -> Option<u64>;
    /// The value of the C++ expression inside `@@c++(…)`; environments without a C++
    /// evaluator refuse it.
    fn evaluate_cpp(&self, text: &str) -> Result<u64, ExprError> {
        Err(ExprError::at(ExprErrorKind::Syntax, 0..text.len(), text))
    }
}

/// Evaluates the MASM expression `expr`. Trailing text is a syntax error.
pub fn evaluate(expr: &str, env: &dyn ExprEnv) -> Result<u64, ExprError> {
    check_length(expr)?;
    let program = parser::parse_full(expr)?;
    eval::eval(&program, expr, env)
}

/// Evaluates the longest expression at the start of `text` and returns its value and the
/// byte offset just past it, for commands whose arguments mix expressions with other words
/// (`rsp L4` stops before `L4`). Leading whitespace is skipped; errors span into `text`.
pub fn evaluate_prefix(text: &str, env: &dyn ExprEnv) -> Result<(u64, usize), ExprError> {
    check_length(text)?;
    let program = parser::parse_prefix(text)?;
    Ok((eval::eval(&program, text, env)?, program.end))
}

/// Parses a number literal in MASM syntax (hex by default; `0x`/`0n`/`0t`/`0y` prefixes;
/// `` ` `` separators). `None` if `text` is not exactly one valid 64-bit literal.
pub fn parse_number(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|b| lexer::is_ident(b) || b == b'`') {
        return None;
    }
    lexer::parse_literal(text).ok()
}

/// Rejects input longer than [`MAX_EXPR_LEN`].
fn check_length(text: &str) -> Result<(), ExprError> {
    if text.len() <= MAX_EXPR_LEN {
        return Ok(());
    }
    let mut start = MAX_EXPR_LEN;
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    Err(ExprError {
        kind: ExprErrorKind::TooLong,
        span: start..text.len(),
        message: format!(
            "Expression too long ({} bytes; the limit is {MAX_EXPR_LEN})",
            text.len()
        ),
    })
}
