//! The C++ expression grammar of `??` and `dx`, as a syntax tree: names, numbers,
//! registers, `a->b`, `a.b`, `p[i]`, unary `* & - + ! ~`, casts `(TYPE)x`, `sizeof`, binary
//! arithmetic, shifts, comparisons, bitwise and logical operators, `?:`, and
//! `@@masm(…)`/`@@c++(…)`. Nesting is bounded by [`MAX_DEPTH`].

use std::ops::Range;

use super::lexer::{error, tokens, Tok, Token};
use crate::expr::{ExprError, ExprErrorKind, MAX_EXPR_LEN};

/// Deepest nesting of sub-expressions accepted.
pub(crate) const MAX_DEPTH: usize = 128;

/// A type as written in a cast or `sizeof`: `crashy!Node *`, `unsigned int`, `struct _X`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct TypeSpec {
    /// `module!` qualifier, when written.
    pub module: Option<String>,
    /// The base type's name (`Node`, `unsigned int`).
    pub name: String,
    /// Number of `*` after it.
    pub pointers: usize,
}

/// A binary operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum BinOp {
    Mul,
    Div,
    Rem,
    Add,
    Sub,
    Shl,
    Shr,
    Lt,
    Gt,
    Le,
    Ge,
    Eq,
    Ne,
    BitAnd,
    BitXor,
    BitOr,
    And,
    Or,
}

/// A unary operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum UnOp {
    Neg,
    Plus,
    Not,
    Complement,
    Deref,
    AddressOf,
}

/// An expression node with the span of source it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Expr {
    pub kind: ExprKind,
    pub span: Range<usize>,
}

/// The kinds of expression nodes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum ExprKind {
    Number {
        value: u64,
        unsigned: bool,
        wide: bool,
        decimal: bool,
    },
    Name(String),
    Register(String),
    Switch {
        cpp: bool,
        text: String,
        offset: usize,
    },
    Unary(UnOp, Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    Conditional(Box<Expr>, Box<Expr>, Box<Expr>),
    Member {
        of: Box<Expr>,
        name: String,
        arrow: bool,
    },
    Index(Box<Expr>, Box<Expr>),
    Cast(TypeSpec, Box<Expr>),
    SizeofType(TypeSpec),
    SizeofExpr(Box<Expr>),
}

/// C keywords that start a type name.
const TYPE_WORDS: &[&str] = &[
    "struct", "class", "union", "enum", "unsigned", "signed", "int", "char", "short", "long",
    "__int8", "__int16", "__int32", "__int64", "int64", "bool", "float", "double", "void",
    "wchar_t", "char16_t", "char32_t", "const", "volatile",
];

/// Parses `src`; `is_type` says whether a bare name in parentheses names a type (a cast)
/// rather than a variable.
pub(crate) fn parse(src: &str, is_type: &dyn Fn(&str) -> bool) -> Result<Expr, ExprError> {
    if src.len() > MAX_EXPR_LEN {
        return Err(error(ExprErrorKind::TooLong, MAX_EXPR_LEN..src.len(), src));
    }
    let toks = tokens(src)?;
    let mut p = Parser {
        src,
        toks,
        pos: 0,
        depth: 0,
        is_type,
    };
    if p.peek() == &Tok::Eof {
        return Err(error(
            ExprErrorKind::MissingExpression,
            src.len()..src.len(),
            src,
        ));
    }
    let e = p.conditional()?;
    if p.peek() != &Tok::Eof {
        let span = p.span();
        return Err(error(ExprErrorKind::Syntax, span.start..src.len(), src));
    }
    Ok(e)
}

struct Parser<'a> {
    src: &'a str,
    toks: Vec<Token>,
    pos: usize,
    depth: usize,
    is_type: &'a dyn Fn(&str) -> bool,
}

impl Parser<'_> {
    fn peek(&self) -> &Tok {
        &self.toks[self.pos.min(self.toks.len() - 1)].tok
    }

    fn peek_at(&self, ahead: usize) -> &Tok {
        &self.toks[(self.pos + ahead).min(self.toks.len() - 1)].tok
    }

    fn span(&self) -> Range<usize> {
        self.toks[self.pos.min(self.toks.len() - 1)].span.clone()
    }

    fn bump(&mut self) -> Token {
        let t = self.toks[self.pos.min(self.toks.len() - 1)].clone();
        if self.pos < self.toks.len() - 1 {
            self.pos += 1;
        }
        t
    }

    fn is_punct(&self, p: &str) -> bool {
        matches!(self.peek(), Tok::Punct(q) if *q == p)
    }

    fn expect(&mut self, p: &str) -> Result<(), ExprError> {
        if self.is_punct(p) {
            self.bump();
            Ok(())
        } else {
            Err(self.syntax_here())
        }
    }

    fn syntax_here(&self) -> ExprError {
        let span = self.span();
        let kind = if self.peek() == &Tok::Eof {
            ExprErrorKind::MissingExpression
        } else {
            ExprErrorKind::Syntax
        };
        error(kind, span.start..self.src.len(), self.src)
    }

    fn enter(&mut self) -> Result<(), ExprError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            let span = self.span();
            return Err(error(ExprErrorKind::TooDeep, span, self.src));
        }
        Ok(())
    }

    fn conditional(&mut self) -> Result<Expr, ExprError> {
        self.enter()?;
        let cond = self.binary(0)?;
        let out = if self.is_punct("?") {
            self.bump();
            let yes = self.conditional()?;
            self.expect(":")?;
            let no = self.conditional()?;
            let span = cond.span.start..no.span.end;
            Expr {
                kind: ExprKind::Conditional(Box::new(cond), Box::new(yes), Box::new(no)),
                span,
            }
        } else {
            cond
        };
        self.depth -= 1;
        Ok(out)
    }

    /// Binary operators by precedence climbing; `level` indexes [`LEVELS`].
    fn binary(&mut self, level: usize) -> Result<Expr, ExprError> {
        if level == LEVELS.len() {
            return self.unary();
        }
        let saved = self.depth;
        let mut left = self.binary(level + 1)?;
        loop {
            let op = match self.peek() {
                Tok::Punct(p) => LEVELS[level].iter().find(|(s, _)| s == p).map(|(_, o)| *o),
                _ => None,
            };
            let Some(op) = op else { break };
            // Each operator nests the tree one level deeper.
            self.enter()?;
            self.bump();
            let right = self.binary(level + 1)?;
            let span = left.span.start..right.span.end;
            left = Expr {
                kind: ExprKind::Binary(op, Box::new(left), Box::new(right)),
                span,
            };
        }
        self.depth = saved;
        Ok(left)
    }

    fn unary(&mut self) -> Result<Expr, ExprError> {
        self.enter()?;
        let start = self.span().start;
        let op = match self.peek() {
            Tok::Punct("-") => Some(UnOp::Neg),
            Tok::Punct("+") => Some(UnOp::Plus),
            Tok::Punct("!") => Some(UnOp::Not),
            Tok::Punct("~") => Some(UnOp::Complement),
            Tok::Punct("*") => Some(UnOp::Deref),
            Tok::Punct("&") => Some(UnOp::AddressOf),
            _ => None,
        };
        let out = if let Some(op) = op {
            self.bump();
            let operand = self.unary()?;
            let span = start..operand.span.end;
            Expr {
                kind: ExprKind::Unary(op, Box::new(operand)),
                span,
            }
        } else if matches!(self.peek(), Tok::Ident(w) if w == "sizeof") {
            self.bump();
            if self.is_punct("(") && self.type_follows(1) {
                self.bump();
                let spec = self.type_spec()?;
                let end = self.span().end;
                self.expect(")")?;
                Expr {
                    kind: ExprKind::SizeofType(spec),
                    span: start..end,
                }
            } else {
                let operand = self.unary()?;
                let span = start..operand.span.end;
                Expr {
                    kind: ExprKind::SizeofExpr(Box::new(operand)),
                    span,
                }
            }
        } else if self.is_punct("(") && self.type_follows(1) {
            self.bump();
            let spec = self.type_spec()?;
            self.expect(")")?;
            let operand = self.unary()?;
            let span = start..operand.span.end;
            Expr {
                kind: ExprKind::Cast(spec, Box::new(operand)),
                span,
            }
        } else {
            self.postfix()?
        };
        self.depth -= 1;
        Ok(out)
    }

    /// Whether a type name starts `ahead` tokens from here (for casts and `sizeof`): a type
    /// keyword, a name followed by `*` or `)` that `is_type` accepts, or a name followed by
    /// `*…)` (never an expression).
    fn type_follows(&self, ahead: usize) -> bool {
        let Tok::Ident(word) = self.peek_at(ahead) else {
            return false;
        };
        if TYPE_WORDS.contains(&word.as_str()) {
            return true;
        }
        let mut i = ahead + 1;
        let mut stars = 0;
        while matches!(self.peek_at(i), Tok::Punct("*")) {
            stars += 1;
            i += 1;
        }
        if !matches!(self.peek_at(i), Tok::Punct(")")) {
            return false;
        }
        (stars > 0 && !matches!(self.peek_at(i + 1), Tok::Eof | Tok::Punct(")")))
            || (self.is_type)(word)
    }

    /// `[struct|class|union|enum] [module!]NAME` or a C base type, then `*`s.
    fn type_spec(&mut self) -> Result<TypeSpec, ExprError> {
        let mut words = Vec::new();
        while let Tok::Ident(w) = self.peek().clone() {
            match w.as_str() {
                "struct" | "class" | "union" | "enum" | "const" | "volatile" => {}
                _ => words.push(w),
            }
            self.bump();
        }
        if words.is_empty() {
            return Err(self.syntax_here());
        }
        let mut pointers = 0;
        while self.is_punct("*") {
            self.bump();
            pointers += 1;
        }
        let full = words.join(" ");
        let (module, name) = match full.split_once('!') {
            Some((m, n)) => (Some(m.to_string()), n.to_string()),
            None => (None, full),
        };
        Ok(TypeSpec {
            module,
            name,
            pointers,
        })
    }

    fn postfix(&mut self) -> Result<Expr, ExprError> {
        let saved = self.depth;
        let mut e = self.primary()?;
        loop {
            self.enter()?;
            if self.is_punct(".") || self.is_punct("->") {
                let arrow = self.is_punct("->");
                self.bump();
                if !matches!(self.peek(), Tok::Ident(_)) {
                    return Err(self.syntax_here());
                }
                let t = self.bump();
                let Tok::Ident(name) = t.tok else {
                    return Err(self.syntax_here());
                };
                let span = e.span.start..t.span.end;
                e = Expr {
                    kind: ExprKind::Member {
                        of: Box::new(e),
                        name,
                        arrow,
                    },
                    span,
                };
            } else if self.is_punct("[") {
                self.bump();
                let index = self.conditional()?;
                let end = self.span().end;
                self.expect("]")?;
                let span = e.span.start..end;
                e = Expr {
                    kind: ExprKind::Index(Box::new(e), Box::new(index)),
                    span,
                };
            } else {
                self.depth = saved;
                return Ok(e);
            }
        }
    }

    fn primary(&mut self) -> Result<Expr, ExprError> {
        let t = self.bump();
        let kind = match t.tok {
            Tok::Number {
                value,
                unsigned,
                wide,
                decimal,
            } => ExprKind::Number {
                value,
                unsigned,
                wide,
                decimal,
            },
            Tok::Ident(name) => ExprKind::Name(name),
            Tok::Register(name) => ExprKind::Register(name),
            Tok::Switch { cpp, text, offset } => ExprKind::Switch { cpp, text, offset },
            Tok::Punct("(") => {
                let inner = self.conditional()?;
                let end = self.span().end;
                self.expect(")")?;
                return Ok(Expr {
                    kind: inner.kind,
                    span: t.span.start..end,
                });
            }
            Tok::Eof => return Err(error(ExprErrorKind::MissingExpression, t.span, self.src)),
            _ => {
                return Err(error(
                    ExprErrorKind::Syntax,
                    t.span.start..self.src.len(),
                    self.src,
                ))
            }
        };
        Ok(Expr { kind, span: t.span })
    }
}

/// Binary operators from loosest to tightest.
const LEVELS: &[&[(&str, BinOp)]] = &[
    &[("||", BinOp::Or)],
    &[("&&", BinOp::And)],
    &[("|", BinOp::BitOr)],
    &[("^", BinOp::BitXor)],
    &[("&", BinOp::BitAnd)],
    &[("==", BinOp::Eq), ("!=", BinOp::Ne)],
    &[
        ("<", BinOp::Lt),
        (">", BinOp::Gt),
        ("<=", BinOp::Le),
        (">=", BinOp::Ge),
    ],
    &[("<<", BinOp::Shl), (">>", BinOp::Shr)],
    &[("+", BinOp::Add), ("-", BinOp::Sub)],
    &[("*", BinOp::Mul), ("/", BinOp::Div), ("%", BinOp::Rem)],
];

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_ok(src: &str) -> Expr {
        parse(src, &|n| n.ends_with("Node") || n == "PNODE")
            .unwrap_or_else(|e| panic!("{src}: {e}"))
    }

    fn shape(e: &Expr) -> String {
        match &e.kind {
            ExprKind::Number { value, .. } => value.to_string(),
            ExprKind::Name(n) => n.clone(),
            ExprKind::Register(r) => format!("@{r}"),
            ExprKind::Switch { cpp, text, .. } => {
                format!("{}({text})", if *cpp { "c++" } else { "masm" })
            }
            ExprKind::Unary(op, x) => format!("{op:?}({})", shape(x)),
            ExprKind::Binary(op, a, b) => format!("{op:?}({}, {})", shape(a), shape(b)),
            ExprKind::Conditional(c, a, b) => {
                format!("?({}, {}, {})", shape(c), shape(a), shape(b))
            }
            ExprKind::Member { of, name, arrow } => {
                format!("{}{}{name}", shape(of), if *arrow { "->" } else { "." })
            }
            ExprKind::Index(a, i) => format!("{}[{}]", shape(a), shape(i)),
            ExprKind::Cast(t, x) => format!("cast<{t:?}>({})", shape(x)),
            ExprKind::SizeofType(t) => format!("sizeof<{t:?}>"),
            ExprKind::SizeofExpr(x) => format!("sizeof({})", shape(x)),
        }
    }

    #[test]
    fn precedence_and_associativity_follow_c() {
        assert_eq!(shape(&parse_ok("1 + 2 * 3")), "Add(1, Mul(2, 3))");
        assert_eq!(shape(&parse_ok("10 - 4 - 3")), "Sub(Sub(10, 4), 3)");
        assert_eq!(shape(&parse_ok("a < b == c")), "Eq(Lt(a, b), c)");
        assert_eq!(shape(&parse_ok("a && b || c")), "Or(And(a, b), c)");
        assert_eq!(shape(&parse_ok("1 << 2 + 1")), "Shl(1, Add(2, 1))");
        assert_eq!(shape(&parse_ok("a ? b : c")), "?(a, b, c)");
    }

    #[test]
    fn postfix_and_unary_operators() {
        assert_eq!(shape(&parse_ok("p->next->value")), "p->next->value");
        assert_eq!(shape(&parse_ok("*p.a")), "Deref(p.a)");
        assert_eq!(shape(&parse_ok("&arr[2]")), "AddressOf(arr[2])");
        assert_eq!(shape(&parse_ok("-~!x")), "Neg(Complement(Not(x)))");
        assert_eq!(
            shape(&parse_ok("crashy!g_sink + 1")),
            "Add(crashy!g_sink, 1)"
        );
    }

    #[test]
    fn casts_need_a_type() {
        assert_eq!(
            shape(&parse_ok("(crashy!Node*)@rcx")),
            "cast<TypeSpec { module: Some(\"crashy\"), name: \"Node\", pointers: 1 }>(@rcx)"
        );
        assert_eq!(
            shape(&parse_ok("(unsigned int)x")),
            "cast<TypeSpec { module: None, name: \"unsigned int\", pointers: 0 }>(x)"
        );
        assert_eq!(
            shape(&parse_ok("(struct Node **)0")),
            "cast<TypeSpec { module: None, name: \"Node\", pointers: 2 }>(0)"
        );
        // A name that is not a type is a parenthesised expression.
        assert_eq!(shape(&parse_ok("(x) - 1")), "Sub(x, 1)");
        assert_eq!(
            shape(&parse_ok("(PNODE)p")),
            "cast<TypeSpec { module: None, name: \"PNODE\", pointers: 0 }>(p)"
        );
        assert_eq!(shape(&parse_ok("(a * b)")), "Mul(a, b)");
    }

    #[test]
    fn sizeof_takes_a_type_or_an_expression() {
        assert_eq!(
            shape(&parse_ok("sizeof(crashy!Node)")),
            "sizeof<TypeSpec { module: Some(\"crashy\"), name: \"Node\", pointers: 0 }>"
        );
        assert_eq!(shape(&parse_ok("sizeof x")), "sizeof(x)");
        assert_eq!(shape(&parse_ok("sizeof(x) * 2")), "Mul(sizeof(x), 2)");
        assert_eq!(
            shape(&parse_ok("sizeof(int)")),
            "sizeof<TypeSpec { module: None, name: \"int\", pointers: 0 }>"
        );
    }

    #[test]
    fn numbers_are_c_literals() {
        let n = |s: &str| match parse_ok(s).kind {
            ExprKind::Number { value, .. } => value,
            other => panic!("{other:?}"),
        };
        assert_eq!(n("10"), 10);
        assert_eq!(n("0x10"), 16);
        assert_eq!(n("010"), 8);
        assert_eq!(n("0n10"), 10);
        assert_eq!(n("10u"), 10);
        assert_eq!(n("0x00000001`40001000"), 0x1_4000_1000);
        assert_eq!(n("5i64"), 5);
        assert_eq!(n("0"), 0);
    }

    #[test]
    fn switches_keep_their_text() {
        assert_eq!(
            shape(&parse_ok("@@masm(poi(@rsp)) + 1")),
            "Add(masm(poi(@rsp)), 1)"
        );
        assert_eq!(shape(&parse_ok("@@c++(p->x)")), "c++(p->x)");
    }

    #[test]
    fn errors_say_where() {
        let err = |s: &str| parse(s, &|_| false).unwrap_err();
        assert_eq!(
            err("1 +").message,
            "Numeric expression missing from '<EOL>'"
        );
        assert_eq!(err("1 2").message, "Syntax error at '2'");
        assert_eq!(err("p->").code(), "missing_expression");
        assert_eq!(err("(1").code(), "missing_expression");
        assert_eq!(err("1 # 2").message, "Syntax error at '#'");
        assert_eq!(err("").code(), "missing_expression");
        assert_eq!(err("@@masm(1").code(), "syntax_error");
        assert_eq!(err("99999999999999999999").code(), "overflow");
        assert_eq!(err("0x1g").code(), "syntax_error");
    }

    #[test]
    fn nesting_is_bounded() {
        let deep = format!("{}1{}", "(".repeat(500), ")".repeat(500));
        assert_eq!(parse(&deep, &|_| false).unwrap_err().code(), "too_deep");
        let unary = format!("{}1", "-".repeat(500));
        assert_eq!(parse(&unary, &|_| false).unwrap_err().code(), "too_deep");
        let chain = format!("a{}", "[0]".repeat(500));
        assert_eq!(parse(&chain, &|_| false).unwrap_err().code(), "too_deep");
        let long = "1+".repeat(3000) + "1";
        assert_eq!(parse(&long, &|_| false).unwrap_err().code(), "too_long");
    }
}
