//! An index's bytes behind one accessor that checks each block of the body against its
//! CRC-32 the first time a read touches it, so opening costs the header and the block table,
//! not a pass over (and a page-in of) the whole file.

use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::format::{Get, BLOCK_LENS, HEADER_LEN, MAGIC, VERSION};

/// The bytes of an index: a read-only file mapping, or a vector (tests and the fuzz target).
pub(crate) enum Bytes {
    /// A mapped index file.
    Mapped(ntdbg_files::FileMap),
    /// An index built in memory.
    Owned(Vec<u8>),
}

impl Bytes {
    /// Whether a page of the mapped file vanished (it was truncated): what was read since may
    /// be zeros.
    fn faulted(&self) -> bool {
        match self {
            Bytes::Mapped(m) => m.faulted(),
            Bytes::Owned(_) => false,
        }
    }
}

impl std::ops::Deref for Bytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Mapped(m) => m,
            Bytes::Owned(v) => v,
        }
    }
}

/// An index's bytes whose header and block table were checked; body bytes are handed out only
/// once every block they lie in matched its CRC-32. Shared across threads: a block is marked
/// verified in a lock-free bitset (two threads may both check it once, harmlessly).
pub(crate) struct CheckedBytes {
    bytes: Bytes,
    /// The body (section directory and sections) in the file.
    body: Range<usize>,
    /// Bytes of one block.
    block_len: usize,
    /// The block table (one CRC-32 per block) in the file.
    table: Range<usize>,
    /// One bit per block: set once the block matched its CRC-32.
    verified: Box<[AtomicU64]>,
    /// Set once any block failed its check: nothing read from this index since is trusted.
    damaged: AtomicBool,
}

impl CheckedBytes {
    /// Checks the header (magic, version, `sections` sections, body and block lengths that
    /// add up to the file's length) and the block table's own CRC-32; `None` when any fails.
    pub(crate) fn open(bytes: Bytes, sections: usize) -> Option<CheckedBytes> {
        let header = bytes.get(..HEADER_LEN)?;
        let mut get = Get::new(&header[8..]);
        let (version, count, body_len, table_crc, block_len) =
            (get.u32(), get.u32(), get.u64(), get.u32(), get.u32());
        if &header[..8] != MAGIC
            || version != VERSION
            || count as usize != sections
            || !block_len.is_power_of_two()
            || !BLOCK_LENS.contains(&block_len)
        {
            return None;
        }
        let body_len = usize::try_from(body_len).ok()?;
        let block_len = block_len as usize;
        let blocks = body_len.div_ceil(block_len);
        let body = HEADER_LEN..HEADER_LEN.checked_add(body_len)?;
        let table = body.end..body.end.checked_add(blocks.checked_mul(4)?)?;
        if table.end != bytes.len() || crc32fast::hash(&bytes[table.clone()]) != table_crc {
            return None;
        }
        let verified = (0..blocks.div_ceil(64))
            .map(|_| AtomicU64::new(0))
            .collect();
        Some(CheckedBytes {
            bytes,
            body,
            block_len,
            table,
            verified,
            damaged: AtomicBool::new(false),
        })
    }

    /// The file's length in bytes.
    pub(crate) fn len(&self) -> usize {
        self.bytes.len()
    }

    /// Where the body lies in the file.
    pub(crate) fn body(&self) -> Range<usize> {
        self.body.clone()
    }

    /// The file's bytes `range` (which must lie in the body), once every block it touches
    /// matched its CRC-32; `None` outside the body or when a block fails its check (the index
    /// is then marked damaged).
    pub(crate) fn get(&self, range: Range<usize>) -> Option<&[u8]> {
        if range.start < self.body.start || range.end > self.body.end || range.start > range.end {
            return None;
        }
        if !range.is_empty() {
            let first = (range.start - self.body.start) / self.block_len;
            let last = (range.end - 1 - self.body.start) / self.block_len;
            if !(first..=last).all(|b| self.check(b)) {
                return None;
            }
        }
        self.bytes.get(range)
    }

    /// Whether a block failed its check, or a page of the mapped file vanished since it was
    /// opened (a truncated index reads zeros where blocks had matched).
    pub(crate) fn is_damaged(&self) -> bool {
        self.damaged.load(Ordering::Acquire) || self.bytes.faulted()
    }

    /// `Ok` while the index file has its length and no page of it vanished. (Its
    /// modification time marks it as recently used, and moves; its blocks have checksums.)
    pub(crate) fn check_source(&self) -> Result<(), ntdbg_files::FileChanged> {
        match &self.bytes {
            Bytes::Mapped(m) => m.check_length(),
            Bytes::Owned(_) => Ok(()),
        }
    }

    /// Checks every block not checked yet; false when one fails.
    pub(crate) fn verify_all(&self) -> bool {
        let blocks = self.body.len().div_ceil(self.block_len);
        (0..blocks).all(|b| self.check(b))
    }

    /// Whether block `b` matches its CRC-32 (checked on first use, remembered after).
    fn check(&self, b: usize) -> bool {
        let (word, bit) = (&self.verified[b / 64], 1u64 << (b % 64));
        if word.load(Ordering::Acquire) & bit != 0 {
            return true;
        }
        let start = self.body.start + b * self.block_len;
        let block = &self.bytes[start..(start + self.block_len).min(self.body.end)];
        let at = self.table.start + b * 4;
        let want = Get::new(&self.bytes[at..at + 4]).u32();
        if crc32fast::hash(block) == want {
            word.fetch_or(bit, Ordering::AcqRel);
            true
        } else {
            if !self.damaged.swap(true, Ordering::AcqRel) {
                tracing::warn!("symbol index damaged: block {b} failed its check");
            }
            false
        }
    }
}
