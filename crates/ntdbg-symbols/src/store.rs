//! The symbol store: loads module symbols on first use and keeps them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, OnceLock, RwLock};

use minidump::{MinidumpModule, Module};

use crate::load::load_module;
use crate::{ModuleSymbols, SymbolPath};

/// Cache key: a module is its base, size and name (one dump never reuses a base for a
/// different module; the extra fields guard against mixing dumps).
type Key = (u64, u32, String);

/// Finds and caches symbols for the modules of a target.
///
/// Loading happens on the first [`SymbolStore::module`] call for a module, outside any
/// global lock (two threads asking for the same module wait for one load). Changing the path
/// drops everything loaded.
#[derive(Debug, Default)]
pub struct SymbolStore {
    path: RwLock<SymbolPath>,
    cache: Mutex<HashMap<Key, Arc<OnceLock<Arc<ModuleSymbols>>>>>,
    codeview_paths: AtomicBool,
}

impl SymbolStore {
    /// A store searching `path`.
    pub fn new(path: SymbolPath) -> SymbolStore {
        SymbolStore {
            path: RwLock::new(path),
            cache: Mutex::new(HashMap::new()),
            codeview_paths: AtomicBool::new(false),
        }
    }

    /// Symbols for one module, loaded on first use and then cached. Never fails: a module
    /// without symbols gets [`crate::SymbolStatus::NoSymbols`] and the reasons in
    /// [`ModuleSymbols::tried`].
    ///
    /// `read_image(address, len)` reads the module's memory from the target (all of it or
    /// nothing); it is used when no image file is on the symbol path, for CodeView-less
    /// identification and unwind tables.
    pub fn module(
        &self,
        module: &MinidumpModule,
        read_image: &dyn Fn(u64, usize) -> Option<Vec<u8>>,
    ) -> Arc<ModuleSymbols> {
        let key: Key = (
            module.base_address(),
            module.raw.size_of_image,
            module.code_file().into_owned(),
        );
        let cell = {
            let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            cache.entry(key).or_default().clone()
        };
        cell.get_or_init(|| {
            let path = self.path();
            let codeview_paths = self.codeview_paths.load(Ordering::Relaxed);
            Arc::new(load_module(&path, module, read_image, codeview_paths))
        })
        .clone()
    }

    /// Symbols already loaded for the module at `base`, without loading.
    pub fn loaded(&self, base: u64) -> Option<Arc<ModuleSymbols>> {
        let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        cache
            .iter()
            .find(|((b, _, _), _)| *b == base)
            .and_then(|(_, cell)| cell.get().cloned())
    }

    /// The current symbol path (a copy: the path can change concurrently).
    pub fn path(&self) -> SymbolPath {
        self.path.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Replaces the symbol path and forgets everything loaded.
    pub fn set_path(&self, path: SymbolPath) {
        *self.path.write().unwrap_or_else(|e| e.into_inner()) = path;
        self.clear();
    }

    /// Whether the PDB path inside a module's CodeView record (the build machine's path, e.g.
    /// `/build/app.pdb`, or Wine's `Z:\tmp\app.pdb` as `/tmp/app.pdb`) is also tried, after
    /// the symbol path. Off by default: the path comes from the dump, and files are only
    /// opened where the user pointed (design: security defaults). Changing it forgets
    /// everything loaded.
    pub fn set_codeview_paths(&self, allow: bool) {
        self.codeview_paths.store(allow, Ordering::Relaxed);
        self.clear();
    }

    /// Forgets everything loaded (`.reload`).
    pub fn clear(&self) {
        self.cache.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}
