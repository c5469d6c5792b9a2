//! The symbols built for a module's most recently looked-up addresses, kept in the module's
//! shared [`ModuleSymbols`](crate::ModuleSymbols): a stack walk through a recursion, and
//! every dump of one build, ask the warm index or the lazy readers about the same few
//! addresses again and again, and each answer is built anew otherwise.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

use breakpad_symbols::SymbolFile;

use crate::index::{SymbolsAt, Tables};

/// Addresses kept per module; when full, the kept answers are dropped and it fills again.
const KEPT: usize = 64;

/// Answers of [`Tables::at`] that were built for their address, by address. Behind a
/// read-write lock: the threads of a triage run look the same addresses up at once, and
/// only the first lookup of an address writes.
#[derive(Default)]
pub(crate) struct RecentAt(RwLock<HashMap<u64, Arc<SymbolFile>>>);

impl RecentAt {
    /// `tables.at(rva)`, built only the first time `rva` is asked while it stays kept (the
    /// same answer: the tables answer an address the same way every time).
    pub(crate) fn at<'a>(&self, tables: &'a Tables, rva: u64) -> SymbolsAt<'a> {
        let known = self
            .0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&rva)
            .cloned();
        if let Some(kept) = known {
            return SymbolsAt::Shared(kept);
        }
        let at = tables.at(rva);
        if let SymbolsAt::Shared(built) = &at {
            let mut kept = self.0.write().unwrap_or_else(PoisonError::into_inner);
            if kept.len() >= KEPT {
                kept.clear();
            }
            kept.insert(rva, Arc::clone(built));
        }
        at
    }
}
