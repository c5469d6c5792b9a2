//! The symbols built for a module's most recently looked-up addresses, kept in the module's
//! shared [`ModuleSymbols`](crate::ModuleSymbols): a stack walk through a recursion, and
//! every dump of one build, ask the warm index or the lazy readers about the same few
//! addresses again and again, and each answer is built anew otherwise.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use breakpad_symbols::SymbolFile;

use crate::index::{SymbolsAt, Tables};

/// Addresses kept per module; when full, the kept answers are dropped and it fills again.
const KEPT: usize = 64;

/// Answers of [`Tables::at`] that were built for their address, by address.
#[derive(Default)]
pub(crate) struct RecentAt(Mutex<HashMap<u64, Arc<SymbolFile>>>);

impl RecentAt {
    /// `tables.at(rva)`, built only the first time `rva` is asked while it stays kept (the
    /// same answer: the tables answer an address the same way every time).
    pub(crate) fn at<'a>(&self, tables: &'a Tables, rva: u64) -> SymbolsAt<'a> {
        if let Some(kept) = self.lock().get(&rva) {
            return SymbolsAt::Shared(Arc::clone(kept));
        }
        let at = tables.at(rva);
        if let SymbolsAt::Shared(built) = &at {
            let mut kept = self.lock();
            if kept.len() >= KEPT {
                kept.clear();
            }
            kept.insert(rva, Arc::clone(built));
        }
        at
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u64, Arc<SymbolFile>>> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
