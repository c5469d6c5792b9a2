//! One module's symbols, as the engine sees them: status, where they came from, lookups,
//! and the two stack-walker hooks.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use breakpad_symbols::{FrameSymbolizer, FrameWalker, Module};
use ntdbg_formats::pe::PeInfo;

use crate::demangle::strip_parameters;
use crate::dwarf_cfi::DwarfCfi;
use crate::image::{ImageSource, MappedImage};
use crate::index::Tables;
use crate::recent_at::RecentAt;
use crate::types::TypeDb;
use crate::unwind::PeUnwinder;
use crate::variables::VariableTable;
use crate::wildcard::wildcard_match;
use crate::SharedBytes;

/// What kind of symbols a module has.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SymbolStatus {
    /// A matching PDB was loaded.
    Pdb,
    /// A matching Breakpad `.sym` (or `.sym.xz`) was loaded.
    Breakpad,
    /// No symbol file: names come from the image's export table (file or dump memory), as
    /// public symbols without sizes or lines.
    ExportSymbols,
    /// Nothing usable was found ([`ModuleSymbols::tried`] says why).
    NoSymbols,
}

impl SymbolStatus {
    /// A stable `snake_case` key: `pdb`, `breakpad`, `export`, `no_symbols`.
    pub fn name(&self) -> &'static str {
        match self {
            SymbolStatus::Pdb => "pdb",
            SymbolStatus::Breakpad => "breakpad",
            SymbolStatus::ExportSymbols => "export",
            SymbolStatus::NoSymbols => "no_symbols",
        }
    }

    /// Text for people: `pdb symbols`, `breakpad symbols`, `export symbols`, `no symbols`.
    pub fn label(&self) -> &'static str {
        match self {
            SymbolStatus::Pdb => "pdb symbols",
            SymbolStatus::Breakpad => "breakpad symbols",
            SymbolStatus::ExportSymbols => "export symbols",
            SymbolStatus::NoSymbols => "no symbols",
        }
    }
}

/// One inlined call at an address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InlineHit {
    /// The inlined function's name.
    pub name: String,
    /// Source file of the location inside this inlined function.
    pub file: Option<String>,
    /// Line of that location.
    pub line: Option<u32>,
}

/// What an address resolves to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SymbolHit {
    /// The function (or public symbol) containing the address. Functions from PDBs carry
    /// their argument list (`crash_null_write(int*)`).
    pub name: String,
    /// RVA where it starts.
    pub start_rva: u64,
    /// Its size, when known (functions yes, public symbols no).
    pub size: Option<u64>,
    /// Source file of the location in `name` itself (for an inlined call: the call site).
    pub file: Option<String>,
    /// Line of that location.
    pub line: Option<u32>,
    /// Inlined calls at the address, **outermost first**: `inlines[0]` was inlined into
    /// `name`, each next one into the previous; the last is where the instruction really is.
    pub inlines: Vec<InlineHit>,
    /// Whether the hit is a public symbol (no size, no lines).
    pub is_public: bool,
}

/// One symbol found by name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SymbolEntry {
    /// The name as stored (functions with their argument list).
    pub name: String,
    /// Its RVA.
    pub rva: u64,
    /// Its size, when known.
    pub size: Option<u64>,
    /// Whether it is a function (else a public or data symbol).
    pub is_function: bool,
}

/// Names → RVA, built on first use by [`ModuleSymbols::resolve`].
#[derive(Debug, Default)]
struct NameIndex {
    /// Lower-cased full and parameterless names → RVA (first definition wins, functions
    /// first).
    by_name: HashMap<String, u64>,
}

/// The symbols of one module. Cheap to share (`Arc`), `Send + Sync`.
pub struct ModuleSymbols {
    pub(crate) status: SymbolStatus,
    pub(crate) symbol_file_path: Option<PathBuf>,
    pub(crate) image_path: Option<PathBuf>,
    pub(crate) image_info: Option<PeInfo>,
    pub(crate) image_source: Option<ImageSource>,
    pub(crate) pdb_identity: Option<(String, String)>,
    pub(crate) tried: Vec<String>,
    pub(crate) symbols: Option<Tables>,
    pub(crate) data_symbols: Vec<(String, u64)>,
    pub(crate) unwinder: Option<PeUnwinder>,
    pub(crate) image: Option<Arc<MappedImage>>,
    /// Where the module is loaded.
    pub(crate) base: u64,
    /// The image's DWARF call frame information, indexed on first use.
    dwarf_cfi: OnceLock<Option<DwarfCfi>>,
    /// What [`Tables::at`] built for the addresses asked last.
    recent: RecentAt,
    index: OnceLock<NameIndex>,
    types: OnceLock<Result<Arc<TypeDb>, String>>,
    variables: OnceLock<Result<Arc<VariableTable>, String>>,
}

/// A summary: status, files, counts (the symbol tables themselves are too big to print).
impl std::fmt::Debug for ModuleSymbols {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (functions, publics) = self.symbols.as_ref().map_or((0, 0), Tables::counts);
        f.debug_struct("ModuleSymbols")
            .field("status", &self.status)
            .field("symbol_file_path", &self.symbol_file_path)
            .field("image_path", &self.image_path)
            .field("pdb_identity", &self.pdb_identity)
            .field("functions", &functions)
            .field("publics", &publics)
            .field("data_symbols", &self.data_symbols.len())
            .field("unwinder", &self.unwinder)
            .field("tried", &self.tried)
            .finish()
    }
}

/// Collects what `SymbolFile::fill_symbol` reports.
#[derive(Default)]
struct Collect {
    instruction: u64,
    function: Option<(String, u64)>,
    source: Option<(String, u32)>,
    inlines: Vec<InlineHit>,
}

impl FrameSymbolizer for Collect {
    fn get_instruction(&self) -> u64 {
        self.instruction
    }
    fn set_function(&mut self, name: &str, base: u64, _parameter_size: u32) {
        self.function = Some((name.to_string(), base));
    }
    fn set_source_file(&mut self, file: &str, line: u32, _base: u64) {
        self.source = Some((file.to_string(), line));
    }
    fn add_inline_frame(&mut self, name: &str, file: Option<&str>, line: Option<u32>) {
        self.inlines.push(InlineHit {
            name: name.to_string(),
            file: file.map(str::to_string),
            line,
        });
    }
}

/// Forwards to the walker's symbolizer and notes whether a function name was set.
struct Detect<'a> {
    inner: &'a mut dyn FrameSymbolizer,
    named: bool,
    /// Whether a symbol starting at an address may name the frame's function (unwind data
    /// knows the functions' extents); a name refused is not forwarded.
    may_name: Option<&'a dyn Fn(u64) -> bool>,
}

impl FrameSymbolizer for Detect<'_> {
    fn get_instruction(&self) -> u64 {
        self.inner.get_instruction()
    }
    fn set_function(&mut self, name: &str, base: u64, parameter_size: u32) {
        if self.may_name.is_some_and(|may_name| !may_name(base)) {
            return;
        }
        self.named |= !name.is_empty();
        self.inner.set_function(name, base, parameter_size);
    }
    fn set_source_file(&mut self, file: &str, line: u32, base: u64) {
        self.inner.set_source_file(file, line, base);
    }
    fn add_inline_frame(&mut self, name: &str, file: Option<&str>, line: Option<u32>) {
        self.inner.add_inline_frame(name, file, line);
    }
}

impl ModuleSymbols {
    pub(crate) fn new(status: SymbolStatus, tried: Vec<String>) -> ModuleSymbols {
        ModuleSymbols {
            status,
            symbol_file_path: None,
            image_path: None,
            image_info: None,
            image_source: None,
            pdb_identity: None,
            tried,
            symbols: None,
            data_symbols: Vec::new(),
            unwinder: None,
            image: None,
            base: 0,
            dwarf_cfi: OnceLock::new(),
            recent: RecentAt::default(),
            index: OnceLock::new(),
            types: OnceLock::new(),
            variables: OnceLock::new(),
        }
    }

    /// The PDB's types (for `dt`), read on first use. An error says why there are none
    /// (no PDB loaded, or its type stream is unreadable).
    pub fn types(&self) -> Result<Arc<TypeDb>, String> {
        self.types
            .get_or_init(|| match (&self.status, &self.symbol_file_path) {
                (SymbolStatus::Pdb, Some(path)) => {
                    TypeDb::open(path).map(Arc::new).map_err(|e| e.to_string())
                }
                _ => Err(format!("no PDB loaded ({})", self.status.label())),
            })
            .clone()
    }

    /// The PDB's parameters and locals by procedure and scope (for `dv`), read on first use.
    /// An error says why there are none (no PDB loaded, or its symbol streams are unreadable).
    pub fn variables(&self) -> Result<Arc<VariableTable>, String> {
        self.variables
            .get_or_init(|| match (&self.status, &self.symbol_file_path) {
                (SymbolStatus::Pdb, Some(path)) => VariableTable::open(path)
                    .map(Arc::new)
                    .map_err(|e| e.to_string()),
                _ => Err(format!("no PDB loaded ({})", self.status.label())),
            })
            .clone()
    }

    /// What kind of symbols were loaded.
    pub fn status(&self) -> SymbolStatus {
        self.status
    }

    /// The symbol file used (a `.pdb`, `.sym` or `.sym.xz`).
    pub fn symbol_file_path(&self) -> Option<&Path> {
        self.symbol_file_path.as_deref()
    }

    /// The image file found on the symbol path (verified by timestamp and size), if any.
    pub fn image_path(&self) -> Option<&Path> {
        self.image_path.as_deref()
    }

    /// The image's headers (from the file on the symbol path, else from dump memory):
    /// version resource, sections, CodeView record.
    pub fn image_info(&self) -> Option<&PeInfo> {
        self.image_info.as_ref()
    }

    /// Where [`ModuleSymbols::image_info`] came from: the file on the symbol path or dump
    /// memory.
    pub fn image_source(&self) -> Option<&ImageSource> {
        self.image_source.as_ref()
    }

    /// Up to `len` bytes of the module's image at `rva`, as the loader maps it, from the image
    /// found for this module (file or dump memory): only bytes the image really holds, so a
    /// debugger can show code the dump itself did not capture. `None` without an image.
    pub fn image_bytes(&self, rva: u64, len: usize) -> Option<SharedBytes> {
        self.image
            .as_ref()?
            .read_up_to(u32::try_from(rva).ok()?, len)
    }

    /// Up to `len` bytes at `rva` from the image file found on the symbol path (relocated to
    /// the module's load address) where the loader maps the file unchanged: headers and
    /// read-only sections. Writable sections (`.data`) and images read from dump memory give
    /// `None`, so a caller filling holes in dump memory never shows bytes the process may
    /// have changed.
    pub fn image_file_bytes(&self, rva: u64, len: usize) -> Option<SharedBytes> {
        self.image
            .as_ref()?
            .read_only_bytes(u32::try_from(rva).ok()?, len)
    }

    /// The RVA ranges [`ModuleSymbols::image_file_bytes`] answers for, sorted.
    pub fn image_file_ranges(&self) -> Vec<std::ops::Range<u64>> {
        self.image.as_ref().map_or_else(Vec::new, |i| {
            i.read_only_ranges()
                .into_iter()
                .map(|r| u64::from(r.start)..u64::from(r.end))
                .collect()
        })
    }

    /// Where the unwind tables used by [`ModuleSymbols::walk_frame`] come from, if any.
    pub fn unwind_source(&self) -> Option<&ImageSource> {
        self.unwinder.as_ref().map(|u| &u.image().source)
    }

    /// The PDB this module asks for: (file name, Breakpad debug id). From the dump's CodeView
    /// record or, failing that, from the image's.
    pub fn pdb_identity(&self) -> Option<(String, String)> {
        self.pdb_identity.clone()
    }

    /// `Ok` while every file these symbols still read holds what it held when it was opened:
    /// a mapped Breakpad text or index, the image file, the dump mapping an image was
    /// borrowed from. Otherwise answers given since may be wrong, and the symbols must be
    /// dropped and loaded again ([`crate::SymbolStore::check_loaded`] does).
    pub fn check_sources(&self) -> Result<(), ntdbg_files::FileChanged> {
        self.check_sources_once(&mut Vec::new())
    }

    /// [`ModuleSymbols::check_sources`], skipping the owners of borrowed bytes already in
    /// `checked` (the dump many modules' images come from) and adding those it checks.
    pub(crate) fn check_sources_once(
        &self,
        checked: &mut Vec<usize>,
    ) -> Result<(), ntdbg_files::FileChanged> {
        if let Some(tables) = &self.symbols {
            tables.check_sources()?;
        }
        // The unwinder reads the same image.
        self.image
            .as_ref()
            .map_or(Ok(()), |image| image.check_source(checked))
    }

    /// Every place looked at and why it was not used, in order (e.g.
    /// `/syms/crashy.pdb: GUID/age mismatch (want …, file has …)`); the last entry says what
    /// was loaded.
    pub fn tried(&self) -> &[String] {
        &self.tried
    }

    /// Fills a stack frame's function, parameter size, source line and inline frames (outermost
    /// first, Breakpad's order). Returns whether a function name was found.
    pub fn fill_symbol(&self, module: &dyn Module, frame: &mut dyn FrameSymbolizer) -> bool {
        let Some(symbols) = &self.symbols else {
            return false;
        };
        // Frames only ever sit in code: an address in a data section has no function, which
        // also lets the stack scanner reject data pointers that follow a public symbol.
        let rva = frame.get_instruction().wrapping_sub(module.base_address());
        if self.in_data_section(rva) {
            return false;
        }
        let symbols = self.recent.at(symbols, rva);
        // A public symbol (no debug-info function here) names code only inside a function
        // of the unwind tables: this keeps stack scanning from accepting the padding and
        // literal pools that follow the last public of a section.
        let has_function = symbols.functions.get(rva).is_some();
        if !has_function && self.unwinder.as_ref().is_some_and(|u| !u.covers(rva)) {
            return false;
        }
        // A public symbol with another function's DWARF entry between it and the address
        // names that other function's neighbour (one without a public symbol of its own: a
        // static function, a cold part).
        let base = module.base_address();
        let same_function = |symbol: u64| self.public_may_name(symbol.wrapping_sub(base), rva);
        let mut detect = Detect {
            inner: frame,
            named: false,
            may_name: (!has_function).then_some(&same_function),
        };
        symbols.fill_symbol(module, &mut detect);
        detect.named
    }

    /// Recovers the caller's registers for the frame `walker` describes: Breakpad `STACK CFI`
    /// / `STACK WIN` records first, else the image's x64/ARM64 unwind tables, else the image's
    /// DWARF call frame information (`.eh_frame`, `.debug_frame` of MinGW/clang x86 and x64
    /// images).
    ///
    /// For the innermost frame (`!walker.has_grand_callee()`) `get_instruction()` is the exact
    /// program counter; for callers it is inside the call instruction (return address − 1),
    /// as minidump-unwind provides it. `None` when nothing covers the address: the caller
    /// then falls back to frame pointers or scanning.
    pub fn walk_frame(&self, module: &dyn Module, walker: &mut dyn FrameWalker) -> Option<()> {
        if let Some(symbols) = &self.symbols {
            let rva = walker.get_instruction().wrapping_sub(module.base_address());
            if self
                .recent
                .at(symbols, rva)
                .walk_frame(module, walker)
                .is_some()
            {
                return Some(());
            }
        }
        if let Some(unwinder) = &self.unwinder {
            if unwinder.walk(module.base_address(), walker).is_some() {
                return Some(());
            }
        }
        self.dwarf_cfi()?.walk(walker)
    }

    /// The image's DWARF CFI, indexed on first use.
    fn dwarf_cfi(&self) -> Option<&DwarfCfi> {
        self.dwarf_cfi
            .get_or_init(|| DwarfCfi::new(self.image.as_ref()?, self.base))
            .as_ref()
    }

    /// Whether a public symbol at `symbol` may name the code at `rva`: not when the image's
    /// DWARF CFI shows another function between them.
    fn public_may_name(&self, symbol: u64, rva: u64) -> bool {
        self.dwarf_cfi()
            .and_then(|d| d.same_function(symbol, rva))
            .unwrap_or(true)
    }

    /// Bytes the DWARF CFI holds, once indexed (0 before).
    pub(crate) fn dwarf_cfi_bytes(&self) -> usize {
        self.dwarf_cfi
            .get()
            .and_then(Option::as_ref)
            .map_or(0, DwarfCfi::held_bytes)
    }

    /// Whether the image's unwind data (an x64/ARM64 `.pdata` entry, a DWARF frame
    /// description entry) covers `rva`: such a function's caller comes from its unwind data,
    /// never from a guess.
    pub fn unwind_data_covers(&self, rva: u64) -> bool {
        self.unwinder.as_ref().is_some_and(|u| u.has_entry(rva))
            || self.dwarf_cfi().is_some_and(|d| d.covers(rva))
    }

    /// Whether the image's unwind tables (x64/ARM64 `.pdata`) have an entry covering `rva`;
    /// `None` when the module has no such tables (x86, or no image found). Code that no entry
    /// covers is a leaf function by the ABI.
    pub fn unwind_entry_covers(&self, rva: u64) -> Option<bool> {
        Some(self.unwinder.as_ref()?.has_entry(rva))
    }

    /// Whether `rva` lies in an executable section of the image; `None` when the image's
    /// headers are unknown (no image file and none in dump memory).
    pub fn is_code(&self, rva: u64) -> Option<bool> {
        self.image_info.as_ref()?;
        Some(!self.in_data_section(rva) && self.in_any_section(rva))
    }

    /// What `rva` resolves to: function (or nearest public symbol), source line, inlines.
    pub fn lookup(&self, rva: u64) -> Option<SymbolHit> {
        let symbols = self.recent.at(self.symbols.as_ref()?, rva);
        let mut c = Collect {
            instruction: rva,
            ..Collect::default()
        };
        // A module at base 0, so Breakpad's lookup takes the RVA as is.
        symbols.fill_symbol(&breakpad_symbols::SimpleModule::default(), &mut c);
        let func = c
            .function
            .as_ref()
            .and_then(|(_, start)| symbols.functions.get(rva).filter(|f| f.address == *start));
        if func.is_none() {
            // No function covers `rva`: the nearest public or data symbol below it, but only
            // within the same section (a code public must not name a global variable).
            let public = c.function.take().filter(|(_, start)| {
                self.same_section(*start, rva) && self.public_may_name(*start, rva)
            });
            let data = self
                .data_symbols
                .iter()
                .filter(|(_, start)| *start <= rva && self.same_section(*start, rva))
                .max_by_key(|(_, start)| *start)
                .cloned();
            let best = match (public, data) {
                (Some(p), Some(d)) => Some(if d.1 > p.1 { d } else { p }),
                (p, d) => p.or(d),
            };
            let (name, start_rva) = best?;
            return Some(SymbolHit {
                name,
                start_rva,
                size: None,
                file: None,
                line: None,
                inlines: Vec::new(),
                is_public: true,
            });
        }
        let (name, start_rva) = c.function?;
        let (file, line) = match c.source {
            Some((f, l)) => (Some(f), (l != 0).then_some(l)),
            None => (None, None),
        };
        Some(SymbolHit {
            name,
            start_rva,
            size: func.map(|f| u64::from(f.size)),
            file,
            line,
            inlines: c.inlines,
            is_public: func.is_none(),
        })
    }

    /// Whether the image is known and `rva` lies in a section that is not executable.
    fn in_data_section(&self, rva: u64) -> bool {
        const EXECUTABLE: u32 = 0x2000_0000 | 0x20; // IMAGE_SCN_MEM_EXECUTE | IMAGE_SCN_CNT_CODE
        let Some(info) = &self.image_info else {
            return false;
        };
        u32::try_from(rva)
            .ok()
            .and_then(|r| info.section_for_rva(r))
            .is_some_and(|s| s.characteristics & EXECUTABLE == 0)
    }

    /// Whether `rva` lies in one of the image's sections (true when the image is unknown).
    fn in_any_section(&self, rva: u64) -> bool {
        let Some(info) = &self.image_info else {
            return true;
        };
        u32::try_from(rva)
            .ok()
            .and_then(|r| info.section_for_rva(r))
            .is_some()
    }

    /// Whether two RVAs lie in the same image section (true when the image is unknown).
    fn same_section(&self, a: u64, b: u64) -> bool {
        let Some(info) = &self.image_info else {
            return true;
        };
        let section = |rva: u64| {
            u32::try_from(rva)
                .ok()
                .and_then(|r| info.section_for_rva(r))
                .map(|s| s.virtual_address)
        };
        section(a) == section(b)
    }

    /// The `[start, end)` RVA range of the function containing `rva` (functions only: public
    /// symbols have no known end).
    pub fn function_range(&self, rva: u64) -> Option<(u64, u64)> {
        let (address, size) = self.symbols.as_ref()?.function_at(rva)?;
        Some((address, address + u64::from(size)))
    }

    /// Symbols whose name matches a WinDbg wildcard pattern (`*`, `?`; case-insensitive),
    /// with or without the argument list: `crash_*` and `crash_null_write` both find
    /// `crash_null_write(int*)`. Sorted by RVA.
    pub fn find(&self, pattern: &str) -> Vec<SymbolEntry> {
        let Some(symbols) = &self.symbols else {
            return Vec::new();
        };
        let matches = |name: &str| {
            wildcard_match(pattern, name) || wildcard_match(pattern, strip_parameters(name))
        };
        let mut out: Vec<SymbolEntry> = Vec::new();
        for (name, address, size) in symbols.functions() {
            if matches(name) {
                out.push(SymbolEntry {
                    name: name.to_string(),
                    rva: address,
                    size: Some(u64::from(size)),
                    is_function: true,
                });
            }
        }
        for (name, address) in symbols.publics() {
            if matches(name) {
                out.push(SymbolEntry {
                    name: name.to_string(),
                    rva: address,
                    size: None,
                    is_function: false,
                });
            }
        }
        for (name, rva) in &self.data_symbols {
            if matches(name) {
                out.push(SymbolEntry {
                    name: name.clone(),
                    rva: *rva,
                    size: None,
                    is_function: false,
                });
            }
        }
        out.sort_by(|a, b| (a.rva, &a.name).cmp(&(b.rva, &b.name)));
        out.dedup_by(|a, b| a.rva == b.rva && a.name == b.name);
        out
    }

    /// The RVA of the symbol with exactly this name (case-insensitive; with or without its
    /// argument list). Functions win over public and data symbols.
    pub fn resolve(&self, name: &str) -> Option<u64> {
        let index = self.index.get_or_init(|| self.build_index());
        let key = name.trim().to_lowercase();
        index
            .by_name
            .get(&key)
            .or_else(|| index.by_name.get(strip_parameters(&key)))
            .copied()
    }

    fn build_index(&self) -> NameIndex {
        let mut by_name = HashMap::new();
        let mut add = |name: &str, rva: u64| {
            let lower = name.to_lowercase();
            by_name
                .entry(strip_parameters(&lower).to_string())
                .or_insert(rva);
            by_name.entry(lower).or_insert(rva);
        };
        if let Some(symbols) = &self.symbols {
            for (name, address, _) in symbols.functions() {
                add(name, address);
            }
            for (name, address) in symbols.publics() {
                add(name, address);
            }
        }
        for (name, rva) in &self.data_symbols {
            add(name, *rva);
        }
        NameIndex { by_name }
    }
}
