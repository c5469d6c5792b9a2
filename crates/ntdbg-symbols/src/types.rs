//! Types from a PDB's type stream (TPI), for WinDbg's `dt`.
//!
//! [`TypeDb::open`] reads every type record once into an owned table; [`TypeDb::layout`]
//! renders a structure, union or enum in WinDbg's `dt` shape:
//!
//! ```text
//! crashy!_EXAMPLE
//!    +0x000 Count            : Uint4B
//!    +0x004 Flags            : Pos 0, 3 Bits
//!    +0x008 Next             : Ptr64 _EXAMPLE
//! ```
//!
//! and, given an address and a way to read memory, with each field's value (`??` for bytes
//! the dump lacks). Counts and recursion are bounded: a damaged type stream gives fewer
//! fields, never a panic or a loop.

use std::collections::HashMap;
use std::path::Path;

use pdb_addr2line::pdb::{
    self, FallibleIterator, PrimitiveKind, TypeData, TypeIndex, Variant, PDB,
};

use crate::wildcard::wildcard_match;
use crate::SymbolError;

mod dt;
mod globals;
mod index;

pub use dt::DtOptions;
pub use globals::SymbolType;
pub use index::{primitive_named, BaseType, Member, TypeKind};

/// Most type records read from one PDB.
const MAX_TYPES: usize = 4_000_000;
/// Most fields shown for one type (field lists chain through continuations).
const MAX_FIELDS: usize = 10_000;
/// Deepest chain of pointers, modifiers and arrays followed when naming a type.
const MAX_DEPTH: usize = 32;
/// Deepest `dt -r` recursion honoured.
pub const MAX_RECURSION: usize = 16;
/// Largest `dt` text produced (recursion into wide nested types multiplies lines).
const MAX_OUTPUT: usize = 1 << 22;

/// A primitive type, as WinDbg names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Primitive {
    name: &'static str,
    /// The C name (`int`, `unsigned long`), for prototypes and `x /t`.
    c: &'static str,
    size: u8,
    signed: bool,
    float: bool,
    character: bool,
}

/// One type record, owned.
#[derive(Clone, Debug)]
enum Ty {
    Primitive(Primitive),
    /// A pointer to `to` (primitive pointers have `to` = the primitive's own index form).
    Pointer {
        to: Target,
        size: u8,
    },
    Modifier(u32),
    Array {
        element: u32,
        size: u64,
    },
    Bitfield {
        of: u32,
        length: u8,
        position: u8,
    },
    Udt {
        /// `struct`, `class` or `union`.
        kind: &'static str,
        name: String,
        size: u64,
        fields: Option<u32>,
        forward: bool,
    },
    Enum {
        name: String,
        underlying: u32,
        fields: u32,
        forward: bool,
    },
    Procedure {
        ret: Option<u32>,
    },
    FieldList {
        fields: Vec<Field>,
        continuation: Option<u32>,
    },
    Other,
}

/// What a pointer points to.
#[derive(Clone, Copy, Debug)]
enum Target {
    Index(u32),
    Primitive(Primitive),
}

/// A field-list entry.
#[derive(Clone, Debug)]
enum Field {
    Member { name: String, ty: u32, offset: u64 },
    Base { ty: u32, offset: u64 },
    Enumerate { name: String, value: i128 },
    VfPtr,
}

/// The types of one PDB.
#[derive(Debug)]
pub struct TypeDb {
    types: HashMap<u32, Ty>,
    /// Lower-cased UDT/enum name → index of its definition (a forward reference only when
    /// no definition exists).
    by_name: HashMap<String, u32>,
    /// Display names, sorted, for wildcard listing.
    names: Vec<String>,
    /// Lower-cased typedef name (the PDB's global `S_UDT` records) → the type it names.
    typedefs: HashMap<String, u32>,
    /// Functions and data by name → their type (for `x /t`).
    symbols: HashMap<String, globals::Typed>,
    /// Pointee index → a pointer record of the machine's size to it (for `&x` and casts).
    pointers: HashMap<u32, u32>,
    /// Type records read from the stream (primitives, which are not records, excluded).
    records: usize,
    pointer_size: u8,
}

/// A field's place and type, as [`TypeDb::fields`] lists them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldInfo {
    /// The field's name.
    pub name: String,
    /// Its offset in the structure.
    pub offset: u64,
    /// The type as `dt` shows it (`Uint4B`, `Ptr64 _LIST_ENTRY`, `Pos 0, 3 Bits`).
    pub type_name: String,
}

/// Reads `len` bytes of target memory at an address: one entry per byte, `None` for each
/// byte the dump lacks.
pub type ReadMemory<'a> = &'a dyn Fn(u64, usize) -> Vec<Option<u8>>;

fn primitive(kind: PrimitiveKind) -> Primitive {
    let c = c_primitive(kind);
    let p = |name, size, signed, float, character| Primitive {
        name,
        c,
        size,
        signed,
        float,
        character,
    };
    match kind {
        PrimitiveKind::Void | PrimitiveKind::NoType => p("Void", 0, false, false, false),
        PrimitiveKind::Char | PrimitiveKind::RChar | PrimitiveKind::I8 | PrimitiveKind::Char8 => {
            p("Char", 1, true, false, true)
        }
        PrimitiveKind::UChar | PrimitiveKind::U8 => p("UChar", 1, false, false, true),
        PrimitiveKind::WChar | PrimitiveKind::RChar16 => p("Wchar", 2, false, false, true),
        PrimitiveKind::RChar32 => p("Uint4B", 4, false, false, false),
        PrimitiveKind::Short | PrimitiveKind::I16 => p("Int2B", 2, true, false, false),
        PrimitiveKind::UShort | PrimitiveKind::U16 => p("Uint2B", 2, false, false, false),
        PrimitiveKind::Long | PrimitiveKind::I32 | PrimitiveKind::HRESULT => {
            p("Int4B", 4, true, false, false)
        }
        PrimitiveKind::ULong | PrimitiveKind::U32 => p("Uint4B", 4, false, false, false),
        PrimitiveKind::Quad | PrimitiveKind::I64 => p("Int8B", 8, true, false, false),
        PrimitiveKind::UQuad | PrimitiveKind::U64 => p("Uint8B", 8, false, false, false),
        PrimitiveKind::Octa | PrimitiveKind::I128 => p("Int16B", 16, true, false, false),
        PrimitiveKind::UOcta | PrimitiveKind::U128 => p("Uint16B", 16, false, false, false),
        PrimitiveKind::F16 => p("Float16", 2, true, true, false),
        PrimitiveKind::F32 | PrimitiveKind::F32PP => p("Float", 4, true, true, false),
        PrimitiveKind::F48 => p("Float48", 6, true, true, false),
        PrimitiveKind::F64 => p("Double", 8, true, true, false),
        PrimitiveKind::F80 => p("Float80", 10, true, true, false),
        PrimitiveKind::F128 => p("Float128", 16, true, true, false),
        PrimitiveKind::Bool8 => p("Bool", 1, false, false, false),
        PrimitiveKind::Bool16 => p("Bool", 2, false, false, false),
        PrimitiveKind::Bool32 => p("Bool", 4, false, false, false),
        PrimitiveKind::Bool64 => p("Bool", 8, false, false, false),
        _ => p("Void", 0, false, false, false),
    }
}

fn variant(v: &Variant) -> i128 {
    match *v {
        Variant::U8(x) => x.into(),
        Variant::U16(x) => x.into(),
        Variant::U32(x) => x.into(),
        Variant::U64(x) => x.into(),
        Variant::I8(x) => x.into(),
        Variant::I16(x) => x.into(),
        Variant::I32(x) => x.into(),
        Variant::I64(x) => x.into(),
    }
}

fn convert(data: &TypeData<'_>) -> Ty {
    match data {
        TypeData::Primitive(p) => {
            let prim = primitive(p.kind);
            match p.indirection {
                None => Ty::Primitive(prim),
                Some(ind) => Ty::Pointer {
                    to: Target::Primitive(prim),
                    size: match ind {
                        pdb::Indirection::Near64 => 8,
                        pdb::Indirection::Near128 => 16,
                        pdb::Indirection::Near16
                        | pdb::Indirection::Far16
                        | pdb::Indirection::Huge16 => 2,
                        _ => 4,
                    },
                },
            }
        }
        TypeData::Pointer(p) => Ty::Pointer {
            to: Target::Index(p.underlying_type.0),
            size: p.attributes.size(),
        },
        TypeData::Modifier(m) => Ty::Modifier(m.underlying_type.0),
        TypeData::Array(a) => Ty::Array {
            element: a.element_type.0,
            size: a.dimensions.last().copied().unwrap_or(0).into(),
        },
        TypeData::Bitfield(b) => Ty::Bitfield {
            of: b.underlying_type.0,
            length: b.length,
            position: b.position,
        },
        TypeData::Class(c) => Ty::Udt {
            kind: match c.kind {
                pdb::ClassKind::Class => "class",
                _ => "struct",
            },
            name: c.name.to_string().into_owned(),
            size: c.size,
            fields: c.fields.map(|f| f.0),
            forward: c.properties.forward_reference(),
        },
        TypeData::Union(u) => Ty::Udt {
            kind: "union",
            name: u.name.to_string().into_owned(),
            size: u.size,
            fields: Some(u.fields.0),
            forward: u.properties.forward_reference(),
        },
        TypeData::Enumeration(e) => Ty::Enum {
            name: e.name.to_string().into_owned(),
            underlying: e.underlying_type.0,
            fields: e.fields.0,
            forward: e.properties.forward_reference(),
        },
        TypeData::Procedure(p) => Ty::Procedure {
            ret: p.return_type.map(|t| t.0),
        },
        TypeData::MemberFunction(m) => Ty::Procedure {
            ret: Some(m.return_type.0),
        },
        TypeData::FieldList(list) => Ty::FieldList {
            fields: list
                .fields
                .iter()
                .filter_map(|f| match f {
                    TypeData::Member(m) => Some(Field::Member {
                        name: m.name.to_string().into_owned(),
                        ty: m.field_type.0,
                        offset: m.offset,
                    }),
                    TypeData::BaseClass(b) => Some(Field::Base {
                        ty: b.base_class.0,
                        offset: b.offset.into(),
                    }),
                    TypeData::Enumerate(e) => Some(Field::Enumerate {
                        name: e.name.to_string().into_owned(),
                        value: variant(&e.value),
                    }),
                    TypeData::VirtualFunctionTablePointer(_) => Some(Field::VfPtr),
                    _ => None,
                })
                .collect(),
            continuation: list.continuation.map(|c| c.0),
        },
        _ => Ty::Other,
    }
}

impl TypeDb {
    /// Reads the type stream of the PDB at `path`.
    pub fn open(path: &Path) -> Result<TypeDb, SymbolError> {
        let file = std::fs::File::open(path).map_err(|source| SymbolError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let pdb_err = |e: pdb::Error| SymbolError::Pdb {
            path: path.to_path_buf(),
            source: e.into(),
        };
        let read = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut pdb = PDB::open(file)?;
            let pointer_size = match pdb.debug_information()?.machine_type()? {
                pdb::MachineType::Amd64 | pdb::MachineType::Arm64 | pdb::MachineType::Ia64 => 8,
                _ => 4,
            };
            let info = pdb.type_information()?;
            let mut types = HashMap::new();
            let mut iter = info.iter();
            while let Some(item) = iter.next()? {
                if types.len() >= MAX_TYPES {
                    break;
                }
                // A record that does not parse is skipped, not fatal.
                if let Ok(data) = item.parse() {
                    types.insert(item.index().0, convert(&data));
                }
            }
            // Primitive indices (below 0x1000) are not records: describe every one (casts
            // and arithmetic name primitives the records never refer to).
            let records = types.len();
            let finder = info.finder();
            for index in 0..0x800u32 {
                if let Ok(data) = finder.find(TypeIndex(index)).and_then(|t| t.parse()) {
                    types.insert(index, convert(&data));
                }
            }
            let globals = globals::read(&mut pdb);
            Ok::<_, pdb::Error>((types, records, pointer_size, globals))
        }));
        let (types, records, pointer_size, globals) = match read {
            Ok(r) => r.map_err(pdb_err)?,
            Err(_) => {
                return Err(SymbolError::Panicked {
                    path: path.to_path_buf(),
                    what: "PDB type reader",
                })
            }
        };
        let mut by_name: HashMap<String, u32> = HashMap::new();
        let mut names = Vec::new();
        let mut indices: Vec<&u32> = types.keys().collect();
        indices.sort();
        for &index in indices {
            let (name, forward) = match &types[&index] {
                Ty::Udt { name, forward, .. } | Ty::Enum { name, forward, .. } => (name, *forward),
                _ => continue,
            };
            if name.is_empty() || name.starts_with("<unnamed") {
                continue;
            }
            let key = name.to_lowercase();
            match by_name.get(&key) {
                Some(existing) if !forward || is_forward(&types, *existing) == forward => {
                    if is_forward(&types, *existing) && !forward {
                        by_name.insert(key, index);
                    }
                }
                Some(_) => {}
                None => {
                    names.push(name.clone());
                    by_name.insert(key, index);
                }
            }
        }
        names.sort_by_key(|n| n.to_lowercase());
        names.dedup();
        let mut db = TypeDb {
            types,
            by_name,
            names,
            typedefs: globals.typedefs,
            symbols: globals.symbols,
            pointers: HashMap::new(),
            records,
            pointer_size,
        };
        db.pointers = index::pointer_records(&db);
        Ok(db)
    }

    /// The number of type records read.
    pub fn len(&self) -> usize {
        self.records
    }

    /// Whether the PDB has no type records.
    pub fn is_empty(&self) -> bool {
        self.records == 0
    }

    /// Names of structures, classes, unions and enums matching a WinDbg wildcard pattern
    /// (case-insensitive), sorted.
    pub fn find(&self, pattern: &str) -> Vec<&str> {
        self.names
            .iter()
            .filter(|n| wildcard_match(pattern, n))
            .map(String::as_str)
            .collect()
    }

    /// Whether a structure, class, union or enum of this name exists (case-insensitive).
    pub fn contains(&self, name: &str) -> bool {
        let key = name.to_lowercase();
        self.by_name.contains_key(&key) || self.typedefs.contains_key(&key)
    }

    /// The type a typedef names.
    fn typedef(&self, name: &str) -> Option<u32> {
        self.typedefs.get(&name.to_lowercase()).copied()
    }

    fn lookup(&self, name: &str) -> Option<(u32, &Ty)> {
        let index = *self.by_name.get(&name.to_lowercase())?;
        Some((index, self.types.get(&index)?))
    }

    /// The definition of a forward reference (by name), else the type itself.
    fn resolve(&self, index: u32) -> u32 {
        match self.types.get(&index) {
            Some(Ty::Udt {
                name,
                forward: true,
                ..
            })
            | Some(Ty::Enum {
                name,
                forward: true,
                ..
            }) => self
                .by_name
                .get(&name.to_lowercase())
                .copied()
                .unwrap_or(index),
            _ => index,
        }
    }

    /// The type behind modifiers (`const`, `volatile`) and forward references.
    fn strip(&self, mut index: u32) -> (u32, Option<&Ty>) {
        for _ in 0..MAX_DEPTH {
            index = self.resolve(index);
            match self.get(index) {
                Some(Ty::Modifier(to)) => index = *to,
                other => return (index, other),
            }
        }
        (index, None)
    }

    fn get(&self, index: u32) -> Option<&Ty> {
        self.types.get(&index)
    }

    fn ty(&self, index: u32) -> Option<Ty> {
        self.get(index).cloned()
    }

    /// The size in bytes of a type, when known.
    fn size_of(&self, index: u32, depth: usize) -> Option<u64> {
        if depth > MAX_DEPTH {
            return None;
        }
        let index = self.resolve(index);
        match self.ty(index)? {
            Ty::Primitive(p) => Some(p.size.into()),
            Ty::Pointer { size, .. } => Some(size.into()),
            Ty::Modifier(to) => self.size_of(to, depth + 1),
            Ty::Array { size, .. } => Some(size),
            Ty::Bitfield { of, .. } => self.size_of(of, depth + 1),
            Ty::Udt { size, .. } => Some(size),
            Ty::Enum { underlying, .. } => self.size_of(underlying, depth + 1),
            _ => None,
        }
    }

    fn pointer_prefix(size: u8) -> &'static str {
        match size {
            8 => "Ptr64",
            2 => "Ptr16",
            16 => "Ptr128",
            _ => "Ptr32",
        }
    }

    /// A type's name as `dt` shows it in a field line.
    fn type_name(&self, index: u32, depth: usize) -> String {
        if depth > MAX_DEPTH {
            return "<too deep>".to_string();
        }
        let index = self.resolve(index);
        match self.ty(index) {
            Some(Ty::Primitive(p)) => p.name.to_string(),
            Some(Ty::Pointer { to, size }) => {
                let inner = match to {
                    Target::Primitive(p) => p.name.to_string(),
                    Target::Index(i) => self.type_name(i, depth + 1),
                };
                if inner.starts_with("    ") {
                    // Function pointers: WinDbg's `Ptr64     void `.
                    format!("{}{inner}", Self::pointer_prefix(size))
                } else {
                    format!("{} {inner}", Self::pointer_prefix(size))
                }
            }
            Some(Ty::Modifier(to)) => self.type_name(to, depth + 1),
            Some(Ty::Array { element, size }) => {
                let elem_size = self.size_of(element, depth + 1).unwrap_or(0);
                let count = size.checked_div(elem_size).unwrap_or(0);
                format!("[{count}] {}", self.type_name(element, depth + 1))
            }
            Some(Ty::Bitfield {
                length, position, ..
            }) => format!(
                "Pos {position}, {length} Bit{}",
                if length == 1 { "" } else { "s" }
            ),
            Some(Ty::Udt { name, .. }) | Some(Ty::Enum { name, .. }) => name,
            Some(Ty::Procedure { ret }) => {
                let ret = ret.map_or_else(|| "void".to_string(), |r| self.c_name(r, depth + 1));
                format!("     {ret} ")
            }
            _ => "<unknown type>".to_string(),
        }
    }

    /// A C-like name, for prototypes and `x /t` (`void`, `int`, `struct _FOO *`).
    fn c_name(&self, index: u32, depth: usize) -> String {
        if depth > MAX_DEPTH {
            return "?".to_string();
        }
        let index = self.resolve(index);
        match self.ty(index) {
            Some(Ty::Primitive(p)) => p.c.to_string(),
            Some(Ty::Pointer { to, .. }) => match to {
                Target::Primitive(p) => format!("{} *", p.c),
                Target::Index(i) => format!("{} *", self.c_name(i, depth + 1)),
            },
            Some(Ty::Modifier(to)) => self.c_name(to, depth + 1),
            Some(Ty::Udt { kind, name, .. }) => format!("{kind} {name}"),
            Some(Ty::Enum { name, .. }) => format!("enum {name}"),
            Some(Ty::Array { element, size }) => {
                let count = size
                    .checked_div(self.size_of(element, depth + 1).unwrap_or(0))
                    .unwrap_or(0);
                format!("{} [{count}]", self.c_name(element, depth + 1))
            }
            _ => "?".to_string(),
        }
    }

    /// The fields of a field list, following continuations, bounded.
    fn field_list(&self, index: u32) -> Vec<Field> {
        let mut out = Vec::new();
        let mut next = Some(index);
        let mut hops = 0;
        while let Some(i) = next.take() {
            hops += 1;
            if hops > 1000 || out.len() > MAX_FIELDS {
                break;
            }
            if let Some(Ty::FieldList {
                fields,
                continuation,
            }) = self.get(i)
            {
                out.extend(fields.iter().cloned());
                next = *continuation;
            }
        }
        out.truncate(MAX_FIELDS);
        out
    }

    /// The data members of a structure/union (base classes' members first, at their offsets),
    /// as `dt` lists them. `None` when there is no such type.
    pub fn fields(&self, name: &str) -> Option<Vec<FieldInfo>> {
        let index = self
            .lookup(name)
            .map(|(index, _)| index)
            .or_else(|| self.typedef(name))?;
        Some(
            self.members(index, 0)
                .into_iter()
                .map(|(name, offset, ty)| FieldInfo {
                    name,
                    offset,
                    type_name: self.type_name(ty, 0),
                })
                .collect(),
        )
    }

    /// (name, offset, type) of each data member, base classes flattened as WinDbg shows a
    /// base (`+0x000 __BaseClass Base`), vtable pointers as `__VFN_table`.
    fn members(&self, index: u32, depth: usize) -> Vec<(String, u64, u32)> {
        let (_, ty) = self.strip(index);
        let fields = match ty {
            Some(Ty::Udt {
                fields: Some(f), ..
            }) => *f,
            _ => return Vec::new(),
        };
        let mut out = Vec::new();
        for f in self.field_list(fields) {
            match f {
                Field::Member { name, ty, offset } => out.push((name, offset, ty)),
                Field::Base { ty, offset } if depth < MAX_DEPTH => {
                    out.push(("__BaseClass".to_string(), offset, ty));
                }
                Field::VfPtr => out.push(("__VFN_table".to_string(), 0, 0x0603)),
                _ => {}
            }
        }
        out
    }

    /// The pointer size of the PDB's machine (4 or 8).
    pub fn pointer_size(&self) -> u8 {
        self.pointer_size
    }
}

/// The C name of a primitive type.
fn c_primitive(kind: PrimitiveKind) -> &'static str {
    match kind {
        PrimitiveKind::Void | PrimitiveKind::NoType => "void",
        PrimitiveKind::Char | PrimitiveKind::RChar | PrimitiveKind::Char8 => "char",
        PrimitiveKind::I8 => "signed char",
        PrimitiveKind::UChar | PrimitiveKind::U8 => "unsigned char",
        PrimitiveKind::WChar => "wchar_t",
        PrimitiveKind::RChar16 => "char16_t",
        PrimitiveKind::RChar32 => "char32_t",
        PrimitiveKind::Short | PrimitiveKind::I16 => "short",
        PrimitiveKind::UShort | PrimitiveKind::U16 => "unsigned short",
        PrimitiveKind::Long => "long",
        PrimitiveKind::ULong => "unsigned long",
        PrimitiveKind::I32 => "int",
        PrimitiveKind::U32 => "unsigned int",
        PrimitiveKind::HRESULT => "HRESULT",
        PrimitiveKind::Quad | PrimitiveKind::I64 => "__int64",
        PrimitiveKind::UQuad | PrimitiveKind::U64 => "unsigned __int64",
        PrimitiveKind::Octa | PrimitiveKind::I128 => "__int128",
        PrimitiveKind::UOcta | PrimitiveKind::U128 => "unsigned __int128",
        PrimitiveKind::F32 | PrimitiveKind::F32PP => "float",
        PrimitiveKind::F64 => "double",
        PrimitiveKind::F80 => "long double",
        PrimitiveKind::Bool8 | PrimitiveKind::Bool16 | PrimitiveKind::Bool32 => "bool",
        _ => "?",
    }
}

fn is_forward(types: &HashMap<u32, Ty>, index: u32) -> bool {
    matches!(
        types.get(&index),
        Some(Ty::Udt { forward: true, .. }) | Some(Ty::Enum { forward: true, .. })
    )
}

/// `size` bytes at `addr` as a little-endian integer (sign-extended when `signed`); `None`
/// when any byte is missing.
fn read_int(read: ReadMemory<'_>, addr: u64, size: usize, signed: bool) -> Option<i128> {
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

fn pointer_text(v: u64, size: u8) -> String {
    if size == 8 {
        format!("0x{:08x}`{:08x}", v >> 32, v & 0xffff_ffff)
    } else {
        format!("0x{:08x}", v & 0xffff_ffff)
    }
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
            (None, _) => "??".to_string(),
        };
    }
    let Some(v) = read_int(read, addr, size, p.signed) else {
        return "??".to_string();
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

/// A NUL-terminated string of `unit`-byte characters at `addr`, at most 64 characters.
fn read_string(read: ReadMemory<'_>, addr: u64, unit: usize) -> String {
    let bytes = read(addr, 64 * unit);
    let mut out = String::new();
    for chunk in bytes.chunks(unit) {
        let Some(v) = chunk
            .iter()
            .enumerate()
            .try_fold(0u32, |acc, (i, b)| b.map(|b| acc | u32::from(b) << (8 * i)))
        else {
            out.push_str("??");
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
