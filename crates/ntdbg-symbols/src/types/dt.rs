//! WinDbg's `dt` text for a [`TypeDb`] type: the field lines, values read from memory,
//! `-v` (kinds and sizes), `-a` (one line per array element) and `-r N` (embedded structures
//! and, with an address, the structures pointers point to).

use std::fmt::Write as _;

use super::{
    pointer_text, primitive_value, read_int, read_string, Field, ReadMemory, Target, Ty, TypeDb,
    MAX_DEPTH, MAX_OUTPUT, MAX_RECURSION,
};
use crate::wildcard::wildcard_match;

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

impl TypeDb {
    /// Renders `dt` for the type `name`: its header line `MODULE!NAME`, then one line per
    /// field (with values when `address` and `read` are given). `fields` filters by field
    /// name (WinDbg wildcards); `recursion` expands nested structures that many levels.
    /// `None` when the type is unknown.
    pub fn layout(
        &self,
        module: &str,
        name: &str,
        address: Option<(u64, ReadMemory<'_>)>,
        fields: &[&str],
        recursion: usize,
    ) -> Option<String> {
        let options = DtOptions {
            fields,
            recursion,
            ..DtOptions::default()
        };
        self.layout_with(module, name, address, &options)
    }

    /// [`TypeDb::layout`] with every `dt` option. A typedef name (from the PDB's global
    /// `S_UDT` records) shows the type it names.
    pub fn layout_with(
        &self,
        module: &str,
        name: &str,
        address: Option<(u64, ReadMemory<'_>)>,
        options: &DtOptions<'_>,
    ) -> Option<String> {
        let (index, display) = match self.lookup(name) {
            Some((index, Ty::Udt { name, .. } | Ty::Enum { name, .. })) => (index, name.clone()),
            Some((index, _)) => (index, name.to_string()),
            None => {
                let index = self.typedef(name)?;
                match self.strip(index).1 {
                    Some(Ty::Udt { name, .. } | Ty::Enum { name, .. }) => (index, name.clone()),
                    _ => {
                        // A typedef of a primitive or pointer: its type, or its value.
                        let text = match address {
                            Some((a, read)) => self.value(index, a, read),
                            None => self.describe(index, options.verbose),
                        };
                        return Some(format!("{module}!{name}\n{text}\n"));
                    }
                }
            }
        };
        let mut out = format!("{module}!{display}\n");
        if options.verbose {
            let _ = writeln!(out, "{}", self.describe(index, true));
        }
        if let Some(Ty::Enum { fields: list, .. }) = self.strip(index).1 {
            let value = address.and_then(|(addr, read)| {
                let size = self.size_of(index, 0).unwrap_or(4).min(8) as usize;
                read_int(read, addr, size, true)
            });
            match value {
                Some(v) => {
                    let _ = writeln!(out, "{}", self.enum_value(index, v));
                }
                None => {
                    for f in self.field_list(*list) {
                        if let Field::Enumerate { name, value } = f {
                            let _ = writeln!(out, "   {name} = 0n{value}");
                        }
                    }
                }
            }
            return Some(out);
        }
        let options = DtOptions {
            recursion: options.recursion.min(MAX_RECURSION),
            ..*options
        };
        self.render_members(&mut out, index, address, &options, options.fields, 1);
        Some(out)
    }

    fn render_members(
        &self,
        out: &mut String,
        index: u32,
        address: Option<(u64, ReadMemory<'_>)>,
        options: &DtOptions<'_>,
        filter: &[&str],
        level: usize,
    ) {
        let indent = "   ".repeat(level);
        for (name, offset, ty) in self.members(index, 0) {
            if truncated(out) {
                return;
            }
            if !filter.is_empty() && !filter.iter().any(|p| wildcard_match(p, &name)) {
                continue;
            }
            let field_addr = address.map(|(a, read)| (a.wrapping_add(offset), read));
            let value = match field_addr {
                Some((a, read)) => self.value(ty, a, read),
                None => self.describe(ty, options.verbose),
            };
            let _ = writeln!(out, "{indent}+{offset:#05x} {name:<16} : {value}");
            if let (Some(limit), Some(at)) = (options.array_elements, field_addr) {
                self.render_elements(out, ty, at, limit, options, level);
            }
            if level > options.recursion {
                continue;
            }
            match self.strip(ty) {
                (inner, Some(Ty::Udt { .. })) => {
                    self.render_members(out, inner, field_addr, options, &[], level + 1);
                }
                (_, Some(Ty::Pointer { to, size })) => {
                    if let (Target::Index(to), Some(at)) = (to, field_addr) {
                        self.follow_pointer(out, (*to, *size), at, options, level);
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
        (to, size): (u32, u8),
        (at, read): (u64, ReadMemory<'_>),
        options: &DtOptions<'_>,
        level: usize,
    ) {
        let (pointee, t) = self.strip(to);
        if !matches!(t, Some(Ty::Udt { .. })) {
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
        self.render_members(out, pointee, Some((target, read)), options, &[], level + 1);
    }

    /// `-a`: the elements of the array field at `at`, one per line (`[00] 0n1`).
    fn render_elements(
        &self,
        out: &mut String,
        ty: u32,
        (at, read): (u64, ReadMemory<'_>),
        limit: u64,
        options: &DtOptions<'_>,
        level: usize,
    ) {
        let Some(Ty::Array { element, size }) = self.strip(ty).1 else {
            return;
        };
        let element_size = self.size_of(*element, 0).unwrap_or(0);
        let count = size.checked_div(element_size).unwrap_or(0);
        let shown = match limit {
            0 => count,
            n => count.min(n),
        }
        .min(MAX_ARRAY_ELEMENTS);
        let indent = "   ".repeat(level);
        let (inner, t) = self.strip(*element);
        for i in 0..shown {
            if truncated(out) {
                return;
            }
            let a = at.wrapping_add(i * element_size);
            let _ = writeln!(out, "{indent} [{i:02}] {}", self.value(*element, a, read));
            if matches!(t, Some(Ty::Udt { .. })) && level <= options.recursion {
                self.render_members(out, inner, Some((a, read)), options, &[], level + 1);
            }
        }
    }

    /// A type as a field line shows it; `verbose` adds kinds, counts and sizes as `dt -v`
    /// does (`Ptr64 to struct _LIST_ENTRY, 2 elements, 0x10 bytes`).
    fn describe(&self, index: u32, verbose: bool) -> String {
        if verbose {
            self.verbose_name(index, 0)
        } else {
            self.type_name(index, 0)
        }
    }

    fn verbose_name(&self, index: u32, depth: usize) -> String {
        if depth > MAX_DEPTH {
            return "<too deep>".to_string();
        }
        let (index, ty) = self.strip(index);
        match ty {
            Some(Ty::Pointer { to, size }) => {
                let inner = match to {
                    Target::Primitive(p) => p.name.to_string(),
                    Target::Index(i) => self.verbose_name(*i, depth + 1),
                };
                format!("{} to {}", Self::pointer_prefix(*size), inner.trim())
            }
            Some(Ty::Array { element, .. }) => {
                let count = self.type_name(index, depth + 1);
                let count = count.split(']').next().unwrap_or("[0");
                format!("{count}] {}", self.verbose_name(*element, depth + 1))
            }
            Some(Ty::Bitfield { .. }) => format!("Bitfield {}", self.type_name(index, depth + 1)),
            Some(Ty::Udt {
                kind, name, size, ..
            }) => format!(
                "{kind} {name}, {} elements, {size:#x} bytes",
                self.members(index, 0).len()
            ),
            Some(Ty::Enum { name, fields, .. }) => {
                let count = self
                    .field_list(*fields)
                    .iter()
                    .filter(|f| matches!(f, Field::Enumerate { .. }))
                    .count();
                format!("Enum {name},  {count} total enums")
            }
            _ => self.type_name(index, depth + 1),
        }
    }

    /// An enum value as WinDbg shows it: `0n2 ( Value2 )`, or `0n7` when no name matches.
    fn enum_value(&self, index: u32, value: i128) -> String {
        let (_, ty) = self.strip(index);
        let name = match ty {
            Some(Ty::Enum { fields, .. }) => {
                self.field_list(*fields).into_iter().find_map(|f| match f {
                    Field::Enumerate { name, value: v } if v == value => Some(name),
                    _ => None,
                })
            }
            _ => None,
        };
        match name {
            Some(n) => format!("0n{value} ( {n} )"),
            None => format!("0n{value}"),
        }
    }

    /// A field's value at `addr`, in `dt`'s shape.
    pub(super) fn value(&self, ty: u32, addr: u64, read: ReadMemory<'_>) -> String {
        let (index, t) = self.strip(ty);
        let t = t.cloned();
        match t {
            Some(Ty::Primitive(p)) => primitive_value(p, addr, read),
            Some(Ty::Pointer { to, size }) => {
                let target = match to {
                    Target::Primitive(p) => p.name.to_string(),
                    Target::Index(i) => self.type_name(i, 0),
                };
                let target = target.trim();
                match read_int(read, addr, size.into(), false) {
                    Some(v) => format!("{} {target}", pointer_text(v as u64, size)),
                    None => format!("?? {target}"),
                }
            }
            Some(Ty::Bitfield {
                of,
                length,
                position,
            }) => {
                let size = self.size_of(of, 0).unwrap_or(4).min(8) as usize;
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
                    None => "??".to_string(),
                }
            }
            Some(Ty::Array { element, .. }) => {
                let name = self.type_name(index, 0);
                let (_, e) = self.strip(element);
                let first = match e.cloned() {
                    Some(Ty::Primitive(p)) if p.character && p.size == 1 => {
                        format!("\"{}\"", read_string(read, addr, 1))
                    }
                    Some(Ty::Primitive(p)) if p.character && p.size == 2 => {
                        format!("\"{}\"", read_string(read, addr, 2))
                    }
                    Some(Ty::Primitive(_)) | Some(Ty::Pointer { .. }) => {
                        self.value(element, addr, read)
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
            Some(Ty::Udt { name, .. }) => name,
            Some(Ty::Enum { .. }) => {
                let size = self.size_of(index, 0).unwrap_or(4).min(8) as usize;
                match read_int(read, addr, size, true) {
                    Some(v) => self.enum_value(index, v),
                    None => "??".to_string(),
                }
            }
            _ => self.type_name(ty, 0),
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
