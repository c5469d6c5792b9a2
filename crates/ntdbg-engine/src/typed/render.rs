//! Values rendered by type, as WinDbg prints them: `dv`/`??` style (`0n5`,
//! ``0x00000001`40001000``, `0x… "text"`, `Green (0n1)`, `struct Node`) and `dx` style (`5`,
//! `0x140001000`, `Green (1)`), with one or more levels of members on request.

use ntdbg_symbols::{BaseType, TypeDb};

use super::value::{
    name, offset_loc, read_bits, shape, sign_extend, size_of, Loc, Missing, Shape, TypeRef, Value,
};
use crate::session::Session;

/// Most characters shown of a string a `char *`, `wchar_t *` or character array holds.
const MAX_STRING: usize = 256;
/// Most array elements `dx` lists.
const MAX_ELEMENTS: u64 = 100;
/// Most children listed in one rendering, over all levels.
const MAX_CHILDREN: usize = 4_000;
/// Deepest expansion honoured (`dx -r N`).
pub const MAX_EXPANSION: usize = 8;

/// How numbers and pointers are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// `dv`, `??`: signed integers as `0n5`, unsigned as `0x5`, pointers as
    /// ``0x00000001`40001000``.
    Dv,
    /// `dx`: signed integers in decimal (`5`), unsigned in hex (`0x5`), pointers compact
    /// (`0x140001000`), type names without `struct`.
    Dx,
}

/// A value as a command shows it: its type, its text and, when expanded, its members.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValueView {
    /// The type's name (WinDbg's C++ spelling; `dx` style drops `struct`/`class`/`union`).
    pub type_name: String,
    /// The value's text (for a structure by value: its type name in `dv` style, empty in
    /// `dx` style).
    pub text: String,
    /// Where the value is in memory, when it is.
    pub address: Option<u64>,
    /// Members (of a structure, or of the structure a pointer points to) or array elements.
    pub children: Vec<Child>,
}

/// A member or element of an expanded value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Child {
    /// The member's name, or `[N]` for an array element.
    pub name: String,
    /// The member's offset in its structure (`None` for array elements).
    pub offset: Option<u64>,
    /// The member's value.
    pub view: ValueView,
}

/// Renders `value`'s text in `style`; `<value unavailable>` and `<Memory access error>`
/// where its bits are not known.
pub(crate) fn text(session: &Session, db: &TypeDb, value: &Value, style: Style) -> String {
    match shape(db, &value.ty) {
        Shape::Base(b) => scalar(session, value, b, style),
        Shape::Pointer { pointee, size } => pointer(session, db, value, &pointee, size, style),
        Shape::Array { element, size, .. } => array(session, db, value, &element, size, style),
        Shape::Record { .. } => match style {
            Style::Dv => name(db, &value.ty),
            Style::Dx => String::new(),
        },
        Shape::Enum {
            index,
            size,
            signed,
        } => match read_bits(session, &value.loc, size) {
            Ok(bits) => {
                let v = if signed {
                    i128::from(sign_extend(bits, size))
                } else {
                    i128::from(bits)
                };
                let number = match style {
                    Style::Dv => format!("0n{v}"),
                    Style::Dx => v.to_string(),
                };
                match db.enumerator_name(index, v) {
                    Some(n) => format!("{n} ({number})"),
                    None => number,
                }
            }
            Err(m) => missing(&m),
        },
        Shape::Bitfield {
            underlying,
            position,
            length,
        } => match read_bits(session, &value.loc, underlying.size.into()) {
            Ok(bits) => {
                let v = bits.checked_shr(position.into()).unwrap_or(0)
                    & if length >= 64 {
                        u64::MAX
                    } else {
                        (1u64 << length) - 1
                    };
                match style {
                    Style::Dv => format!("0y{v:0width$b}", width = usize::from(length.max(1))),
                    Style::Dx => format!("{v:#x}"),
                }
            }
            Err(m) => missing(&m),
        },
        Shape::Function => "<function>".to_string(),
        Shape::Unknown => name(db, &value.ty),
    }
}

/// The text for bits that could not be read.
pub(crate) fn missing(m: &Missing) -> String {
    match m {
        Missing::Unavailable(_) => "<value unavailable>".to_string(),
        Missing::Memory(_) => "<Memory access error>".to_string(),
    }
}

fn scalar(session: &Session, value: &Value, b: BaseType, style: Style) -> String {
    if b.size == 0 {
        return "void".to_string();
    }
    let bits = match read_bits(session, &value.loc, b.size.into()) {
        Ok(bits) => bits,
        Err(m) => return missing(&m),
    };
    let size = u64::from(b.size);
    if b.float {
        return match size {
            4 => format!("{}", f32::from_bits(bits as u32)),
            8 => format!("{}", f64::from_bits(bits)),
            _ => format!("{bits:#x}"),
        };
    }
    if b.boolean {
        return match bits {
            0 => "false".to_string(),
            1 => "true".to_string(),
            other => format!("{other:#x}"),
        };
    }
    let number = integer(bits, size, b.signed, style);
    if b.character {
        let c = char::from_u32(bits as u32).filter(|c| !c.is_control());
        return match c {
            Some(c) => format!("{number} '{c}'"),
            None => format!("{number} ''"),
        };
    }
    number
}

/// An integer in `style`: signed in decimal (`0n5` / `5`), unsigned in hex (64-bit ones in
/// `dv` style with WinDbg's `` ` `` separator).
pub(crate) fn integer(bits: u64, size: u64, signed: bool, style: Style) -> String {
    match (signed, style) {
        (true, Style::Dv) => format!("0n{}", sign_extend(bits, size)),
        (true, Style::Dx) => sign_extend(bits, size).to_string(),
        (false, Style::Dv) if size == 8 => address_text(bits, 8),
        (false, _) => format!("{bits:#x}"),
    }
}

/// A pointer value as `dv` prints it: ``0x00000001`40001000`` (64-bit) or `0x00401000`.
pub fn address_text(v: u64, size: u8) -> String {
    if size == 8 {
        format!("0x{:08x}`{:08x}", v >> 32, v & 0xffff_ffff)
    } else {
        format!("0x{:08x}", v & 0xffff_ffff)
    }
}

fn pointer(
    session: &Session,
    db: &TypeDb,
    value: &Value,
    pointee: &TypeRef,
    size: u8,
    style: Style,
) -> String {
    let target = match read_bits(session, &value.loc, size.into()) {
        Ok(v) => v,
        Err(m) => return missing(&m),
    };
    let head = match style {
        Style::Dv => address_text(target, size),
        Style::Dx => format!("{target:#x}"),
    };
    let tail = match shape(db, pointee) {
        Shape::Base(b) if b.character && (b.size == 1 || b.size == 2) => {
            let text = match read_string(session, target, b.size.into(), MAX_STRING) {
                Some(s) => format!("\"{s}\""),
                None => format!(
                    "\"--- memory read error at address {} ---\"",
                    address_text(target, size)
                ),
            };
            Some(text)
        }
        Shape::Function if target != 0 => {
            let symbol = session.symbolize(target);
            symbol.function.is_some().then(|| symbol.display())
        }
        _ => None,
    };
    match (tail, style) {
        (Some(t), Style::Dv) => format!("{head} {t}"),
        (Some(t), Style::Dx) => format!("{head} : {t}"),
        (None, _) => head,
    }
}

fn array(
    session: &Session,
    db: &TypeDb,
    value: &Value,
    element: &TypeRef,
    size: u64,
    style: Style,
) -> String {
    if let Shape::Base(b) = shape(db, element) {
        if b.character && (b.size == 1 || b.size == 2) {
            let unit = u64::from(b.size);
            let chars = usize::try_from(size / unit).unwrap_or(MAX_STRING);
            return match &value.loc {
                Loc::Memory(a) => match read_string(session, *a, unit, chars.min(MAX_STRING)) {
                    Some(s) => format!("\"{s}\""),
                    None => "<Memory access error>".to_string(),
                },
                Loc::Unavailable(_) => "<value unavailable>".to_string(),
                _ => name(db, &value.ty),
            };
        }
    }
    match style {
        Style::Dx => String::new(),
        Style::Dv => name(db, &value.ty),
    }
}

/// The NUL-terminated string of `unit`-byte characters at `addr`, at most `max` characters;
/// `None` when its first character cannot be read.
fn read_string(session: &Session, addr: u64, unit: u64, max: usize) -> Option<String> {
    let unit = unit.clamp(1, 2) as usize;
    let bytes = session.read_virtual(addr, max * unit);
    let mut out = String::new();
    for (i, chunk) in bytes.chunks(unit).enumerate() {
        let Some(v) = chunk
            .iter()
            .enumerate()
            .try_fold(0u32, |acc, (k, b)| b.map(|b| acc | u32::from(b) << (8 * k)))
        else {
            if i == 0 {
                return None;
            }
            break;
        };
        if v == 0 {
            return Some(out);
        }
        out.push(char::from_u32(v).filter(|c| !c.is_control()).unwrap_or('.'));
    }
    Some(out)
}

/// The type name in `style`.
fn type_text(db: &TypeDb, ty: &TypeRef, style: Style) -> String {
    let n = name(db, ty);
    match style {
        Style::Dv => n,
        Style::Dx => ["struct ", "class ", "union "]
            .iter()
            .find_map(|k| n.strip_prefix(k))
            .map_or_else(|| n.clone(), str::to_string),
    }
}

/// `value` with `depth` levels of members (structures; structures behind pointers; in `dx`
/// style, array elements too), bounded.
pub(crate) fn view(
    session: &Session,
    db: &TypeDb,
    value: &Value,
    style: Style,
    depth: usize,
) -> ValueView {
    let mut budget = MAX_CHILDREN;
    view_bounded(
        session,
        db,
        value,
        style,
        depth.min(MAX_EXPANSION),
        &mut budget,
    )
}

fn view_bounded(
    session: &Session,
    db: &TypeDb,
    value: &Value,
    style: Style,
    depth: usize,
    budget: &mut usize,
) -> ValueView {
    let mut out = ValueView {
        type_name: type_text(db, &value.ty, style),
        text: text(session, db, value, style),
        address: value.address(),
        children: Vec::new(),
    };
    if depth == 0 {
        return out;
    }
    let expanded = match shape(db, &value.ty) {
        Shape::Record { index, .. } => Some((index, value.loc.clone())),
        Shape::Pointer { pointee, size } => match shape(db, &pointee) {
            Shape::Record { index, .. } => match read_bits(session, &value.loc, size.into()) {
                Ok(p)
                    if p != 0
                        && session
                            .read_virtual(p, 1)
                            .first()
                            .copied()
                            .flatten()
                            .is_some() =>
                {
                    Some((index, Loc::Memory(p)))
                }
                _ => None,
            },
            _ => None,
        },
        Shape::Array { element, count, .. } if style == Style::Dx => {
            let element_size = size_of(db, &element).unwrap_or(0);
            for i in 0..count.min(MAX_ELEMENTS) {
                if *budget == 0 {
                    break;
                }
                *budget -= 1;
                let v = Value {
                    module_base: value.module_base,
                    ty: element.clone(),
                    loc: offset_loc(&value.loc, i * element_size),
                };
                out.children.push(Child {
                    name: format!("[{i}]"),
                    offset: None,
                    view: view_bounded(session, db, &v, style, depth - 1, budget),
                });
            }
            None
        }
        _ => None,
    };
    if let Some((index, loc)) = expanded {
        for m in db.record_members(index) {
            if *budget == 0 {
                break;
            }
            *budget -= 1;
            let v = Value {
                module_base: value.module_base,
                ty: TypeRef::Index(m.type_index),
                loc: offset_loc(&loc, m.offset),
            };
            out.children.push(Child {
                name: m.name,
                offset: Some(m.offset),
                view: view_bounded(session, db, &v, style, depth - 1, budget),
            });
        }
    }
    out
}
