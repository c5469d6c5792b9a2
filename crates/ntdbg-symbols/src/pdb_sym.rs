//! PDB → Breakpad symbol text.
//!
//! A PDB is turned into the same text Breakpad's `dump_syms` writes, then parsed with
//! `breakpad-symbols`, so PDB and `.sym` symbols share one representation (and the text can
//! be looked at when something is off):
//!
//! - `FUNC` for every procedure (names with argument lists as `pdb-addr2line`'s type formatter
//!   writes them), with line records holding the *innermost* source line at each address,
//!   `INLINE_ORIGIN`/`INLINE` records for inlined calls;
//! - `PUBLIC` for code publics that no `FUNC` starts at (undecorated, see [`crate::demangle`]);
//! - `STACK WIN` from the PDB frame table (FPO and frame data), for x86 unwinding.
//!
//! Data publics are returned separately (they are not part of the Breakpad format but are
//! useful to `x` and to expressions).

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use ntdbg_formats::store::Guid;
use pdb_addr2line::pdb::{
    self, FallibleIterator, FrameType, IdIndex, Inlinee, LineProgram, MachineType, ModuleInfo,
    PdbInternalSectionOffset, Source, StringTable, SymbolData, SymbolIter, PDB,
};
use pdb_addr2line::{ContextPdbData, ModuleProvider, TypeFormatter};

use crate::demangle;
use crate::pdb_address::{dbi_debug_streams, fpo_stream, Addresses};
use crate::source::panic_guard::contain;

/// Deepest inline nesting followed (hostile files must not overflow the stack).
const MAX_INLINE_DEPTH: u16 = 64;

/// The identity a PDB records about itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct PdbOwnIdentity {
    /// The GUID from the PDB info stream.
    pub guid: Guid,
    /// The PDB info stream's signature (the PDB 2.0 identity).
    pub signature: u32,
    /// The age from the DBI stream (the one images record), if present.
    pub dbi_age: Option<u32>,
    /// The age from the PDB info stream.
    pub pdbi_age: u32,
}

impl PdbOwnIdentity {
    /// The age to show and to key by: the DBI age when present.
    pub fn age(&self) -> u32 {
        self.dbi_age.unwrap_or(self.pdbi_age)
    }

    /// Whether an image asking for (`guid`, `age`) matches this PDB.
    pub fn matches_pdb70(&self, guid: &Guid, age: u32) -> bool {
        self.guid == *guid && (self.dbi_age == Some(age) || self.pdbi_age == age)
    }

    /// Whether an image asking for the PDB 2.0 (`signature`, `age`) matches this PDB.
    pub fn matches_pdb20(&self, signature: u32, age: u32) -> bool {
        self.signature == signature && (self.dbi_age == Some(age) || self.pdbi_age == age)
    }
}

/// Reads a PDB's GUID, signature and ages.
pub(crate) fn read_identity<'s, S: Source<'s> + 's>(
    pdb: &mut PDB<'s, S>,
) -> Result<PdbOwnIdentity, pdb::Error> {
    let info = pdb.pdb_information()?;
    check_stream_names(pdb, info.names_offset, info.names_size)?;
    let dbi_age = pdb.debug_information().ok().and_then(|d| d.age());
    Ok(PdbOwnIdentity {
        guid: Guid::from_bytes(*info.guid.as_bytes()),
        signature: info.signature,
        dbi_age,
        pdbi_age: info.age,
    })
}

/// Refuses a PDB whose stream-name table points past its name buffer: pdb2 slices the buffer
/// at each entry's offset when a named stream (such as `/names`) is looked up, and panics.
/// Walks the table the way pdb2 does; a table cut short is left to pdb2's own EOF errors.
fn check_stream_names<'s, S: Source<'s> + 's>(
    pdb: &mut PDB<'s, S>,
    names_offset: usize,
    names_size: usize,
) -> Result<(), pdb::Error> {
    let Some(stream) = pdb.raw_stream(pdb::StreamIndex(1))? else {
        return Ok(());
    };
    let d = stream.as_slice();
    let u32_at = |at: Option<usize>| -> Option<usize> {
        let at = at?;
        let b = d.get(at..at.checked_add(4)?)?;
        usize::try_from(u32::from_le_bytes([b[0], b[1], b[2], b[3]])).ok()
    };
    let words = |at: Option<usize>, n: usize| at?.checked_add(n.checked_mul(4)?);
    // count, entries size, present-set words and bits, deleted-set words and bits, entries.
    let table = names_offset.checked_add(names_size);
    let Some(count) = u32_at(table) else {
        return Ok(());
    };
    let ok_words = table.and_then(|t| t.checked_add(8));
    let Some(present) = u32_at(ok_words) else {
        return Ok(());
    };
    let deleted_words = words(ok_words.and_then(|w| w.checked_add(4)), present);
    let Some(deleted) = u32_at(deleted_words) else {
        return Ok(());
    };
    let entries = words(deleted_words.and_then(|w| w.checked_add(4)), deleted);
    for i in 0..count {
        let Some(offset) = u32_at(entries.and_then(|e| e.checked_add(i.checked_mul(8)?))) else {
            break;
        };
        if offset > names_size {
            return Err(pdb::Error::InvalidStreamLength("PDB stream-name table"));
        }
    }
    Ok(())
}

/// What a PDB turns into.
#[derive(Debug, Default)]
pub(crate) struct Converted {
    /// Breakpad symbol text.
    pub text: String,
    /// Data publics: (undecorated name, RVA).
    pub data_symbols: Vec<(String, u64)>,
}

/// The whole-PDB tables read before any procedure is converted: shared by the whole-file
/// converter ([`convert`]) and the lazy one ([`crate::pdb_lazy`]).
pub(crate) struct Prepared<'s> {
    /// The `MODULE` line's architecture.
    pub arch: &'static str,
    /// Whether the PDB is for 32-bit x86 (C names carry calling-convention decoration).
    pub x86: bool,
    /// PDB addresses → image RVAs.
    pub addresses: Addresses<'s>,
    /// The `/names` stream.
    pub strings: Option<StringTable<'s>>,
    /// `STACK WIN` lines, sorted.
    pub stack_win: Vec<String>,
    /// Code publics (RVA, undecorated), sorted by RVA, one per RVA.
    pub code_publics: Vec<(u32, demangle::Undecorated)>,
    /// Data publics: (undecorated name, RVA).
    pub data_symbols: Vec<(String, u64)>,
}

impl<'s> Prepared<'s> {
    /// Reads the machine, address map, string table, frame data and publics of `pdb`.
    pub(crate) fn read<S: Source<'s> + 's>(pdb: &mut PDB<'s, S>) -> Result<Self, pdb::Error> {
        let dbi = pdb.debug_information()?;
        let machine = dbi.machine_type().unwrap_or(MachineType::Unknown);
        let x86 = machine == MachineType::X86;
        let arch = match machine {
            MachineType::X86 => "x86",
            MachineType::Amd64 => "x86_64",
            MachineType::Arm64 => "arm64",
            MachineType::ArmNT | MachineType::Arm => "arm",
            _ => "unknown",
        };
        let streams = dbi_debug_streams(pdb)?;
        let addresses = Addresses::read(pdb, &streams)?;
        let strings = pdb.string_table().ok();
        let sections = pdb.sections().ok().flatten().unwrap_or_default();
        let stack_win = read_stack_win(pdb, &streams, &addresses, strings.as_ref());
        let (code_publics, data_symbols) = read_publics(pdb, &addresses, &sections, x86)?;
        Ok(Prepared {
            arch,
            x86,
            addresses,
            strings,
            stack_win,
            code_publics,
            data_symbols,
        })
    }
}

/// Converts one PDB's procedures to Breakpad records: holds what every procedure needs and
/// numbers the files and inline origins the converted ones name.
pub(crate) struct Converter<'a, 's> {
    addresses: &'a Addresses<'s>,
    strings: Option<&'a StringTable<'s>>,
    formatter: &'a TypeFormatter<'a, 's>,
    files: Interner,
    origins: Interner,
    /// Whether the PDB is for 32-bit x86 (C names carry calling-convention decoration).
    x86: bool,
}

impl<'a, 's> Converter<'a, 's> {
    /// A converter over `prepared`'s tables, naming functions with `formatter`.
    pub(crate) fn new(prepared: &'a Prepared<'s>, formatter: &'a TypeFormatter<'a, 's>) -> Self {
        Converter {
            addresses: &prepared.addresses,
            strings: prepared.strings.as_ref(),
            formatter,
            files: Interner::default(),
            origins: Interner::default(),
            x86: prepared.x86,
        }
    }

    /// Breakpad text holding `funcs` (sorted by RVA; at one RVA the first is kept),
    /// the `code_publics` no function starts at, and `stack_win`, with the `MODULE`, `INFO`,
    /// `FILE` and `INLINE_ORIGIN` lines they need.
    pub(crate) fn text(
        &self,
        arch: &str,
        module: (&str, &str),
        code: Option<(&str, &str)>,
        funcs: &[Func],
        code_publics: &[(u32, demangle::Undecorated)],
        stack_win: &[String],
    ) -> String {
        let (debug_id, debug_file) = module;
        let mut text = String::new();
        let _ = writeln!(
            text,
            "MODULE windows {arch} {debug_id} {}",
            clean(debug_file)
        );
        if let Some((code_id, code_file)) = code {
            let _ = writeln!(text, "INFO CODE_ID {code_id} {}", clean(code_file));
        }
        for (i, file) in self.files.order.iter().enumerate() {
            let _ = writeln!(text, "FILE {} {}", i + 1, clean(file));
        }
        for (i, origin) in self.origins.order.iter().enumerate() {
            let _ = writeln!(text, "INLINE_ORIGIN {} {}", i + 1, clean(origin));
        }
        let mut func_starts = std::collections::HashSet::new();
        for f in funcs {
            // Identical-code folding: several procedures at one address; keep the first name.
            if func_starts.insert(f.rva) {
                write_func(&mut text, f);
            }
        }
        for (rva, u) in code_publics {
            if !func_starts.contains(rva) {
                let _ = writeln!(
                    text,
                    "PUBLIC {rva:x} {:x} {}",
                    u.parameter_size,
                    clean(&u.name)
                );
            }
        }
        for line in stack_win {
            text.push_str(line);
            text.push('\n');
        }
        text
    }
}

/// Assigns stable ids to strings (starting at 1: 0 means "unknown").
#[derive(Default)]
struct Interner {
    ids: HashMap<String, u32>,
    order: Vec<String>,
}

impl Interner {
    fn id(&mut self, s: &str) -> u32 {
        if let Some(&id) = self.ids.get(s) {
            return id;
        }
        self.order.push(s.to_string());
        let id = self.order.len() as u32;
        self.ids.insert(s.to_string(), id);
        id
    }
}

/// One emitted function (one piece of a procedure: with OMAP a procedure can land in
/// several).
pub(crate) struct Func {
    /// First RVA.
    pub rva: u32,
    /// Length in bytes.
    pub len: u32,
    name: String,
    /// Innermost line table: start → (end, file, line).
    lines: BTreeMap<u32, (u32, u32, u32)>,
    inlines: Vec<InlineRec>,
}

/// One `INLINE` record.
struct InlineRec {
    depth: u16,
    call_line: u32,
    call_file: u32,
    origin: u32,
    ranges: Vec<(u32, u32)>,
}

/// A line record converted to RVAs: (start, end, file id, line).
type RvaLine = (u32, u32, u32, u32);

/// An inline site while collecting: its depth, parent site, origin, own line records.
struct Site {
    depth: u16,
    parent: Option<usize>,
    inlinee: IdIndex,
    lines: Vec<RvaLine>,
}

/// Converts an opened PDB. `debug_id`/`debug_file` go into the `MODULE` line; `code` (code id,
/// code file) into an `INFO CODE_ID` line.
pub(crate) fn convert<'s, S: Source<'s> + Send + 's>(
    pdb: &mut PDB<'s, S>,
    debug_id: &str,
    debug_file: &str,
    code: Option<(&str, &str)>,
) -> Result<Converted, pdb_addr2line::Error> {
    let prepared = Prepared::read(pdb)?;
    let context_data = ContextPdbData::try_from_pdb_ref(pdb)?;
    let formatter = context_data.make_type_formatter()?;
    let mut ctx = Converter::new(&prepared, &formatter);
    let mut funcs = Vec::new();
    for (index, module) in formatter.modules().iter().enumerate() {
        // A module whose stream is damaged loses its functions, not the whole PDB.
        let Ok(Some(info)) = context_data.get_module_info(index, module) else {
            continue;
        };
        let lines = ModuleLines::read(info);
        for entry in module_procedures(info) {
            ctx.convert(index, info, &lines, &entry, &mut funcs);
        }
    }
    funcs.sort_by_key(|f| f.rva);
    let text = ctx.text(
        prepared.arch,
        (debug_id, debug_file),
        code,
        &funcs,
        &prepared.code_publics,
        &prepared.stack_win,
    );
    Ok(Converted {
        text,
        data_symbols: prepared.data_symbols,
    })
}

/// A name or path made safe for one Breakpad line.
fn clean(s: &str) -> String {
    let s: String = s
        .chars()
        .map(|c| if c == '\n' || c == '\r' { ' ' } else { c })
        .collect();
    if s.trim().is_empty() {
        "<unknown>".to_string()
    } else {
        s
    }
}

fn write_func(text: &mut String, f: &Func) {
    let _ = writeln!(text, "FUNC {:x} {:x} 0 {}", f.rva, f.len, clean(&f.name));
    for (start, (end, file, line)) in &f.lines {
        let _ = writeln!(text, "{start:x} {:x} {line} {file}", end - start);
    }
    for i in &f.inlines {
        if i.ranges.is_empty() {
            continue;
        }
        let _ = write!(
            text,
            "INLINE {} {} {} {}",
            i.depth, i.call_line, i.call_file, i.origin
        );
        for (s, e) in &i.ranges {
            let _ = write!(text, " {s:x} {:x}", e - s);
        }
        text.push('\n');
    }
}

/// Code publics (RVA, undecorated) sorted by RVA, and data publics.
#[allow(clippy::type_complexity)]
fn read_publics<'s, S: Source<'s> + 's>(
    pdb: &mut PDB<'s, S>,
    addresses: &Addresses<'s>,
    sections: &[pdb::ImageSectionHeader],
    x86: bool,
) -> Result<(Vec<(u32, demangle::Undecorated)>, Vec<(String, u64)>), pdb::Error> {
    let globals = pdb.global_symbols()?;
    let mut code = Vec::new();
    let mut data = Vec::new();
    let mut iter = globals.iter();
    // A damaged record ends the walk; what was read so far is kept.
    while let Ok(Some(symbol)) = iter.next() {
        let p = match symbol.parse() {
            Ok(SymbolData::Public(p)) => p,
            // Global and file-static variables (`S_GDATA32`, `S_LDATA32`), for `x`.
            Ok(SymbolData::Data(d)) => {
                if let Some(rva) = addresses.rva(d.offset) {
                    data.push((d.name.to_string().into_owned(), u64::from(rva)));
                }
                continue;
            }
            _ => continue,
        };
        let Some(rva) = addresses.rva(p.offset) else {
            continue;
        };
        let raw = p.name.to_string();
        let executable = usize::from(p.offset.section)
            .checked_sub(1)
            .and_then(|i| sections.get(i))
            .is_some_and(|s| s.characteristics.execute() || s.characteristics.executable());
        let u = demangle::public_name(&raw, x86);
        if p.code || p.function || executable {
            code.push((rva, u));
        } else {
            data.push((u.name, u64::from(rva)));
        }
    }
    // Several names at one address (aliases): keep the shortest, as dump_syms does.
    code.sort_by(|(a, x), (b, y)| (a, x.name.len(), &x.name).cmp(&(b, y.name.len(), &y.name)));
    code.dedup_by_key(|(rva, _)| *rva);
    Ok((code, data))
}

/// `STACK WIN` lines, sorted by type then RVA: type 4 (frame data with a program string)
/// from the frame table, type 0 (FPO) read straight from the FPO stream.
fn read_stack_win<'s, S: Source<'s> + 's>(
    pdb: &mut PDB<'s, S>,
    streams: &[u16],
    addresses: &Addresses<'s>,
    strings: Option<&StringTable<'s>>,
) -> Vec<String> {
    let mut records: Vec<(u8, u32, String)> = fpo_stream(pdb, streams)
        .map(|bytes| read_fpo(&bytes, addresses))
        .unwrap_or_default();
    if let Ok(table) = pdb.frame_table() {
        let mut iter = table.iter();
        while let Ok(Some(frame)) = iter.next() {
            // FPO records come from `read_fpo` (pdb2 decodes their flag bits wrongly, and
            // hides FPO records at the RVA of a frame-data record).
            if frame.ty != FrameType::FrameData || frame.code_size == 0 {
                continue;
            }
            let Some(program) = frame
                .program
                .zip(strings)
                .and_then(|(p, s)| p.to_string_lossy(s).ok())
            else {
                continue;
            };
            let program = clean(&program);
            // With OMAP a block can land in pieces; each gets the block's record.
            for (rva, end) in addresses.ranges_of_internal(frame.code_start.0, frame.code_size) {
                let line = format!(
                    "STACK WIN 4 {rva:x} {:x} {:x} 0 {:x} {:x} {:x} {:x} 1 {program}",
                    end - rva,
                    frame.prolog_size,
                    frame.params_size,
                    frame.saved_regs_size,
                    frame.locals_size,
                    frame.max_stack_size.unwrap_or(0),
                );
                records.push((4, rva, line));
            }
        }
    }
    records.sort_by_key(|(ty, rva, _)| (*ty, *rva));
    records.into_iter().map(|(_, _, line)| line).collect()
}

/// `STACK WIN 0` lines from an FPO stream (`FPO_DATA` records of frame type `FRAME_FPO`).
fn read_fpo(stream: &[u8], addresses: &Addresses<'_>) -> Vec<(u8, u32, String)> {
    let mut out = Vec::new();
    for r in stream.chunks_exact(16) {
        let word = |i: usize| u32::from_le_bytes([r[i], r[i + 1], r[i + 2], r[i + 3]]);
        let (start, size, locals) = (word(0), word(4), word(8));
        let params = u32::from(u16::from_le_bytes([r[12], r[13]]));
        let attributes = u16::from_le_bytes([r[14], r[15]]);
        // cbProlog:8, cbRegs:3, fHasSEH:1, fUseBP:1, reserved:1, cbFrame:2
        let prolog = attributes & 0xff;
        let regs = (attributes >> 8) & 7;
        let uses_bp = (attributes >> 12) & 1;
        let frame_type = attributes >> 14;
        if frame_type != 0 || size == 0 {
            continue;
        }
        for (rva, end) in addresses.ranges_of_internal(start, size) {
            let line = format!(
                "STACK WIN 0 {rva:x} {:x} {prolog:x} 0 {:x} {:x} {:x} 0 0 {uses_bp}",
                end - rva,
                params.saturating_mul(4),
                u32::from(regs) * 4,
                locals.saturating_mul(4),
            );
            out.push((0, rva, line));
        }
    }
    out
}

/// Where one procedure (or separated code block) of a module's symbol stream is, found by a
/// walk over the stream's top-level records that converts nothing.
#[derive(Clone, Debug)]
pub(crate) struct ProcedureEntry {
    /// The `S_*PROC32` or `S_SEPCODE` record.
    symbol: pdb::SymbolIndex,
    /// The record its name comes from (the procedure itself, or a block's parent).
    named_by: pdb::SymbolIndex,
    /// Whether the compiland is MASM (x86 assembly routines are named differently).
    masm: bool,
    /// Its code.
    pub offset: PdbInternalSectionOffset,
    /// Its code's length.
    pub len: u32,
    end: pdb::SymbolIndex,
}

/// A module's line program and inlinee table: what converting its procedures reads besides
/// their symbol records.
pub(crate) struct ModuleLines<'a> {
    program: Option<LineProgram<'a>>,
    inlinees: BTreeMap<IdIndex, Inlinee<'a>>,
}

impl<'a> ModuleLines<'a> {
    /// Reads `info`'s line program and inlinee table (either may be missing or damaged: the
    /// procedures then have no lines or no inline sites).
    pub(crate) fn read(info: &'a ModuleInfo<'_>) -> Self {
        let program = contain(|| info.line_program().ok()).flatten();
        let inlinees = contain(|| match info.inlinees() {
            Ok(iter) => iter
                .map(|i| Ok((i.index(), i)))
                .collect()
                .unwrap_or_default(),
            Err(_) => BTreeMap::new(),
        })
        .unwrap_or_default();
        ModuleLines { program, inlinees }
    }
}

/// The top-level procedures and separated blocks of `info`'s symbol stream, in stream order.
/// A damaged record ends the walk: the procedures before it are kept (a module whose stream
/// is damaged loses its later functions, not the PDB).
pub(crate) fn module_procedures(info: &ModuleInfo<'_>) -> Vec<ProcedureEntry> {
    let mut procedures = Vec::new();
    let _ = scan_procedures(info, &mut procedures);
    procedures
}

/// Appends the top-level procedures and separated blocks of `info`'s symbol stream.
fn scan_procedures(info: &ModuleInfo<'_>, out: &mut Vec<ProcedureEntry>) -> Result<(), pdb::Error> {
    let mut iter = info.symbols()?;
    let mut masm = false;
    // The last procedure by its section offset, for separated code blocks.
    let mut last_proc: Option<(PdbInternalSectionOffset, pdb::SymbolIndex)> = None;
    while let Some(symbol) = iter.next()? {
        match symbol.parse() {
            Ok(SymbolData::CompileFlags(flags)) => {
                masm = flags.language == pdb::SourceLanguage::Masm;
            }
            Ok(SymbolData::Procedure(proc)) => {
                last_proc = Some((proc.offset, symbol.index()));
                out.push(ProcedureEntry {
                    symbol: symbol.index(),
                    named_by: symbol.index(),
                    masm,
                    offset: proc.offset,
                    len: proc.len,
                    end: proc.end,
                });
                iter.skip_to(proc.end)?;
            }
            Ok(SymbolData::SeparatedCode(sep)) => {
                // Code split off a procedure (e.g. cold blocks): named after its parent.
                let parent = match &last_proc {
                    Some((offset, parent)) if *offset == sep.parent_offset => *parent,
                    _ => continue,
                };
                out.push(ProcedureEntry {
                    symbol: symbol.index(),
                    named_by: parent,
                    masm,
                    offset: sep.offset,
                    len: sep.len,
                    end: sep.end,
                });
            }
            _ => {}
        }
    }
    Ok(())
}

impl<'a, 's> Converter<'a, 's> {
    /// Converts one procedure of module `module_index` (its stream `info` and `lines`) into
    /// one [`Func`] per piece of its code, appended to `funcs`. A record that does not read
    /// converts to nothing.
    pub(crate) fn convert<'m>(
        &mut self,
        module_index: usize,
        info: &'m ModuleInfo<'_>,
        lines: &ModuleLines<'m>,
        entry: &ProcedureEntry,
        funcs: &mut Vec<Func>,
    ) {
        let name = match info.symbols_at(entry.named_by).and_then(|mut i| i.next()) {
            Ok(Some(symbol)) => match symbol.parse() {
                Ok(SymbolData::Procedure(proc)) => {
                    procedure_name(self, module_index, &proc, entry.masm)
                }
                _ => return,
            },
            _ => return,
        };
        let Ok(mut body) = info.symbols_at(entry.symbol) else {
            return;
        };
        let _ = body.next();
        let proc_ref = Proc {
            module_index,
            offset: entry.offset,
            len: entry.len,
            end: entry.end,
            name,
        };
        convert_procedure(
            self,
            &proc_ref,
            lines.program.as_ref(),
            &lines.inlinees,
            &mut body,
            funcs,
        );
    }
}

/// A procedure (or separated block) to convert.
struct Proc {
    module_index: usize,
    offset: PdbInternalSectionOffset,
    len: u32,
    end: pdb::SymbolIndex,
    name: String,
}

fn procedure_name(
    ctx: &Converter<'_, '_>,
    module_index: usize,
    proc: &pdb::ProcedureSymbol<'_>,
    masm: bool,
) -> String {
    let raw = proc.name.to_string();
    let name = ctx
        .formatter
        .format_function(&raw, module_index, proc.type_index)
        .ok()
        .filter(|n| !n.is_empty())
        // Untyped decorated names are demangled below instead.
        .filter(|n| proc.type_index.0 != 0 || !n.starts_with('?'))
        .or_else(|| demangle::function_signature(&raw))
        .unwrap_or_else(|| raw.to_string())
        // pdb-addr2line writes a C varargs parameter as `<NoType>`.
        .replace("<NoType>", "...");
    // x86 assembly routines are named by their decorated symbol (`@_EH4_LocalUnwind@16`):
    // show it undecorated and without an invented argument list, as dump_syms does.
    if ctx.x86 && masm && (name == raw || name.strip_suffix("()") == Some(&*raw)) {
        demangle::masm_procedure_name(&raw)
    } else {
        name
    }
}

fn convert_procedure<'a>(
    ctx: &mut Converter<'_, '_>,
    proc: &Proc,
    program: Option<&LineProgram<'a>>,
    inlinees: &BTreeMap<IdIndex, Inlinee<'a>>,
    body: &mut SymbolIter<'_>,
    funcs: &mut Vec<Func>,
) {
    if proc.len == 0 {
        return;
    }
    // With OMAP a procedure can land in several pieces: each becomes a FUNC.
    let pieces = ctx.addresses.ranges(proc.offset, proc.len);
    if pieces.is_empty() {
        return;
    }
    let outer: Vec<RvaLine> = match program {
        Some(p) => code_lines(ctx, p, proc.offset, proc.len),
        None => Vec::new(),
    };
    let mut sites = Vec::new();
    let env = SiteEnv {
        program,
        inlinees,
        proc_offset: proc.offset,
    };
    collect_sites(ctx, &env, body, proc.end, None, 0, &mut sites);

    let mut lines = BTreeMap::new();
    for &(s, e, file, line) in &outer {
        paint(&mut lines, s, e, file, line);
    }
    // Deeper inline sites override shallower ones: the line table holds the innermost line.
    let mut order: Vec<usize> = (0..sites.len()).collect();
    order.sort_by_key(|&i| sites[i].depth);
    for &i in &order {
        for &(s, e, file, line) in &sites[i].lines {
            paint(&mut lines, s, e, file, line);
        }
    }

    // A site's ranges include its callees' (some compilers leave those out).
    let mut ranges: Vec<Vec<(u32, u32)>> = sites
        .iter()
        .map(|s| s.lines.iter().map(|&(a, b, _, _)| (a, b)).collect())
        .collect();
    for &i in order.iter().rev() {
        if let Some(p) = sites[i].parent {
            let child = ranges[i].clone();
            ranges[p].extend(child);
        }
    }
    let mut inlines = Vec::new();
    for (i, site) in sites.iter().enumerate() {
        let merged = merge_ranges(&ranges[i], 0, u32::MAX);
        let Some(&(first, _)) = merged.first() else {
            continue;
        };
        let caller_lines: &[RvaLine] = match site.parent {
            Some(p) => &sites[p].lines,
            None => &outer,
        };
        let (call_file, call_line) = caller_lines
            .iter()
            .find(|&&(s, e, _, _)| s <= first && first < e)
            .map(|&(_, _, f, l)| (f, l))
            .unwrap_or((0, 0));
        let origin_name = ctx
            .formatter
            .format_id(proc.module_index, site.inlinee)
            .unwrap_or_else(|_| format!("<inlinee {:#x}>", site.inlinee.0));
        let origin = ctx.origins.id(&origin_name);
        inlines.push(InlineRec {
            depth: site.depth,
            call_line,
            call_file,
            origin,
            ranges: merged,
        });
    }
    for (start, end) in pieces {
        funcs.push(Func {
            rva: start,
            len: end - start,
            name: proc.name.clone(),
            lines: clip_lines(&lines, start, end),
            inlines: inlines
                .iter()
                .map(|i| InlineRec {
                    depth: i.depth,
                    call_line: i.call_line,
                    call_file: i.call_file,
                    origin: i.origin,
                    ranges: merge_ranges(&i.ranges, start, end),
                })
                .filter(|i| !i.ranges.is_empty())
                .collect(),
        });
    }
}

/// The part of a line table inside `[lo, hi)`.
fn clip_lines(
    lines: &BTreeMap<u32, (u32, u32, u32)>,
    lo: u32,
    hi: u32,
) -> BTreeMap<u32, (u32, u32, u32)> {
    let mut out = BTreeMap::new();
    let first = lines.range(..=lo).next_back().map_or(lo, |(k, _)| *k);
    for (&s, &(e, f, l)) in lines.range(first..hi) {
        let (s, e) = (s.max(lo), e.min(hi));
        if s < e {
            out.insert(s, (e, f, l));
        }
    }
    out
}

/// The line records of the code at `offset` (a procedure or separated block), as RVA ranges.
/// A line block that `pdb2` cannot read (it panics on some damaged C13 blocks) costs this
/// code its lines, not the module its symbols.
fn code_lines(
    ctx: &mut Converter<'_, '_>,
    program: &LineProgram<'_>,
    offset: PdbInternalSectionOffset,
    len: u32,
) -> Vec<RvaLine> {
    let Some(mut raw) = contain(|| {
        let mut raw = Vec::new();
        let mut iter = program.lines_for_symbol(offset);
        while let Ok(Some(line)) = iter.next() {
            if line.offset.section == offset.section {
                raw.push(line);
            }
        }
        raw
    }) else {
        return Vec::new();
    };
    raw.sort_by_key(|l| l.offset.offset);
    let end = offset.offset.saturating_add(len);
    let mut out = Vec::with_capacity(raw.len());
    for (i, l) in raw.iter().enumerate() {
        let next = raw.get(i + 1).map_or(end, |n| n.offset.offset);
        let line_end = match l.length {
            Some(n) if n > 0 => l.offset.offset.saturating_add(n),
            _ => next,
        };
        let Some(n) = line_end.checked_sub(l.offset.offset).filter(|&n| n > 0) else {
            continue;
        };
        let file = file_id(ctx, program, l.file_index);
        for (s, e) in ctx.addresses.ranges(l.offset, n) {
            out.push((s, e, file, l.line_start));
        }
    }
    out
}

fn file_id(ctx: &mut Converter<'_, '_>, program: &LineProgram<'_>, index: pdb::FileIndex) -> u32 {
    let strings = ctx.strings;
    let name = contain(|| {
        let strings = strings?;
        let info = program.get_file_info(index).ok()?;
        info.name
            .to_string_lossy(strings)
            .ok()
            .map(|n| n.into_owned())
    })
    .flatten();
    match name {
        Some(n) => ctx.files.id(&n),
        None => 0,
    }
}

/// What inline-site collection needs about the enclosing procedure and module.
struct SiteEnv<'p, 'a> {
    program: Option<&'p LineProgram<'a>>,
    inlinees: &'p BTreeMap<IdIndex, Inlinee<'a>>,
    proc_offset: PdbInternalSectionOffset,
}

/// Collects the inline sites below the current symbol up to `end`, depth first.
fn collect_sites(
    ctx: &mut Converter<'_, '_>,
    env: &SiteEnv<'_, '_>,
    iter: &mut SymbolIter<'_>,
    end: pdb::SymbolIndex,
    parent: Option<usize>,
    depth: u16,
    sites: &mut Vec<Site>,
) {
    while let Ok(Some(symbol)) = iter.next() {
        if symbol.index() >= end {
            break;
        }
        match symbol.parse() {
            Ok(SymbolData::Procedure(p)) => {
                // A nested procedure is its own function; skip its body.
                let skipped = iter.skip_to(p.end);
                if skipped.is_err() {
                    break;
                }
            }
            Ok(SymbolData::InlineSite(site)) => {
                if depth >= MAX_INLINE_DEPTH {
                    let _ = iter.skip_to(site.end);
                    continue;
                }
                let mut lines = Vec::new();
                if let Some(inlinee) = env.inlinees.get(&site.inlinee) {
                    let mut li = inlinee.lines(env.proc_offset, &site);
                    while let Ok(Some(line)) = li.next() {
                        let Some(len) = line.length.filter(|&n| n > 0) else {
                            continue;
                        };
                        let file = match env.program {
                            Some(p) => file_id(ctx, p, line.file_index),
                            None => 0,
                        };
                        for (s, e) in ctx.addresses.ranges(line.offset, len) {
                            lines.push((s, e, file, line.line_start));
                        }
                    }
                }
                let index = sites.len();
                sites.push(Site {
                    depth,
                    parent,
                    inlinee: site.inlinee,
                    lines,
                });
                collect_sites(ctx, env, iter, site.end, Some(index), depth + 1, sites);
            }
            _ => {}
        }
    }
}

/// Sorted, merged ranges clipped to `[lo, hi)`.
fn merge_ranges(ranges: &[(u32, u32)], lo: u32, hi: u32) -> Vec<(u32, u32)> {
    let mut v: Vec<(u32, u32)> = ranges
        .iter()
        .map(|&(s, e)| (s.max(lo), e.min(hi)))
        .filter(|(s, e)| s < e)
        .collect();
    v.sort_unstable();
    let mut out: Vec<(u32, u32)> = Vec::with_capacity(v.len());
    for (s, e) in v {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

/// Paints `[start, end)` with (file, line) over a map of non-overlapping ranges, cutting what
/// was there.
fn paint(map: &mut BTreeMap<u32, (u32, u32, u32)>, start: u32, end: u32, file: u32, line: u32) {
    if start >= end {
        return;
    }
    let overlapping: Vec<(u32, (u32, u32, u32))> = map
        .range(..end)
        .rev()
        .take_while(|(_, v)| v.0 > start)
        .map(|(k, v)| (*k, *v))
        .collect();
    for (k, v) in overlapping {
        map.remove(&k);
        if k < start {
            map.insert(k, (start, v.1, v.2));
        }
        if v.0 > end {
            map.insert(end, v);
        }
    }
    map.insert(start, (end, file, line));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn painting_keeps_ranges_disjoint() {
        let mut m = BTreeMap::new();
        paint(&mut m, 0, 10, 1, 100);
        paint(&mut m, 4, 6, 2, 200);
        paint(&mut m, 8, 12, 3, 300);
        let v: Vec<_> = m.into_iter().collect();
        assert_eq!(
            v,
            vec![
                (0, (4, 1, 100)),
                (4, (6, 2, 200)),
                (6, (8, 1, 100)),
                (8, (12, 3, 300))
            ]
        );
    }

    #[test]
    fn ranges_merge_and_clip() {
        assert_eq!(
            merge_ranges(&[(5, 8), (0, 3), (2, 4), (8, 9), (20, 30)], 1, 25),
            vec![(1, 4), (5, 9), (20, 25)]
        );
    }
}
