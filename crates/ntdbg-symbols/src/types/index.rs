//! Types by TPI index, for the typed evaluator (`??`, `dx`, `dt VAR`) and value rendering
//! (`dv`): what an index denotes once modifiers and forward references are resolved, its size,
//! its members and enumerators, and its name in WinDbg's C++ spelling (`int *`,
//! `struct Node *`, `char [16]`, `unsigned int64`).

use std::collections::HashMap;

use super::{Field, Primitive, Target, Ty, TypeDb, MAX_DEPTH};

/// A base type: an integer, character, boolean, floating-point type or `void`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BaseType {
    /// Its name as WinDbg's C++ evaluator spells it (`int`, `unsigned int64`, `wchar_t`).
    pub name: &'static str,
    /// Its size in bytes (0 for `void`).
    pub size: u8,
    /// Whether it is signed.
    pub signed: bool,
    /// Whether it is a floating-point type.
    pub float: bool,
    /// Whether it is a character type (`char`, `unsigned char`, `wchar_t`).
    pub character: bool,
    /// Whether it is `bool`.
    pub boolean: bool,
}

/// What a type index denotes, `const`/`volatile` and forward references resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TypeKind {
    /// A base type.
    Base(BaseType),
    /// A pointer (or reference) to `pointee`.
    Pointer {
        /// The type pointed to.
        pointee: u32,
        /// The pointer's size in bytes.
        size: u8,
    },
    /// An array of `count` elements.
    Array {
        /// The element type.
        element: u32,
        /// Number of elements.
        count: u64,
        /// Size of the whole array in bytes.
        size: u64,
    },
    /// A structure, class or union.
    Record {
        /// `struct`, `class` or `union`.
        kind: &'static str,
        /// Its name.
        name: String,
        /// Its size in bytes (0 for a forward reference without definition).
        size: u64,
    },
    /// An enumeration.
    Enum {
        /// Its name.
        name: String,
        /// The integer type underneath.
        underlying: u32,
        /// Its size in bytes.
        size: u64,
    },
    /// A bit field of `length` bits at bit `position` of an `underlying` integer.
    Bitfield {
        /// The integer type holding the bits.
        underlying: u32,
        /// First bit.
        position: u8,
        /// Number of bits.
        length: u8,
    },
    /// A function type.
    Function {
        /// Its return type (`None`: `void`).
        returns: Option<u32>,
    },
    /// A record this reader does not model, or an index the PDB does not have.
    Unknown,
}

/// A data member of a structure, class or union.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Member {
    /// The member's name (`__BaseClass` for a base class, `__VFN_table` for a vtable pointer).
    pub name: String,
    /// Its offset from the start of the record.
    pub offset: u64,
    /// Its type index.
    pub type_index: u32,
}

/// The primitive type index for a C spelling (`int`, `unsigned long`, `__int64`, `wchar_t`),
/// whitespace-insensitive; `None` for anything else.
pub fn primitive_named(name: &str) -> Option<u32> {
    let words: Vec<&str> = name.split_whitespace().collect();
    let index = match words.join(" ").as_str() {
        "void" => 0x03,
        "char" => 0x70,
        "signed char" => 0x10,
        "unsigned char" => 0x20,
        "wchar_t" => 0x71,
        "char16_t" => 0x7a,
        "char32_t" => 0x7b,
        "short" | "short int" | "signed short" | "__int16" => 0x11,
        "unsigned short" | "unsigned short int" | "unsigned __int16" => 0x21,
        "int" | "signed" | "signed int" | "__int32" => 0x74,
        "unsigned" | "unsigned int" | "unsigned __int32" => 0x75,
        "long" | "long int" | "signed long" => 0x12,
        "unsigned long" | "unsigned long int" => 0x22,
        "__int64" | "int64" | "long long" | "signed long long" | "signed __int64" => 0x13,
        "unsigned __int64" | "unsigned int64" | "unsigned long long" => 0x23,
        "bool" => 0x30,
        "float" => 0x40,
        "double" | "long double" => 0x41,
        _ => return None,
    };
    Some(index)
}

/// A primitive as WinDbg's C++ evaluator names it.
fn base(p: Primitive) -> BaseType {
    let name = match p.c_name {
        "__int64" => "int64",
        "unsigned __int64" => "unsigned int64",
        "__int128" => "int128",
        "unsigned __int128" => "unsigned int128",
        "?" => p.name,
        c => c,
    };
    BaseType {
        name,
        size: p.size,
        signed: p.signed,
        float: p.float,
        character: p.character,
        boolean: p.name == "Bool",
    }
}

/// Pointee (forward references resolved to their definition) → the first pointer record of
/// the machine's size that points to it.
pub(super) fn pointer_records(db: &TypeDb) -> HashMap<u32, u32> {
    let mut out: HashMap<u32, u32> = HashMap::new();
    for (&index, ty) in &db.types {
        if let Ty::Pointer {
            to: Target::Index(to),
            size,
        } = ty
        {
            if *size == db.pointer_size {
                let slot = out.entry(db.resolve(*to)).or_insert(index);
                *slot = (*slot).min(index);
            }
        }
    }
    out
}

impl TypeDb {
    /// What `index` denotes, behind `const`/`volatile` and forward references.
    pub fn kind(&self, index: u32) -> TypeKind {
        let (index, ty) = self.strip_index(index);
        match ty {
            Some(Ty::Primitive(p)) => TypeKind::Base(base(*p)),
            Some(Ty::Pointer { to, size }) => TypeKind::Pointer {
                pointee: match to {
                    Target::Index(i) => *i,
                    // A primitive pointer's index is its pointee's with pointer-mode bits.
                    Target::Primitive(_) => index & 0xff,
                },
                size: *size,
            },
            Some(Ty::Array { element, size }) => {
                let element_size = self.size_of_index(*element, 0).unwrap_or(0);
                TypeKind::Array {
                    element: *element,
                    count: size.checked_div(element_size).unwrap_or(0),
                    size: *size,
                }
            }
            Some(Ty::Udt {
                kind, name, size, ..
            }) => TypeKind::Record {
                kind,
                name: name.clone(),
                size: *size,
            },
            Some(Ty::Enum {
                name, underlying, ..
            }) => TypeKind::Enum {
                name: name.clone(),
                underlying: *underlying,
                size: self.size_of_index(*underlying, 0).unwrap_or(4),
            },
            Some(Ty::Bitfield {
                of,
                length,
                position,
            }) => TypeKind::Bitfield {
                underlying: *of,
                position: *position,
                length: *length,
            },
            Some(Ty::Procedure { ret }) => TypeKind::Function { returns: *ret },
            _ => TypeKind::Unknown,
        }
    }

    /// The size in bytes of the type at `index`, when known.
    pub fn type_size(&self, index: u32) -> Option<u64> {
        self.size_of_index(index, 0)
    }

    /// The type's name in WinDbg's C++ spelling: `int`, `char *`, `struct Node *`,
    /// `char [16]`, `<function> *`, `unsigned int64`.
    pub fn cpp_name(&self, index: u32) -> String {
        self.cpp(index, 0)
    }

    fn cpp(&self, index: u32, depth: usize) -> String {
        if depth > MAX_DEPTH {
            return "<too deep>".to_string();
        }
        let (_, ty) = self.strip_index(index);
        match ty {
            Some(Ty::Primitive(p)) => base(*p).name.to_string(),
            Some(Ty::Pointer { to, .. }) => {
                let inner = match to {
                    Target::Primitive(p) => base(*p).name.to_string(),
                    Target::Index(i) => self.cpp(*i, depth + 1),
                };
                if inner.ends_with('*') {
                    format!("{inner}*")
                } else {
                    format!("{inner} *")
                }
            }
            Some(Ty::Array { element, size }) => {
                let count = size
                    .checked_div(self.size_of_index(*element, depth + 1).unwrap_or(0))
                    .unwrap_or(0);
                format!("{} [{count}]", self.cpp(*element, depth + 1))
            }
            Some(Ty::Udt { kind, name, .. }) => format!("{kind} {name}"),
            Some(Ty::Enum { name, .. }) => name.clone(),
            Some(Ty::Bitfield { of, .. }) => self.cpp(*of, depth + 1),
            Some(Ty::Procedure { .. }) => "<function>".to_string(),
            _ => "<unknown type>".to_string(),
        }
    }

    /// The data members of a structure, class or union, in declaration order (base classes
    /// as `__BaseClass` entries); empty for anything else.
    pub fn record_members(&self, index: u32) -> Vec<Member> {
        self.members(super::TypeId(index))
            .into_iter()
            .map(|f| Member {
                name: f.name,
                offset: f.offset,
                type_index: f.ty.0,
            })
            .collect()
    }

    /// The member `name` (case-sensitive, as C++) of a record, searched in base classes too,
    /// its offset from the start of the outer record.
    pub fn find_member(&self, index: u32, name: &str) -> Option<Member> {
        self.find_member_at(index, name, 0)
    }

    fn find_member_at(&self, index: u32, name: &str, depth: usize) -> Option<Member> {
        if depth > MAX_DEPTH {
            return None;
        }
        let members = self.record_members(index);
        if let Some(m) = members.iter().find(|m| m.name == name) {
            return Some(m.clone());
        }
        members
            .iter()
            .filter(|m| m.name == "__BaseClass")
            .find_map(|base| {
                let found = self.find_member_at(base.type_index, name, depth + 1)?;
                Some(Member {
                    offset: found.offset.wrapping_add(base.offset),
                    ..found
                })
            })
    }

    /// The name of the enumerator of the enum at `index` whose value is `value`.
    pub fn enumerator_name(&self, index: u32, value: i128) -> Option<String> {
        let Some(Ty::Enum { fields, .. }) = self.strip_index(index).1 else {
            return None;
        };
        self.field_list(*fields).into_iter().find_map(|f| match f {
            Field::Enumerate { name, value: v } if v == value => Some(name),
            _ => None,
        })
    }

    /// The index of the structure, class, union, enum or typedef called `name`
    /// (case-insensitive, as `dt`).
    pub fn named_type(&self, name: &str) -> Option<u32> {
        self.lookup(name)
            .or_else(|| self.typedef(name))
            .map(|ty| ty.0)
    }

    /// The index of a pointer of the machine's size to the type at `index`, when the PDB has
    /// one (primitive pointers always exist).
    pub fn pointer_to(&self, index: u32) -> Option<u32> {
        if index < 0x100 {
            let mode = if self.pointer_size == 8 { 0x600 } else { 0x400 };
            return Some(index | mode);
        }
        self.pointers.get(&self.resolve(index)).copied()
    }
}
