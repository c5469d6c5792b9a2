//! Breakpad symbols parsed only where they are asked for: the text is read once and scanned
//! for record starts ([`scan`]), and each lookup parses, with breakpad-symbols' own parser, a
//! small text made of the records that can affect that address — the `MODULE` line, the
//! function covering it (or the nearest one below it and the publics at the nearest address
//! at or below it), the CFI and `STACK WIN` records covering it — then adds the file and inline-origin names
//! that function refers to. The result answers `fill_symbol` and `walk_frame` at that address
//! exactly as the whole file would; it is cached per set of records.
//!
//! A text outside the plain shape the scan answers for is parsed whole by the caller
//! ([`LazyBreakpad::new`] says why). [`LAZY_ENV`] decides when the lazy path is taken.

mod scan;

#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use breakpad_symbols::SymbolFile;
use range_map::RangeMap;

use scan::{Block, Scan, Unsupported};

use crate::SharedBytes;

/// The environment variable that chooses the lazy path: `off` or `never`, `always` (every
/// Breakpad file, whatever its size; for tests), otherwise files of [`LAZY_MIN_BYTES`] or more.
pub const LAZY_ENV: &str = "NTDBG_BREAKPAD_LAZY";
/// Smallest symbol file read lazily by default: smaller ones parse whole in a few milliseconds.
const LAZY_MIN_BYTES: usize = 256 * 1024;
/// Most per-address symbol files kept; the cache is emptied when it is full.
const MAX_CACHED: usize = 4096;

/// The smallest Breakpad text read lazily, `None` when the lazy path is off (see
/// [`LAZY_ENV`]).
pub(crate) fn min_len() -> Option<usize> {
    let value = std::env::var(LAZY_ENV).unwrap_or_default();
    match value.trim().to_ascii_lowercase().as_str() {
        "off" | "never" | "0" | "no" | "false" => None,
        "always" | "force" => Some(0),
        _ => Some(LAZY_MIN_BYTES),
    }
}

/// The records one lookup needs: indexes of the covering (or nearest lower) function, the
/// covering CFI, frame-data and FPO records, and the last public at or below the address.
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
struct Key {
    function: Option<usize>,
    cfi: Option<usize>,
    framedata: Option<usize>,
    fpo: Option<usize>,
    public: Option<usize>,
}

/// A Breakpad symbol file read lazily.
pub(crate) struct LazyBreakpad {
    text: SharedBytes,
    scan: Scan,
    module_id: String,
    /// The file parsed down to its `MODULE` line (no records), for addresses no record covers.
    empty: Arc<SymbolFile>,
    cache: Mutex<HashMap<Key, Arc<SymbolFile>>>,
}

impl LazyBreakpad {
    /// Scans `text`; when it is not in the plain shape, gives it back with the reason, for the
    /// whole-file parser.
    pub(crate) fn new(text: SharedBytes) -> Result<LazyBreakpad, (SharedBytes, Unsupported)> {
        let scanned = scan::scan(&text).and_then(|scan| {
            let module = SymbolFile::from_bytes(&text[scan.module_line.clone()]).map_err(|_| {
                Unsupported {
                    line: 1,
                    reason: "MODULE line",
                }
            })?;
            Ok((scan, module))
        });
        match scanned {
            Ok((scan, module)) => Ok(LazyBreakpad {
                module_id: module.module_id.clone(),
                empty: Arc::new(module),
                text,
                scan,
                cache: Mutex::new(HashMap::new()),
            }),
            Err(why) => Err((text, why)),
        }
    }

    /// The text's length in bytes (what it holds in memory, besides small caches).
    pub(crate) fn len(&self) -> usize {
        self.text.len()
    }

    /// The whole text (for an index writer that parses it whole).
    pub(crate) fn text(&self) -> SharedBytes {
        self.text.clone()
    }

    /// The `MODULE` line's debug id.
    pub(crate) fn module_id(&self) -> &str {
        &self.module_id
    }

    /// The text of a range the scan found (empty if it were not UTF-8, which the scan rules
    /// out).
    fn str(&self, range: &std::ops::Range<usize>) -> &str {
        std::str::from_utf8(&self.text[range.clone()]).unwrap_or("")
    }

    /// The function whose range covers `rva`: (address, size).
    pub(crate) fn function_at(&self, rva: u64) -> Option<(u64, u32)> {
        let f = &self.scan.functions[covering(&self.scan.functions, rva)?];
        Some((f.start, f.size))
    }

    /// Every function: (name, address, size), by address.
    pub(crate) fn functions(&self) -> impl Iterator<Item = (&str, u64, u32)> + '_ {
        self.scan
            .functions
            .iter()
            .map(|f| (self.str(&f.name), f.start, f.size))
    }

    /// Every public symbol: (name, address), in the parser's order.
    pub(crate) fn publics(&self) -> impl Iterator<Item = (&str, u64)> + '_ {
        self.scan
            .publics
            .iter()
            .map(|p| (self.str(&p.name), p.address))
    }

    /// How many functions and public symbols there are.
    pub(crate) fn counts(&self) -> (usize, usize) {
        (self.scan.functions.len(), self.scan.publics.len())
    }

    /// A `SymbolFile` holding what `fill_symbol` and `walk_frame` consult at `rva` (the same
    /// records the warm index gives, see [`crate::index`]).
    pub(crate) fn symbols_at(&self, rva: u64) -> Arc<SymbolFile> {
        let functions = &self.scan.functions;
        let mut key = Key {
            function: covering(functions, rva),
            cfi: covering(&self.scan.cfi, rva),
            framedata: covering(&self.scan.win_framedata, rva),
            fpo: covering(&self.scan.win_fpo, rva),
            public: None,
        };
        if key.function.is_none() {
            key.function = functions.partition_point(|f| f.start < rva).checked_sub(1);
            key.public = self
                .scan
                .publics
                .partition_point(|p| p.address <= rva)
                .checked_sub(1);
        }
        if key == Key::default() {
            return Arc::clone(&self.empty);
        }
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(hit) = cache.get(&key) {
            return Arc::clone(hit);
        }
        let built = Arc::new(self.build(key));
        if cache.len() >= MAX_CACHED {
            cache.clear();
        }
        cache.insert(key, Arc::clone(&built));
        built
    }

    /// Parses the records of `key`, then adds the names their function refers to.
    fn build(&self, key: Key) -> SymbolFile {
        let scan = &self.scan;
        let mut text = self.text[scan.module_line.clone()].to_vec();
        let blocks = [
            (key.function, &scan.functions),
            (key.cfi, &scan.cfi),
            (key.framedata, &scan.win_framedata),
            (key.fpo, &scan.win_fpo),
        ];
        for (i, list) in blocks {
            if let Some(i) = i {
                text.extend_from_slice(&self.text[list[i].text.clone()]);
            }
        }
        if let Some(last) = key.public {
            // Every public at that address: the parser's order decides which one is found.
            let publics = &self.scan.publics;
            let address = publics[last].address;
            let first = publics[..last].partition_point(|p| p.address < address);
            for p in &publics[first..=last] {
                text.extend_from_slice(&self.text[p.line.clone()]);
            }
        }
        let mut out = match SymbolFile::from_bytes(&text) {
            Ok(s) => s,
            Err(e) => {
                // The scan accepted these records, so the parser does too; should it not, the
                // address is answered as one no record covers.
                tracing::warn!("lazily read Breakpad records did not parse: {e}");
                return (*self.empty).clone();
            }
        };
        // `STACK WIN` sizes as the parser's repairs left them in the whole file.
        if let Some(i) = key.framedata {
            let block = &scan.win_framedata[i];
            repaired(&mut out.win_stack_framedata_info, block, |w| {
                w.size = block.size
            });
        }
        if let Some(i) = key.fpo {
            let block = &scan.win_fpo[i];
            repaired(&mut out.win_stack_fpo_info, block, |w| w.size = block.size);
        }
        let (mut file_ids, mut origin_ids) = (Vec::new(), Vec::new());
        for (_, f) in out.functions.ranges_values() {
            file_ids.extend(f.lines.ranges_values().map(|(_, l)| l.file));
            for x in &f.inlinees {
                file_ids.push(x.call_file);
                origin_ids.push(x.origin_id);
            }
        }
        out.files.clear();
        for id in file_ids {
            if let Some(n) = Scan::named(&self.scan.files, id) {
                out.files.insert(id, self.str(&n.name).to_string());
            }
        }
        // (The function's own INLINE_ORIGIN lines were parsed with it; a later line of the
        // file may have replaced them.)
        out.inline_origins.clear();
        for id in origin_ids {
            if let Some(n) = Scan::named(&self.scan.origins, id) {
                out.inline_origins.insert(id, self.str(&n.name).to_string());
            }
        }
        out
    }
}

/// Gives the one record of `map` the range of `block`, and `resize` sets its size to match.
fn repaired<V: Clone + std::fmt::Debug + Eq>(
    map: &mut RangeMap<u64, V>,
    block: &Block,
    resize: impl Fn(&mut V),
) {
    if let Some((_, value)) = map.ranges_values().next() {
        let mut value = value.clone();
        resize(&mut value);
        *map = crate::index::ranged(block.start, block.end, value);
    }
}

/// The block of `blocks` (sorted, without overlaps) whose range covers `rva`.
fn covering(blocks: &[scan::Block], rva: u64) -> Option<usize> {
    let i = blocks.partition_point(|b| b.start <= rva).checked_sub(1)?;
    (blocks[i].end >= rva).then_some(i)
}
