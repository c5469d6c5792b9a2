//! Type names as `dt` and `x /t` show them: `Uint4B`, `Ptr64 _LIST_ENTRY`, `[15] Uint8B`,
//! `Pos 0, 3 Bits` in field lines; kinds and sizes with `-v`; C names (`struct _FOO *`) for
//! prototypes and `x /t`.

use ntdbg_symbols::{PointerTarget, TypeDb, TypeId, TypeRecord};

/// Deepest chain of pointers, modifiers and arrays followed when naming a type.
const MAX_DEPTH: usize = 32;

/// WinDbg's word for a pointer of `size` bytes.
fn pointer_prefix(size: u8) -> &'static str {
    match size {
        8 => "Ptr64",
        2 => "Ptr16",
        16 => "Ptr128",
        _ => "Ptr32",
    }
}

/// A type's name as `dt` shows it in a field line.
pub fn type_name(db: &TypeDb, ty: TypeId) -> String {
    type_name_at(db, ty, 0)
}

fn type_name_at(db: &TypeDb, ty: TypeId, depth: usize) -> String {
    if depth > MAX_DEPTH {
        return "<too deep>".to_string();
    }
    match db.record(ty) {
        Some(TypeRecord::Primitive(p)) => p.name.to_string(),
        Some(TypeRecord::Pointer { to, size }) => {
            let inner = match to {
                PointerTarget::Primitive(p) => p.name.to_string(),
                PointerTarget::Type(t) => type_name_at(db, t, depth + 1),
            };
            if inner.starts_with("    ") {
                // Function pointers: WinDbg's `Ptr64     void `.
                format!("{}{inner}", pointer_prefix(size))
            } else {
                format!("{} {inner}", pointer_prefix(size))
            }
        }
        Some(TypeRecord::Modifier(to)) => type_name_at(db, to, depth + 1),
        Some(TypeRecord::Array { element, size }) => {
            let elem_size = db.size_of(element).unwrap_or(0);
            let count = size.checked_div(elem_size).unwrap_or(0);
            format!("[{count}] {}", type_name_at(db, element, depth + 1))
        }
        Some(TypeRecord::Bitfield {
            length, position, ..
        }) => format!(
            "Pos {position}, {length} Bit{}",
            if length == 1 { "" } else { "s" }
        ),
        Some(TypeRecord::Udt { name, .. }) | Some(TypeRecord::Enum { name, .. }) => {
            name.to_string()
        }
        Some(TypeRecord::Procedure { returns }) => {
            let ret = returns.map_or_else(|| "void".to_string(), |r| c_name_at(db, r, depth + 1));
            format!("     {ret} ")
        }
        None => "<unknown type>".to_string(),
    }
}

/// A C-like name, for prototypes and `x /t` (`void`, `int`, `struct _FOO *`).
pub fn c_name(db: &TypeDb, ty: TypeId) -> String {
    c_name_at(db, ty, 0)
}

fn c_name_at(db: &TypeDb, ty: TypeId, depth: usize) -> String {
    if depth > MAX_DEPTH {
        return "?".to_string();
    }
    match db.record(ty) {
        Some(TypeRecord::Primitive(p)) => p.c_name.to_string(),
        Some(TypeRecord::Pointer { to, .. }) => match to {
            PointerTarget::Primitive(p) => format!("{} *", p.c_name),
            PointerTarget::Type(t) => format!("{} *", c_name_at(db, t, depth + 1)),
        },
        Some(TypeRecord::Modifier(to)) => c_name_at(db, to, depth + 1),
        Some(TypeRecord::Udt { kind, name, .. }) => format!("{kind} {name}"),
        Some(TypeRecord::Enum { name, .. }) => format!("enum {name}"),
        Some(TypeRecord::Array { element, size }) => {
            let count = size
                .checked_div(db.size_of(element).unwrap_or(0))
                .unwrap_or(0);
            format!("{} [{count}]", c_name_at(db, element, depth + 1))
        }
        _ => "?".to_string(),
    }
}

/// A type as a field line shows it; `verbose` adds kinds, counts and sizes as `dt -v`
/// does (`Ptr64 to struct _LIST_ENTRY, 2 elements, 0x10 bytes`).
pub(crate) fn describe(db: &TypeDb, ty: TypeId, verbose: bool) -> String {
    if verbose {
        verbose_name(db, ty, 0)
    } else {
        type_name(db, ty)
    }
}

fn verbose_name(db: &TypeDb, ty: TypeId, depth: usize) -> String {
    if depth > MAX_DEPTH {
        return "<too deep>".to_string();
    }
    let (ty, record) = db.strip(ty);
    match record {
        Some(TypeRecord::Pointer { to, size }) => {
            let inner = match to {
                PointerTarget::Primitive(p) => p.name.to_string(),
                PointerTarget::Type(t) => verbose_name(db, t, depth + 1),
            };
            format!("{} to {}", pointer_prefix(size), inner.trim())
        }
        Some(TypeRecord::Array { element, .. }) => {
            let count = type_name_at(db, ty, depth + 1);
            let count = count.split(']').next().unwrap_or("[0");
            format!("{count}] {}", verbose_name(db, element, depth + 1))
        }
        Some(TypeRecord::Bitfield { .. }) => {
            format!("Bitfield {}", type_name_at(db, ty, depth + 1))
        }
        Some(TypeRecord::Udt {
            kind, name, size, ..
        }) => format!(
            "{kind} {name}, {} elements, {size:#x} bytes",
            db.members(ty).len()
        ),
        Some(TypeRecord::Enum { name, .. }) => {
            format!("Enum {name},  {} total enums", db.enumerators(ty).len())
        }
        _ => type_name_at(db, ty, depth + 1),
    }
}
