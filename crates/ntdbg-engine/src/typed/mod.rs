//! Values by their PDB types: names of types in WinDbg's C++ spelling, values rendered as
//! `dv`, `??` and `dx` print them, and the C++ expression evaluator behind `??`, `dx`,
//! `dt VAR` and MASM's `@@c++(…)`.
//!
//! A value is a [`Value`]: a type of a module's PDB (a TPI index, or a pointer to one the PDB
//! has no record for) at a location (memory, a register, bits the evaluator computed, or
//! unavailable). Frame variables and globals come in as [`TypedPlace`]s.
//!
//! What differs from WinDbg, on purpose or not yet: floating-point values print in Rust's
//! shortest form (`3.14`, WinDbg `3.1400000000000001`); floating-point arithmetic,
//! function calls, C++ templates and overloaded operators are not evaluated; registers are
//! typed as pointer-sized unsigned integers (`@eax` included); enumerators are not names in
//! expressions.

mod eval;
mod lexer;
mod parser;
mod render;
mod value;

pub use eval::{as_number, evaluate, Chain, FrameLocals, Globals, NameScope};
pub use render::{address_text, Child, Style, ValueView, MAX_EXPANSION};
pub use value::{Loc, TypeRef, Value};

use crate::expr::ExprError;
use crate::place::TypedPlace;
use crate::session::Session;

/// Evaluates the C++ expression `text` at the session's selected frame: names are the
/// frame's locals and parameters ([`session_scope`]), then globals.
pub fn evaluate_in_session(session: &Session, text: &str) -> Result<Value, ExprError> {
    session_scope(session, |scope| evaluate(session, scope, text))
}

/// Runs `f` with the names visible at the session's selected frame: its variables first,
/// then globals, as WinDbg resolves them.
pub fn session_scope<T>(session: &Session, f: impl FnOnce(&dyn NameScope) -> T) -> T {
    let locals = FrameLocals::new(session);
    let globals = Globals::new(session);
    f(&Chain(vec![&locals, &globals]))
}

/// The name of the type `type_index` of the module at `module_base`, as WinDbg spells it
/// (`int *`, `struct Node *`, `char [16]`); `None` when the module has no PDB types.
pub fn type_name(session: &Session, module_base: u64, type_index: u32) -> Option<String> {
    let db = value::types_of(session, module_base)?;
    Some(db.cpp_name(type_index))
}

/// The value as `dv` and `??` print it: `0n5`, ``0x00000001`40001000``, `0x… "text"`,
/// `0n65 'A'`, `true`, `Green (0n1)`, `struct Node`; `<value unavailable>` for
/// [`Place::Unavailable`](crate::place::Place::Unavailable) and `<Memory access error>` for
/// memory the dump lacks.
pub fn render_value(session: &Session, value: &TypedPlace) -> String {
    let v = Value::from_place(value);
    match value::types_of(session, value.module_base) {
        Some(db) => render::text(session, &db, &v, Style::Dv),
        None => "<no type information>".to_string(),
    }
}

/// The name of a value's type, in `style` (`dx` drops `struct`).
pub fn value_type_name(session: &Session, value: &Value) -> Option<String> {
    let db = value::types_of(session, value.module_base)?;
    Some(value::name(&db, &value.ty))
}

/// `value` rendered in `style` with `depth` levels of members (structures, structures behind
/// pointers; in `dx` style array elements too); `None` when the module has no PDB types.
pub fn view(session: &Session, value: &Value, style: Style, depth: usize) -> Option<ValueView> {
    let db = value::types_of(session, value.module_base)?;
    Some(render::view(session, &db, value, style, depth))
}

/// A structure in memory that `dt` can lay out: the record's name in its module's PDB and
/// its address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordAt {
    /// Base address of the module whose PDB declares the record.
    pub module_base: u64,
    /// The record's name (`Node`, `_EXCEPTION_RECORD`).
    pub name: String,
    /// Where the record is.
    pub address: u64,
    /// Whether the value was a pointer to the record (rather than the record itself).
    pub through_pointer: bool,
}

/// The structure `value` is (in memory) or points to (non-null), for `dt VAR`.
pub fn record_at(session: &Session, value: &Value) -> Option<RecordAt> {
    let db = value::types_of(session, value.module_base)?;
    let record_name = |ty: &TypeRef| match ty {
        TypeRef::Index(i) => match db.kind(*i) {
            ntdbg_symbols::TypeKind::Record { name, .. } => Some(name),
            _ => None,
        },
        TypeRef::PointerTo(_) => None,
    };
    let (name, address, through_pointer) = match value::shape(&db, &value.ty) {
        value::Shape::Record { .. } => (record_name(&value.ty)?, value.address()?, false),
        value::Shape::Pointer { pointee, size } => {
            let name = record_name(&pointee)?;
            let address = value::read_bits(session, &value.loc, size.into()).ok()?;
            (address != 0).then_some(())?;
            (name, address, true)
        }
        _ => return None,
    };
    Some(RecordAt {
        module_base: value.module_base,
        name,
        address,
        through_pointer,
    })
}
