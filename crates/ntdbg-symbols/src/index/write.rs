//! Building an index from a parsed `SymbolFile` and writing it into the cache.

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use breakpad_symbols::SymbolFile;

use super::format::{
    Put, Section, StrRef, BLOCK_LEN, DIRECTORY_ENTRY_LEN, HEADER_LEN, MAGIC, TEMPLATES, VERSION,
    WIN_BASE_POINTER, WIN_NO_BASE_POINTER, WIN_PROGRAM,
};

/// Deduplicated strings, appended to one blob.
#[derive(Default)]
struct Strings {
    blob: Vec<u8>,
    seen: HashMap<String, StrRef>,
    too_big: bool,
}

impl Strings {
    fn add(&mut self, s: &str) -> StrRef {
        if let Some(r) = self.seen.get(s) {
            return *r;
        }
        let (Ok(offset), Ok(len)) = (u32::try_from(self.blob.len()), u32::try_from(s.len())) else {
            self.too_big = true;
            return StrRef::default();
        };
        self.blob.extend_from_slice(s.as_bytes());
        let r = StrRef { offset, len };
        self.seen.insert(s.to_string(), r);
        r
    }
}

/// A count or index as the format's u32; `None` past its range.
fn small(n: usize) -> Option<u32> {
    u32::try_from(n).ok()
}

/// The index bytes for `symbols` (plus PDB `data` symbols) under `identity`; `None` when a
/// table is too large for the format's 32-bit counts and offsets.
pub(crate) fn build(
    identity: &str,
    symbols: &SymbolFile,
    data: &[(String, u64)],
) -> Option<Vec<u8>> {
    let mut strings = Strings::default();
    let mut sections: Vec<Put> = Section::ALL.iter().map(|_| Put::default()).collect();
    // (`Section` is declared in directory order, so `s as usize` is its place.)
    fn put(sections: &mut [Put], s: Section) -> &mut Put {
        &mut sections[s as usize]
    }

    let meta = (
        strings.add(identity),
        strings.add(&symbols.module_id),
        strings.add(&symbols.debug_file),
    );
    put(&mut sections, Section::Meta)
        .str(meta.0)
        .str(meta.1)
        .str(meta.2)
        .u64(symbols.ambiguities_repaired)
        .u64(symbols.ambiguities_discarded)
        .u64(symbols.corruptions_discarded)
        .u64(symbols.cfi_eval_corruptions);

    let (mut lines, mut inlinees) = (0usize, 0usize);
    for (range, f) in symbols.functions.ranges_values() {
        let name = strings.add(&f.name);
        put(&mut sections, Section::Functions)
            .u64(range.start)
            .u64(range.end)
            .u64(f.address)
            .u32(f.size)
            .u32(f.parameter_size)
            .str(name)
            .u32(small(lines)?)
            .u32(small(f.lines.num_ranges())?)
            .u32(small(inlinees)?)
            .u32(small(f.inlinees.len())?);
        for (range, l) in f.lines.ranges_values() {
            put(&mut sections, Section::Lines)
                .u64(range.start)
                .u64(range.end)
                .u64(l.address)
                .u32(l.size)
                .u32(l.file)
                .u32(l.line)
                .u32(0);
        }
        for i in &f.inlinees {
            put(&mut sections, Section::Inlinees)
                .u32(i.depth)
                .u32(i.size)
                .u64(i.address)
                .u32(i.call_file)
                .u32(i.call_line)
                .u32(i.origin_id)
                .u32(0);
        }
        lines += f.lines.num_ranges();
        inlinees += f.inlinees.len();
    }
    for (section, table) in [
        (Section::Files, &symbols.files),
        (Section::Origins, &symbols.inline_origins),
    ] {
        let mut sorted: Vec<(&u32, &String)> = table.iter().collect();
        sorted.sort_unstable_by_key(|(id, _)| **id);
        for (id, name) in sorted {
            let name = strings.add(name);
            put(&mut sections, section).u32(*id).str(name);
        }
    }
    for p in &symbols.publics {
        let name = strings.add(&p.name);
        put(&mut sections, Section::Publics)
            .u64(p.address)
            .u32(p.parameter_size)
            .str(name)
            .u32(0);
    }
    let mut add_rules = 0usize;
    for (range, c) in symbols.cfi_stack_info.ranges_values() {
        let rules = strings.add(&c.init.rules);
        put(&mut sections, Section::Cfi)
            .u64(range.start)
            .u64(range.end)
            .u64(c.init.address)
            .str(rules)
            .u32(c.size)
            .u32(small(add_rules)?)
            .u32(small(c.add_rules.len())?)
            .u32(0);
        for a in &c.add_rules {
            let rules = strings.add(&a.rules);
            put(&mut sections, Section::CfiAdd)
                .u64(a.address)
                .str(rules);
        }
        add_rules += c.add_rules.len();
    }
    // breakpad-symbols does not name the kind of a `STACK WIN` record's last field: it is told
    // apart by comparing with the templates' two FPO kinds, else read from its debug text.
    let templates = SymbolFile::from_bytes(TEMPLATES.as_bytes()).ok()?;
    let mut fpo = templates.win_stack_fpo_info.ranges_values();
    let with_bp = &fpo.next()?.1.program_string_or_base_pointer;
    let without_bp = &fpo.next()?.1.program_string_or_base_pointer;
    for (section, table) in [
        (Section::WinFrameData, &symbols.win_stack_framedata_info),
        (Section::WinFpo, &symbols.win_stack_fpo_info),
    ] {
        for (range, w) in table.ranges_values() {
            let thing = &w.program_string_or_base_pointer;
            let (kind, program) = if thing == with_bp {
                (WIN_BASE_POINTER, StrRef::default())
            } else if thing == without_bp {
                (WIN_NO_BASE_POINTER, StrRef::default())
            } else {
                let program = program_string(&format!("{thing:?}"))?;
                (WIN_PROGRAM, strings.add(&program))
            };
            put(&mut sections, section)
                .u64(range.start)
                .u64(range.end)
                .u64(w.address)
                .u32(w.size)
                .u32(w.prologue_size)
                .u32(w.epilogue_size)
                .u32(w.parameter_size)
                .u32(w.saved_register_size)
                .u32(w.local_size)
                .u32(w.max_stack_size)
                .u32(kind)
                .str(program);
        }
    }
    for (name, rva) in data {
        let name = strings.add(name);
        put(&mut sections, Section::Data).u64(*rva).str(name);
    }
    if strings.too_big {
        return None;
    }
    put(&mut sections, Section::Strings)
        .0
        .extend_from_slice(&strings.blob);
    Some(assemble(&sections))
}

/// The program string of a `STACK WIN` record from its debug text, `ProgramString("…")`:
/// `None` unless unescaping `\"` and `\\` gives back a string with exactly that debug text.
fn program_string(debug: &str) -> Option<String> {
    let quoted = debug.strip_prefix("ProgramString(")?.strip_suffix(')')?;
    let inner = quoted.strip_prefix('"')?.strip_suffix('"')?;
    let mut out = String::with_capacity(inner.len());
    let mut chars = inner.chars();
    while let Some(c) = chars.next() {
        out.push(if c == '\\' { chars.next()? } else { c });
    }
    (format!("{out:?}") == quoted).then_some(out)
}

/// Header, directory, sections and block table as one file image.
fn assemble(sections: &[Put]) -> Vec<u8> {
    let directory_len = sections.len() * DIRECTORY_ENTRY_LEN;
    let total: usize =
        HEADER_LEN + directory_len + sections.iter().map(|s| s.0.len()).sum::<usize>();
    let mut body = Put(Vec::with_capacity(total - HEADER_LEN));
    let mut offset = (HEADER_LEN + directory_len) as u64;
    for s in sections {
        body.u64(offset).u64(s.0.len() as u64);
        offset += s.0.len() as u64;
    }
    for s in sections {
        body.0.extend_from_slice(&s.0);
    }
    let table = block_table(&body.0);
    let mut out = Put(Vec::with_capacity(total + table.0.len()));
    out.0.extend_from_slice(MAGIC);
    out.u32(VERSION)
        .u32(sections.len() as u32)
        .u64(body.0.len() as u64)
        .u32(crc32fast::hash(&table.0))
        .u32(BLOCK_LEN);
    out.0.extend_from_slice(&body.0);
    out.0.extend_from_slice(&table.0);
    out.0
}

/// The CRC-32 of every [`BLOCK_LEN`] block of `body`, in order.
fn block_table(body: &[u8]) -> Put {
    let mut table = Put::default();
    for block in body.chunks(BLOCK_LEN as usize) {
        table.u32(crc32fast::hash(block));
    }
    table
}

/// `bytes` with its block table and the table's CRC-32 made to match its body (as the header
/// gives the body's length), whatever the body holds: how tests and the fuzz target get
/// damage past the checksums to the records. Too short a file is returned as it is.
pub(crate) fn seal(mut bytes: Vec<u8>) -> Vec<u8> {
    let Some(body_len) = bytes
        .get(16..24)
        .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
    else {
        return bytes;
    };
    let Some(body_end) = usize::try_from(body_len)
        .ok()
        .and_then(|len| HEADER_LEN.checked_add(len))
        .filter(|end| *end <= bytes.len())
    else {
        return bytes;
    };
    let table = block_table(&bytes[HEADER_LEN..body_end]);
    bytes.truncate(body_end);
    bytes.extend_from_slice(&table.0);
    bytes[24..28].copy_from_slice(&crc32fast::hash(&table.0).to_le_bytes());
    bytes
}

/// Temporary-file names are unique within the process by this counter (and across processes
/// by the process id).
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Writes `bytes` to `path` through a temporary file renamed into place (a reader never sees
/// half an index), then keeps the folder under `cap` bytes. Failures only mean no index.
pub(crate) fn persist(path: &Path, bytes: &[u8], cap: u64) {
    let Some(dir) = path.parent() else {
        return;
    };
    let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    let temp = dir.join(format!(".tmp-{}-{n}", std::process::id()));
    let written = std::fs::create_dir_all(dir)
        .and_then(|()| std::fs::File::create(&temp))
        .and_then(|mut f| f.write_all(bytes))
        .and_then(|()| std::fs::rename(&temp, path));
    match written {
        Ok(()) => crate::unpacked::evict(dir, cap),
        Err(e) => {
            let _ = std::fs::remove_file(&temp);
            tracing::debug!(index = %path.display(), "symbol index not written: {e}");
        }
    }
}
