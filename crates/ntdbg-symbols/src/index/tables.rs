//! A module's Breakpad tables: parsed in memory, answered from a mapped index, read lazily
//! from a Breakpad text, or converted lazily from a large PDB.

use std::ops::Deref;
use std::sync::Arc;

use breakpad_symbols::SymbolFile;

use super::{IndexedTables, SymbolIndex};
use crate::breakpad_lazy::LazyBreakpad;
use crate::pdb_lazy::LazyPdb;

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

/// A module's symbol tables, from any backend; all answer every lookup identically.
// (One per loaded module: the variants' sizes do not matter.)
#[allow(clippy::large_enum_variant)]
pub(crate) enum Tables {
    /// Parsed from text (this load parsed the symbol file; shared with the thread writing its
    /// index).
    Parsed(Arc<SymbolFile>),
    /// Mapped from the warm index (answered from the symbol file once a block is damaged).
    Indexed(IndexedTables),
    /// A Breakpad text scanned for its records and parsed where asked.
    LazyBreakpad(LazyBreakpad),
    /// A large PDB converted one procedure at a time, as lookups need them.
    LazyPdb(LazyPdb),
}

impl Tables {
    /// The parsed tables, when this load parsed them (a lazy PDB's, once something needed
    /// them whole).
    pub(crate) fn parsed(&self) -> Option<&SymbolFile> {
        match self {
            Tables::Parsed(s) => Some(s),
            Tables::Indexed(i) => i.source_if_read().and_then(Tables::parsed),
            Tables::LazyBreakpad(_) => None,
            Tables::LazyPdb(l) => l.whole_if_done(),
        }
    }

    /// The mapped index, when this load read one.
    pub(crate) fn indexed(&self) -> Option<&SymbolIndex> {
        match self {
            Tables::Indexed(i) => Some(i.index()),
            Tables::Parsed(_) | Tables::LazyBreakpad(_) | Tables::LazyPdb(_) => None,
        }
    }

    /// Approximately how many bytes the lazy readers keep: a lazy Breakpad text's length, a
    /// lazy PDB's file length (an upper bound of what its readers keep); else 0.
    pub(crate) fn lazy_bytes(&self) -> usize {
        match self {
            Tables::LazyBreakpad(l) => l.len(),
            Tables::LazyPdb(l) => l.file_len(),
            Tables::Indexed(i) => i.source_if_read().map_or(0, Tables::lazy_bytes),
            Tables::Parsed(_) => 0,
        }
    }

    /// `Ok` while every file these tables read on demand (a mapped index or Breakpad text)
    /// holds what it held when it was opened. Parsed tables own their records; a lazy PDB's
    /// reader fails its reads instead.
    pub(crate) fn check_sources(&self) -> Result<(), ntdbg_files::FileChanged> {
        match self {
            Tables::Parsed(_) | Tables::LazyPdb(_) => Ok(()),
            Tables::Indexed(i) => {
                i.index().check_source()?;
                i.source_if_read().map_or(Ok(()), Tables::check_sources)
            }
            Tables::LazyBreakpad(l) => l.text().check(),
        }
    }

    /// The `MODULE` line's debug id.
    pub(crate) fn module_id(&self) -> &str {
        match self {
            Tables::Parsed(s) => &s.module_id,
            Tables::Indexed(i) => i.index().module_id(),
            Tables::LazyBreakpad(l) => l.module_id(),
            Tables::LazyPdb(l) => l.module_id(),
        }
    }

    /// A `SymbolFile` that answers Breakpad's `fill_symbol` and `walk_frame` at `rva` as the
    /// whole file does: the whole file, or one built for this address (from the index, the
    /// lazily read text or the lazily converted PDB).
    pub(crate) fn at(&self, rva: u64) -> SymbolsAt<'_> {
        match self {
            Tables::Parsed(s) => SymbolsAt::Borrowed(s.as_ref()),
            Tables::Indexed(i) => i.answer(
                |index| SymbolsAt::Shared(Arc::new(index.symbols_at(rva))),
                |source| source.at(rva),
            ),
            Tables::LazyBreakpad(l) => SymbolsAt::Shared(l.symbols_at(rva)),
            Tables::LazyPdb(l) => l.at(rva),
        }
    }

    /// The function whose range covers `rva`: (address, size).
    pub(crate) fn function_at(&self, rva: u64) -> Option<(u64, u32)> {
        match self {
            Tables::Parsed(s) => s.functions.get(rva).map(|f| (f.address, f.size)),
            Tables::Indexed(i) => i.answer(
                |index| index.function_at(rva),
                |source| source.function_at(rva),
            ),
            Tables::LazyBreakpad(l) => l.function_at(rva),
            Tables::LazyPdb(l) => l.at(rva).functions.get(rva).map(|f| (f.address, f.size)),
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
            Whole::LazyBreakpad(l) => Box::new(l.functions()),
        }
    }

    /// Every public symbol: (name, address), sorted. (A lazy PDB converts whole.)
    pub(crate) fn publics(&self) -> Box<dyn Iterator<Item = (&str, u64)> + '_> {
        match self.whole() {
            Whole::Parsed(s) => Box::new(s.publics.iter().map(|p| (p.name.as_str(), p.address))),
            Whole::Indexed(i) => Box::new(i.publics()),
            Whole::LazyBreakpad(l) => Box::new(l.publics()),
        }
    }

    /// How many functions and public symbols there are. (A lazy PDB converts whole; an index
    /// answers from its directory, checked on open, without reading its records.)
    pub(crate) fn counts(&self) -> (usize, usize) {
        if let Tables::Indexed(i) = self {
            return i.index().counts();
        }
        match self.whole() {
            Whole::Parsed(s) => (s.functions.ranges_values().count(), s.publics.len()),
            Whole::Indexed(i) => i.counts(),
            Whole::LazyBreakpad(l) => l.counts(),
        }
    }

    /// The tables with every record at hand (a lazy PDB's whole conversion; a lazy Breakpad
    /// text enumerates its records from the scan; an index once all its blocks are checked).
    fn whole(&self) -> Whole<'_> {
        match self {
            Tables::Parsed(s) => Whole::Parsed(s),
            Tables::Indexed(i) => match i.whole() {
                Ok(index) => Whole::Indexed(index),
                Err(source) => source.whole(),
            },
            Tables::LazyBreakpad(l) => Whole::LazyBreakpad(l),
            Tables::LazyPdb(l) => Whole::Parsed(l.whole()),
        }
    }
}

/// Tables that can list every record.
enum Whole<'a> {
    Parsed(&'a SymbolFile),
    Indexed(&'a SymbolIndex),
    LazyBreakpad(&'a LazyBreakpad),
}
