//! The MASM expression grammar, compiled to a postfix program by an iterative
//! shunting-yard parser (no recursion, so deeply nested input cannot exhaust the stack).
//!
//! Precedence, loosest first (all binary operators are left-associative):
//! `| or`; `^ xor`; `& and`; `= == != < > <= >=`; `<< >> >>>`; `+ -`; `* / % mod`;
//! then the unary operators `+ - ~ ! not hi low by wo dwo qwo poi`, which bind tighter
//! than any binary operator, and operands (numbers, registers, symbols, parentheses).

use std::ops::Range;

use super::error::{ExprError, ExprErrorKind};
use super::lexer::{Lexer, Op, Tok, Token};
use super::MAX_DEPTH;

/// A unary operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum UnaryOp {
    Plus,
    Neg,
    Complement,
    Not,
    Hi,
    Low,
    /// Reads memory: `by` (1), `wo` (2), `dwo` (4), `qwo` (8), `poi` (pointer size).
    Read(ReadSize),
}

/// The width of a memory-reading operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ReadSize {
    Bytes(usize),
    Pointer,
}

/// A binary operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BinaryOp {
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
}

/// The binary operator `op` stands for and its precedence (0 = loosest), if any.
fn binary_op(op: Op) -> Option<(BinaryOp, u8)> {
    let b = match op {
        Op::Or => (BinaryOp::Or, 0),
        Op::Xor => (BinaryOp::Xor, 1),
        Op::And => (BinaryOp::And, 2),
        Op::Eq => (BinaryOp::Eq, 3),
        Op::Ne => (BinaryOp::Ne, 3),
        Op::Lt => (BinaryOp::Lt, 3),
        Op::Gt => (BinaryOp::Gt, 3),
        Op::Le => (BinaryOp::Le, 3),
        Op::Ge => (BinaryOp::Ge, 3),
        Op::Shl => (BinaryOp::Shl, 4),
        Op::Shr => (BinaryOp::Shr, 4),
        Op::Sar => (BinaryOp::Sar, 4),
        Op::Add => (BinaryOp::Add, 5),
        Op::Sub => (BinaryOp::Sub, 5),
        Op::Mul => (BinaryOp::Mul, 6),
        Op::Div => (BinaryOp::Div, 6),
        Op::Mod => (BinaryOp::Mod, 6),
        _ => return None,
    };
    Some(b)
}

/// The unary operator `op` stands for in operand position, if any.
fn unary_op(op: Op) -> Option<UnaryOp> {
    let u = match op {
        Op::Add => UnaryOp::Plus,
        Op::Sub => UnaryOp::Neg,
        Op::Complement => UnaryOp::Complement,
        Op::Not => UnaryOp::Not,
        Op::Hi => UnaryOp::Hi,
        Op::Low => UnaryOp::Low,
        Op::By => UnaryOp::Read(ReadSize::Bytes(1)),
        Op::Wo => UnaryOp::Read(ReadSize::Bytes(2)),
        Op::Dwo => UnaryOp::Read(ReadSize::Bytes(4)),
        Op::Qwo => UnaryOp::Read(ReadSize::Bytes(8)),
        Op::Poi => UnaryOp::Read(ReadSize::Pointer),
        _ => return None,
    };
    Some(u)
}

/// One step of a postfix program.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Step<'a> {
    /// Push a literal.
    Number(u64),
    /// Push a register by explicit syntax (`@rax`, `@$ip`, `$ip`): the name without `@`.
    Register(&'a str),
    /// Push a qualified symbol (`mod!name`, `a::b`).
    Symbol(&'a str),
    /// Push a bare word: a symbol if one resolves, else a register.
    Name(&'a str),
    /// Push the value of `@@c++(TEXT)` (`cpp` true) or `@@masm(TEXT)`; `offset` is where TEXT
    /// starts in the source.
    Switch {
        cpp: bool,
        text: &'a str,
        offset: usize,
    },
    /// Pop one value, push the result.
    Unary(UnaryOp),
    /// Pop the right then the left operand, push the result.
    Binary(BinaryOp),
}

/// A step and the span of the source text its result stands for (for binary steps, from
/// the left operand's start to the right operand's end).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Instr<'a> {
    pub step: Step<'a>,
    pub span: Range<usize>,
}

/// A parsed expression: steps for a stack machine, in evaluation order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Program<'a> {
    pub instrs: Vec<Instr<'a>>,
    /// Byte offset just past the expression's last token.
    pub end: usize,
}

/// Parses all of `src` as one expression; trailing text is a syntax error.
pub(crate) fn parse_full(src: &str) -> Result<Program<'_>, ExprError> {
    Parser::new(src).run(true)
}

/// Parses the longest expression at the start of `src`, stopping before a token that cannot
/// continue it (a word, an unmatched `)`, an unknown character).
pub(crate) fn parse_prefix(src: &str) -> Result<Program<'_>, ExprError> {
    Parser::new(src).run(false)
}

/// An entry of the operator stack.
#[derive(Debug, Clone, Copy)]
enum Pending {
    /// A unary operator whose token starts at the offset.
    Unary(UnaryOp, usize),
    /// A binary operator and its precedence.
    Binary(BinaryOp, u8),
    /// An open parenthesis at the offset.
    Paren(usize),
}

/// Shunting-yard state.
struct Parser<'a> {
    lexer: Lexer<'a>,
    /// Operators waiting for their operands.
    pending: Vec<Pending>,
    /// How many `Unary` and `Paren` entries `pending` holds.
    nesting: usize,
    /// The output program.
    instrs: Vec<Instr<'a>>,
    /// The source spans of the values the program so far leaves on the stack.
    spans: Vec<Range<usize>>,
    /// Offset just past the last consumed token.
    end: usize,
}

impl<'a> Parser<'a> {
    fn new(src: &'a str) -> Self {
        Parser {
            lexer: Lexer::new(src),
            pending: Vec::new(),
            nesting: 0,
            instrs: Vec::new(),
            spans: Vec::new(),
            end: 0,
        }
    }

    /// Runs the parser; with `full`, everything up to the end of input must be consumed.
    fn run(mut self, full: bool) -> Result<Program<'a>, ExprError> {
        let mut expect_operand = true;
        loop {
            let token = self.lexer.peek();
            if expect_operand {
                expect_operand = !self.operand(token)?;
                continue;
            }
            match token.tok {
                Tok::Op(op) => {
                    let Some((op, prec)) = binary_op(op) else {
                        break;
                    };
                    self.reduce(prec);
                    self.consume(&token);
                    self.pending.push(Pending::Binary(op, prec));
                    expect_operand = true;
                }
                Tok::RParen => {
                    self.reduce(0);
                    let Some(&Pending::Paren(open)) = self.pending.last() else {
                        break;
                    };
                    self.pending.pop();
                    self.nesting -= 1;
                    self.consume(&token);
                    if let Some(span) = self.spans.last_mut() {
                        *span = open..token.span.end;
                    }
                }
                _ => break,
            }
        }
        let stop = self.lexer.peek();
        self.reduce(0);
        if let Some(&Pending::Paren(open)) = self.pending.last() {
            let at = if stop.tok == Tok::Eof {
                open..open + 1
            } else {
                stop.span
            };
            return Err(self.syntax_error(at));
        }
        if full && stop.tok != Tok::Eof {
            return Err(self.syntax_error(stop.span));
        }
        Ok(Program {
            instrs: self.instrs,
            end: self.end,
        })
    }

    /// Handles `token` where an operand is expected. Returns `true` once an operand is
    /// complete, `false` after a prefix (a unary operator or `(`).
    fn operand(&mut self, token: Token<'a>) -> Result<bool, ExprError> {
        let step = match token.tok {
            Tok::Number(Ok(value)) => Step::Number(value),
            Tok::Register(name) | Tok::Pseudo(name) => Step::Register(name),
            Tok::Symbol(name) => Step::Symbol(name),
            Tok::Name(name) => Step::Name(name),
            Tok::Switch { cpp, text, offset } => Step::Switch { cpp, text, offset },
            Tok::Op(op) => {
                let Some(op) = unary_op(op) else {
                    return Err(self.syntax_error(token.span));
                };
                self.open(&token, Pending::Unary(op, token.span.start))?;
                return Ok(false);
            }
            Tok::LParen => {
                self.open(&token, Pending::Paren(token.span.start))?;
                return Ok(false);
            }
            Tok::Number(Err(kind)) => {
                let src = self.lexer.src();
                let quoted = match kind {
                    ExprErrorKind::Syntax => &src[token.span.start..],
                    _ => &src[token.span.clone()],
                };
                return Err(ExprError::at(kind, token.span, quoted));
            }
            Tok::Eof => {
                return Err(ExprError::at(
                    ExprErrorKind::MissingExpression,
                    token.span,
                    "",
                ))
            }
            Tok::RParen | Tok::Unknown => return Err(self.syntax_error(token.span)),
        };
        self.consume(&token);
        self.spans.push(token.span.clone());
        self.instrs.push(Instr {
            step,
            span: token.span,
        });
        Ok(true)
    }

    /// Pushes a nesting entry (unary operator or `(`) for `token`, failing past
    /// [`MAX_DEPTH`].
    fn open(&mut self, token: &Token<'a>, entry: Pending) -> Result<(), ExprError> {
        if self.nesting >= MAX_DEPTH {
            let src = self.lexer.src();
            return Err(ExprError::at(
                ExprErrorKind::TooDeep,
                token.span.clone(),
                &src[token.span.start..],
            ));
        }
        self.consume(token);
        self.nesting += 1;
        self.pending.push(entry);
        Ok(())
    }

    /// Emits pending unary operators and binary operators of precedence `min_prec` or
    /// tighter, stopping at an open parenthesis.
    fn reduce(&mut self, min_prec: u8) {
        while let Some(&top) = self.pending.last() {
            match top {
                Pending::Paren(_) => break,
                Pending::Binary(_, prec) if prec < min_prec => break,
                Pending::Unary(op, start) => {
                    self.pending.pop();
                    self.nesting -= 1;
                    let operand = self.spans.pop().unwrap_or_default();
                    self.emit(Step::Unary(op), start..operand.end);
                }
                Pending::Binary(op, _) => {
                    self.pending.pop();
                    let rhs = self.spans.pop().unwrap_or_default();
                    let lhs = self.spans.pop().unwrap_or_default();
                    self.emit(Step::Binary(op), lhs.start..rhs.end);
                }
            }
        }
    }

    /// Appends a step whose result stands for `span`.
    fn emit(&mut self, step: Step<'a>, span: Range<usize>) {
        self.spans.push(span.clone());
        self.instrs.push(Instr { step, span });
    }

    /// Consumes `token` and records where the expression so far ends.
    fn consume(&mut self, token: &Token<'a>) {
        self.lexer.consume(token);
        self.end = token.span.end;
    }

    /// A syntax error at `span`, quoting the rest of the input as WinDbg does.
    fn syntax_error(&self, span: Range<usize>) -> ExprError {
        let src = self.lexer.src();
        let quoted = src.get(span.start..).unwrap_or_default();
        ExprError::at(ExprErrorKind::Syntax, span, quoted)
    }
}
