//! One pass over a Breakpad symbol file's text that finds where each record starts, without
//! parsing what the records say: function, CFI, public, `FILE` and `INLINE_ORIGIN` records as
//! (address, size, byte range) arrays, the way breakpad-symbols' parser would keep them.
//!
//! The scanner is deliberately stricter than the parser: it accepts only the plain shape
//! `dump_syms` writes (numbers within their widths, UTF-8 text, lines ending in
//! `\n` or `\r\n`, `MODULE` first), and for anything else — a line the parser would skip, repair
//! or reject — it reports [`Unsupported`] so the caller parses the whole file instead. Where the parser
//! resolves overlaps between records (functions, CFI or `STACK WIN` ranges that overlap,
//! duplicates, records out of order, duplicate file or origin ids, `STACK WIN` sizes cut to
//! the next record) the scan resolves them by the same rules, so lookups answer as the whole
//! parse does.

use std::ops::Range;

/// Longest line the scan accepts: the parser's buffer may drop longer ones.
const MAX_LINE: usize = 64 * 1024;

/// Why a text is left to the whole-file parser, and on which line (1-based).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unsupported {
    /// The line that was not in the plain shape (0 for the whole text).
    pub line: usize,
    /// What was found there.
    pub reason: &'static str,
}

/// A record with an address range: a function with its line, inline and origin lines, or a
/// `STACK CFI INIT` with its `STACK CFI` lines.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Block {
    /// First address.
    pub start: u64,
    /// Last address (inclusive).
    pub end: u64,
    /// Size in bytes, as the record gives it.
    pub size: u32,
    /// The record's text: its first line through its last subline, newlines included.
    pub text: Range<usize>,
    /// The function's name (empty for CFI).
    pub name: Range<usize>,
}

/// A `PUBLIC` record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Public {
    /// Its address.
    pub address: u64,
    /// Its parameter size.
    pub parameter_size: u32,
    /// Its name.
    pub name: Range<usize>,
    /// Its line, newline included.
    pub line: Range<usize>,
}

/// A `FILE` or `INLINE_ORIGIN` record: an id and its name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Named {
    /// The id.
    pub id: u32,
    /// The name.
    pub name: Range<usize>,
}

/// Where a symbol file's records are, as the parser would keep them.
#[derive(Debug, Default)]
pub(crate) struct Scan {
    /// The `MODULE` line, newline included.
    pub module_line: Range<usize>,
    /// Functions the parser keeps, by address, without overlaps.
    pub functions: Vec<Block>,
    /// CFI records the parser keeps, by address, without overlaps.
    pub cfi: Vec<Block>,
    /// `STACK WIN 4` (frame data) records the parser keeps, by address, without overlaps;
    /// `size` and `end` as its repairs leave them, `text` the record's line.
    pub win_framedata: Vec<Block>,
    /// `STACK WIN 0` (FPO) records the parser keeps, likewise.
    pub win_fpo: Vec<Block>,
    /// Public symbols in the parser's order (address, name, parameter size).
    pub publics: Vec<Public>,
    /// File names by id (the last record of an id wins, as in the parser's map).
    pub files: Vec<Named>,
    /// Inline origins by id (the last record of an id wins).
    pub origins: Vec<Named>,
}

impl Scan {
    /// The name of `id` in a sorted [`Named`] list.
    pub(crate) fn named(list: &[Named], id: u32) -> Option<&Named> {
        list.binary_search_by_key(&id, |n| n.id)
            .ok()
            .map(|i| &list[i])
    }
}

/// The record whose sublines are being read.
enum Open {
    None,
    Function(Pending),
    Cfi(Pending),
}

/// A block whose end is not known yet.
struct Pending {
    address: u64,
    size: u32,
    start: usize,
    name: Range<usize>,
}

impl Pending {
    /// The finished block; `None` for a record the parser drops (size 0, range past 2^64).
    fn finish(self, end: usize) -> Option<Block> {
        let last = self
            .address
            .checked_add(u64::from(self.size))?
            .checked_sub(1)
            .filter(|_| self.size > 0)?;
        Some(Block {
            start: self.address,
            end: last,
            size: self.size,
            text: self.start..end,
            name: self.name,
        })
    }
}

/// Scans `text`; [`Unsupported`] when it is not in the plain shape the scan answers for.
pub(crate) fn scan(text: &[u8]) -> Result<Scan, Unsupported> {
    let whole = |reason| Unsupported { line: 0, reason };
    if std::str::from_utf8(text).is_err() {
        return Err(whole("not UTF-8"));
    }
    if !text.ends_with(b"\n") {
        return Err(whole("no newline at the end"));
    }
    let mut out = Scan::default();
    let (mut files, mut origins) = (Vec::new(), Vec::new());
    let mut open = Open::None;
    let mut at = 0;
    let mut number = 0;
    // (Most files have no carriage return at all: then no line needs the check.)
    let has_cr = memchr::memchr(b'\r', text).is_some();
    while at < text.len() {
        let newline = memchr::memchr(b'\n', &text[at..]).map_or(text.len(), |i| at + i);
        let line_range = at..newline + 1;
        let mut content = &text[at..newline];
        while let [rest @ .., b'\r'] = content {
            content = rest;
        }
        number += 1;
        let bad = |reason| Unsupported {
            line: number,
            reason,
        };
        if content.len() > MAX_LINE {
            return Err(bad("line too long"));
        }
        if has_cr && memchr::memchr(b'\r', content).is_some() {
            return Err(bad("carriage return inside a line"));
        }
        let fields = Fields {
            line: content,
            base: at,
            at: 0,
        };
        // Sublines of the open record.
        match &open {
            Open::Function(_) => {
                // Line records, most of the text, first.
                if content.first().is_some_and(u8::is_ascii_hexdigit)
                    && line_data(fields.clone()).is_some()
                {
                    at = line_range.end;
                    continue;
                }
                // (The parser tests these two prefixes literally, a single space included.)
                if content.starts_with(b"INLINE_ORIGIN ") {
                    let mut f = fields;
                    f.tag(b"INLINE_ORIGIN ");
                    origins.push(named(f).ok_or(bad("INLINE_ORIGIN"))?);
                    at = line_range.end;
                    continue;
                }
                if content.starts_with(b"INLINE ") {
                    inline(fields).ok_or(bad("INLINE"))?;
                    at = line_range.end;
                    continue;
                }
            }
            Open::Cfi(_) => {
                if cfi_rule(fields.clone()).is_some() {
                    at = line_range.end;
                    continue;
                }
            }
            Open::None => {}
        }
        // A top-level line ends the open record.
        match std::mem::replace(&mut open, Open::None) {
            Open::Function(p) => out.functions.extend(p.finish(at)),
            Open::Cfi(p) => out.cfi.extend(p.finish(at)),
            Open::None => {}
        }
        let kind = |keyword: &[u8]| {
            let mut f = fields.clone();
            (f.tag(keyword) && f.space().is_some()).then_some(f)
        };
        if number == 1 {
            kind(b"MODULE").ok_or(bad("no MODULE line first"))?;
            out.module_line = line_range.clone();
        } else if content.is_empty() || kind(b"INFO").is_some() {
            // Ignored by the parser.
        } else if let Some(f) = kind(b"FUNC") {
            open = Open::Function(function(f, at).ok_or(bad("FUNC"))?);
        } else if let Some(f) = kind(b"STACK CFI INIT") {
            open = Open::Cfi(cfi_init(f, at).ok_or(bad("STACK CFI INIT"))?);
        } else if let Some(f) = kind(b"PUBLIC") {
            out.publics
                .push(public(f, line_range.clone()).ok_or(bad("PUBLIC"))?);
        } else if let Some(f) = kind(b"FILE") {
            files.push(named(f).ok_or(bad("FILE"))?);
        } else if let Some(f) = kind(b"INLINE_ORIGIN") {
            origins.push(named(f).ok_or(bad("INLINE_ORIGIN"))?);
        } else if let Some(f) = kind(b"STACK WIN") {
            let (framedata, record) = stack_win(f, line_range.clone()).ok_or(bad("STACK WIN"))?;
            if let Some(record) = record {
                let list = if framedata {
                    &mut out.win_framedata
                } else {
                    &mut out.win_fpo
                };
                insert_stack_win(list, record).ok_or(bad("STACK WIN size cut to nothing"))?;
            }
        } else {
            return Err(bad("a line the scan does not know"));
        }
        at = line_range.end;
    }
    match open {
        Open::Function(p) => out.functions.extend(p.finish(text.len())),
        Open::Cfi(p) => out.cfi.extend(p.finish(text.len())),
        Open::None => {}
    }
    keep_first_of_overlaps(&mut out.functions);
    keep_first_of_overlaps(&mut out.cfi);
    keep_first_of_overlaps(&mut out.win_framedata);
    keep_first_of_overlaps(&mut out.win_fpo);
    out.publics.sort_by(|a, b| {
        (a.address, &text[a.name.clone()], a.parameter_size).cmp(&(
            b.address,
            &text[b.name.clone()],
            b.parameter_size,
        ))
    });
    out.files = last_of_each_id(files);
    out.origins = last_of_each_id(origins);
    Ok(out)
}

/// Sorts blocks by range and drops each that overlaps one kept before it: the parser's
/// range-map builder does the same (different ranges always mean different records, and of
/// two records with one range the first is kept).
fn keep_first_of_overlaps(blocks: &mut Vec<Block>) {
    blocks.sort_by_key(|b| (b.start, b.end));
    let mut last_end: Option<u64> = None;
    blocks.retain(|b| {
        let keep = last_end.is_none_or(|end| b.start > end);
        if keep {
            last_end = Some(b.end);
        }
        keep
    });
}

/// Adds a `STACK WIN` record to its list in text order, as the parser does: a record that
/// overlaps the one before it and starts later cuts that one's size to end where it starts;
/// one that starts at or before it is dropped unless its range is the same. `None` when a cut
/// leaves a size the parser cannot make a range of (it would panic).
fn insert_stack_win(list: &mut Vec<Block>, record: Block) -> Option<()> {
    if let Some(last) = list.last_mut() {
        if last.start <= record.end && last.end >= record.start {
            if record.start > last.start {
                // (The parser's cut: a u32 of the distance, its range recomputed.)
                last.size = (record.start - last.start) as u32;
                last.end = last
                    .start
                    .checked_add(u64::from(last.size))
                    .filter(|_| last.size > 0)?
                    - 1;
            } else if (last.start, last.end) != (record.start, record.end) {
                return Some(());
            }
        }
    }
    list.push(record);
    Some(())
}

/// One record per id, the last one of the text (as inserting into a map keeps).
fn last_of_each_id(mut list: Vec<Named>) -> Vec<Named> {
    list.sort_by_key(|n| n.id);
    let mut out: Vec<Named> = Vec::with_capacity(list.len());
    for n in list {
        match out.last_mut() {
            Some(last) if last.id == n.id => *last = n,
            _ => out.push(n),
        }
    }
    out
}

/// Each byte's value as a hex digit (either case), 0xff for other bytes: a decimal digit is a
/// value below 10.
const DIGIT_VALUE: [u8; 256] = {
    let mut table = [0xff; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = match b as u8 {
            c @ b'0'..=b'9' => c - b'0',
            c @ b'a'..=b'f' => c - b'a' + 10,
            c @ b'A'..=b'F' => c - b'A' + 10,
            _ => 0xff,
        };
        b += 1;
    }
    table
};

/// The fields of one line (without its line ending), read left to right in the plain shape.
#[derive(Clone)]
struct Fields<'a> {
    line: &'a [u8],
    /// Where the line starts in the text.
    base: usize,
    at: usize,
}

impl Fields<'_> {
    /// Skips `tag` when the line goes on with it.
    #[inline]
    fn tag(&mut self, tag: &[u8]) -> bool {
        let found = self.line[self.at..].starts_with(tag);
        if found {
            self.at += tag.len();
        }
        found
    }

    /// The digits at the cursor (1 to `max` of them, of `radix`: 10 or 16).
    #[inline]
    fn digits(&mut self, radix: u8, max: usize) -> Option<u64> {
        let (mut value, mut n) = (0u64, 0);
        for &b in &self.line[self.at..] {
            let d = DIGIT_VALUE[usize::from(b)];
            if d >= radix {
                break;
            }
            n += 1;
            if n > max {
                return None;
            }
            // (At most 16 hex or 10 decimal digits: no overflow.)
            value = value * u64::from(radix) + u64::from(d);
        }
        if n == 0 {
            return None;
        }
        self.at += n;
        Some(value)
    }

    /// A hex number of at most 16 digits.
    #[inline]
    fn hex64(&mut self) -> Option<u64> {
        self.digits(16, 16)
    }

    /// A hex number of at most 8 digits.
    #[inline]
    fn hex32(&mut self) -> Option<u32> {
        self.digits(16, 8).and_then(|v| u32::try_from(v).ok())
    }

    /// A decimal number of at most 10 digits that fits 32 bits.
    #[inline]
    fn dec(&mut self) -> Option<u32> {
        self.digits(10, 10).and_then(|v| u32::try_from(v).ok())
    }

    /// One or more blanks (spaces or tabs), as the parser's separator.
    #[inline]
    fn space(&mut self) -> Option<()> {
        let n = self.line[self.at..]
            .iter()
            .take_while(|b| matches!(b, b' ' | b'\t'))
            .count();
        self.at += n;
        (n > 0).then_some(())
    }

    /// The end of the line.
    #[inline]
    fn end(&self) -> Option<()> {
        (self.at == self.line.len()).then_some(())
    }

    /// The rest of the line, as a text range (it starts after the blanks [`Fields::space`]
    /// skipped, as the parser's names do).
    fn rest(&self) -> Range<usize> {
        self.base + self.at..self.base + self.line.len()
    }
}

/// `FUNC [m ]address size parameter_size name`, after its keyword.
fn function(mut f: Fields<'_>, start: usize) -> Option<Pending> {
    if f.tag(b"m") {
        f.space()?;
    }
    let address = f.hex64()?;
    f.space()?;
    let size = f.hex32()?;
    f.space()?;
    f.hex32()?;
    f.space()?;
    Some(Pending {
        address,
        size,
        start,
        name: f.rest(),
    })
}

/// `address size line file`: a line record of a function.
fn line_data(mut f: Fields<'_>) -> Option<()> {
    f.hex64()?;
    f.space()?;
    f.hex32()?;
    f.space()?;
    f.dec()?;
    f.space()?;
    f.dec()?;
    f.end()
}

/// `INLINE depth call_line call_file origin (address size)+`.
fn inline(mut f: Fields<'_>) -> Option<()> {
    f.tag(b"INLINE");
    f.space()?;
    for _ in 0..4 {
        f.dec()?;
        f.space()?;
    }
    loop {
        f.hex64()?;
        f.space()?;
        f.hex32()?;
        if f.end().is_some() {
            return Some(());
        }
        f.space()?;
    }
}

/// `STACK CFI INIT address size rules`, after its keyword.
fn cfi_init(mut f: Fields<'_>, start: usize) -> Option<Pending> {
    let address = f.hex64()?;
    f.space()?;
    let size = f.hex32()?;
    f.space()?;
    Some(Pending {
        address,
        size,
        start,
        name: 0..0,
    })
}

/// `STACK CFI address rules`.
fn cfi_rule(mut f: Fields<'_>) -> Option<()> {
    f.tag(b"STACK CFI").then_some(())?;
    f.space()?;
    f.hex64()?;
    f.space()
}

/// `STACK WIN type address size prologue epilogue parameters saved_registers locals
/// max_stack has_program_string program_string_or_base_pointer`, after its keyword: whether it
/// is frame data (type 4) rather than FPO (type 0), and the record when the parser keeps one
/// (a known type whose program-string flag agrees with it, a size above 0, a range below
/// 2^64).
fn stack_win(mut f: Fields<'_>, line: Range<usize>) -> Option<(bool, Option<Block>)> {
    let ty = *f.line.get(f.at)?;
    if !ty.is_ascii_hexdigit() {
        return None;
    }
    f.at += 1;
    f.space()?;
    let address = f.hex64()?;
    f.space()?;
    let size = f.hex32()?;
    for _ in 0..6 {
        f.space()?;
        f.hex32()?;
    }
    f.space()?;
    let flag = *f.line.get(f.at)?;
    if !flag.is_ascii_digit() {
        return None;
    }
    f.at += 1;
    f.space()?;
    let framedata = ty == b'4';
    let kept = framedata == (flag == b'1') && matches!(ty, b'4' | b'0');
    let record = Pending {
        address,
        size,
        start: line.start,
        name: 0..0,
    };
    Some((framedata, record.finish(line.end).filter(|_| kept)))
}

/// `PUBLIC [m ]address parameter_size name`, after its keyword.
fn public(mut f: Fields<'_>, line: Range<usize>) -> Option<Public> {
    if f.tag(b"m") {
        f.space()?;
    }
    let address = f.hex64()?;
    f.space()?;
    let parameter_size = f.hex32()?;
    f.space()?;
    Some(Public {
        address,
        parameter_size,
        name: f.rest(),
        line,
    })
}

/// `FILE id name` or `INLINE_ORIGIN id name`, after its keyword.
fn named(mut f: Fields<'_>) -> Option<Named> {
    let id = f.dec()?;
    f.space()?;
    Some(Named { id, name: f.rest() })
}
