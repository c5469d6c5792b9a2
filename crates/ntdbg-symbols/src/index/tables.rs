//! A module's Breakpad tables: parsed in memory, answered from a mapped index, or read lazily
//! from the text.

use std::ops::Deref;
use std::sync::Arc;

use breakpad_symbols::SymbolFile;

use super::SymbolIndex;
use crate::breakpad_lazy::LazyBreakpad;

/// The symbols [`Tables::at`] gives for one address.
pub(crate) enum SymbolsAt<'a> {
    /// The whole parsed file.
    Borrowed(&'a SymbolFile),
    /// Built for this address (now, or earlier and kept).
    Shared(Arc<SymbolFile>),
}

impl Deref for SymbolsAt<'_> {
    type Target = SymbolFile;
    fn deref(&self) -> &SymbolFile {
        match self {
            SymbolsAt::Borrowed(s) => s,
            SymbolsAt::Shared(s) => s,
        }
    }
}

/// A module's symbol tables, from either backend; both answer every lookup identically.
// (One per loaded module: the variants' sizes do not matter.)
#[allow(clippy::large_enum_variant)]
pub(crate) enum Tables {
    /// Parsed from text (this load parsed the symbol file; shared with the thread writing its
    /// index).
    Parsed(Arc<SymbolFile>),
    /// Mapped from the warm index.
    Indexed(SymbolIndex),
    /// A Breakpad text scanned for its records and parsed where asked.
    Lazy(LazyBreakpad),
}

impl Tables {
    /// The parsed tables, when this load parsed them.
    pub(crate) fn parsed(&self) -> Option<&SymbolFile> {
        match self {
            Tables::Parsed(s) => Some(s),
            Tables::Indexed(_) | Tables::Lazy(_) => None,
        }
    }

    /// The lazily read text, when this load read one.
    pub(crate) fn lazy(&self) -> Option<&LazyBreakpad> {
        match self {
            Tables::Lazy(l) => Some(l),
            _ => None,
        }
    }

    /// The mapped index, when this load read one.
    pub(crate) fn indexed(&self) -> Option<&SymbolIndex> {
        match self {
            Tables::Indexed(i) => Some(i),
            Tables::Parsed(_) | Tables::Lazy(_) => None,
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
    /// whole file does: the whole file, or one built for this address from the index or the lazily read text.
    pub(crate) fn at(&self, rva: u64) -> SymbolsAt<'_> {
        match self {
            Tables::Parsed(s) => SymbolsAt::Borrowed(s.as_ref()),
            Tables::Indexed(i) => SymbolsAt::Shared(Arc::new(i.symbols_at(rva))),
            Tables::Lazy(l) => SymbolsAt::Shared(l.symbols_at(rva)),
        }
    }

    /// The function whose range covers `rva`: (address, size).
    pub(crate) fn function_at(&self, rva: u64) -> Option<(u64, u32)> {
        match self {
            Tables::Parsed(s) => s.functions.get(rva).map(|f| (f.address, f.size)),
            Tables::Indexed(i) => i.function_at(rva),
            Tables::Lazy(l) => l.function_at(rva),
        }
    }

    /// Every function: (name, address, size), by address.
    pub(crate) fn functions(&self) -> Box<dyn Iterator<Item = (&str, u64, u32)> + '_> {
        match self {
            Tables::Parsed(s) => Box::new(
                s.functions
                    .ranges_values()
                    .map(|(_, f)| (f.name.as_str(), f.address, f.size)),
            ),
            Tables::Indexed(i) => Box::new(i.functions()),
            Tables::Lazy(l) => Box::new(l.functions()),
        }
    }

    /// Every public symbol: (name, address), sorted.
    pub(crate) fn publics(&self) -> Box<dyn Iterator<Item = (&str, u64)> + '_> {
        match self {
            Tables::Parsed(s) => Box::new(s.publics.iter().map(|p| (p.name.as_str(), p.address))),
            Tables::Indexed(i) => Box::new(i.publics()),
            Tables::Lazy(l) => Box::new(l.publics()),
        }
    }

    /// How many functions and public symbols there are.
    pub(crate) fn counts(&self) -> (usize, usize) {
        match self {
            Tables::Parsed(s) => (s.functions.ranges_values().count(), s.publics.len()),
            Tables::Indexed(i) => (
                i.count(super::format::Section::Functions),
                i.count(super::format::Section::Publics),
            ),
            Tables::Lazy(l) => l.counts(),
        }
    }
}
