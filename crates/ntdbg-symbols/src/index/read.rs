//! Reading a mapped index: validation on open, then lookups by binary search that rebuild,
//! for one address, the small `SymbolFile` holding every record Breakpad's own
//! `fill_symbol` and `walk_frame` consult there.

use std::collections::HashMap;
use std::ops::Range;
use std::path::Path;

use breakpad_symbols::{CfiRules, SymbolFile};
use range_map::RangeMap;

use super::blocks::{Bytes, CheckedBytes};
use super::format::{
    Get, Section, StrRef, DIRECTORY_ENTRY_LEN, HEADER_LEN, META_LEN, TEMPLATES, WIN_BASE_POINTER,
    WIN_NO_BASE_POINTER, WIN_PROGRAM,
};

/// A validated index. Every record and string access goes through [`CheckedBytes`]: it is
/// bounds-checked, and its blocks are checked against their CRC-32s on first use. A read of a
/// block that fails gives nothing (an empty record or string) and marks the index damaged:
/// [`SymbolIndex::checked`] then refuses the whole lookup. A crafted file whose checksums
/// match can give wrong names, never a read outside the file or a panic.
pub(crate) struct SymbolIndex {
    bytes: CheckedBytes,
    sections: Vec<Range<usize>>,
    /// The `Strings` section's bytes.
    strings: Range<usize>,
    module_id: String,
    /// An empty `SymbolFile` with this module's id, debug file and parser counters.
    empty: SymbolFile,
    /// Parsed [`TEMPLATES`].
    templates: SymbolFile,
}

/// A function record.
struct FunctionRecord {
    start: u64,
    end: u64,
    address: u64,
    size: u32,
    parameter_size: u32,
    name: StrRef,
    lines: Range<usize>,
    inlinees: Range<usize>,
}

impl SymbolIndex {
    /// Maps and validates the index at `path`, made for `identity`; `None` when it is missing,
    /// foreign, of another version, truncated, or damaged in its header, block table,
    /// directory or identity (the blocks these lie in are checked now, the others on first
    /// use).
    pub(crate) fn open(path: &Path, identity: &str) -> Option<SymbolIndex> {
        // Index files are only ever replaced by rename, never written in place; one truncated
        // by someone else reads zeros where it vanished (the index is then damaged) and fails
        // `check_source`.
        let map = ntdbg_files::FileMap::open(path).ok()?;
        SymbolIndex::validate(Bytes::Mapped(map), identity)
    }

    /// `Ok` while the index file has the length it had when it was opened and no page of it
    /// vanished.
    pub(crate) fn check_source(&self) -> Result<(), ntdbg_files::FileChanged> {
        self.bytes.check_source()
    }

    /// [`SymbolIndex::open`] on bytes in memory.
    pub(crate) fn from_vec(bytes: Vec<u8>, identity: &str) -> Option<SymbolIndex> {
        SymbolIndex::validate(Bytes::Owned(bytes), identity)
    }

    fn validate(bytes: Bytes, identity: &str) -> Option<SymbolIndex> {
        let bytes = CheckedBytes::open(bytes, Section::ALL.len())?;
        let directory =
            bytes.get(HEADER_LEN..HEADER_LEN + Section::ALL.len() * DIRECTORY_ENTRY_LEN)?;
        let body = bytes.body();
        let mut get = Get::new(directory);
        let mut sections = Vec::with_capacity(Section::ALL.len());
        for s in Section::ALL {
            let start = usize::try_from(get.u64()).ok()?;
            let len = usize::try_from(get.u64()).ok()?;
            let range = start..start.checked_add(len)?;
            if range.start < body.start || range.end > body.end || len % s.record_len() != 0 {
                return None;
            }
            sections.push(range);
        }
        let strings = sections[Section::Strings as usize].clone();
        if sections[Section::Meta as usize].len() != META_LEN {
            return None;
        }
        let templates = SymbolFile::from_bytes(TEMPLATES.as_bytes()).ok()?;
        let mut empty = SymbolFile::from_bytes(b"MODULE windows x86 0 t\n").ok()?;
        let mut index = SymbolIndex {
            bytes,
            sections,
            strings,
            module_id: String::new(),
            empty: empty.clone(),
            templates,
        };
        let mut meta = Get::new(index.record(Section::Meta, 0));
        let (own_identity, module_id, debug_file) = (meta.str(), meta.str(), meta.str());
        if index.str(own_identity) != identity || index.bytes.is_damaged() {
            return None;
        }
        empty.ambiguities_repaired = meta.u64();
        empty.ambiguities_discarded = meta.u64();
        empty.corruptions_discarded = meta.u64();
        empty.cfi_eval_corruptions = meta.u64();
        empty.module_id = index.str(module_id).to_string();
        empty.debug_file = index.str(debug_file).to_string();
        index.module_id = empty.module_id.clone();
        index.empty = empty;
        (!index.bytes.is_damaged()).then_some(index)
    }

    /// What `lookup` answers, unless a block it read failed its check (or one had before):
    /// then `None`, and nothing it read is used. (A lookup that read only blocks that matched
    /// is sound whatever other threads found meanwhile; damage is never undone.)
    pub(crate) fn checked<'a, T>(&'a self, lookup: impl FnOnce(&'a SymbolIndex) -> T) -> Option<T> {
        if self.bytes.is_damaged() {
            return None;
        }
        let answer = lookup(self);
        (!self.bytes.is_damaged()).then_some(answer)
    }

    /// Checks every block (before a walk over whole tables); false when one fails.
    pub(crate) fn verify_all(&self) -> bool {
        self.bytes.verify_all()
    }

    /// An empty `SymbolFile` with this module's id, debug file and parser counters.
    pub(crate) fn empty(&self) -> &SymbolFile {
        &self.empty
    }

    /// The index's length in bytes (mapped, so in the page cache rather than the heap).
    pub(crate) fn len(&self) -> usize {
        self.bytes.len()
    }

    /// The `MODULE` line's debug id.
    pub(crate) fn module_id(&self) -> &str {
        &self.module_id
    }

    /// How many records a section holds.
    fn count(&self, s: Section) -> usize {
        self.sections[s as usize].len() / s.record_len()
    }

    /// How many functions and public symbols the index holds (from its directory).
    pub(crate) fn counts(&self) -> (usize, usize) {
        (self.count(Section::Functions), self.count(Section::Publics))
    }

    /// Record `i` of a section (empty when out of range).
    fn record(&self, s: Section, i: usize) -> &[u8] {
        let range = &self.sections[s as usize];
        let len = s.record_len();
        i.checked_mul(len)
            .and_then(|at| range.start.checked_add(at))
            .filter(|_| i < self.count(s))
            .and_then(|at| self.bytes.get(at..at.checked_add(len)?))
            .unwrap_or(&[])
    }

    /// A string of the blob (empty when out of its bounds, in a block that failed its check, or
    /// not valid UTF-8).
    fn str(&self, r: StrRef) -> &str {
        let start = self.strings.start.saturating_add(r.offset as usize);
        let end = start.saturating_add(r.len as usize).min(self.strings.end);
        self.bytes
            .get(start..end)
            .and_then(|b| std::str::from_utf8(b).ok())
            .unwrap_or("")
    }

    /// The first u64 of record `i`: the sort key of ranged and public records.
    fn key(&self, s: Section, i: usize) -> u64 {
        Get::new(self.record(s, i)).u64()
    }

    /// How many records of a sorted section have a key `<= addr` (or `< addr`).
    fn partition(&self, s: Section, addr: u64, inclusive: bool) -> usize {
        let (mut lo, mut hi) = (0, self.count(s));
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let k = self.key(s, mid);
            if k < addr || (inclusive && k == addr) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo
    }

    /// The record of a range-sorted section whose range covers `addr`.
    fn covering(&self, s: Section, addr: u64) -> Option<usize> {
        let i = self.partition(s, addr, true).checked_sub(1)?;
        let mut get = Get::new(self.record(s, i));
        let (_, end) = (get.u64(), get.u64());
        (addr <= end).then_some(i)
    }

    fn function(&self, i: usize) -> FunctionRecord {
        let mut g = Get::new(self.record(Section::Functions, i));
        let (start, end, address, size, parameter_size, name) =
            (g.u64(), g.u64(), g.u64(), g.u32(), g.u32(), g.str());
        let lines = self.run(Section::Lines, g.u32(), g.u32());
        let inlinees = self.run(Section::Inlinees, g.u32(), g.u32());
        FunctionRecord {
            start,
            end,
            address,
            size,
            parameter_size,
            name,
            lines,
            inlinees,
        }
    }

    /// Records `first..first + count` of a section, cut to the records it holds.
    fn run(&self, s: Section, first: u32, count: u32) -> Range<usize> {
        let n = self.count(s);
        let start = (first as usize).min(n);
        start..start.saturating_add(count as usize).min(n)
    }

    /// The function whose range covers `rva`: (address, size) as the parser has them.
    pub(crate) fn function_at(&self, rva: u64) -> Option<(u64, u32)> {
        let f = self.function(self.covering(Section::Functions, rva)?);
        Some((f.address, f.size))
    }

    /// Every function: (name, address, size), by address.
    pub(crate) fn functions(&self) -> impl Iterator<Item = (&str, u64, u32)> + '_ {
        (0..self.count(Section::Functions)).map(|i| {
            let f = self.function(i);
            (self.str(f.name), f.address, f.size)
        })
    }

    /// Every public symbol: (name, address), in the parser's order.
    pub(crate) fn publics(&self) -> impl Iterator<Item = (&str, u64)> + '_ {
        (0..self.count(Section::Publics)).map(|i| {
            let p = self.public(i);
            (self.str(p.1), p.0)
        })
    }

    fn public(&self, i: usize) -> (u64, StrRef, u32) {
        let mut g = Get::new(self.record(Section::Publics, i));
        let (address, parameter_size, name) = (g.u64(), g.u32(), g.str());
        (address, name, parameter_size)
    }

    /// The PDB data symbols (name, RVA).
    pub(crate) fn data_symbols(&self) -> Vec<(String, u64)> {
        (0..self.count(Section::Data))
            .map(|i| {
                let mut g = Get::new(self.record(Section::Data, i));
                let (rva, name) = (g.u64(), g.str());
                (self.str(name).to_string(), rva)
            })
            .collect()
    }

    /// A `SymbolFile` holding what Breakpad's `fill_symbol` and `walk_frame` consult at
    /// `rva`: the function covering it (with all its lines and inlinees, and the files and
    /// origins they name), else the nearest function below it and the nearest public at or
    /// below it (`fill_symbol` drops a public that such a function cuts off), and the CFI and
    /// `STACK WIN` records covering it.
    pub(crate) fn symbols_at(&self, rva: u64) -> SymbolFile {
        let mut out = self.empty.clone();
        let function = match self.covering(Section::Functions, rva) {
            Some(i) => Some(i),
            None => {
                if let Some(i) = self.partition(Section::Publics, rva, true).checked_sub(1) {
                    self.add_public(i, &mut out);
                }
                self.partition(Section::Functions, rva, false)
                    .checked_sub(1)
            }
        };
        if let Some(i) = function {
            self.add_function(i, &mut out);
        }
        if let Some(i) = self.covering(Section::Cfi, rva) {
            self.add_cfi(i, &mut out);
        }
        if let Some(i) = self.covering(Section::WinFrameData, rva) {
            self.add_win_framedata(i, &mut out);
        }
        if let Some(i) = self.covering(Section::WinFpo, rva) {
            self.add_win_fpo(i, &mut out);
        }
        out
    }

    fn add_public(&self, i: usize, out: &mut SymbolFile) {
        let Some(template) = self.templates.publics.first() else {
            return;
        };
        let (address, name, parameter_size) = self.public(i);
        let mut p = template.clone();
        p.address = address;
        p.name = self.str(name).to_string();
        p.parameter_size = parameter_size;
        out.publics.push(p);
    }

    fn add_function(&self, i: usize, out: &mut SymbolFile) {
        let Some((_, template)) = self.templates.functions.ranges_values().next() else {
            return;
        };
        let (Some((_, line)), Some(inlinee)) = (
            template.lines.ranges_values().next(),
            template.inlinees.first(),
        ) else {
            return;
        };
        let f = self.function(i);
        let lines = f.lines.clone().filter_map(|i| {
            let mut g = Get::new(self.record(Section::Lines, i));
            let (start, end) = (g.u64(), g.u64());
            let mut l = line.clone();
            l.address = g.u64();
            l.size = g.u32();
            l.file = g.u32();
            l.line = g.u32();
            (start <= end).then(|| (range_map::Range::new(start, end), l))
        });
        let lines = range_map_of(lines);
        let inlinees: Vec<_> = f
            .inlinees
            .clone()
            .map(|i| {
                let mut g = Get::new(self.record(Section::Inlinees, i));
                let mut x = inlinee.clone();
                x.depth = g.u32();
                x.size = g.u32();
                x.address = g.u64();
                x.call_file = g.u32();
                x.call_line = g.u32();
                x.origin_id = g.u32();
                x
            })
            .collect();
        for (_, l) in lines.ranges_values() {
            self.add_named(Section::Files, l.file, &mut out.files);
        }
        for x in &inlinees {
            self.add_named(Section::Files, x.call_file, &mut out.files);
            self.add_named(Section::Origins, x.origin_id, &mut out.inline_origins);
        }
        let mut function = template.clone();
        function.address = f.address;
        function.size = f.size;
        function.parameter_size = f.parameter_size;
        function.name = self.str(f.name).to_string();
        function.lines = lines;
        function.inlinees = inlinees;
        out.functions = ranged(f.start, f.end, function);
    }

    /// Adds the file or origin `id` (sorted by id in its section), when there is one.
    fn add_named(&self, s: Section, id: u32, out: &mut HashMap<u32, String>) {
        if out.contains_key(&id) {
            return;
        }
        let (mut lo, mut hi) = (0, self.count(s));
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let mut g = Get::new(self.record(s, mid));
            match g.u32().cmp(&id) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => {
                    out.insert(id, self.str(g.str()).to_string());
                    return;
                }
            }
        }
    }

    fn add_cfi(&self, i: usize, out: &mut SymbolFile) {
        let Some((_, template)) = self.templates.cfi_stack_info.ranges_values().next() else {
            return;
        };
        let mut g = Get::new(self.record(Section::Cfi, i));
        let (start, end, address, rules, size) = (g.u64(), g.u64(), g.u64(), g.str(), g.u32());
        let add_rules = self.run(Section::CfiAdd, g.u32(), g.u32());
        let mut cfi = template.clone();
        cfi.init = CfiRules {
            address,
            rules: self.str(rules).to_string(),
        };
        cfi.size = size;
        cfi.add_rules = add_rules
            .map(|a| {
                let mut g = Get::new(self.record(Section::CfiAdd, a));
                let address = g.u64();
                CfiRules {
                    address,
                    rules: self.str(g.str()).to_string(),
                }
            })
            .collect();
        out.cfi_stack_info = ranged(start, end, cfi);
    }

    /// The numbers of a `STACK WIN` record: range start and end, then address, size,
    /// prologue, epilogue, parameters, saved registers, locals, max stack, kind; and its
    /// program string.
    fn win(&self, s: Section, i: usize) -> ([u64; 3], [u32; 8], StrRef) {
        let mut g = Get::new(self.record(s, i));
        let wide = [g.u64(), g.u64(), g.u64()];
        let mut narrow = [0u32; 8];
        narrow.iter_mut().for_each(|n| *n = g.u32());
        (wide, narrow, g.str())
    }

    /// A frame-data record: its program string can only be set by the parser, so the record
    /// is parsed from one `STACK WIN 4` line, then its numbers are filled in.
    fn add_win_framedata(&self, i: usize, out: &mut SymbolFile) {
        let ([start, end, address], n, program) = self.win(Section::WinFrameData, i);
        if n[7] != WIN_PROGRAM {
            return;
        }
        let text = format!(
            "MODULE windows x86 0 t\nSTACK WIN 4 0 1 0 0 0 0 0 0 1 {}\n",
            self.str(program)
        );
        let Ok(parsed) = SymbolFile::from_bytes(text.as_bytes()) else {
            return;
        };
        let Some((_, template)) = parsed.win_stack_framedata_info.ranges_values().next() else {
            return;
        };
        let mut win = template.clone();
        win.address = address;
        [
            win.size,
            win.prologue_size,
            win.epilogue_size,
            win.parameter_size,
            win.saved_register_size,
            win.local_size,
            win.max_stack_size,
        ] = [n[0], n[1], n[2], n[3], n[4], n[5], n[6]];
        out.win_stack_framedata_info = ranged(start, end, win);
    }

    /// An FPO record: copied from the template that does or does not allocate a base pointer.
    fn add_win_fpo(&self, i: usize, out: &mut SymbolFile) {
        let ([start, end, address], n, _) = self.win(Section::WinFpo, i);
        let mut templates = self.templates.win_stack_fpo_info.ranges_values();
        let (with_bp, without_bp) = (templates.next(), templates.next());
        let template = match n[7] {
            WIN_BASE_POINTER => with_bp,
            WIN_NO_BASE_POINTER => without_bp,
            _ => None,
        };
        let Some((_, template)) = template else {
            return;
        };
        let mut win = template.clone();
        win.address = address;
        [
            win.size,
            win.prologue_size,
            win.epilogue_size,
            win.parameter_size,
            win.saved_register_size,
            win.local_size,
            win.max_stack_size,
        ] = [n[0], n[1], n[2], n[3], n[4], n[5], n[6]];
        out.win_stack_fpo_info = ranged(start, end, win);
    }
}

/// A range map of one entry (empty when the range is reversed, as only a damaged file has).
pub(crate) fn ranged<V: Clone + std::fmt::Debug + Eq>(
    start: u64,
    end: u64,
    value: V,
) -> RangeMap<u64, V> {
    range_map_of(
        std::iter::once(value)
            .filter(|_| start <= end)
            .map(|v| (range_map::Range::new(start, end), v)),
    )
}

/// A range map of sorted, non-overlapping entries (overlaps, only in a damaged file, are
/// dropped as the range map's own builder drops them).
fn range_map_of<V: Clone + std::fmt::Debug + Eq>(
    entries: impl Iterator<Item = (range_map::Range<u64>, V)>,
) -> RangeMap<u64, V> {
    RangeMap::try_from_iter(entries).unwrap_or_else(|e| e.non_overlapping)
}
