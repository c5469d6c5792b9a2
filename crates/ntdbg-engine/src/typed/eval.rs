//! Evaluates a parsed C++ expression to a typed [`Value`]: names through a [`NameScope`],
//! members, elements, dereference and address-of, casts to PDB types, integer arithmetic with
//! C's promotions, pointer arithmetic scaled by the pointee's size, comparisons, `sizeof`,
//! registers and `@@masm(…)`.

use std::cell::OnceCell;
use std::ops::Range;
use std::sync::Arc;

use ntdbg_symbols::{primitive_named, TypeDb};

use super::lexer::error;
use super::parser::{parse, BinOp, Expr, ExprKind, TypeSpec, UnOp};
use super::value::{
    offset_loc, pointer_to, read_bits, shape, sign_extend, size_of, types_of, Loc, Missing, Shape,
    TypeRef, Value,
};
use crate::expr::{ExprEnv, ExprError, ExprErrorKind};
use crate::frame_vars::FrameVariable;
use crate::place::{Place, TypedPlace};
use crate::session::Session;

/// Deepest nesting of `@@c++(…)` and `@@masm(…)` switches.
const MAX_SWITCHES: usize = 8;

/// `int`, `unsigned int`, `__int64`, `unsigned __int64`, `bool` as primitive type indices.
const INT: u32 = 0x74;
const UINT: u32 = 0x75;
const INT64: u32 = 0x13;
const UINT64: u32 = 0x23;
const BOOL: u32 = 0x30;

/// Where the evaluator finds the variables a name can denote.
pub trait NameScope {
    /// The variable `name` (`g_sink`, `crashy!g_sink`), when this scope has it.
    fn variable(&self, name: &str) -> Option<TypedPlace>;
}

/// Global and static variables: PDB data symbols with their types (`S_GDATA32`,
/// `S_LDATA32`), found by name in any module or in the one named (`crashy!g_sink`).
#[derive(Debug, Clone, Copy)]
pub struct Globals<'s> {
    session: &'s Session,
}

impl<'s> Globals<'s> {
    /// The globals of the session's modules.
    pub fn new(session: &'s Session) -> Globals<'s> {
        Globals { session }
    }
}

impl NameScope for Globals<'_> {
    fn variable(&self, name: &str) -> Option<TypedPlace> {
        let address = self.session.resolve_symbol(name)?;
        let module = self.session.module_at(address)?;
        let types = self.session.module_symbols(module).types().ok()?;
        let bare = name.rsplit_once('!').map_or(name, |(_, n)| n);
        Some(TypedPlace {
            module_base: module.raw.base_of_image,
            type_index: types.data_type(bare)?,
            place: Place::Memory(address),
        })
    }
}

/// The selected frame's parameters and locals (`dv`), read on first use: names without a
/// module qualifier; the innermost declaration wins when a name is declared twice.
pub struct FrameLocals<'s> {
    session: &'s Session,
    variables: OnceCell<Vec<FrameVariable>>,
}

impl<'s> FrameLocals<'s> {
    /// The variables of the session's selected frame.
    pub fn new(session: &'s Session) -> FrameLocals<'s> {
        FrameLocals {
            session,
            variables: OnceCell::new(),
        }
    }
}

impl NameScope for FrameLocals<'_> {
    fn variable(&self, name: &str) -> Option<TypedPlace> {
        if name.contains('!') {
            return None;
        }
        let variables = self.variables.get_or_init(|| {
            self.session
                .frame_variables(self.session.selected_frame())
                .unwrap_or_default()
        });
        variables
            .iter()
            .rev()
            .find(|v| v.name == name)
            .map(|v| v.value.clone())
    }
}

impl std::fmt::Debug for FrameLocals<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "FrameLocals(frame {})", self.session.selected_frame())
    }
}

/// Scopes searched in order (locals before globals, as WinDbg).
pub struct Chain<'a>(pub Vec<&'a dyn NameScope>);

impl NameScope for Chain<'_> {
    fn variable(&self, name: &str) -> Option<TypedPlace> {
        self.0.iter().find_map(|s| s.variable(name))
    }
}

impl std::fmt::Debug for Chain<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Chain({} scopes)", self.0.len())
    }
}

/// Evaluates the C++ expression `text` in `session`, names resolved through `scope`.
pub fn evaluate(session: &Session, scope: &dyn NameScope, text: &str) -> Result<Value, ExprError> {
    Evaluator::new(session, scope, text, 0).run()
}

/// The value as a 64-bit number, as MASM's `@@c++(…)` and address arguments use it:
/// integers (sign-extended), pointers, the address of an array or structure in memory;
/// `None` for anything else or bits that cannot be read.
pub fn as_number(session: &Session, value: &Value) -> Option<u64> {
    let none = Chain(Vec::new());
    let evaluator = Evaluator::new(session, &none, "", 0);
    let db = types_of(session, value.module_base)?;
    if let Shape::Record { .. } = shape(&db, &value.ty) {
        return value.address();
    }
    evaluator.scalar(value, &(0..0)).ok().map(|s| s.bits)
}

/// One evaluation: the source, the session and the module whose PDB gives literals and
/// registers their types.
struct Evaluator<'a> {
    session: &'a Session,
    scope: &'a dyn NameScope,
    src: &'a str,
    home: Option<(u64, Arc<TypeDb>)>,
    switches: usize,
}

/// An operand reduced to bits: an integer (sign-extended when signed) or a pointer.
#[derive(Clone, Debug)]
struct Scalar {
    bits: u64,
    size: u64,
    signed: bool,
    /// For pointers (and arrays, decayed): the pointer type and the pointee's size.
    pointer: Option<(TypeRef, u64)>,
}

impl<'a> Evaluator<'a> {
    fn new(
        session: &'a Session,
        scope: &'a dyn NameScope,
        src: &'a str,
        switches: usize,
    ) -> Evaluator<'a> {
        Evaluator {
            session,
            scope,
            src,
            home: home_module(session),
            switches,
        }
    }

    fn run(&self) -> Result<Value, ExprError> {
        let is_type = |name: &str| self.is_type(name);
        let expr = parse(self.src, &is_type)?;
        self.eval(&expr)
    }

    fn is_type(&self, name: &str) -> bool {
        if primitive_named(name).is_some() {
            return true;
        }
        if let Some((module, bare)) = name.split_once('!') {
            return self
                .module_types(module)
                .is_some_and(|(_, db)| db.named_type(bare).is_some());
        }
        self.scope.variable(name).is_none()
            && self
                .home
                .as_ref()
                .is_some_and(|(_, db)| db.named_type(name).is_some())
    }

    fn module_types(&self, module: &str) -> Option<(u64, Arc<TypeDb>)> {
        let m = self.session.module_by_name(module)?;
        let base = m.raw.base_of_image;
        Some((base, self.session.module_symbols(m).types().ok()?))
    }

    fn fail(&self, kind: ExprErrorKind, span: &Range<usize>) -> ExprError {
        error(kind, span.clone(), self.src)
    }

    fn fail_with(&self, kind: ExprErrorKind, span: &Range<usize>, message: String) -> ExprError {
        ExprError {
            kind,
            span: span.clone(),
            message,
        }
    }

    /// The types of the home module, for values whose type is a primitive.
    fn home(&self, span: &Range<usize>) -> Result<(u64, &TypeDb), ExprError> {
        match &self.home {
            Some((base, db)) => Ok((*base, db)),
            None => Err(self.fail_with(
                ExprErrorKind::Unresolved,
                span,
                "No type information: C++ expressions need a module with a PDB (the current \
                 instruction's module or the main module); load one with --symbols or .sympath"
                    .to_string(),
            )),
        }
    }

    fn db(&self, module_base: u64, span: &Range<usize>) -> Result<Arc<TypeDb>, ExprError> {
        if let Some((base, db)) = &self.home {
            if *base == module_base {
                return Ok(db.clone());
            }
        }
        types_of(self.session, module_base)
            .ok_or_else(|| self.fail(ExprErrorKind::Unresolved, span))
    }

    fn immediate(&self, ty: u32, bits: u64, span: &Range<usize>) -> Result<Value, ExprError> {
        let (module_base, _) = self.home(span)?;
        Ok(Value {
            module_base,
            ty: TypeRef::Index(ty),
            loc: Loc::Immediate(bits),
        })
    }

    fn eval(&self, e: &Expr) -> Result<Value, ExprError> {
        match &e.kind {
            ExprKind::Number {
                value,
                unsigned,
                wide,
                decimal,
            } => {
                let ty = literal_type(*value, *unsigned, *wide, *decimal);
                self.immediate(ty, *value, &e.span)
            }
            ExprKind::Name(name) => match self.scope.variable(name) {
                Some(place) => Ok(Value::from_place(&place)),
                None => Err(self.fail(ExprErrorKind::Unresolved, &e.span)),
            },
            ExprKind::Register(name) => {
                let value = ExprEnv::register(self.session, name)
                    .ok_or_else(|| self.fail(ExprErrorKind::BadRegister, &e.span))?;
                let (_, db) = self.home(&e.span)?;
                let ty = if db.pointer_size() == 8 { UINT64 } else { UINT };
                self.immediate(ty, value, &e.span)
            }
            ExprKind::Switch { cpp, text, offset } => self.switch(*cpp, text, *offset, &e.span),
            ExprKind::Unary(op, operand) => self.unary(*op, operand, &e.span),
            ExprKind::Binary(op, a, b) => self.binary(*op, a, b, &e.span),
            ExprKind::Conditional(c, yes, no) => {
                let c = self.scalar(&self.eval(c)?, &c.span)?;
                if c.bits != 0 {
                    self.eval(yes)
                } else {
                    self.eval(no)
                }
            }
            ExprKind::Member { of, name, .. } => {
                let base = self.eval(of)?;
                self.member(base, name, &e.span)
            }
            ExprKind::Index(base, index) => {
                let b = self.eval(base)?;
                let i = self.eval(index)?;
                let sum = self.add(&b, &i, false, &e.span)?;
                self.deref(sum, &e.span)
            }
            ExprKind::Cast(spec, operand) => {
                let v = self.eval(operand)?;
                self.cast(spec, v, &e.span)
            }
            ExprKind::SizeofType(spec) => {
                let (base, ty) = self.resolve_type(spec, None, &e.span)?;
                let db = self.db(base, &e.span)?;
                self.sizeof(&db, &ty, &e.span)
            }
            ExprKind::SizeofExpr(operand) => {
                let v = self.eval(operand)?;
                let db = self.db(v.module_base, &e.span)?;
                self.sizeof(&db, &v.ty, &e.span)
            }
        }
    }

    fn sizeof(&self, db: &TypeDb, ty: &TypeRef, span: &Range<usize>) -> Result<Value, ExprError> {
        let size = size_of(db, ty).ok_or_else(|| self.fail(ExprErrorKind::TypeConflict, span))?;
        let ty = if db.pointer_size() == 8 { UINT64 } else { UINT };
        self.immediate(ty, size, span)
    }

    fn switch(
        &self,
        cpp: bool,
        text: &str,
        offset: usize,
        span: &Range<usize>,
    ) -> Result<Value, ExprError> {
        if self.switches >= MAX_SWITCHES {
            return Err(self.fail(ExprErrorKind::TooDeep, span));
        }
        if cpp {
            return Evaluator::new(self.session, self.scope, text, self.switches + 1)
                .run()
                .map_err(|e| e.shifted(offset));
        }
        let value = self.session.evaluate(text).map_err(|e| e.shifted(offset))?;
        let (_, db) = self.home(span)?;
        let ty = if db.pointer_size() == 8 { UINT64 } else { UINT };
        self.immediate(ty, value, span)
    }

    /// The bits of a value used as a number or pointer (arrays decay to their address).
    fn scalar(&self, v: &Value, span: &Range<usize>) -> Result<Scalar, ExprError> {
        let db = self.db(v.module_base, span)?;
        let read =
            |size: u64| read_bits(self.session, &v.loc, size).map_err(|m| self.missing(&m, span));
        let int = |bits: u64, size: u64, signed: bool| Scalar {
            bits: if signed {
                sign_extend(bits, size) as u64
            } else {
                bits
            },
            size,
            signed,
            pointer: None,
        };
        match shape(&db, &v.ty) {
            Shape::Base(b) if !b.float && b.size > 0 => {
                let size = u64::from(b.size);
                Ok(int(read(size)?, size, b.signed))
            }
            Shape::Enum { size, signed, .. } => Ok(int(read(size)?, size, signed)),
            Shape::Bitfield {
                underlying,
                position,
                length,
            } => {
                let bits = read(underlying.size.into())?
                    .checked_shr(position.into())
                    .unwrap_or(0);
                let mask = if length >= 64 {
                    u64::MAX
                } else {
                    (1u64 << length) - 1
                };
                Ok(int(bits & mask, 8, false))
            }
            Shape::Pointer { pointee, size } => Ok(Scalar {
                bits: read(size.into())?,
                size: size.into(),
                signed: false,
                pointer: Some((v.ty.clone(), size_of(&db, &pointee).unwrap_or(1).max(1))),
            }),
            Shape::Array { element, .. } => {
                let Loc::Memory(address) = v.loc else {
                    return Err(self.fail(ExprErrorKind::TypeConflict, span));
                };
                Ok(Scalar {
                    bits: address,
                    size: db.pointer_size().into(),
                    signed: false,
                    pointer: Some((
                        pointer_to(&db, &element),
                        size_of(&db, &element).unwrap_or(1).max(1),
                    )),
                })
            }
            _ => Err(self.fail(ExprErrorKind::TypeConflict, span)),
        }
    }

    fn missing(&self, m: &Missing, span: &Range<usize>) -> ExprError {
        match m {
            Missing::Memory(a) => self.fail_with(
                ExprErrorKind::MemoryAccess,
                span,
                format!(
                    "Memory access error at '{}': {a:#x} is {}",
                    self.src.get(span.clone()).unwrap_or_default(),
                    self.session.target().kind().missing_memory()
                ),
            ),
            Missing::Unavailable(why) => self.fail_with(
                ExprErrorKind::Unavailable,
                span,
                format!(
                    "Value unavailable at '{}': {why}",
                    self.src.get(span.clone()).unwrap_or_default()
                ),
            ),
        }
    }

    fn unary(&self, op: UnOp, operand: &Expr, span: &Range<usize>) -> Result<Value, ExprError> {
        let v = self.eval(operand)?;
        match op {
            UnOp::Deref => self.deref(v, span),
            UnOp::AddressOf => {
                let Loc::Memory(address) = v.loc else {
                    return Err(self.fail_with(
                        ExprErrorKind::TypeConflict,
                        span,
                        format!(
                            "Type conflict error at '{}': the value is not in memory",
                            self.src.get(span.clone()).unwrap_or_default()
                        ),
                    ));
                };
                let db = self.db(v.module_base, span)?;
                Ok(Value {
                    module_base: v.module_base,
                    ty: pointer_to(&db, &v.ty),
                    loc: Loc::Immediate(address),
                })
            }
            UnOp::Not => {
                let s = self.scalar(&v, &operand.span)?;
                self.immediate(BOOL, u64::from(s.bits == 0), span)
            }
            UnOp::Plus | UnOp::Neg | UnOp::Complement => {
                let s = self.scalar(&v, &operand.span)?;
                if s.pointer.is_some() {
                    return Err(self.fail(ExprErrorKind::TypeConflict, span));
                }
                let (size, signed) = promote((s.size, s.signed), (4, true));
                let bits = match op {
                    UnOp::Neg => s.bits.wrapping_neg(),
                    UnOp::Complement => !s.bits,
                    _ => s.bits,
                };
                self.immediate(int_type(size, signed), truncate(bits, size), span)
            }
        }
    }

    fn deref(&self, v: Value, span: &Range<usize>) -> Result<Value, ExprError> {
        let db = self.db(v.module_base, span)?;
        let pointee = match shape(&db, &v.ty) {
            Shape::Pointer { pointee, .. } => pointee,
            Shape::Array { element, .. } => element,
            _ => return Err(self.fail(ExprErrorKind::TypeConflict, span)),
        };
        if matches!(shape(&db, &pointee), Shape::Base(b) if b.size == 0) {
            return Err(self.fail(ExprErrorKind::TypeConflict, span));
        }
        let s = self.scalar(&v, span)?;
        Ok(Value {
            module_base: v.module_base,
            ty: pointee,
            loc: Loc::Memory(s.bits),
        })
    }

    fn member(&self, base: Value, name: &str, span: &Range<usize>) -> Result<Value, ExprError> {
        let db = self.db(base.module_base, span)?;
        // `.` and `->` both reach through one pointer, as `dx` does.
        let base = match shape(&db, &base.ty) {
            Shape::Pointer { .. } => self.deref(base, span)?,
            _ => base,
        };
        let Shape::Record { index, .. } = shape(&db, &base.ty) else {
            return Err(self.fail(ExprErrorKind::TypeConflict, span));
        };
        let Some(m) = db.find_member(index, name) else {
            let at = span.end.saturating_sub(name.len())..span.end;
            return Err(self.fail(ExprErrorKind::Unresolved, &at));
        };
        Ok(Value {
            module_base: base.module_base,
            ty: TypeRef::Index(m.type_index),
            loc: offset_loc(&base.loc, m.offset),
        })
    }

    /// `a + b` (or `a - b` when `subtract`), pointers scaled by their pointee's size.
    fn add(
        &self,
        a: &Value,
        b: &Value,
        subtract: bool,
        span: &Range<usize>,
    ) -> Result<Value, ExprError> {
        let x = self.scalar(a, span)?;
        let y = self.scalar(b, span)?;
        match (&x.pointer, &y.pointer) {
            (Some((ty, step)), None) => {
                Ok(self.pointer_value(a, ty, x.bits, y.bits, *step, subtract))
            }
            (None, Some((ty, step))) if !subtract => {
                Ok(self.pointer_value(b, ty, y.bits, x.bits, *step, false))
            }
            (Some((_, step)), Some(_)) if subtract => {
                let diff = (x.bits.wrapping_sub(y.bits) as i64) / (*step as i64);
                let (_, db) = self.home(span)?;
                let ty = if db.pointer_size() == 8 { INT64 } else { INT };
                self.immediate(ty, diff as u64, span)
            }
            (None, None) => {
                let op = if subtract { BinOp::Sub } else { BinOp::Add };
                self.arithmetic(op, &x, &y, span)
            }
            _ => Err(self.fail(ExprErrorKind::TypeConflict, span)),
        }
    }

    fn pointer_value(
        &self,
        of: &Value,
        ty: &TypeRef,
        base: u64,
        count: u64,
        step: u64,
        subtract: bool,
    ) -> Value {
        let delta = count.wrapping_mul(step);
        let bits = if subtract {
            base.wrapping_sub(delta)
        } else {
            base.wrapping_add(delta)
        };
        Value {
            module_base: of.module_base,
            ty: ty.clone(),
            loc: Loc::Immediate(bits),
        }
    }

    fn binary(
        &self,
        op: BinOp,
        a: &Expr,
        b: &Expr,
        span: &Range<usize>,
    ) -> Result<Value, ExprError> {
        let left = self.eval(a)?;
        if matches!(op, BinOp::And | BinOp::Or) {
            // Short-circuit as C does.
            let l = self.scalar(&left, &a.span)?.bits != 0;
            if (op == BinOp::And && !l) || (op == BinOp::Or && l) {
                return self.immediate(BOOL, u64::from(l), span);
            }
            let r = self.scalar(&self.eval(b)?, &b.span)?.bits != 0;
            return self.immediate(BOOL, u64::from(r), span);
        }
        let right = self.eval(b)?;
        if matches!(op, BinOp::Add | BinOp::Sub) {
            return self.add(&left, &right, op == BinOp::Sub, span);
        }
        let x = self.scalar(&left, &a.span)?;
        let y = self.scalar(&right, &b.span)?;
        self.arithmetic(op, &x, &y, span)
    }

    fn arithmetic(
        &self,
        op: BinOp,
        x: &Scalar,
        y: &Scalar,
        span: &Range<usize>,
    ) -> Result<Value, ExprError> {
        let compare = matches!(
            op,
            BinOp::Lt | BinOp::Gt | BinOp::Le | BinOp::Ge | BinOp::Eq | BinOp::Ne
        );
        if (x.pointer.is_some() || y.pointer.is_some()) && !compare {
            return Err(self.fail(ExprErrorKind::TypeConflict, span));
        }
        let (size, signed) = promote((x.size, x.signed), (y.size, y.signed));
        let (a, b) = (x.bits, y.bits);
        let ordering = if signed {
            (a as i64).cmp(&(b as i64))
        } else {
            truncate(a, size).cmp(&truncate(b, size))
        };
        let bits = match op {
            BinOp::Mul => a.wrapping_mul(b),
            BinOp::Div | BinOp::Rem => {
                if truncate(b, size) == 0 {
                    return Err(self.fail(ExprErrorKind::DivideByZero, span));
                }
                match (op, signed) {
                    (BinOp::Div, true) => (a as i64).wrapping_div(b as i64) as u64,
                    (BinOp::Div, false) => truncate(a, size) / truncate(b, size),
                    (_, true) => (a as i64).wrapping_rem(b as i64) as u64,
                    (_, false) => truncate(a, size) % truncate(b, size),
                }
            }
            BinOp::Add => a.wrapping_add(b),
            BinOp::Sub => a.wrapping_sub(b),
            BinOp::Shl => a.checked_shl(b.min(64) as u32).unwrap_or(0),
            BinOp::Shr if signed => (a as i64).checked_shr(b.min(63) as u32).unwrap_or(0) as u64,
            BinOp::Shr => truncate(a, size).checked_shr(b.min(64) as u32).unwrap_or(0),
            BinOp::BitAnd => a & b,
            BinOp::BitXor => a ^ b,
            BinOp::BitOr => a | b,
            BinOp::Lt => return self.immediate(BOOL, u64::from(ordering.is_lt()), span),
            BinOp::Gt => return self.immediate(BOOL, u64::from(ordering.is_gt()), span),
            BinOp::Le => return self.immediate(BOOL, u64::from(ordering.is_le()), span),
            BinOp::Ge => return self.immediate(BOOL, u64::from(ordering.is_ge()), span),
            BinOp::Eq => return self.immediate(BOOL, u64::from(ordering.is_eq()), span),
            BinOp::Ne => return self.immediate(BOOL, u64::from(ordering.is_ne()), span),
            BinOp::And => return self.immediate(BOOL, u64::from(a != 0 && b != 0), span),
            BinOp::Or => return self.immediate(BOOL, u64::from(a != 0 || b != 0), span),
        };
        self.immediate(int_type(size, signed), truncate(bits, size), span)
    }

    /// The module and type a cast or `sizeof` names: `mod!T` in that module; a C base type in
    /// the operand's (else the home) module; a name in the operand's module, else the home one.
    fn resolve_type(
        &self,
        spec: &TypeSpec,
        operand_module: Option<u64>,
        span: &Range<usize>,
    ) -> Result<(u64, TypeRef), ExprError> {
        let unresolved = || {
            let quoted = match &spec.module {
                Some(m) => format!("{m}!{}", spec.name),
                None => spec.name.clone(),
            };
            self.fail_with(
                ExprErrorKind::Unresolved,
                span,
                format!(
                    "Couldn't resolve error at '{quoted}': no such type in the PDB \
                     (`dt MOD!*` lists a module's types)"
                ),
            )
        };
        let mut candidates: Vec<(u64, Arc<TypeDb>)> = Vec::new();
        if let Some(module) = &spec.module {
            candidates.push(self.module_types(module).ok_or_else(unresolved)?);
        } else {
            if let Some(base) = operand_module {
                if let Ok(db) = self.db(base, span) {
                    candidates.push((base, db));
                }
            }
            if let Some(home) = &self.home {
                candidates.push(home.clone());
            }
        }
        let found = candidates.into_iter().find_map(|(base, db)| {
            let index = primitive_named(&spec.name).or_else(|| db.named_type(&spec.name))?;
            Some((base, db, index))
        });
        let (base, db, index) = found.ok_or_else(unresolved)?;
        let mut ty = TypeRef::Index(index);
        for _ in 0..spec.pointers {
            ty = pointer_to(&db, &ty);
        }
        Ok((base, ty))
    }

    fn cast(&self, spec: &TypeSpec, v: Value, span: &Range<usize>) -> Result<Value, ExprError> {
        let (base, ty) = self.resolve_type(spec, Some(v.module_base), span)?;
        let db = self.db(base, span)?;
        let size = match shape(&db, &ty) {
            Shape::Base(b) if b.float => return Err(self.fail(ExprErrorKind::TypeConflict, span)),
            Shape::Base(b) if b.size > 0 => u64::from(b.size),
            Shape::Enum { size, .. } => size,
            Shape::Pointer { size, .. } => size.into(),
            Shape::Record { .. } | Shape::Array { .. } => {
                // Reinterpret the memory the value occupies.
                let Loc::Memory(address) = v.loc else {
                    return Err(self.fail(ExprErrorKind::TypeConflict, span));
                };
                return Ok(Value {
                    module_base: base,
                    ty,
                    loc: Loc::Memory(address),
                });
            }
            _ => return Err(self.fail(ExprErrorKind::TypeConflict, span)),
        };
        let s = self.scalar(&v, span)?;
        let bits = match shape(&db, &ty) {
            Shape::Base(b) if b.boolean => u64::from(s.bits != 0),
            _ => truncate(s.bits, size),
        };
        Ok(Value {
            module_base: base,
            ty,
            loc: Loc::Immediate(bits),
        })
    }
}

/// The module whose PDB types literals and registers: the current instruction's module, else
/// the main module, when its PDB has types.
fn home_module(session: &Session) -> Option<(u64, Arc<TypeDb>)> {
    let modules = session.target().modules();
    let at_ip = session
        .instruction_pointer()
        .and_then(|ip| session.module_at(ip));
    at_ip
        .into_iter()
        .chain(modules.main_module())
        .find_map(|m| {
            let types = session.module_symbols(m).types().ok()?;
            Some((m.raw.base_of_image, types))
        })
}

/// C's type for a literal: `int`, else `unsigned int` (hex only), else `__int64`, else
/// `unsigned __int64`; `u` and `i64` suffixes as written.
fn literal_type(value: u64, unsigned: bool, wide: bool, decimal: bool) -> u32 {
    let fits_int = value <= i32::MAX as u64;
    let fits_uint = value <= u64::from(u32::MAX);
    let fits_int64 = value <= i64::MAX as u64;
    match (unsigned, wide) {
        (false, false) if fits_int => INT,
        (false, false) if fits_uint && !decimal => UINT,
        (true, false) if fits_uint => UINT,
        (false, _) if fits_int64 => INT64,
        _ => UINT64,
    }
}

/// C's usual arithmetic conversions for two integer operands (size, signed): both promoted to
/// at least `int`; the larger size wins; at equal size, unsigned wins.
fn promote(a: (u64, bool), b: (u64, bool)) -> (u64, bool) {
    let promote_one = |(size, signed): (u64, bool)| {
        if size < 4 {
            (4, true)
        } else {
            (size.min(8), signed)
        }
    };
    let (a, b) = (promote_one(a), promote_one(b));
    match a.0.cmp(&b.0) {
        std::cmp::Ordering::Greater => a,
        std::cmp::Ordering::Less => b,
        std::cmp::Ordering::Equal => (a.0, a.1 && b.1),
    }
}

/// The integer type of a size and signedness.
fn int_type(size: u64, signed: bool) -> u32 {
    match (size > 4, signed) {
        (false, true) => INT,
        (false, false) => UINT,
        (true, true) => INT64,
        (true, false) => UINT64,
    }
}

/// The low `size` bytes of `bits`.
fn truncate(bits: u64, size: u64) -> u64 {
    if size >= 8 {
        bits
    } else {
        bits & ((1u64 << (size * 8)) - 1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_take_c_types() {
        assert_eq!(literal_type(5, false, false, true), INT);
        assert_eq!(literal_type(0x8000_0000, false, false, false), UINT);
        assert_eq!(literal_type(0x8000_0000, false, false, true), INT64);
        assert_eq!(literal_type(5, true, false, true), UINT);
        assert_eq!(literal_type(5, false, true, true), INT64);
        assert_eq!(literal_type(u64::MAX, false, false, false), UINT64);
    }

    #[test]
    fn promotions_follow_c() {
        assert_eq!(promote((1, true), (2, false)), (4, true));
        assert_eq!(promote((4, true), (4, false)), (4, false));
        assert_eq!(promote((4, false), (8, true)), (8, true));
        assert_eq!(promote((8, true), (8, false)), (8, false));
    }

    #[test]
    fn truncation_keeps_low_bytes() {
        assert_eq!(truncate(0x1_2345_6789, 4), 0x2345_6789);
        assert_eq!(truncate(u64::MAX, 8), u64::MAX);
        assert_eq!(int_type(8, true), INT64);
    }
}
