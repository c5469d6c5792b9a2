//! The symbol store: loads module symbols on first use and keeps them.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock};
use std::time::Duration;

use minidump::{MinidumpModule, Module};

use crate::download::{DownloadState, Downloads, DEFAULT_TIMEOUT};
use crate::load::load_module;
use crate::shared::{LoadKey, SharedSymbols};
use crate::SharedBytes;
use crate::{DownloadObserver, JitNames, ModuleSymbols, SymbolPath};

/// Most modules [`SymbolStore::preload`] loads at once (each may wait on a symbol server).
pub const PARALLEL_LOADS: usize = 8;

/// Reads `len` bytes of target memory at an address, all or nothing; callable from several
/// threads.
pub type ReadImage<'a> = &'a (dyn Fn(u64, usize) -> Option<SharedBytes> + Sync);

/// Whether the work the store does now was cancelled (the engine's interrupt): downloads
/// then stop between files and between chunks, leaving no partial file in the cache.
pub type CancelCheck = Arc<dyn Fn() -> bool + Send + Sync>;

/// A module's cache cell.
type Cell = Arc<OnceLock<Arc<ModuleSymbols>>>;

/// The cache: a module is its base, size and name (one dump never reuses a base for a
/// different module; the extra fields guard against mixing dumps). Looked up by (base, size)
/// then name, so that the lookup on every stack-walk step allocates nothing; ordered rather
/// than hashed, since a walk looks a module up several times per frame and a few comparisons
/// of integers cost less than hashing the key.
type Cache = BTreeMap<(u64, u32), Vec<(String, Cell)>>;

/// Finds and caches symbols for the modules of a target.
///
/// Loading happens on the first [`SymbolStore::module`] call for a module, outside any
/// global lock (two threads asking for the same module wait for one load). Changing the path
/// drops everything loaded.
///
/// HTTP symbol servers in the path (`srv*CACHE*URL`) are asked for what the local folders lack;
/// downloads go to the cache. Within one store, a URL that answered "not found" is not asked
/// again and an unreachable server is not contacted again. [`SymbolStore::set_offline`] (or
/// `NTDBG_OFFLINE=1` in the environment) turns the network off; each module's downloads
/// share a time budget ([`SymbolStore::set_download_timeout`], 10 s by default).
/// [`SymbolStore::preload`] loads many modules at once, [`PARALLEL_LOADS`] at a time, and a
/// [`DownloadObserver`] can follow the work.
///
/// Stores that [`SymbolStore::share`] one [`SharedSymbols`] (an MCP server's sessions, a
/// `triage` run's dumps) parse each module once between them.
#[derive(Debug)]
pub struct SymbolStore {
    path: RwLock<SymbolPath>,
    cache: Mutex<Cache>,
    codeview_paths: AtomicBool,
    offline: AtomicBool,
    timeout_ms: AtomicU64,
    downloads: DownloadState,
    shared: RwLock<Option<Arc<SharedSymbols>>>,
    /// Set by [`SymbolStore::clear`]: loads from now on parse again instead of taking the
    /// shared cache's entry (and replace it).
    reloaded: AtomicBool,
    /// Names for code outside every module, from a file beside the dump.
    jit_names: RwLock<Option<Arc<JitNames>>>,
}

impl Default for SymbolStore {
    fn default() -> SymbolStore {
        SymbolStore::new(SymbolPath::default())
    }
}

/// Whether `NTDBG_OFFLINE` asks for offline mode (`1`, `true`, `yes`, `on`).
fn offline_from_env() -> bool {
    std::env::var("NTDBG_OFFLINE").is_ok_and(|v| {
        matches!(
            v.trim().to_ascii_lowercase().as_str(),
            "1" | "true" | "yes" | "on"
        )
    })
}

/// `NTDBG_SYMBOL_TIMEOUT_MS`, if set to a positive number of milliseconds.
fn timeout_from_env() -> Option<Duration> {
    std::env::var("NTDBG_SYMBOL_TIMEOUT_MS")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .filter(|&ms| ms > 0)
        .map(Duration::from_millis)
}

impl SymbolStore {
    /// A store searching `path`; offline when `NTDBG_OFFLINE=1` is set, with the per-module
    /// download budget from `NTDBG_SYMBOL_TIMEOUT_MS` (default 10 s).
    pub fn new(path: SymbolPath) -> SymbolStore {
        SymbolStore {
            path: RwLock::new(path),
            cache: Mutex::new(BTreeMap::new()),
            codeview_paths: AtomicBool::new(false),
            offline: AtomicBool::new(offline_from_env()),
            timeout_ms: AtomicU64::new(
                u64::try_from(timeout_from_env().unwrap_or(DEFAULT_TIMEOUT).as_millis())
                    .unwrap_or(u64::MAX),
            ),
            downloads: DownloadState::default(),
            shared: RwLock::new(None),
            reloaded: AtomicBool::new(false),
            jit_names: RwLock::new(None),
        }
    }

    /// Gives the names of code outside every module that a file beside the dump holds (see
    /// [`JitNames`]), or none.
    pub fn set_jit_names(&self, names: Option<Arc<JitNames>>) {
        *self
            .jit_names
            .write()
            .unwrap_or_else(PoisonError::into_inner) = names;
    }

    /// The names of code outside every module, if a file gave some.
    pub fn jit_names(&self) -> Option<Arc<JitNames>> {
        self.jit_names
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Turns symbol-server downloads off (`true`) or on. Files already in the caches are
    /// still used. Takes effect for modules loaded from now on.
    pub fn set_offline(&self, offline: bool) {
        self.offline.store(offline, Ordering::Relaxed);
    }

    /// Whether symbol-server downloads are off.
    pub fn offline(&self) -> bool {
        self.offline.load(Ordering::Relaxed)
    }

    /// Whether loading may download: the path names an HTTP symbol server and the store is
    /// not offline, or it names an object store (read even offline).
    pub fn may_download(&self) -> bool {
        let offline = self.offline();
        self.path()
            .http_servers()
            .iter()
            .any(|url| !offline || crate::remote::is_object_store(url))
    }

    /// The time budget for one module's downloads (all its requests together).
    pub fn set_download_timeout(&self, timeout: Duration) {
        let ms = u64::try_from(timeout.as_millis())
            .unwrap_or(u64::MAX)
            .max(1);
        self.timeout_ms.store(ms, Ordering::Relaxed);
    }

    /// The time budget for one module's downloads.
    pub fn download_timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms.load(Ordering::Relaxed))
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
        read_image: &dyn Fn(u64, usize) -> Option<SharedBytes>,
    ) -> Arc<ModuleSymbols> {
        let mut loaded_here = false;
        let symbols = self
            .cell(module)
            .get_or_init(|| {
                loaded_here = true;
                self.downloads.progress.modules_queued(1);
                let symbols = self.load(module, read_image);
                self.downloads.progress.module_done();
                symbols
            })
            .clone();
        if loaded_here {
            self.forget_if_cancelled(module);
        }
        symbols
    }

    /// Says how to tell that the current work was cancelled (`None`: it never is).
    pub fn set_cancel_check(&self, check: Option<CancelCheck>) {
        self.downloads.set_cancel_check(check);
    }

    /// Drops a module loaded while its work was cancelled (its downloads may have been cut
    /// short), so that the next use loads it again.
    fn forget_if_cancelled(&self, module: &MinidumpModule) {
        if self.downloads.cancelled() {
            let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            let place = (module.base_address(), module.raw.size_of_image);
            if let Some(named) = cache.get_mut(&place) {
                named.retain(|(name, _)| *name != *module.code_file());
            }
        }
    }

    /// Loads the symbols of all `modules` now, up to [`PARALLEL_LOADS`] at a time, so that
    /// their symbol-server downloads overlap; [`SymbolStore::module`] then answers from the
    /// cache. Each module keeps its own download budget; the cache, the negative cache and
    /// offline mode apply as for [`SymbolStore::module`]. Modules already loaded are skipped.
    pub fn preload(&self, modules: &[&MinidumpModule], read_image: ReadImage<'_>) {
        let pending: Vec<_> = modules
            .iter()
            .map(|m| (*m, self.cell(m)))
            .filter(|(_, cell)| cell.get().is_none())
            .collect();
        self.downloads.progress.modules_queued(pending.len());
        let next = AtomicUsize::new(0);
        let worker = || {
            while let Some((module, cell)) = pending.get(next.fetch_add(1, Ordering::Relaxed)) {
                cell.get_or_init(|| self.load(module, read_image));
                self.forget_if_cancelled(module);
                // Counted as queued above, whoever ended up loading it.
                self.downloads.progress.module_done();
            }
        };
        std::thread::scope(|scope| {
            for _ in 0..PARALLEL_LOADS.min(pending.len()) {
                scope.spawn(worker);
            }
        });
    }

    /// Tells `observer` (or, with `None`, nobody) how loading and downloading advance.
    pub fn set_download_observer(&self, observer: Option<Arc<dyn DownloadObserver>>) {
        self.downloads.progress.set_observer(observer);
    }

    /// The cache cell of a module (created empty on first sight).
    fn cell(&self, module: &MinidumpModule) -> Cell {
        let name = module.code_file();
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        let named = cache
            .entry((module.base_address(), module.raw.size_of_image))
            .or_default();
        if let Some((_, cell)) = named.iter().find(|(n, _)| *n == *name) {
            return Arc::clone(cell);
        }
        let cell = Cell::default();
        named.push((name.into_owned(), Arc::clone(&cell)));
        cell
    }

    /// Takes module symbols from `shared` (or, with `None`, only from this store) from now on,
    /// and puts the ones it loads there. Settings stay per store: the cache keys each load by
    /// the symbol path, offline mode and CodeView-path setting it was made with.
    pub fn share(&self, shared: Option<Arc<SharedSymbols>>) {
        *self.shared.write().unwrap_or_else(|e| e.into_inner()) = shared;
    }

    /// The shared cache this store uses, if any.
    pub fn shared(&self) -> Option<Arc<SharedSymbols>> {
        self.shared
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .clone()
    }

    /// Loads one module's symbols with the current settings, through the shared cache when
    /// there is one. A load is shared only when it is final: not cancelled, and when
    /// downloads were possible, one that found a symbol file (a miss may be a server's
    /// passing failure).
    fn load(
        &self,
        module: &MinidumpModule,
        read_image: &dyn Fn(u64, usize) -> Option<SharedBytes>,
    ) -> Arc<ModuleSymbols> {
        let Some(shared) = self.shared() else {
            return self.load_here(module, read_image);
        };
        let key = LoadKey::new(
            self.path(),
            self.codeview_paths.load(Ordering::Relaxed),
            self.offline(),
            module,
        );
        let may_download = self.may_download();
        shared.get_or_load(
            key,
            read_image,
            self.reloaded.load(Ordering::Relaxed),
            |recording| self.load_here(module, recording),
            |symbols| {
                !self.downloads.cancelled()
                    && (!may_download
                        || matches!(
                            symbols.status(),
                            crate::SymbolStatus::Pdb | crate::SymbolStatus::Breakpad
                        ))
            },
        )
    }

    /// Loads one module's symbols with the current settings, parsing them here.
    fn load_here(
        &self,
        module: &MinidumpModule,
        read_image: &dyn Fn(u64, usize) -> Option<SharedBytes>,
    ) -> Arc<ModuleSymbols> {
        let path = self.path();
        let codeview_paths = self.codeview_paths.load(Ordering::Relaxed);
        let mut downloads = Downloads::new(
            &path,
            &self.downloads,
            self.offline(),
            self.download_timeout(),
        );
        Arc::new(load_module(
            &path,
            module,
            read_image,
            codeview_paths,
            &mut downloads,
        ))
    }

    /// Checks the files behind every module loaded so far ([`ModuleSymbols::check_sources`]):
    /// a module whose symbol file, index or image changed on disk is forgotten, here and in
    /// the shared cache, so that its next use loads it again from what the files hold now.
    /// Returns the first change found: answers given since it happened may be wrong.
    pub fn check_loaded(&self) -> Result<(), ntdbg_files::FileChanged> {
        let loaded: Vec<Arc<ModuleSymbols>> = {
            let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            cache
                .values()
                .flatten()
                .filter_map(|(_, cell)| cell.get().cloned())
                .collect()
        };
        let (mut first, mut checked) = (None, Vec::new());
        for symbols in loaded {
            if let Err(changed) = symbols.check_sources_once(&mut checked) {
                tracing::warn!("{changed}: the module's symbols are dropped and read again");
                self.forget(&symbols);
                first.get_or_insert(changed);
            }
        }
        first.map_or(Ok(()), Err)
    }

    /// Drops `symbols` from this store and the shared cache.
    fn forget(&self, symbols: &Arc<ModuleSymbols>) {
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        for named in cache.values_mut() {
            named.retain(|(_, cell)| !cell.get().is_some_and(|s| Arc::ptr_eq(s, symbols)));
        }
        cache.retain(|_, named| !named.is_empty());
        drop(cache);
        if let Some(shared) = self.shared() {
            shared.forget(symbols);
        }
    }

    /// Symbols already loaded for the module at `base`, without loading.
    pub fn loaded(&self, base: u64) -> Option<Arc<ModuleSymbols>> {
        let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        cache
            .range((base, 0)..=(base, u32::MAX))
            .flat_map(|(_, named)| named)
            .find_map(|(_, cell)| cell.get().cloned())
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

    /// Forgets everything loaded (`.reload`, `.sympath`). Loads from now on parse again rather
    /// than take the shared cache's entries, and replace them (other stores keep the symbols
    /// they hold).
    pub fn clear(&self) {
        self.reloaded.store(true, Ordering::Relaxed);
        self.cache.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
}
