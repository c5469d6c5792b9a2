//! A module's Breakpad tables: parsed in memory, or answered from a mapped index.

use std::borrow::Cow;
use std::sync::Arc;

use breakpad_symbols::SymbolFile;

use super::SymbolIndex;
use crate::pdb_lazy::LazyPdb;

/// A module's symbol tables, from either backend; both answer every lookup identically.
// (One per loaded module: the variants' sizes do not matter.)
#[allow(clippy::large_enum_variant)]
pub(crate) enum Tables {
    /// Parsed from text (this load parsed the symbol file; shared with the thread writing its
    /// index).
    Parsed(Arc<SymbolFile>),
    /// Mapped from the warm index.
    Indexed(SymbolIndex),
    /// A large PDB converted one procedure at a time, as lookups need them.
    Lazy(LazyPdb),
}

impl Tables {
    /// The parsed tables, when this load parsed them.
    /// (A lazy PDB's, once something needed them whole.)
    pub(crate) fn parsed(&self) -> Option<&SymbolFile> {
        match self {
            Tables::Parsed(s) => Some(s),
            Tables::Indexed(_) => None,
            Tables::Lazy(l) => l.whole_if_done(),
        }
    }

    /// The mapped index, when this load read one.
    pub(crate) fn indexed(&self) -> Option<&SymbolIndex> {
        match self {
            Tables::Parsed(_) | Tables::Lazy(_) => None,
            Tables::Indexed(i) => Some(i),
        }
    }

    /// A lazily loaded PDB's file length (an upper bound of what its readers keep), else 0.
    pub(crate) fn lazy_bytes(&self) -> usize {
        match self {
            Tables::Lazy(l) => l.file_len(),
            Tables::Parsed(_) | Tables::Indexed(_) => 0,
        }
    }

    /// The `MODULE` line's debug id.
    pub(crate) fn module_id(&self) -> &str {
        match self {
            Tables::Parsed(s) => &s.module_id,
            Tables::Indexed(i) => i.module_id(),
            Tables::Lazy(l) => l.module_id(),
        }
    }

    /// A `SymbolFile` that answers Breakpad's `fill_symbol` and `walk_frame` at `rva` as the
    /// whole file does: the whole file, or one built from the index for this address.
    pub(crate) fn at(&self, rva: u64) -> Cow<'_, SymbolFile> {
        match self {
            Tables::Parsed(s) => Cow::Borrowed(s.as_ref()),
            Tables::Indexed(i) => Cow::Owned(i.symbols_at(rva)),
            Tables::Lazy(l) => l.at(rva),
        }
    }

    /// The function whose range covers `rva`: (address, size).
    pub(crate) fn function_at(&self, rva: u64) -> Option<(u64, u32)> {
        match self {
            Tables::Parsed(s) => s.functions.get(rva).map(|f| (f.address, f.size)),
            Tables::Indexed(i) => i.function_at(rva),
            Tables::Lazy(l) => l.at(rva).functions.get(rva).map(|f| (f.address, f.size)),
        }
    }

    /// Every function: (name, address, size), by address. (A lazy PDB converts whole.)
    pub(crate) fn functions(&self) -> Box<dyn Iterator<Item = (&str, u64, u32)> + '_> {
        match self.whole() {
            Whole::Parsed(s) => Box::new(
                s.functions
                    .ranges_values()
                    .map(|(_, f)| (f.name.as_str(), f.address, f.size)),
            ),
            Whole::Indexed(i) => Box::new(i.functions()),
        }
    }

    /// Every public symbol: (name, address), sorted. (A lazy PDB converts whole.)
    pub(crate) fn publics(&self) -> Box<dyn Iterator<Item = (&str, u64)> + '_> {
        match self.whole() {
            Whole::Parsed(s) => Box::new(s.publics.iter().map(|p| (p.name.as_str(), p.address))),
            Whole::Indexed(i) => Box::new(i.publics()),
        }
    }

    /// How many functions and public symbols there are. (A lazy PDB converts whole.)
    pub(crate) fn counts(&self) -> (usize, usize) {
        match self.whole() {
            Whole::Parsed(s) => (s.functions.ranges_values().count(), s.publics.len()),
            Whole::Indexed(i) => (
                i.count(super::format::Section::Functions),
                i.count(super::format::Section::Publics),
            ),
        }
    }

    /// The tables with every record at hand: a lazy PDB's whole conversion.
    fn whole(&self) -> Whole<'_> {
        match self {
            Tables::Parsed(s) => Whole::Parsed(s),
            Tables::Indexed(i) => Whole::Indexed(i),
            Tables::Lazy(l) => Whole::Parsed(l.whole()),
        }
    }
}

/// Tables that hold every record.
enum Whole<'a> {
    Parsed(&'a SymbolFile),
    Indexed(&'a SymbolIndex),
}
