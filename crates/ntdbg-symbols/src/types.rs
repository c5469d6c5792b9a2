//! Types from a PDB's type stream (TPI), as data for WinDbg's `dt` and `x /t`.
//!
//! [`TypeDb::open`] reads every type record once into an owned table. It answers what a type
//! is ([`TypeDb::record`], [`TypeDb::strip`]), its size, a structure's members with their
//! offsets ([`TypeDb::members`]), an enum's enumerators, and the type of a global symbol; the
//! command layer renders them in WinDbg's shapes. Counts and recursion are bounded: a damaged
//! type stream gives fewer fields, never a panic or a loop.

use std::collections::HashMap;
use std::path::Path;

use pdb_addr2line::pdb::{
    self, FallibleIterator, PrimitiveKind, TypeData, TypeIndex, Variant, PDB,
};

use crate::wildcard::wildcard_match;
use crate::SymbolError;

mod globals;
mod index;

pub use globals::SymbolType;
pub use index::{primitive_named, BaseType, Member, TypeKind};

/// The PDB's primitive index of a 64-bit pointer to `void` (a vtable pointer's type).
const VOID_POINTER_64: u32 = 0x0603;
/// Most type records read from one PDB.
const MAX_TYPES: usize = 4_000_000;
/// Most fields shown for one type (field lists chain through continuations).
const MAX_FIELDS: usize = 10_000;
/// Deepest chain of pointers, modifiers and arrays followed when naming a type.
const MAX_DEPTH: usize = 32;
/// The index of a type record in a [`TypeDb`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TypeId(u32);

/// A primitive type, as WinDbg names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Primitive {
    /// WinDbg's name (`Uint4B`, `Ptr64`'s target `Void`, `Wchar`).
    pub name: &'static str,
    /// The C name (`int`, `unsigned long`), for prototypes and `x /t`.
    pub c_name: &'static str,
    /// Its size in bytes (0 for `void`).
    pub size: u8,
    /// Whether it is a signed integer (or a float).
    pub signed: bool,
    /// Whether it is a floating-point type.
    pub float: bool,
    /// Whether it holds a character (`char`, `wchar_t`, `unsigned char`).
    pub character: bool,
}

/// What a pointer points to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PointerTarget {
    /// A type record.
    Type(TypeId),
    /// A primitive type (the PDB's primitive pointer indices).
    Primitive(Primitive),
}

/// One type record, as [`TypeDb::record`] describes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TypeRecord<'a> {
    /// A primitive type.
    Primitive(Primitive),
    /// A pointer of `size` bytes.
    Pointer {
        /// What it points to.
        to: PointerTarget,
        /// The pointer's size in bytes.
        size: u8,
    },
    /// `const`/`volatile` on another type.
    Modifier(TypeId),
    /// An array of `size` bytes.
    Array {
        /// The element type.
        element: TypeId,
        /// The array's size in bytes.
        size: u64,
    },
    /// A bit field.
    Bitfield {
        /// The underlying integer type.
        of: TypeId,
        /// Its width in bits.
        length: u8,
        /// Its first bit.
        position: u8,
    },
    /// A structure, class or union.
    Udt {
        /// `struct`, `class` or `union`.
        kind: &'static str,
        /// Its name.
        name: &'a str,
        /// Its size in bytes.
        size: u64,
    },
    /// An enumeration.
    Enum {
        /// Its name.
        name: &'a str,
        /// The underlying integer type.
        underlying: TypeId,
    },
    /// A function or member function type.
    Procedure {
        /// The return type (`None`: `void`).
        returns: Option<TypeId>,
    },
}

/// One named value of an enumeration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Enumerator {
    /// The name.
    pub name: String,
    /// The value.
    pub value: i128,
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

/// A data member's name, offset and type, as [`TypeDb::members`] lists them (a base class
/// as `__BaseClass`, a vtable pointer as `__VFN_table`, as WinDbg shows them).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldInfo {
    /// The field's name.
    pub name: String,
    /// Its offset in the structure.
    pub offset: u64,
    /// Its type.
    pub ty: TypeId,
}

fn primitive(kind: PrimitiveKind) -> Primitive {
    let c_name = c_primitive(kind);
    let p = |name, size, signed, float, character| Primitive {
        name,
        c_name,
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

/// The type records of `file` (at most [`MAX_TYPES`]), how many of them are records rather than
/// primitives, the pointer size and the global variables.
fn read_types(
    file: std::fs::File,
) -> Result<(HashMap<u32, Ty>, usize, u8, globals::Globals), pdb::Error> {
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
    Ok((types, records, pointer_size, globals))
}

impl TypeDb {
    /// Reads the type stream of the PDB at `path`.
    pub fn open(path: &Path) -> Result<TypeDb, SymbolError> {
        let file = ntdbg_files::open_regular(path).map_err(|source| SymbolError::Io {
            path: path.to_path_buf(),
            source,
        })?;
        let pdb_err = |e: pdb::Error| SymbolError::Pdb {
            path: path.to_path_buf(),
            source: e.into(),
        };
        let read = crate::source::panic_guard::guarded(path, "PDB type reader", || {
            read_types(file).map_err(pdb_err)
        });
        let (types, records, pointer_size, globals) = read?;
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

    /// Whether a structure, class, union, enum or typedef of this name exists
    /// (case-insensitive).
    pub fn contains(&self, name: &str) -> bool {
        let key = name.to_lowercase();
        self.by_name.contains_key(&key) || self.typedefs.contains_key(&key)
    }

    /// The structure, class, union or enum of this name (case-insensitive): its definition,
    /// or a forward reference when the PDB has no definition.
    pub fn lookup(&self, name: &str) -> Option<TypeId> {
        self.by_name
            .get(&name.to_lowercase())
            .map(|&index| TypeId(index))
    }

    /// The type a typedef (the PDB's global `S_UDT` records) names.
    pub fn typedef(&self, name: &str) -> Option<TypeId> {
        self.typedefs
            .get(&name.to_lowercase())
            .map(|&index| TypeId(index))
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

    /// What a type is, a forward reference replaced by its definition; `None` when the PDB
    /// has no such type record.
    pub fn record(&self, ty: TypeId) -> Option<TypeRecord<'_>> {
        self.get(self.resolve(ty.0)).and_then(Ty::record)
    }

    /// The type behind modifiers (`const`, `volatile`) and forward references, with its
    /// record.
    pub fn strip(&self, ty: TypeId) -> (TypeId, Option<TypeRecord<'_>>) {
        let (index, record) = self.strip_index(ty.0);
        (TypeId(index), record.and_then(Ty::record))
    }

    fn strip_index(&self, mut index: u32) -> (u32, Option<&Ty>) {
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

    /// The size in bytes of a type, when known.
    pub fn size_of(&self, ty: TypeId) -> Option<u64> {
        self.size_of_index(ty.0, 0)
    }

    fn size_of_index(&self, index: u32, depth: usize) -> Option<u64> {
        if depth > MAX_DEPTH {
            return None;
        }
        let index = self.resolve(index);
        match self.get(index)? {
            Ty::Primitive(p) => Some(p.size.into()),
            Ty::Pointer { size, .. } => Some(u64::from(*size)),
            Ty::Modifier(to) => self.size_of_index(*to, depth + 1),
            Ty::Array { size, .. } => Some(*size),
            Ty::Bitfield { of, .. } => self.size_of_index(*of, depth + 1),
            Ty::Udt { size, .. } => Some(*size),
            Ty::Enum { underlying, .. } => self.size_of_index(*underlying, depth + 1),
            _ => None,
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

    /// The data members of the structure/union (or typedef of one) of this name, as
    /// [`TypeDb::members`] lists them. `None` when there is no such type.
    pub fn fields(&self, name: &str) -> Option<Vec<FieldInfo>> {
        let ty = self.lookup(name).or_else(|| self.typedef(name))?;
        Some(self.members(ty))
    }

    /// The data members of a structure/union in declaration order: base classes as
    /// `__BaseClass` at their offsets, vtable pointers as `__VFN_table`. Empty for other types.
    pub fn members(&self, ty: TypeId) -> Vec<FieldInfo> {
        let fields = match self.strip_index(ty.0).1 {
            Some(Ty::Udt {
                fields: Some(f), ..
            }) => *f,
            _ => return Vec::new(),
        };
        let field = |name: String, offset: u64, ty: u32| FieldInfo {
            name,
            offset,
            ty: TypeId(ty),
        };
        let mut out = Vec::new();
        for f in self.field_list(fields) {
            match f {
                Field::Member { name, ty, offset } => out.push(field(name, offset, ty)),
                Field::Base { ty, offset } => out.push(field("__BaseClass".into(), offset, ty)),
                Field::VfPtr => out.push(field("__VFN_table".into(), 0, VOID_POINTER_64)),
                Field::Enumerate { .. } => {}
            }
        }
        out
    }

    /// The named values of an enumeration, in declaration order (empty for other types).
    pub fn enumerators(&self, ty: TypeId) -> Vec<Enumerator> {
        let Some(Ty::Enum { fields, .. }) = self.strip_index(ty.0).1 else {
            return Vec::new();
        };
        self.field_list(*fields)
            .into_iter()
            .filter_map(|f| match f {
                Field::Enumerate { name, value } => Some(Enumerator { name, value }),
                _ => None,
            })
            .collect()
    }

    /// The pointer size of the PDB's machine (4 or 8).
    pub fn pointer_size(&self) -> u8 {
        self.pointer_size
    }
}

impl Ty {
    /// The public description of a record; `None` for records that are no type (field lists,
    /// kinds not read).
    fn record(&self) -> Option<TypeRecord<'_>> {
        Some(match self {
            Ty::Primitive(p) => TypeRecord::Primitive(*p),
            Ty::Pointer { to, size } => TypeRecord::Pointer {
                to: match to {
                    Target::Index(i) => PointerTarget::Type(TypeId(*i)),
                    Target::Primitive(p) => PointerTarget::Primitive(*p),
                },
                size: *size,
            },
            Ty::Modifier(to) => TypeRecord::Modifier(TypeId(*to)),
            Ty::Array { element, size } => TypeRecord::Array {
                element: TypeId(*element),
                size: *size,
            },
            Ty::Bitfield {
                of,
                length,
                position,
            } => TypeRecord::Bitfield {
                of: TypeId(*of),
                length: *length,
                position: *position,
            },
            Ty::Udt {
                kind, name, size, ..
            } => TypeRecord::Udt {
                kind,
                name,
                size: *size,
            },
            Ty::Enum {
                name, underlying, ..
            } => TypeRecord::Enum {
                name,
                underlying: TypeId(*underlying),
            },
            Ty::Procedure { ret } => TypeRecord::Procedure {
                returns: ret.map(TypeId),
            },
            Ty::FieldList { .. } | Ty::Other => return None,
        })
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
