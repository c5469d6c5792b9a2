//! The warm symbol index: the first load of a module's Breakpad or PDB symbols writes the
//! parsed tables, as sorted fixed-size records and one string blob, into the symbol cache
//! (`index/` under [`crate::default_cache_dir`]); later loads, in this process or the next,
//! map that file and answer lookups by binary search instead of parsing text again.
//!
//! An index is named after the module (debug file, debug id) and the symbol file it was made
//! from (path, length, modification time), and holds that whole identity in its strings: a
//! replaced symbol file gets a new index, never a stale one. It starts with a header holding a
//! magic, the format version and the CRC-32 of a table of per-block CRC-32s; each block is
//! checked the first time a read touches it ([`blocks`]). Any mismatch or truncation found on
//! open means the index is dropped and rebuilt; a block found damaged later drops it for that
//! module, which is answered from its symbol file from then on, and rebuilds it
//! ([`indexed`]). Every read inside an index is bounds-checked. It
//! is written to a temporary file and renamed into place; the folder is kept under
//! [`MAX_INDEX_BYTES`] by deleting the least recently used. `NTDBG_SYMBOL_INDEX=off` turns
//! the index off (neither read nor written); a cache folder that cannot be written only means
//! no index.

mod blocks;
mod format;
mod fuzz;
mod indexed;
mod read;
mod tables;
mod write;

#[cfg(test)]
pub(crate) mod tests;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread::JoinHandle;
use std::time::{SystemTime, UNIX_EPOCH};

use breakpad_symbols::SymbolFile;
use ntdbg_formats::store::{PdbIdentity, PdbSignature};

use crate::{SharedBytes, SymbolError};

pub use fuzz::symbol_index as fuzz_symbol_index;
pub(crate) use indexed::{IndexedTables, ReadSource};
pub(crate) use read::{ranged, SymbolIndex};
pub(crate) use tables::{SymbolsAt, Tables};

/// The cache subfolder that holds the indexes.
const FOLDER: &str = "index";
/// Most bytes the folder may hold; older indexes are evicted past it.
pub(crate) const MAX_INDEX_BYTES: u64 = 4 << 30;
/// The environment variable that turns the index off (`off`, `0`, `no` or `false`).
pub const INDEX_ENV: &str = "NTDBG_SYMBOL_INDEX";

/// Whether the index is used ([`INDEX_ENV`] is not `off`, `0`, `no` or `false`).
pub(crate) fn enabled() -> bool {
    let value = std::env::var(INDEX_ENV).unwrap_or_default();
    !matches!(
        value.trim().to_ascii_lowercase().as_str(),
        "off" | "0" | "no" | "false"
    )
}

/// Names the discarded indexes of this process apart (see [`IndexSlot::discard`]).
static DISCARDED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Where one symbol file's index lives and the identity it must have been made for.
#[derive(Clone)]
pub(crate) struct IndexSlot {
    path: PathBuf,
    identity: String,
    /// The symbol file and the module it answers for: what a detached writer is given.
    source: SlotSource,
}

/// A symbol file and the module it answers for.
#[derive(Clone)]
struct SlotSource {
    /// `breakpad` or `pdb`.
    kind: String,
    /// The file.
    path: PathBuf,
    /// The module's debug file name.
    name: String,
    /// Its debug id.
    key: String,
}

impl IndexSlot {
    /// The slot in `cache` for the symbol file at `source` (`kind`: `breakpad` or `pdb`)
    /// answering for the module `name` with debug id `key`; `None` when the index is off or
    /// the file's length and modification time cannot be read.
    pub(crate) fn new(
        cache: &Path,
        kind: &str,
        source: &Path,
        name: &str,
        key: &str,
    ) -> Option<IndexSlot> {
        if !enabled() {
            return None;
        }
        let meta = std::fs::metadata(source).ok()?;
        let modified = meta.modified().ok()?;
        let nanos = modified
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos());
        let full = std::fs::canonicalize(source).unwrap_or_else(|_| source.to_path_buf());
        let identity = format!(
            "{kind}\n{name}\n{key}\n{}\n{}\n{nanos}",
            full.display(),
            meta.len()
        );
        let safe: String = name
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                    c
                } else {
                    '_'
                }
            })
            .take(64)
            .collect();
        let file = format!(
            "{safe}-{}-{kind}-{:08x}.idx",
            key.to_ascii_uppercase(),
            crc32fast::hash(identity.as_bytes())
        );
        Some(IndexSlot {
            path: cache.join(FOLDER).join(file),
            identity,
            source: SlotSource {
                kind: kind.to_string(),
                path: source.to_path_buf(),
                name: name.to_string(),
                key: key.to_string(),
            },
        })
    }

    /// The index, when a sound one made for this identity is there. A damaged or foreign one
    /// is deleted (it is rebuilt after the symbols are parsed).
    pub(crate) fn open(&self) -> Option<SymbolIndex> {
        match SymbolIndex::open(&self.path, &self.identity) {
            Some(index) => {
                // The modification time marks the index as recently used, for eviction.
                if let Ok(f) = std::fs::File::options().write(true).open(&self.path) {
                    let _ = f.set_modified(SystemTime::now());
                }
                Some(index)
            }
            None => {
                self.discard();
                None
            }
        }
    }

    /// Deletes an unusable index (damaged, foreign, of another version), if there is one.
    /// It is first renamed aside as a temporary file: Windows neither deletes nor replaces a
    /// file while a mapping of it is open (this process's, when a block was found damaged
    /// mid-session), but renames it, which frees the name for the rebuilt index; a copy that
    /// cannot be deleted yet is removed by a later eviction, as a writer's leftover.
    pub(crate) fn discard(&self) {
        if !self.path.exists() {
            return;
        }
        tracing::debug!(index = %self.path.display(), "unusable symbol index dropped");
        let aside = self.path.with_file_name(format!(
            ".tmp-{}-discarded-{}",
            std::process::id(),
            DISCARDED.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        match std::fs::rename(&self.path, &aside) {
            Ok(()) => {
                let _ = std::fs::remove_file(&aside);
            }
            Err(_) => {
                let _ = std::fs::remove_file(&self.path);
            }
        }
    }

    /// Writes the index on a thread of its own, so the load goes on at once;
    /// [`finish_index_writes`] waits for it.
    fn write_on_thread(self, job: IndexJob) {
        let spawned = std::thread::Builder::new()
            .name("symbol-index".into())
            .spawn(move || match job {
                IndexJob::Parsed(symbols, data) => self.write(&symbols, &data),
                // A mapped text cut or rewritten while it was parsed gave other bytes.
                IndexJob::BreakpadText(text) => {
                    match SymbolFile::from_bytes(&text).map(|s| (s, text.check())) {
                        Ok((symbols, Ok(()))) => self.write(&symbols, &[]),
                        Ok((_, Err(e))) => tracing::debug!("symbol index not written: {e}"),
                        Err(e) => tracing::debug!("symbol index not written: {e}"),
                    }
                }
                IndexJob::PdbFile(want) => {
                    match crate::source::pdb::convert_pdb(&self.source.path, &want, None) {
                        Ok((symbols, data)) => self.write(&symbols, &data),
                        Err(e) => tracing::debug!("symbol index not written: {e}"),
                    }
                }
            });
        match spawned {
            Ok(handle) => lock(&RUNNING).push(handle),
            Err(e) => tracing::debug!("symbol index not written: no thread: {e}"),
        }
    }

    /// Writes the index of `symbols` (and PDB `data` symbols). Failures only mean no index.
    pub(crate) fn write(&self, symbols: &SymbolFile, data: &[(String, u64)]) {
        match write::build(&self.identity, symbols, data) {
            Some(bytes) => write::persist(&self.path, &bytes, MAX_INDEX_BYTES),
            None => tracing::debug!(index = %self.path.display(), "symbols too large to index"),
        }
    }
}

/// What an index is made from.
pub(crate) enum IndexJob {
    /// Symbols this load parsed whole (and a PDB's data symbols).
    Parsed(Arc<SymbolFile>, Vec<(String, u64)>),
    /// A Breakpad text this load read lazily: the writer parses it whole.
    BreakpadText(SharedBytes),
    /// A PDB (of this identity) this load converts lazily: the writer converts it whole.
    PdbFile(PdbIdentity),
}

impl IndexJob {
    /// Whether the job needs a whole parse this load did not do (what a detached writer is for).
    fn is_whole_parse(&self) -> bool {
        matches!(self, IndexJob::BreakpadText(_) | IndexJob::PdbFile(_))
    }
}

/// The hidden `ntdbg` subcommand a detached index writer runs:
/// `ntdbg __symbol-index KIND SOURCE NAME KEY [KIND SOURCE NAME KEY]…` (see
/// [`write_symbol_index`]).
pub const WRITER_COMMAND: &str = "__symbol-index";
/// The environment variable that keeps index writing on a thread of this process
/// (`thread`) even where [`write_indexes_out_of_process`] asked for a detached writer.
pub const WRITER_ENV: &str = "NTDBG_SYMBOL_INDEX_WRITER";

/// The executable that writes indexes out of process, when this process asked for it.
static DETACHED_WRITER: OnceLock<PathBuf> = OnceLock::new();

/// Makes this process leave the indexes of lazily read Breakpad files and lazily converted
/// PDBs to one detached `exe`
/// (`exe __symbol-index …`) started by [`finish_index_writes`], so it exits without waiting
/// for whole parses and its run does not share the CPU with them: for short-lived processes
/// (one CLI command). Long-lived ones (the MCP server, `triage`) keep the default, a thread of
/// their own per index.
pub fn write_indexes_out_of_process(exe: PathBuf) {
    let _ = DETACHED_WRITER.set(exe);
}

/// Writes `slot`'s index from `job`: the one place that decides how. A job that needs a
/// whole parse (a lazily read Breakpad text, a lazily converted PDB) is left to the detached
/// writer when this process asked for one (and [`WRITER_ENV`] is not `thread`); everything
/// else is written on a thread of this process now. Either way the index appears whole or not
/// at all (temporary file and rename).
pub(crate) fn write_index(slot: IndexSlot, job: IndexJob) {
    let thread_only =
        std::env::var(WRITER_ENV).is_ok_and(|v| v.trim().eq_ignore_ascii_case("thread"));
    if job.is_whole_parse() && DETACHED_WRITER.get().is_some() && !thread_only {
        // The folder exists when the writer starts: it writes only into a cache still there.
        if let Some(folder) = slot.path.parent() {
            let _ = std::fs::create_dir_all(folder);
        }
        lock(&LEFT_TO_WRITER).push((slot, job));
        return;
    }
    slot.write_on_thread(job);
}

/// Index writes running on threads of this process.
static RUNNING: Mutex<Vec<JoinHandle<()>>> = Mutex::new(Vec::new());
/// Index writes left to the detached writer.
static LEFT_TO_WRITER: Mutex<Vec<(IndexSlot, IndexJob)>> = Mutex::new(Vec::new());

fn lock<T>(m: &'static Mutex<T>) -> std::sync::MutexGuard<'static, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Before this process exits: starts the detached writer for the indexes left to it (or, if
/// it cannot start, writes them here) and waits for the writes running on threads — or the
/// next run parses those symbols again.
pub fn finish_index_writes() {
    let left = std::mem::take(&mut *lock(&LEFT_TO_WRITER));
    if !left.is_empty() {
        let started = DETACHED_WRITER
            .get()
            .is_some_and(|exe| start_writer(exe, &left));
        if !started {
            left.into_iter()
                .for_each(|(slot, job)| slot.write_on_thread(job));
        }
    }
    let handles = std::mem::take(&mut *lock(&RUNNING));
    for handle in handles {
        let _ = handle.join();
    }
}

/// Starts `exe` detached to write the indexes of `jobs`' symbol files; false when it could
/// not be started.
fn start_writer(exe: &Path, jobs: &[(IndexSlot, IndexJob)]) -> bool {
    let mut command = std::process::Command::new(exe);
    command.arg(WRITER_COMMAND);
    for (slot, _) in jobs {
        let s = &slot.source;
        command.arg(&s.kind).arg(&s.path).arg(&s.name).arg(&s.key);
    }
    command
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // Its own process group: a Ctrl-C meant for the command does not cut the writes short.
    #[cfg(unix)]
    std::os::unix::process::CommandExt::process_group(&mut command, 0);
    match command.spawn() {
        Ok(_) => true,
        Err(e) => {
            tracing::debug!("symbol index writer not started: {e}");
            false
        }
    }
}

/// What a detached writer does for one `KIND SOURCE NAME KEY` of [`WRITER_COMMAND`]: reads
/// the symbol file at `source` whole (a `breakpad` text or a `pdb`, checked to be the module
/// `name` with debug id `key`) and writes its warm index into the symbol cache, in the
/// foreground. Nothing to do when the index is off or already sound, or when the cache folder
/// was deleted since the run that asked (it is not made again).
///
/// # Errors
/// An unknown kind; the file cannot be read, or is not that build.
pub fn write_symbol_index(
    kind: &str,
    source: &Path,
    name: &str,
    key: &str,
) -> Result<(), SymbolError> {
    if !crate::default_cache_dir().is_dir() {
        return Ok(());
    }
    let Some(slot) = IndexSlot::new(&crate::default_cache_dir(), kind, source, name, key) else {
        return Ok(());
    };
    if slot.open().is_some() {
        return Ok(());
    }
    match kind {
        "breakpad" => {
            let symbols = crate::source::breakpad::read_whole(source, key)?;
            slot.write(&symbols, &[]);
        }
        "pdb" => {
            let want = PdbSignature::from_key(key)
                .map(|signature| PdbIdentity::new(name, signature))
                .ok_or_else(|| SymbolError::Mismatch {
                    path: source.to_path_buf(),
                    what: "debug id",
                    expected: "a PDB debug id".to_string(),
                    found: key.to_string(),
                })?;
            let (symbols, data) = crate::source::pdb::convert_pdb(source, &want, None)?;
            slot.write(&symbols, &data);
        }
        other => {
            return Err(SymbolError::Mismatch {
                path: source.to_path_buf(),
                what: "symbol file kind",
                expected: "breakpad or pdb".to_string(),
                found: other.to_string(),
            })
        }
    }
    Ok(())
}
