//! Typed values: a type from a module's PDB (or a pointer to one the PDB has no record for)
//! at a location (memory, a register, a computed value), and how their bits are read.

use std::sync::Arc;

use ntdbg_symbols::{BaseType, TypeDb, TypeKind};

use crate::place::{Place, TypedPlace};
use crate::session::Session;

/// A type: a TPI index of the value's module, or a pointer to a type when the PDB has no
/// pointer record for it (`&x`, casts to `T*`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TypeRef {
    /// A type record (or primitive) of the module's PDB.
    Index(u32),
    /// A pointer of the machine's size to this type.
    PointerTo(Box<TypeRef>),
}

/// Where a value's bits are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Loc {
    /// In target memory at this address (an lvalue: `&` applies).
    Memory(u64),
    /// In a register of the frame (the whole register's value).
    Register {
        /// The register's name.
        name: String,
        /// Its value.
        value: u64,
    },
    /// Computed by the evaluator (little-endian bits).
    Immediate(u64),
    /// Not known at this instruction.
    Unavailable(String),
}

/// A value of a type at a location, in one module's type space.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Value {
    /// Base address of the module whose PDB declares the type.
    pub module_base: u64,
    /// The type.
    pub ty: TypeRef,
    /// Where its bits are.
    pub loc: Loc,
}

impl Value {
    /// A value from a frame variable or global (`dv`, names in expressions).
    pub fn from_place(place: &TypedPlace) -> Value {
        Value {
            module_base: place.module_base,
            ty: TypeRef::Index(place.type_index),
            loc: match &place.place {
                Place::Memory(a) => Loc::Memory(*a),
                Place::Register { name, value } => Loc::Register {
                    name: name.clone(),
                    value: *value,
                },
                Place::Unavailable { why } => Loc::Unavailable(why.clone()),
            },
        }
    }

    /// The address of the value, when it lives in memory.
    pub fn address(&self) -> Option<u64> {
        match self.loc {
            Loc::Memory(a) => Some(a),
            _ => None,
        }
    }
}

/// A type's shape with synthetic pointers resolved: what rendering and evaluation switch on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Shape {
    Base(BaseType),
    Pointer {
        pointee: TypeRef,
        size: u8,
    },
    Array {
        element: TypeRef,
        count: u64,
        size: u64,
    },
    Record {
        index: u32,
        size: u64,
    },
    Enum {
        index: u32,
        size: u64,
        signed: bool,
    },
    Bitfield {
        underlying: BaseType,
        position: u8,
        length: u8,
    },
    Function,
    Unknown,
}

/// Why a value's bits could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Missing {
    /// The location is not valid at this instruction.
    Unavailable(String),
    /// The dump does not hold the memory at this address.
    Memory(u64),
}

/// The types of the module based at `module_base`, when its PDB is loaded.
pub(crate) fn types_of(session: &Session, module_base: u64) -> Option<Arc<TypeDb>> {
    let module = session.module_at(module_base)?;
    session.module_symbols(module).types().ok()
}

/// The shape of `ty` in `db`.
pub(crate) fn shape(db: &TypeDb, ty: &TypeRef) -> Shape {
    match ty {
        TypeRef::PointerTo(inner) => Shape::Pointer {
            pointee: (**inner).clone(),
            size: db.pointer_size(),
        },
        TypeRef::Index(index) => match db.kind(*index) {
            TypeKind::Base(b) => Shape::Base(b),
            TypeKind::Pointer { pointee, size } => Shape::Pointer {
                pointee: TypeRef::Index(pointee),
                size,
            },
            TypeKind::Array {
                element,
                count,
                size,
            } => Shape::Array {
                element: TypeRef::Index(element),
                count,
                size,
            },
            TypeKind::Record { size, .. } => Shape::Record {
                index: *index,
                size,
            },
            TypeKind::Enum {
                underlying, size, ..
            } => Shape::Enum {
                index: *index,
                size,
                signed: matches!(db.kind(underlying), TypeKind::Base(b) if b.signed),
            },
            TypeKind::Bitfield {
                underlying,
                position,
                length,
            } => match db.kind(underlying) {
                TypeKind::Base(b) => Shape::Bitfield {
                    underlying: b,
                    position,
                    length,
                },
                _ => Shape::Unknown,
            },
            TypeKind::Function { .. } => Shape::Function,
            TypeKind::Unknown => Shape::Unknown,
        },
    }
}

/// The type's name in WinDbg's C++ spelling (`struct Node *`).
pub(crate) fn name(db: &TypeDb, ty: &TypeRef) -> String {
    match ty {
        TypeRef::Index(index) => db.cpp_name(*index),
        TypeRef::PointerTo(inner) => {
            let inner = name(db, inner);
            if inner.ends_with('*') {
                format!("{inner}*")
            } else {
                format!("{inner} *")
            }
        }
    }
}

/// The size of `ty` in bytes, when known.
pub(crate) fn size_of(db: &TypeDb, ty: &TypeRef) -> Option<u64> {
    match ty {
        TypeRef::Index(index) => db.type_size(*index),
        TypeRef::PointerTo(_) => Some(db.pointer_size().into()),
    }
}

/// A pointer type to `ty`: the PDB's own record when it has one.
pub(crate) fn pointer_to(db: &TypeDb, ty: &TypeRef) -> TypeRef {
    match ty {
        TypeRef::Index(index) => db
            .pointer_to(*index)
            .map(TypeRef::Index)
            .unwrap_or_else(|| TypeRef::PointerTo(Box::new(ty.clone()))),
        TypeRef::PointerTo(_) => TypeRef::PointerTo(Box::new(ty.clone())),
    }
}

/// The location `offset` bytes into `loc` (a member or element).
pub(crate) fn offset_loc(loc: &Loc, offset: u64) -> Loc {
    match loc {
        Loc::Memory(a) => Loc::Memory(a.wrapping_add(offset)),
        Loc::Register { value, .. } | Loc::Immediate(value) => {
            Loc::Immediate(value.checked_shr((offset * 8) as u32).unwrap_or(0))
        }
        Loc::Unavailable(why) => Loc::Unavailable(why.clone()),
    }
}

/// The low `size` bytes (at most 8) of the value at `loc`.
pub(crate) fn read_bits(session: &Session, loc: &Loc, size: u64) -> Result<u64, Missing> {
    let size = size.min(8) as usize;
    let mask = |v: u64| {
        if size >= 8 {
            v
        } else {
            v & ((1u64 << (size * 8)) - 1)
        }
    };
    match loc {
        Loc::Memory(a) => {
            let bytes = session.read_virtual(*a, size);
            let mut v = 0u64;
            for (i, b) in bytes.iter().enumerate() {
                let b = b.ok_or(Missing::Memory(a.wrapping_add(i as u64)))?;
                v |= u64::from(b) << (8 * i);
            }
            if bytes.len() < size {
                return Err(Missing::Memory(*a));
            }
            Ok(v)
        }
        Loc::Register { value, .. } | Loc::Immediate(value) => Ok(mask(*value)),
        Loc::Unavailable(why) => Err(Missing::Unavailable(why.clone())),
    }
}

/// Sign-extends the low `size` bytes of `v`.
pub(crate) fn sign_extend(v: u64, size: u64) -> i64 {
    if size == 0 || size >= 8 {
        return v as i64;
    }
    let shift = 64 - size * 8;
    ((v << shift) as i64) >> shift
}
