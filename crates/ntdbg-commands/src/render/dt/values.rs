//! Values read from target memory as `dt` and `x` show them: `0n5`, `0x1f`, `0x41 'A'`,
//! `0x00000001`40002000 _LIST_ENTRY`, `0y101`, `"text"`, `0n2 ( Name )`, and `??` for bytes the
//! dump lacks.

use ntdbg_engine::text::{prefixed_address, UNREADABLE};
use ntdbg_symbols::{PointerTarget, Primitive, TypeDb, TypeId, TypeRecord};

use super::names::type_name;

/// Reads `len` bytes of target memory at an address: one entry per byte, `None` for each
/// byte the dump lacks.
pub type ReadMemory<'a> = &'a dyn Fn(u64, usize) -> Vec<Option<u8>>;

/// Most characters shown of a string array.
const MAX_STRING: usize = 64;

/// `size` bytes at `addr` as a little-endian integer (sign-extended when `signed`); `None`
/// when any byte is missing.
pub(crate) fn read_int(read: ReadMemory<'_>, addr: u64, size: usize, signed: bool) -> Option<i128> {
    if size == 0 || size > 16 {
        return None;
    }
    let bytes = read(addr, size);
    if bytes.len() != size {
        return None;
    }
    let mut v: u128 = 0;
    for (i, b) in bytes.iter().enumerate() {
        v |= u128::from((*b)?) << (8 * i);
    }
    if signed && size < 16 && v >> (size * 8 - 1) & 1 == 1 {
        v |= u128::MAX << (size * 8);
    }
    Some(v as i128)
}

/// A pointer value of `size` bytes as `dt` prints it: `0x00000001`40002000`, `0x00401000`.
pub(crate) fn pointer_text(v: u64, size: u8) -> String {
    prefixed_address(v, if size == 8 { 8 } else { 4 })
}

fn primitive_value(p: Primitive, addr: u64, read: ReadMemory<'_>) -> String {
    let size = usize::from(p.size);
    if size == 0 {
        return p.name.to_string();
    }
    if p.float {
        let bytes: Option<Vec<u8>> = read(addr, size).into_iter().collect();
        return match (bytes, size) {
            (Some(b), 4) if b.len() == 4 => {
                format!("{}", f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            }
            (Some(b), 8) if b.len() == 8 => {
                let mut a = [0u8; 8];
                a.copy_from_slice(&b);
                format!("{}", f64::from_le_bytes(a))
            }
            (Some(_), _) => p.name.to_string(),
            (None, _) => UNREADABLE.to_string(),
        };
    }
    let Some(v) = read_int(read, addr, size, p.signed) else {
        return UNREADABLE.to_string();
    };
    let unsigned = if size >= 16 {
        v as u128
    } else {
        (v as u128) & ((1u128 << (size * 8)) - 1)
    };
    let text = if p.signed {
        format!("0n{v}")
    } else {
        format!("{unsigned:#x}")
    };
    if p.character {
        let c = char::from_u32(unsigned as u32).filter(|c| !c.is_control());
        match c {
            Some(c) => format!("{text} '{c}'"),
            None => format!("{text} ''"),
        }
    } else {
        text
    }
}

/// A NUL-terminated string of `unit`-byte characters at `addr`, at most [`MAX_STRING`]
/// characters.
fn read_string(read: ReadMemory<'_>, addr: u64, unit: usize) -> String {
    let bytes = read(addr, MAX_STRING * unit);
    let mut out = String::new();
    for chunk in bytes.chunks(unit) {
        let Some(v) = chunk
            .iter()
            .enumerate()
            .try_fold(0u32, |acc, (i, b)| b.map(|b| acc | u32::from(b) << (8 * i)))
        else {
            out.push_str(UNREADABLE);
            break;
        };
        if v == 0 {
            break;
        }
        match char::from_u32(v).filter(|c| !c.is_control()) {
            Some(c) => out.push(c),
            None => out.push('.'),
        }
    }
    out
}

/// An enum value as WinDbg shows it: `0n2 ( Value2 )`, or `0n7` when no name matches.
pub(crate) fn enum_value(db: &TypeDb, ty: TypeId, value: i128) -> String {
    match db.enumerators(ty).into_iter().find(|e| e.value == value) {
        Some(e) => format!("0n{value} ( {} )", e.name),
        None => format!("0n{value}"),
    }
}

/// A value of type `ty` at `addr`, in `dt`'s shape.
pub fn value(db: &TypeDb, ty: TypeId, addr: u64, read: ReadMemory<'_>) -> String {
    let (stripped, record) = db.strip(ty);
    match record {
        Some(TypeRecord::Primitive(p)) => primitive_value(p, addr, read),
        Some(TypeRecord::Pointer { to, size }) => {
            let target = match to {
                PointerTarget::Primitive(p) => p.name.to_string(),
                PointerTarget::Type(t) => type_name(db, t),
            };
            let target = target.trim();
            match read_int(read, addr, size.into(), false) {
                Some(v) => format!("{} {target}", pointer_text(v as u64, size)),
                None => format!("{UNREADABLE} {target}"),
            }
        }
        Some(TypeRecord::Bitfield {
            of,
            length,
            position,
        }) => {
            let size = db.size_of(of).unwrap_or(4).min(8) as usize;
            match read_int(read, addr, size, false) {
                Some(v) => {
                    let v = v as u64;
                    let bits = (v >> position.min(63))
                        & if length >= 64 {
                            u64::MAX
                        } else {
                            (1u64 << length) - 1
                        };
                    format!("0y{:0width$b}", bits, width = usize::from(length.max(1)))
                }
                None => UNREADABLE.to_string(),
            }
        }
        Some(TypeRecord::Array { element, .. }) => {
            let name = type_name(db, stripped);
            let first = match db.strip(element).1 {
                Some(TypeRecord::Primitive(p)) if p.character && p.size == 1 => {
                    format!("\"{}\"", read_string(read, addr, 1))
                }
                Some(TypeRecord::Primitive(p)) if p.character && p.size == 2 => {
                    format!("\"{}\"", read_string(read, addr, 2))
                }
                Some(TypeRecord::Primitive(_)) | Some(TypeRecord::Pointer { .. }) => {
                    value(db, element, addr, read)
                }
                _ => String::new(),
            };
            let count = name.split(']').next().unwrap_or("[").to_string() + "]";
            if first.is_empty() {
                name
            } else {
                format!("{count} {first}")
            }
        }
        Some(TypeRecord::Udt { name, .. }) => name.to_string(),
        Some(TypeRecord::Enum { .. }) => {
            let size = db.size_of(stripped).unwrap_or(4).min(8) as usize;
            match read_int(read, addr, size, true) {
                Some(v) => enum_value(db, stripped, v),
                None => UNREADABLE.to_string(),
            }
        }
        _ => type_name(db, ty),
    }
}
