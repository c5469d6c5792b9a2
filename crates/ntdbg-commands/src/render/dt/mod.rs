//! WinDbg's `dt` text for a type of a [`TypeDb`]: the header `MODULE!NAME`, one line per field
//! (`   +0x004 Flags            : Pos 0, 3 Bits`), values read from memory (`??` where the
//! dump has no bytes), `-v` (kinds and sizes), `-a` (one line per array element) and `-r N`
//! (embedded structures and, with an address, the structures pointers point to). The
//! symbols crate supplies the type data; the text is made here. Output is bounded.

mod names;
mod values;

use std::fmt::Write as _;

use ntdbg_symbols::{wildcard_match, PointerTarget, TypeDb, TypeId, TypeRecord};

use names::describe;
pub use names::{c_name, type_name};
use values::{enum_value, pointer_text, read_int};
pub use values::{value, ReadMemory};

/// Deepest `dt -r` recursion honoured.
pub const MAX_RECURSION: usize = 16;
/// Largest `dt` text produced (recursion into wide nested types multiplies lines).
const MAX_OUTPUT: usize = 1 << 22;
/// Most elements `-a` lists for one array.
const MAX_ARRAY_ELEMENTS: u64 = 4096;

/// How `dt` lays a type out.
#[derive(Clone, Copy, Debug, Default)]
pub struct DtOptions<'a> {
    /// Only these fields (WinDbg wildcards); empty: all.
    pub fields: &'a [&'a str],
    /// Levels of embedded structures (and, with an address, pointed-to structures) expanded.
    pub recursion: usize,
    /// `-v`: kinds, element counts and sizes (`struct _X, 3 elements, 0x18 bytes`).
    pub verbose: bool,
    /// `-a[N]`: with an address, list array elements one per line (at most N; `Some(0)`:
    /// all of them).
    pub array_elements: Option<u64>,
}

/// Renders `dt` for the type `name` of `db`: its header line `MODULE!NAME`, then one line per
/// field (with values when `address` and its memory reader are given). A typedef name (from
/// the PDB's global `S_UDT` records) shows the type it names. `None` when the type is unknown.
pub fn layout(
    db: &TypeDb,
    module: &str,
    name: &str,
    address: Option<(u64, ReadMemory<'_>)>,
    options: &DtOptions<'_>,
) -> Option<String> {
    let named = |ty: TypeId| match db.strip(ty).1 {
        Some(TypeRecord::Udt { name, .. } | TypeRecord::Enum { name, .. }) => {
            Some(name.to_string())
        }
        _ => None,
    };
    let (ty, display) = match db.lookup(name) {
        Some(ty) => (ty, named(ty).unwrap_or_else(|| name.to_string())),
        None => {
            let ty = db.typedef(name)?;
            match named(ty) {
                Some(display) => (ty, display),
                None => {
                    // A typedef of a primitive or pointer: its type, or its value.
                    let text = match address {
                        Some((a, read)) => value(db, ty, a, read),
                        None => describe(db, ty, options.verbose),
                    };
                    return Some(format!("{module}!{name}\n{text}\n"));
                }
            }
        }
    };
    let mut out = format!("{module}!{display}\n");
    if options.verbose {
        let _ = writeln!(out, "{}", describe(db, ty, true));
    }
    if let Some(TypeRecord::Enum { .. }) = db.strip(ty).1 {
        let value = address.and_then(|(addr, read)| {
            let size = db.size_of(ty).unwrap_or(4).min(8) as usize;
            read_int(read, addr, size, true)
        });
        match value {
            Some(v) => {
                let _ = writeln!(out, "{}", enum_value(db, ty, v));
            }
            None => {
                for e in db.enumerators(ty) {
                    let _ = writeln!(out, "   {} = 0n{}", e.name, e.value);
                }
            }
        }
        return Some(out);
    }
    let options = DtOptions {
        recursion: options.recursion.min(MAX_RECURSION),
        ..*options
    };
    let dt = Dt {
        db,
        options: &options,
    };
    dt.members(&mut out, ty, address, options.fields, 1);
    Some(out)
}

/// One `dt` rendering in progress: the types and the options.
struct Dt<'a> {
    db: &'a TypeDb,
    options: &'a DtOptions<'a>,
}

impl Dt<'_> {
    /// The field lines of `ty` at nesting `level` (only the fields matching `filter`), with
    /// what `-a` and `-r` add below each.
    fn members(
        &self,
        out: &mut String,
        ty: TypeId,
        address: Option<(u64, ReadMemory<'_>)>,
        filter: &[&str],
        level: usize,
    ) {
        let indent = "   ".repeat(level);
        for field in self.db.members(ty) {
            if truncated(out) {
                return;
            }
            if !filter.is_empty() && !filter.iter().any(|p| wildcard_match(p, &field.name)) {
                continue;
            }
            let offset = field.offset;
            let field_addr = address.map(|(a, read)| (a.wrapping_add(offset), read));
            let shown = match field_addr {
                Some((a, read)) => value(self.db, field.ty, a, read),
                None => describe(self.db, field.ty, self.options.verbose),
            };
            let _ = writeln!(out, "{indent}+{offset:#05x} {:<16} : {shown}", field.name);
            if let (Some(limit), Some(at)) = (self.options.array_elements, field_addr) {
                self.elements(out, field.ty, at, limit, level);
            }
            if level > self.options.recursion {
                continue;
            }
            match self.db.strip(field.ty) {
                (inner, Some(TypeRecord::Udt { .. })) => {
                    self.members(out, inner, field_addr, &[], level + 1);
                }
                (
                    _,
                    Some(TypeRecord::Pointer {
                        to: PointerTarget::Type(to),
                        size,
                    }),
                ) => {
                    if let Some(at) = field_addr {
                        self.follow_pointer(out, (to, size), at, level);
                    }
                }
                _ => {}
            }
        }
    }

    /// `-r` through a pointer field at `at`: the pointed-to structure's fields with their
    /// values; nothing for NULL; `Memory read error` when the pointer or its target is not in
    /// the dump.
    fn follow_pointer(
        &self,
        out: &mut String,
        (to, size): (TypeId, u8),
        (at, read): (u64, ReadMemory<'_>),
        level: usize,
    ) {
        let (pointee, record) = self.db.strip(to);
        if !matches!(record, Some(TypeRecord::Udt { .. })) {
            return;
        }
        let indent = "   ".repeat(level + 1);
        let Some(target) = read_int(read, at, size.into(), false).map(|v| v as u64) else {
            let _ = writeln!(out, "{indent}Memory read error {}", pointer_text(at, size));
            return;
        };
        if target == 0 {
            return;
        }
        if read(target, 1).first().copied().flatten().is_none() {
            let _ = writeln!(
                out,
                "{indent}Memory read error {}",
                pointer_text(target, size)
            );
            return;
        }
        self.members(out, pointee, Some((target, read)), &[], level + 1);
    }

    /// `-a`: the elements of the array field at `at`, one per line (`[00] 0n1`).
    fn elements(
        &self,
        out: &mut String,
        ty: TypeId,
        (at, read): (u64, ReadMemory<'_>),
        limit: u64,
        level: usize,
    ) {
        let Some(TypeRecord::Array { element, size }) = self.db.strip(ty).1 else {
            return;
        };
        let element_size = self.db.size_of(element).unwrap_or(0);
        let count = size.checked_div(element_size).unwrap_or(0);
        let shown = match limit {
            0 => count,
            n => count.min(n),
        }
        .min(MAX_ARRAY_ELEMENTS);
        let indent = "   ".repeat(level);
        let (inner, record) = self.db.strip(element);
        for i in 0..shown {
            if truncated(out) {
                return;
            }
            let a = at.wrapping_add(i * element_size);
            let _ = writeln!(
                out,
                "{indent} [{i:02}] {}",
                value(self.db, element, a, read)
            );
            if matches!(record, Some(TypeRecord::Udt { .. })) && level <= self.options.recursion {
                self.members(out, inner, Some((a, read)), &[], level + 1);
            }
        }
    }
}

/// Whether the output reached its bound (noting it once).
fn truncated(out: &mut String) -> bool {
    if out.len() <= MAX_OUTPUT {
        return false;
    }
    if !out.ends_with("[output truncated]\n") {
        out.push_str("   [output truncated]\n");
    }
    true
}
