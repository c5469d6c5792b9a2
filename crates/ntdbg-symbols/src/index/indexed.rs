//! A module's mapped index with its way back to the symbol file it was made from: when a block
//! fails its check mid-session, the index is dropped for that module, its lookups are answered
//! from the symbol file (as when there is no index) and the index is rebuilt.

use std::sync::{Arc, OnceLock};

use super::{IndexSlot, SymbolIndex, Tables};
use crate::SymbolError;

/// Reads a module's symbols from its symbol file, never from an index, and has the index
/// written into the slot it is given (what a load does when the index is absent).
pub(crate) type ReadSource = Box<dyn Fn(IndexSlot) -> Result<Tables, SymbolError> + Send + Sync>;

/// A mapped index, the slot it came from, and the symbol file's tables once the index is
/// found damaged.
pub(crate) struct IndexedTables {
    index: SymbolIndex,
    slot: IndexSlot,
    read_source: ReadSource,
    source: OnceLock<Box<Tables>>,
}

impl IndexedTables {
    /// The index opened from `slot`, falling back to `read_source` if a block fails.
    pub(crate) fn new(index: SymbolIndex, slot: IndexSlot, read_source: ReadSource) -> Self {
        IndexedTables {
            index,
            slot,
            read_source,
            source: OnceLock::new(),
        }
    }

    /// The mapped index (its length, its section counts: what the open-time checks covered).
    pub(crate) fn index(&self) -> &SymbolIndex {
        &self.index
    }

    /// `lookup`'s answer from the index while every block it reads matches its checksum;
    /// else `from_source`'s answer from the symbol file's own tables.
    pub(crate) fn answer<'a, T>(
        &'a self,
        lookup: impl FnOnce(&'a SymbolIndex) -> T,
        from_source: impl FnOnce(&'a Tables) -> T,
    ) -> T {
        match self.index.checked(lookup) {
            Some(answer) => answer,
            None => from_source(self.source()),
        }
    }

    /// The index when every one of its blocks matches its checksum (before a walk over whole
    /// tables), else the symbol file's tables.
    pub(crate) fn whole(&self) -> Result<&SymbolIndex, &Tables> {
        match self.index.checked(SymbolIndex::verify_all) {
            Some(true) => Ok(&self.index),
            _ => Err(self.source()),
        }
    }

    /// The symbol file's tables, when a damaged block made this load read them.
    pub(crate) fn source_if_read(&self) -> Option<&Tables> {
        self.source.get().map(Box::as_ref)
    }

    /// The symbol file's tables, read the first time the index is found damaged: the index
    /// file is deleted and rebuilt from them, as when it is damaged on open. A symbol file that
    /// can no longer be read (deleted or replaced since) leaves tables without records: the
    /// damaged index is never trusted.
    fn source(&self) -> &Tables {
        self.source.get_or_init(|| {
            tracing::warn!(index = %self.slot.path.display(),
                "symbol index block failed its check: answering from the symbol file, rebuilding the index");
            self.slot.discard();
            match (self.read_source)(self.slot.clone()) {
                Ok(tables) => Box::new(tables),
                Err(e) => {
                    tracing::warn!("symbol file not read after a damaged index: {e}");
                    Box::new(Tables::Parsed(Arc::new(self.index.empty().clone())))
                }
            }
        })
    }
}
