//! Large PDBs loaded lazily: only the procedure an address falls in is converted.
//!
//! Opening reads the PDB's address map, string table, publics and frame data, and walks each
//! module's symbol stream for its procedures' extents (nothing is named, no line is read).
//! A lookup then converts the one procedure covering the address — name, lines, inline sites —
//! with the very code the whole-file conversion uses ([`crate::pdb_sym::Converter`]), writes
//! it as Breakpad text and parses that, so each answer is the one the whole file gives.
//!
//! The PDB's readers borrow one another (the type formatter borrows the streams it formats
//! from), so they live on the stack of a thread of their own that answers lookups over a
//! channel; the thread ends when the [`LazyPdb`] is dropped. Answers are cached per procedure
//! (a bounded list), module streams per module (a bounded list).
//!
//! What the lazy path does not answer is handed to the whole-file conversion, done once on
//! first need: enumerations of every function and public (`x` with wildcards, name lookups,
//! counts), PDBs with x86 frame data (`STACK WIN` records), and addresses where procedures
//! overlap (the Breakpad parser's repairs there depend on its neighbours).

use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex, OnceLock};

use breakpad_symbols::SymbolFile;
use ntdbg_formats::store::PdbIdentity;
use pdb_addr2line::pdb::{ModuleInfo, PDB};
use pdb_addr2line::ContextPdbData;

use crate::index::SymbolsAt;
use crate::pdb_sym::{module_procedures, Converter, ModuleLines, Prepared, ProcedureEntry};
use crate::source::panic_guard::guarded;
use crate::source::pdb::{check_identity, convert_pdb};
use crate::SymbolError;

/// PDBs at least this large are loaded lazily; smaller ones are converted whole (they take
/// milliseconds, and their whole tables answer enumerations at once).
pub(crate) const LAZY_MIN_BYTES: u64 = 8 << 20;
/// The environment variable that overrides the choice by size: `always`, or `never` (`off`).
pub const LAZY_ENV: &str = "NTDBG_PDB_LAZY";

/// Whether the PDB at `path` is loaded lazily: by [`LAZY_ENV`], else by its size.
pub(crate) fn wanted(path: &Path) -> bool {
    match std::env::var(LAZY_ENV)
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase()
        .as_str()
    {
        "always" => true,
        "never" | "off" => false,
        _ => std::fs::metadata(path).is_ok_and(|m| m.len() >= LAZY_MIN_BYTES),
    }
}

/// Procedures whose answers are kept.
const CACHED_ANSWERS: usize = 256;
/// Module streams kept by the thread.
const CACHED_MODULES: usize = 8;

/// One address's answer from the thread.
enum Answer {
    /// The procedure covering it, valid for every address of `start..end`.
    Covered {
        start: u64,
        end: u64,
        file: SymbolFile,
    },
    /// No procedure covers it: the nearest procedure below and public at or below.
    Uncovered(SymbolFile),
    /// The lazy path cannot tell: ask the whole conversion.
    Whole,
}

/// A lookup sent to the thread.
struct Request {
    rva: u64,
    reply: Sender<Answer>,
}

/// A PDB opened for lazy conversion. `Send + Sync`; lookups from several threads take turns.
pub(crate) struct LazyPdb {
    requests: Mutex<Sender<Request>>,
    /// Answers by procedure range, most recently used last.
    answers: Mutex<Vec<(u64, u64, Arc<SymbolFile>)>>,
    whole: OnceLock<Arc<SymbolFile>>,
    path: PathBuf,
    want: PdbIdentity,
    code: Option<(String, String)>,
    /// A file with only the `MODULE` line: the answer when nothing can be read.
    empty: SymbolFile,
    /// The PDB's length in bytes.
    file_len: usize,
}

impl LazyPdb {
    /// Opens the PDB at `path`, checks that it is `want`, and reads what lookups need;
    /// returns it with the PDB's data symbols. `code` is the image's (code id, code file).
    pub(crate) fn open(
        path: &Path,
        want: &PdbIdentity,
        code: Option<&(String, String)>,
    ) -> Result<(LazyPdb, Vec<(String, u64)>), SymbolError> {
        let (requests, incoming) = channel::<Request>();
        let (opened_tx, opened) = channel();
        let (thread_path, thread_want) = (path.to_path_buf(), want.clone());
        let spawned = std::thread::Builder::new()
            .name("lazy-pdb".into())
            .spawn(move || serve(&thread_path, &thread_want, &opened_tx, &incoming));
        if let Err(e) = spawned {
            return Err(SymbolError::Io {
                path: path.to_path_buf(),
                source: e,
            });
        }
        let data = opened.recv().unwrap_or_else(|_| {
            Err(SymbolError::Panicked {
                path: path.to_path_buf(),
                what: "lazy PDB reader",
            })
        })?;
        let header = format!("MODULE windows x86 {} {}\n", want.key(), want.name);
        let empty =
            SymbolFile::from_bytes(header.as_bytes()).map_err(|e| SymbolError::Breakpad {
                path: path.to_path_buf(),
                message: format!("module line did not parse: {e}"),
            })?;
        let lazy = LazyPdb {
            requests: Mutex::new(requests),
            answers: Mutex::new(Vec::new()),
            whole: OnceLock::new(),
            path: path.to_path_buf(),
            want: want.clone(),
            code: code.cloned(),
            empty,
            file_len: std::fs::metadata(path).map_or(0, |m| m.len() as usize),
        };
        Ok((lazy, data))
    }

    /// The PDB's length in bytes.
    pub(crate) fn file_len(&self) -> usize {
        self.file_len
    }

    /// The `MODULE` line's debug id.
    pub(crate) fn module_id(&self) -> &str {
        &self.empty.module_id
    }

    /// A `SymbolFile` that answers Breakpad's `fill_symbol` and `walk_frame` at `rva` as the
    /// whole converted file does.
    pub(crate) fn at(&self, rva: u64) -> SymbolsAt<'_> {
        if let Some(whole) = self.whole.get() {
            return SymbolsAt::Borrowed(whole);
        }
        if let Some(file) = self.cached(rva) {
            return SymbolsAt::Shared(file);
        }
        match self.ask(rva) {
            Some(Answer::Covered { start, end, file }) => {
                let file = Arc::new(file);
                let mut answers = lock(&self.answers);
                if answers.len() >= CACHED_ANSWERS {
                    answers.remove(0);
                }
                answers.push((start, end, Arc::clone(&file)));
                SymbolsAt::Shared(file)
            }
            Some(Answer::Uncovered(file)) => SymbolsAt::Shared(Arc::new(file)),
            Some(Answer::Whole) | None => SymbolsAt::Borrowed(self.whole()),
        }
    }

    /// The cached answer for the procedure covering `rva`, marked as recently used.
    fn cached(&self, rva: u64) -> Option<Arc<SymbolFile>> {
        let mut answers = lock(&self.answers);
        let i = answers
            .iter()
            .rposition(|(start, end, _)| *start <= rva && rva < *end)?;
        let hit = answers.remove(i);
        let file = Arc::clone(&hit.2);
        answers.push(hit);
        Some(file)
    }

    /// The thread's answer for `rva`; `None` when the thread has ended (it panicked).
    fn ask(&self, rva: u64) -> Option<Answer> {
        let (reply, answer) = channel();
        lock(&self.requests).send(Request { rva, reply }).ok()?;
        answer.recv().ok()
    }

    /// The whole PDB converted and parsed (once, on first need); the empty file when that
    /// fails (the lazy opening read the same streams, so only damage deeper in can do it).
    pub(crate) fn whole(&self) -> &SymbolFile {
        self.whole.get_or_init(
            || match convert_pdb(&self.path, &self.want, self.code.as_ref()) {
                Ok((file, _)) => Arc::new(file),
                Err(e) => {
                    tracing::debug!(pdb = %self.path.display(), "whole PDB conversion failed: {e}");
                    Arc::new(self.empty.clone())
                }
            },
        )
    }

    /// The whole conversion, when something already needed it.
    pub(crate) fn whole_if_done(&self) -> Option<&SymbolFile> {
        self.whole.get().map(Arc::as_ref)
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// One function of the PDB as the whole conversion emits it: a piece of a procedure.
struct Slot {
    start: u32,
    end: u32,
    module: usize,
    entry: ProcedureEntry,
    /// Whether it overlaps a neighbour (the parser would repair; the lazy path defers).
    overlaps: bool,
}

/// The thread: opens the PDB, reports the outcome on `opened`, then answers `requests` until
/// the [`LazyPdb`] is dropped. A panic while opening is reported as an error; one during a
/// lookup ends the thread (later lookups go to the whole conversion).
fn serve(
    path: &Path,
    want: &PdbIdentity,
    opened: &Sender<Result<Vec<(String, u64)>, SymbolError>>,
    requests: &Receiver<Request>,
) {
    let pdb_err = |source: pdb_addr2line::Error| SymbolError::Pdb {
        path: path.to_path_buf(),
        source,
    };
    let open = || {
        let file = ntdbg_files::open_regular(path).map_err(|e| SymbolError::Io {
            path: path.to_path_buf(),
            source: e,
        })?;
        PDB::open(file).map_err(|e| pdb_err(e.into()))
    };
    // Two readers of one file: the type formatter keeps the first; modules come from the other.
    let opening = guarded(path, "PDB reader", || {
        let mut types = open()?;
        check_identity(path, &mut types, want)?;
        let mut modules = open()?;
        let prepared = Prepared::read(&mut modules).map_err(|e| pdb_err(e.into()))?;
        Ok((types, modules, prepared))
    });
    let (mut types, mut modules, prepared) = match opening {
        Ok(v) => v,
        Err(e) => {
            let _ = opened.send(Err(e));
            return;
        }
    };
    let readers = guarded(path, "PDB reader", || {
        ContextPdbData::try_from_pdb_ref(&mut types).map_err(pdb_err)
    });
    let context_data = match readers {
        Ok(v) => v,
        Err(e) => {
            let _ = opened.send(Err(e));
            return;
        }
    };
    let formatter = match guarded(path, "PDB reader", || {
        context_data.make_type_formatter().map_err(pdb_err)
    }) {
        Ok(f) => f,
        Err(e) => {
            let _ = opened.send(Err(e));
            return;
        }
    };
    let worker = guarded(path, "PDB reader", || {
        Ok(Worker::new(&prepared, &formatter, &mut modules, want))
    });
    let mut worker = match worker {
        Ok(w) => w,
        Err(e) => {
            let _ = opened.send(Err(e));
            return;
        }
    };
    if opened.send(Ok(prepared.data_symbols.clone())).is_err() {
        return;
    }
    for request in requests {
        let answer = guarded(path, "PDB reader", || Ok(worker.answer(request.rva)));
        let Ok(answer) = answer else {
            return;
        };
        let _ = request.reply.send(answer);
    }
}

/// What the thread keeps between lookups.
struct Worker<'a, 's> {
    prepared: &'a Prepared<'s>,
    formatter: &'a pdb_addr2line::TypeFormatter<'a, 's>,
    pdb: &'a mut PDB<'s, std::fs::File>,
    /// Every function, by start (one per start: the first, as the whole conversion keeps).
    slots: Vec<Slot>,
    /// Indexes into `prepared.code_publics` of the publics no function starts at.
    publics: Vec<usize>,
    /// Module streams, most recently used last.
    streams: Vec<(usize, ModuleInfo<'s>)>,
    /// (debug id, debug file) for the `MODULE` line.
    module: (String, String),
    /// Whether every lookup goes to the whole conversion (x86 frame data).
    defer_all: bool,
}

impl<'a, 's> Worker<'a, 's> {
    fn new(
        prepared: &'a Prepared<'s>,
        formatter: &'a pdb_addr2line::TypeFormatter<'a, 's>,
        pdb: &'a mut PDB<'s, std::fs::File>,
        want: &PdbIdentity,
    ) -> Self {
        let mut slots = Vec::new();
        for (index, module) in formatter.modules().iter().enumerate() {
            let Ok(Some(info)) = pdb.module_info(module) else {
                continue;
            };
            for entry in module_procedures(&info) {
                if entry.len == 0 {
                    continue;
                }
                for (start, end) in prepared.addresses.ranges(entry.offset, entry.len) {
                    slots.push(Slot {
                        start,
                        end,
                        module: index,
                        entry: entry.clone(),
                        overlaps: false,
                    });
                }
            }
        }
        slots.sort_by_key(|s| s.start);
        slots.dedup_by_key(|s| s.start);
        for i in 1..slots.len() {
            if slots[i - 1].end > slots[i].start {
                slots[i - 1].overlaps = true;
                slots[i].overlaps = true;
            }
        }
        let publics = prepared
            .code_publics
            .iter()
            .enumerate()
            .filter(|(_, (rva, _))| slots.binary_search_by_key(rva, |s| s.start).is_err())
            .map(|(i, _)| i)
            .collect();
        Worker {
            prepared,
            formatter,
            pdb,
            slots,
            publics,
            streams: Vec::new(),
            module: (want.key(), want.name.clone()),
            defer_all: !prepared.stack_win.is_empty(),
        }
    }

    fn answer(&mut self, rva: u64) -> Answer {
        if self.defer_all {
            return Answer::Whole;
        }
        let Ok(rva32) = u32::try_from(rva) else {
            return self.uncovered(self.slots.len().checked_sub(1), u32::MAX);
        };
        let below = self
            .slots
            .partition_point(|s| s.start <= rva32)
            .checked_sub(1);
        match below.map(|i| &self.slots[i]) {
            Some(slot) if rva32 < slot.end => {
                if slot.overlaps {
                    return Answer::Whole;
                }
                let (start, end) = (u64::from(slot.start), u64::from(slot.end));
                match self.file(below, None) {
                    Some(file) => Answer::Covered { start, end, file },
                    None => Answer::Whole,
                }
            }
            _ => self.uncovered(below, rva32),
        }
    }

    /// The answer where no function covers `rva`: the function `below` it (the last one that
    /// starts below) and the last public at or below it.
    fn uncovered(&mut self, below: Option<usize>, rva: u32) -> Answer {
        if below.is_some_and(|i| self.slots[i].overlaps) {
            return Answer::Whole;
        }
        let public = self
            .publics
            .partition_point(|&i| self.prepared.code_publics[i].0 <= rva)
            .checked_sub(1)
            .map(|i| self.publics[i]);
        match self.file(below, public) {
            Some(file) => Answer::Uncovered(file),
            None => Answer::Whole,
        }
    }

    /// The parsed Breakpad text of function `slot` (if any) and code public `public` (if any).
    fn file(&mut self, slot: Option<usize>, public: Option<usize>) -> Option<SymbolFile> {
        let prepared = self.prepared;
        let formatter = self.formatter;
        let mut converter = Converter::new(prepared, formatter);
        let mut funcs = Vec::new();
        if let Some(i) = slot {
            let (module, start) = (self.slots[i].module, self.slots[i].start);
            let entry = self.slots[i].entry.clone();
            let info = self.stream(module)?;
            let lines = ModuleLines::read(info);
            converter.convert(module, info, &lines, &entry, &mut funcs);
            funcs.retain(|f| f.rva == start);
            if funcs.is_empty() {
                return None;
            }
        }
        let publics: Vec<_> = public
            .map(|i| prepared.code_publics[i].clone())
            .into_iter()
            .collect();
        let text = converter.text(
            prepared.arch,
            (&self.module.0, &self.module.1),
            None,
            &funcs,
            &publics,
            &[],
        );
        SymbolFile::from_bytes(text.as_bytes()).ok()
    }

    /// Module `index`'s stream, read on first use and kept among the last few.
    fn stream(&mut self, index: usize) -> Option<&ModuleInfo<'s>> {
        if let Some(i) = self.streams.iter().position(|(m, _)| *m == index) {
            let hit = self.streams.remove(i);
            self.streams.push(hit);
        } else {
            let module = self.formatter.modules().get(index)?;
            let info = self.pdb.module_info(module).ok()??;
            if self.streams.len() >= CACHED_MODULES {
                self.streams.remove(0);
            }
            self.streams.push((index, info));
        }
        self.streams.last().map(|(_, info)| info)
    }
}

#[cfg(test)]
mod tests;
