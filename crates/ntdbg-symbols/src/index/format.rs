//! The index file's layout: a header, a body (a section directory, then sections of
//! fixed-size little-endian records and one string blob), then the body's block checksums.
//!
//! ```text
//! header      magic "NTDBGIX\0", version u32, section count u32, body length u64,
//!             block table CRC-32 u32, block length u32                        (32 bytes)
//! directory   per section: offset u64 (from the file's start), length u64    (16 bytes each)
//! sections    Meta, Functions, Lines, Inlinees, Files, Origins, Publics, Cfi, CfiAdd,
//!             WinFrameData, WinFpo, Data, Strings
//! block table one CRC-32 u32 per block of the body (the last block may be short)
//! ```
//!
//! The body is cut into blocks of the header's block length; each block is checked against
//! its CRC-32 the first time a read touches it, and the block table itself is checked on
//! open. Strings are `(offset, length)` pairs into the `Strings` section, which is UTF-8 as a
//! whole. Ranges are those of the parsed `SymbolFile`'s range maps (after the parser's
//! overlap repairs), inclusive ends.

/// The first bytes of an index.
pub(crate) const MAGIC: &[u8; 8] = b"NTDBGIX\0";
/// The format version; any other is rebuilt.
pub(crate) const VERSION: u32 = 2;
/// The block length the writer uses (see BENCHMARKS.md, "Index block length", for how it was
/// chosen).
pub(crate) const BLOCK_LEN: u32 = 8 << 10;
/// The block lengths a reader accepts: powers of two in this range.
pub(crate) const BLOCK_LENS: std::ops::RangeInclusive<u32> = 512..=(16 << 20);
/// Bytes before the section directory.
pub(crate) const HEADER_LEN: usize = 32;
/// Bytes of one directory entry.
pub(crate) const DIRECTORY_ENTRY_LEN: usize = 16;

/// The sections, in directory order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Section {
    /// One record: the identity, module id, debug file and the parser's counters.
    Meta,
    /// Functions sorted by range start.
    Functions,
    /// Every function's line records (each function's run sorted by range start).
    Lines,
    /// Every function's inlinees (each function's run in the parser's order).
    Inlinees,
    /// Source files by id, sorted by id.
    Files,
    /// Inline origins by id, sorted by id.
    Origins,
    /// Public symbols in the parser's order (sorted).
    Publics,
    /// `STACK CFI INIT` records sorted by range start.
    Cfi,
    /// Every CFI record's `STACK CFI` add rules.
    CfiAdd,
    /// `STACK WIN` frame-data records sorted by range start.
    WinFrameData,
    /// `STACK WIN` FPO records sorted by range start.
    WinFpo,
    /// PDB data symbols (name, RVA) in load order.
    Data,
    /// The string blob.
    Strings,
}

impl Section {
    /// Every section, in directory order.
    pub(crate) const ALL: [Section; 13] = [
        Section::Meta,
        Section::Functions,
        Section::Lines,
        Section::Inlinees,
        Section::Files,
        Section::Origins,
        Section::Publics,
        Section::Cfi,
        Section::CfiAdd,
        Section::WinFrameData,
        Section::WinFpo,
        Section::Data,
        Section::Strings,
    ];

    /// Bytes of one record (1 for the string blob).
    pub(crate) fn record_len(self) -> usize {
        match self {
            Section::Meta => META_LEN,
            Section::Functions => FUNCTION_LEN,
            Section::Lines => LINE_LEN,
            Section::Inlinees => INLINEE_LEN,
            Section::Files | Section::Origins => NAMED_LEN,
            Section::Publics => PUBLIC_LEN,
            Section::Cfi => CFI_LEN,
            Section::CfiAdd => CFI_ADD_LEN,
            Section::WinFrameData | Section::WinFpo => WIN_LEN,
            Section::Data => DATA_LEN,
            Section::Strings => 1,
        }
    }
}

/// Meta: identity, module id, debug file (strings); four counters u64.
pub(crate) const META_LEN: usize = 3 * 8 + 4 * 8;
/// Function: range start, end, address u64; size, parameter size u32; name; first line,
/// line count, first inlinee, inlinee count u32.
pub(crate) const FUNCTION_LEN: usize = 3 * 8 + 2 * 4 + 8 + 4 * 4;
/// Line: range start, end, address u64; size, file, line, reserved u32.
pub(crate) const LINE_LEN: usize = 3 * 8 + 4 * 4;
/// Inlinee: depth, size u32; address u64; call file, call line, origin, reserved u32.
pub(crate) const INLINEE_LEN: usize = 2 * 4 + 8 + 4 * 4;
/// File or origin: id u32; name.
pub(crate) const NAMED_LEN: usize = 4 + 8;
/// Public: address u64; parameter size u32; name; reserved u32.
pub(crate) const PUBLIC_LEN: usize = 8 + 4 + 8 + 4;
/// CFI: range start, end, init address u64; init rules; size, first add rule, add rule
/// count, reserved u32.
pub(crate) const CFI_LEN: usize = 3 * 8 + 8 + 4 * 4;
/// CFI add rule: address u64; rules.
pub(crate) const CFI_ADD_LEN: usize = 8 + 8;
/// STACK WIN: range start, end, address u64; size, prologue, epilogue, parameter size,
/// saved registers, locals, max stack u32; kind u32 ([`WIN_PROGRAM`], [`WIN_NO_BASE_POINTER`],
/// [`WIN_BASE_POINTER`]); program string.
pub(crate) const WIN_LEN: usize = 3 * 8 + 7 * 4 + 4 + 8;
/// Data symbol: RVA u64; name.
pub(crate) const DATA_LEN: usize = 8 + 8;

/// One record of each kind, parsed once and then copied and filled in for each lookup:
/// breakpad-symbols lets its record types be built only by its parser (their fields are
/// public, their names are not). The two `STACK WIN` FPO records allocate a base pointer and
/// do not, in that order.
pub(crate) const TEMPLATES: &str = "MODULE windows x86 0 t\n\
FUNC 0 1 0 f\n0 1 0 0\nINLINE 0 0 0 0 0 1\nPUBLIC 0 0 p\n\
STACK CFI INIT 0 1 .cfa: $esp 4 +\n\
STACK WIN 0 0 1 0 0 0 0 0 0 0 1\nSTACK WIN 0 10 1 0 0 0 0 0 0 0 0\n";

/// A `STACK WIN` record with a program string.
pub(crate) const WIN_PROGRAM: u32 = 0;
/// A `STACK WIN` record that does not allocate a base pointer.
pub(crate) const WIN_NO_BASE_POINTER: u32 = 1;
/// A `STACK WIN` record that allocates a base pointer.
pub(crate) const WIN_BASE_POINTER: u32 = 2;

/// A string in the blob: byte offset and length.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct StrRef {
    /// Offset in the blob.
    pub(crate) offset: u32,
    /// Length in bytes.
    pub(crate) len: u32,
}

/// Appends little-endian fields to a record.
#[derive(Default)]
pub(crate) struct Put(pub(crate) Vec<u8>);

impl Put {
    pub(crate) fn u32(&mut self, v: u32) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    pub(crate) fn u64(&mut self, v: u64) -> &mut Self {
        self.0.extend_from_slice(&v.to_le_bytes());
        self
    }
    pub(crate) fn str(&mut self, s: StrRef) -> &mut Self {
        self.u32(s.offset).u32(s.len)
    }
}

/// Reads little-endian fields of one record in order; reading past its end gives zeros
/// (records are sliced to their exact length, so that never happens in a sound file).
pub(crate) struct Get<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Get<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Get<'a> {
        Get { bytes, at: 0 }
    }
    fn take<const N: usize>(&mut self) -> [u8; N] {
        let mut out = [0u8; N];
        if let Some(b) = self.bytes.get(self.at..self.at + N) {
            out.copy_from_slice(b);
        }
        self.at += N;
        out
    }
    pub(crate) fn u32(&mut self) -> u32 {
        u32::from_le_bytes(self.take())
    }
    pub(crate) fn u64(&mut self) -> u64 {
        u64::from_le_bytes(self.take())
    }
    pub(crate) fn str(&mut self) -> StrRef {
        StrRef {
            offset: self.u32(),
            len: self.u32(),
        }
    }
}
