//! One symbol cache for many stores: the sessions of an MCP server, or the dumps of one
//! `triage` run, share each module's parsed symbols instead of parsing them again.
//!
//! A load's answer is decided by (1) the module's identity in the dump, (2) the store's
//! settings (symbol path with its servers, CodeView paths, offline) and (3) what the dump's
//! memory holds where the loader looked (images missing from the symbol path are read from
//! there). The cache key is (1) and (2); each entry also keeps a digest of every memory read
//! its load made, and serves another dump only when the same reads give the same bytes there.
//! So two sessions with different symbol paths never see each other's symbols, and a dump
//! whose memory differs gets its own load.
//!
//! Entries are evicted least recently used first once their approximate size passes the
//! limit; a session keeps the symbols it holds (`Arc`) after eviction.

use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::Hasher;
use std::mem::size_of;
use std::sync::{Arc, Mutex, MutexGuard};

use breakpad_symbols::SymbolFile;
use minidump::{MinidumpModule, Module};

use crate::module::ModuleSymbols;
use crate::{SharedBytes, SymbolPath};

/// Default limit of [`SharedSymbols`]: 1 GiB of approximate parsed-symbol size.
pub const DEFAULT_SYMBOL_MEMORY: u64 = 1 << 30;

/// What decides a load's answer, besides the dump's memory.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct LoadKey {
    path: SymbolPath,
    codeview_paths: bool,
    offline: bool,
    base: u64,
    size_of_image: u32,
    time_date_stamp: u32,
    code_file: String,
    debug_file: Option<String>,
    debug_id: Option<String>,
}

impl LoadKey {
    /// The key of `module` loaded with these settings.
    pub(crate) fn new(
        path: SymbolPath,
        codeview_paths: bool,
        offline: bool,
        module: &MinidumpModule,
    ) -> LoadKey {
        LoadKey {
            path,
            codeview_paths,
            offline,
            base: module.base_address(),
            size_of_image: module.raw.size_of_image,
            time_date_stamp: module.raw.time_date_stamp,
            code_file: module.code_file().into_owned(),
            debug_file: module.debug_file().map(|f| f.into_owned()),
            debug_id: module
                .debug_identifier()
                .map(|id| id.breakpad().to_string()),
        }
    }
}

/// One memory read a load made, and what it returned (`None`: nothing; else length and
/// digest of the bytes).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Read {
    address: u64,
    len: usize,
    answer: Option<(usize, u64)>,
}

/// Length and digest of what a read returned.
fn answer_of(bytes: Option<&SharedBytes>) -> Option<(usize, u64)> {
    bytes.map(|b| {
        let mut h = std::collections::hash_map::DefaultHasher::new();
        h.write(b);
        (b.len(), h.finish())
    })
}

/// Whether `read` answers every recorded read as it was answered then.
fn same_memory(reads: &[Read], read: &dyn Fn(u64, usize) -> Option<SharedBytes>) -> bool {
    reads
        .iter()
        .all(|r| answer_of(read(r.address, r.len).as_ref()) == r.answer)
}

#[derive(Debug)]
struct Entry {
    symbols: Arc<ModuleSymbols>,
    reads: Arc<[Read]>,
    bytes: u64,
    last_used: u64,
}

/// Counters of a [`SharedSymbols`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SharedSymbolStats {
    /// Loads answered from the cache.
    pub hits: u64,
    /// Loads that parsed (the cache had no matching entry).
    pub loads: u64,
    /// Entries dropped to stay under the limit.
    pub evictions: u64,
    /// Entries held now.
    pub entries: usize,
    /// Their approximate size in bytes.
    pub bytes: u64,
    /// The limit.
    pub limit: u64,
}

#[derive(Debug, Default)]
struct Inner {
    entries: HashMap<LoadKey, Vec<Entry>>,
    clock: u64,
    stats: SharedSymbolStats,
}

/// Parsed module symbols shared by many [`crate::SymbolStore`]s (see
/// [`crate::SymbolStore::share`]), bounded by an LRU over approximate bytes.
#[derive(Debug)]
pub struct SharedSymbols {
    inner: Mutex<Inner>,
    /// One lock per key being loaded, so that stores asking for the same module at once
    /// wait for one load.
    loading: Mutex<HashMap<LoadKey, Arc<Mutex<()>>>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl SharedSymbols {
    /// A cache holding up to about `limit` bytes of parsed symbols (0: keeps nothing).
    pub fn new(limit: u64) -> SharedSymbols {
        SharedSymbols {
            inner: Mutex::new(Inner {
                stats: SharedSymbolStats {
                    limit,
                    ..SharedSymbolStats::default()
                },
                ..Inner::default()
            }),
            loading: Mutex::new(HashMap::new()),
        }
    }

    /// Hits, loads, evictions and size so far.
    pub fn stats(&self) -> SharedSymbolStats {
        lock(&self.inner).stats
    }

    /// The symbols for `key`: a cached load whose memory reads `read` answers alike, else
    /// `load(recording_read)`, kept when `keep` says so. `fresh` skips the lookup (the
    /// store was reloaded) and replaces the entry it would have found.
    pub(crate) fn get_or_load(
        &self,
        key: LoadKey,
        read: &dyn Fn(u64, usize) -> Option<SharedBytes>,
        fresh: bool,
        load: impl FnOnce(&dyn Fn(u64, usize) -> Option<SharedBytes>) -> Arc<ModuleSymbols>,
        keep: impl FnOnce(&ModuleSymbols) -> bool,
    ) -> Arc<ModuleSymbols> {
        let gate = lock(&self.loading).entry(key.clone()).or_default().clone();
        let symbols = {
            let _one_load = lock(&gate);
            match (!fresh).then(|| self.find(&key, read)).flatten() {
                Some(hit) => hit,
                None => {
                    let reads = RefCell::new(Vec::new());
                    let recording = |address: u64, len: usize| {
                        let bytes = read(address, len);
                        reads.borrow_mut().push(Read {
                            address,
                            len,
                            answer: answer_of(bytes.as_ref()),
                        });
                        bytes
                    };
                    let symbols = load(&recording);
                    lock(&self.inner).stats.loads += 1;
                    if keep(&symbols) {
                        self.insert(key.clone(), symbols.clone(), reads.into_inner());
                    }
                    tracing::debug!(
                        module = %key.code_file,
                        stats = ?self.stats(),
                        "shared symbols: loaded"
                    );
                    symbols
                }
            }
        };
        let mut loading = lock(&self.loading);
        // The map's and ours: nobody else waits on this key.
        if Arc::strong_count(&gate) == 2 {
            loading.remove(&key);
        }
        symbols
    }

    /// Drops `symbols` (whose files changed on disk) from the cache.
    pub(crate) fn forget(&self, symbols: &Arc<ModuleSymbols>) {
        let mut inner = lock(&self.inner);
        let mut freed = 0;
        for list in inner.entries.values_mut() {
            list.retain(|e| {
                let gone = Arc::ptr_eq(&e.symbols, symbols);
                if gone {
                    freed += e.bytes;
                }
                !gone
            });
        }
        inner.entries.retain(|_, list| !list.is_empty());
        inner.stats.bytes -= freed;
        inner.stats.entries = inner.entries.values().map(Vec::len).sum();
    }

    /// A cached load of `key` that `read` answers alike, and whose files have not changed
    /// on disk since (one that changed is dropped, and the caller loads again).
    fn find(
        &self,
        key: &LoadKey,
        read: &dyn Fn(u64, usize) -> Option<SharedBytes>,
    ) -> Option<Arc<ModuleSymbols>> {
        let candidates: Vec<(Arc<ModuleSymbols>, Arc<[Read]>)> = lock(&self.inner)
            .entries
            .get(key)?
            .iter()
            .map(|e| (e.symbols.clone(), e.reads.clone()))
            .collect();
        // Memory is read outside the lock: it may be a whole image.
        let hit = candidates
            .into_iter()
            .find(|(_, reads)| same_memory(reads, read))?;
        if hit.0.check_sources().is_err() {
            self.forget(&hit.0);
            return None;
        }
        let mut inner = lock(&self.inner);
        inner.clock += 1;
        let now = inner.clock;
        inner.stats.hits += 1;
        if let Some(e) = inner
            .entries
            .get_mut(key)
            .and_then(|v| v.iter_mut().find(|e| Arc::ptr_eq(&e.symbols, &hit.0)))
        {
            e.last_used = now;
        }
        Some(hit.0)
    }

    /// Keeps a load (replacing one made with the same memory), then evicts the least
    /// recently used entries until the total is under the limit again.
    fn insert(&self, key: LoadKey, symbols: Arc<ModuleSymbols>, reads: Vec<Read>) {
        let bytes = approximate_size(&symbols);
        let mut inner = lock(&self.inner);
        if bytes > inner.stats.limit {
            return;
        }
        inner.clock += 1;
        let now = inner.clock;
        let list = inner.entries.entry(key).or_default();
        let mut freed = 0;
        list.retain(|e| {
            let same = *e.reads == *reads;
            if same {
                freed += e.bytes;
            }
            !same
        });
        list.push(Entry {
            symbols,
            reads: reads.into(),
            bytes,
            last_used: now,
        });
        inner.stats.bytes = inner.stats.bytes - freed + bytes;
        while inner.stats.bytes > inner.stats.limit {
            let Some((k, i)) = inner
                .entries
                .iter()
                .flat_map(|(k, v)| v.iter().enumerate().map(move |(i, e)| (k, i, e)))
                .filter(|(_, _, e)| e.last_used != now)
                .min_by_key(|(_, _, e)| e.last_used)
                .map(|(k, i, _)| (k.clone(), i))
            else {
                break;
            };
            let Some(list) = inner.entries.get_mut(&k) else {
                break;
            };
            let gone = list.remove(i);
            if list.is_empty() {
                inner.entries.remove(&k);
            }
            inner.stats.bytes -= gone.bytes;
            inner.stats.evictions += 1;
        }
        inner.stats.entries = inner.entries.values().map(Vec::len).sum();
    }
}

/// About how many bytes a module's parsed symbols take (tables and strings; a mapped index
/// and the image count by their length, a lazily loaded PDB by its file's: the readers it
/// keeps hold less).
fn approximate_size(symbols: &ModuleSymbols) -> u64 {
    let table = symbols.symbols.as_ref().map_or(0, |t| {
        t.parsed()
            .map_or(0, symbol_file_size)
            .max(t.indexed().map_or(0, |i| i.len()))
            .max(t.lazy_bytes())
    });
    let data: usize = symbols
        .data_symbols
        .iter()
        .map(|(name, _)| size_of::<(String, u64)>() + name.len())
        .sum();
    let image = symbols.image.as_ref().map_or(0, |i| i.resident_bytes());
    let unwind =
        symbols.unwinder.as_ref().map_or(0, |u| u.held_bytes()) + symbols.dwarf_cfi_bytes();
    (table + data + image + unwind + size_of::<ModuleSymbols>()) as u64
}

/// Bytes of the elements behind a slice iterator (the element type need not be nameable).
fn slice_bytes<T>(items: std::slice::Iter<'_, T>) -> usize {
    items.len() * size_of::<T>()
}

fn symbol_file_size(file: &SymbolFile) -> usize {
    let strings = |m: &HashMap<u32, String>| -> usize {
        m.values()
            .map(|s| s.len() + size_of::<(u32, String)>())
            .sum()
    };
    let functions: usize = file
        .functions
        .ranges_values()
        .map(|(_, f)| {
            f.name.len() + slice_bytes(f.lines.ranges_values()) + slice_bytes(f.inlinees.iter())
        })
        .sum();
    let publics: usize = file.publics.iter().map(|p| p.name.len()).sum();
    functions
        + slice_bytes(file.functions.ranges_values())
        + publics
        + slice_bytes(file.publics.iter())
        + slice_bytes(file.win_stack_framedata_info.ranges_values())
        + slice_bytes(file.win_stack_fpo_info.ranges_values())
        + slice_bytes(file.cfi_stack_info.ranges_values())
        + strings(&file.files)
        + strings(&file.inline_origins)
}
