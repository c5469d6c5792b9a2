//! What the PDB's symbol records say about types: typedef names (`S_UDT`) and the type of
//! each function (`S_GPROC32`/`S_LPROC32`) and global or static variable
//! (`S_GDATA32`/`S_LDATA32`), for `dt TYPEDEF` and `x /t`.

use std::collections::HashMap;

use pdb_addr2line::pdb::{self, FallibleIterator, SymbolData, PDB};

use super::{Ty, TypeDb, TypeId, MAX_TYPES};

/// Most module streams read for procedure records.
const MAX_MODULES: usize = 100_000;

/// A function's or variable's type index.
#[derive(Clone, Copy, Debug)]
pub(super) struct Typed {
    index: u32,
    function: bool,
}

/// Typedefs and symbol types read from a PDB's symbol streams.
#[derive(Default)]
pub(super) struct Globals {
    pub typedefs: HashMap<String, u32>,
    pub symbols: HashMap<String, Typed>,
}

/// The type of a function or variable, for `x /t` and `x`'s values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SymbolType {
    /// A function.
    Function {
        /// Its return type (`None`: `void`).
        returns: Option<TypeId>,
    },
    /// A variable.
    Data {
        /// Its type.
        ty: TypeId,
    },
}

/// Reads the typedefs and symbol types; what cannot be read is left out (never an error:
/// symbol types only add detail).
pub(super) fn read<'s, S: pdb::Source<'s> + 's>(pdb: &mut PDB<'s, S>) -> Globals {
    let mut out = Globals::default();
    if let Ok(symbols) = pdb.global_symbols() {
        let mut iter = symbols.iter();
        while let Ok(Some(symbol)) = iter.next() {
            if out.typedefs.len() + out.symbols.len() >= MAX_TYPES {
                break;
            }
            note(&mut out, symbol.parse());
        }
    }
    let Ok(dbi) = pdb.debug_information() else {
        return out;
    };
    let Ok(mut list) = dbi.modules() else {
        return out;
    };
    let mut modules = Vec::new();
    while let Ok(Some(module)) = list.next() {
        if modules.len() >= MAX_MODULES {
            break;
        }
        modules.push(module);
    }
    for module in &modules {
        let Ok(Some(info)) = pdb.module_info(module) else {
            continue;
        };
        let Ok(mut iter) = info.symbols() else {
            continue;
        };
        while let Ok(Some(symbol)) = iter.next() {
            if out.typedefs.len() + out.symbols.len() >= MAX_TYPES {
                return out;
            }
            note(&mut out, symbol.parse());
        }
    }
    out
}

/// Records one symbol, keeping the first definition of a name.
fn note(out: &mut Globals, symbol: pdb::Result<SymbolData<'_>>) {
    let (name, typed) = match symbol {
        Ok(SymbolData::UserDefinedType(udt)) => {
            out.typedefs
                .entry(udt.name.to_string().to_lowercase())
                .or_insert(udt.type_index.0);
            return;
        }
        Ok(SymbolData::Procedure(p)) => (
            p.name,
            Typed {
                index: p.type_index.0,
                function: true,
            },
        ),
        Ok(SymbolData::Data(d)) => (
            d.name,
            Typed {
                index: d.type_index.0,
                function: false,
            },
        ),
        _ => return,
    };
    out.symbols
        .entry(name.to_string().to_lowercase())
        .or_insert(typed);
}

impl TypeDb {
    /// The type of the function or variable `name` (as the PDB spells it, case-insensitive),
    /// when the PDB records one.
    pub fn symbol_type(&self, name: &str) -> Option<SymbolType> {
        let typed = self.symbols.get(&name.to_lowercase())?;
        if typed.function {
            match self.strip_index(typed.index).1 {
                Some(Ty::Procedure { ret }) => Some(SymbolType::Function {
                    returns: ret.map(TypeId),
                }),
                _ => None,
            }
        } else {
            Some(SymbolType::Data {
                ty: TypeId(typed.index),
            })
        }
    }

    /// The type index of the global or static variable `name` (case-insensitive), when the
    /// PDB records one.
    pub fn data_type(&self, name: &str) -> Option<u32> {
        let typed = self.symbols.get(&name.to_lowercase())?;
        (!typed.function).then_some(typed.index)
    }
}
