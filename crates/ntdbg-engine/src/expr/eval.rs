//! Evaluates a parsed MASM expression against an [`ExprEnv`] with 64-bit wrapping
//! arithmetic. Division, `%`/`mod` and comparisons are unsigned; `>>` is a logical and
//! `>>>` an arithmetic right shift; shifts by 64 or more give 0 (or all sign bits for `>>>`).

use std::ops::Range;

use super::error::{ExprError, ExprErrorKind};
use super::parser::{BinaryOp, Program, ReadSize, Step, UnaryOp};
use super::ExprEnv;

/// Runs `program`, parsed from `src`, against `env` on a value stack.
pub(crate) fn eval(program: &Program<'_>, src: &str, env: &dyn ExprEnv) -> Result<u64, ExprError> {
    let mut stack: Vec<u64> = Vec::with_capacity(16);
    for instr in &program.instrs {
        let fail = |kind: ExprErrorKind| error(kind, instr.span.clone(), src);
        let value = match &instr.step {
            Step::Number(value) => *value,
            Step::Register(name) => env
                .register(&name.to_ascii_lowercase())
                .ok_or_else(|| fail(ExprErrorKind::BadRegister))?,
            Step::Symbol(name) => env
                .symbol(name)
                .ok_or_else(|| fail(ExprErrorKind::Unresolved))?,
            Step::Name(name) => env
                .symbol(name)
                .or_else(|| env.register(&name.to_ascii_lowercase()))
                .ok_or_else(|| fail(ExprErrorKind::Unresolved))?,
            Step::Switch { cpp, text, offset } => {
                let value = if *cpp {
                    env.evaluate_cpp(text)
                } else {
                    super::evaluate(text, env)
                };
                value.map_err(|e| e.shifted(*offset))?
            }
            Step::Unary(op) => {
                let value = pop(&mut stack, &instr.span, src)?;
                unary(*op, value, env).ok_or_else(|| fail(ExprErrorKind::MemoryAccess))?
            }
            Step::Binary(op) => {
                let b = pop(&mut stack, &instr.span, src)?;
                let a = pop(&mut stack, &instr.span, src)?;
                binary(*op, a, b).ok_or_else(|| fail(ExprErrorKind::DivideByZero))?
            }
        };
        stack.push(value);
    }
    match stack.as_slice() {
        [value] => Ok(*value),
        _ => Err(error(ExprErrorKind::Syntax, 0..src.len(), src)),
    }
}

/// Pops an operand; a malformed program (never produced by the parser) is a syntax error.
fn pop(stack: &mut Vec<u64>, span: &Range<usize>, src: &str) -> Result<u64, ExprError> {
    stack
        .pop()
        .ok_or_else(|| error(ExprErrorKind::Syntax, span.clone(), src))
}

/// An error of `kind` at `span`, quoting the spanned text.
fn error(kind: ExprErrorKind, span: Range<usize>, src: &str) -> ExprError {
    let text = src.get(span.clone()).unwrap_or_default();
    ExprError::at(kind, span, text)
}

/// Applies a unary operator; `None` only when a memory read fails.
fn unary(op: UnaryOp, value: u64, env: &dyn ExprEnv) -> Option<u64> {
    let result = match op {
        UnaryOp::Plus => value,
        UnaryOp::Neg => value.wrapping_neg(),
        UnaryOp::Complement => !value,
        UnaryOp::Not => u64::from(value == 0),
        UnaryOp::Hi => (value >> 16) & 0xffff,
        UnaryOp::Low => value & 0xffff,
        UnaryOp::Read(size) => {
            let size = match size {
                ReadSize::Bytes(n) => n,
                ReadSize::Pointer => match env.pointer_size() {
                    4 => 4,
                    _ => 8,
                },
            };
            truncate(env.read_memory(value, size)?, size)
        }
    };
    Some(result)
}

/// Keeps the low `size` bytes of `value` (in case an environment returns extra bits).
fn truncate(value: u64, size: usize) -> u64 {
    match size {
        1 => value & 0xff,
        2 => value & 0xffff,
        4 => value & 0xffff_ffff,
        _ => value,
    }
}

/// Applies a binary operator; `None` only for division by zero.
fn binary(op: BinaryOp, a: u64, b: u64) -> Option<u64> {
    let shift = u32::try_from(b).unwrap_or(u32::MAX);
    let value = match op {
        BinaryOp::Add => a.wrapping_add(b),
        BinaryOp::Sub => a.wrapping_sub(b),
        BinaryOp::Mul => a.wrapping_mul(b),
        BinaryOp::Div => a.checked_div(b)?,
        BinaryOp::Mod => a.checked_rem(b)?,
        BinaryOp::Shl => a.checked_shl(shift).unwrap_or(0),
        BinaryOp::Shr => a.checked_shr(shift).unwrap_or(0),
        // Reinterpreting the bits as signed is the point of an arithmetic shift.
        BinaryOp::Sar => ((a as i64) >> shift.min(63)) as u64,
        BinaryOp::Eq => u64::from(a == b),
        BinaryOp::Ne => u64::from(a != b),
        BinaryOp::Lt => u64::from(a < b),
        BinaryOp::Gt => u64::from(a > b),
        BinaryOp::Le => u64::from(a <= b),
        BinaryOp::Ge => u64::from(a >= b),
        BinaryOp::And => a & b,
        BinaryOp::Xor => a ^ b,
        BinaryOp::Or => a | b,
    };
    Some(value)
}
