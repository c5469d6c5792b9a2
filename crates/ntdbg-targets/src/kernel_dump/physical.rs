//! Physical memory of full, kernel and bitmap dumps: where each physical page lies in the file.

use super::header::{u64_at, PhysicalRun};
use std::sync::OnceLock;

/// Page size of x86, x64 and ARM64 Windows.
pub const PAGE_SIZE: u64 = 0x1000;

/// One run with where its first page lies in the file.
#[derive(Debug, Clone, Copy)]
pub struct FileRun {
    base_page: u64,
    page_count: u64,
    file_offset: u64,
}

/// How a dump lays out its physical pages.
#[derive(Debug)]
pub enum PhysicalMemory {
    /// No physical memory (small/triage dumps, or a layout we do not read).
    None,
    /// Full dump: the header's runs, stored one after another from the end of the header.
    Runs(Vec<FileRun>),
    /// Bitmap dump: bit N set means page N is present; present pages are stored in order.
    Bitmap(Bitmap),
}

/// The bitmap of a bitmap (or old kernel summary) dump.
#[derive(Debug)]
pub struct Bitmap {
    /// File offset of the bitmap.
    bitmap_offset: usize,
    /// Number of bits (pages) the bitmap covers.
    pages: u64,
    /// File offset of the first present page.
    first_page: u64,
    /// Present pages before each block of [`RANK_BLOCK_BITS`] bits; built on first use so
    /// that opening stays independent of the dump's size.
    rank: OnceLock<Vec<u64>>,
}

/// Most PFN ranges read from an RDMP table (a real dump has a few hundred).
const MAX_RDMP_RANGES: u64 = 1 << 16;

/// Bits per rank block.
const RANK_BLOCK_BITS: u64 = 4096;

impl PhysicalMemory {
    /// The runs of a full dump, checked: each run must fit in `u64` page numbers and the runs
    /// must ascend without overlapping. Pages past the end of the file read as missing.
    pub fn from_runs(runs: &[PhysicalRun], data_offset: u64) -> Result<PhysicalMemory, String> {
        let mut out = Vec::with_capacity(runs.len());
        let mut file_offset = data_offset;
        for (i, r) in runs.iter().enumerate() {
            r.base_page
                .checked_add(r.page_count)
                .filter(|e| e.checked_mul(PAGE_SIZE).is_some())
                .ok_or_else(|| {
                    format!(
                        "physical memory run {i} ({:#x} pages at page {:#x}) overflows",
                        r.page_count, r.base_page
                    )
                })?;
            out.push(FileRun {
                base_page: r.base_page,
                page_count: r.page_count,
                file_offset,
            });
            file_offset = r
                .page_count
                .checked_mul(PAGE_SIZE)
                .and_then(|len| file_offset.checked_add(len))
                .ok_or_else(|| format!("physical memory run {i} overflows the file offsets"))?;
        }
        out.sort_by_key(|r| r.base_page);
        for pair in out.windows(2) {
            if pair[0].base_page + pair[0].page_count > pair[1].base_page {
                return Err(format!(
                    "physical memory runs at pages {:#x} and {:#x} overlap",
                    pair[0].base_page, pair[1].base_page
                ));
            }
        }
        Ok(PhysicalMemory::Runs(out))
    }

    /// The `RDMP` header of Windows 10+ kernel (DumpType 8, 9) and complete (10) memory
    /// dumps at `at`: PFN ranges whose pages are packed from `FirstPageOffset`.
    pub fn from_rdmp(buf: &[u8], at: usize, complete: bool) -> Result<PhysicalMemory, String> {
        let field32 = |off: usize| super::header::u32_at(buf, at + off);
        if field32(0) != Some(0x40) || buf.get(at + 4..at + 12) != Some(&b"RDMPDUMP"[..]) {
            return Err(format!("no RDMP header at {at:#x}"));
        }
        let (Some(metadata_size), Some(first_page)) =
            (u64_at(buf, at + 0x10), u64_at(buf, at + 0x18))
        else {
            return Err("the RDMP header is cut short".into());
        };
        let total_pages = if complete {
            u64_at(buf, at + 0x28).unwrap_or(0)
        } else {
            u64::MAX
        };
        // MetadataSize counts from offset 0x20: the 16 bytes before the ranges, then the ranges.
        let count = (metadata_size.saturating_sub(0x10) / 16).min(MAX_RDMP_RANGES);
        let mut runs = Vec::new();
        let mut pages = 0u64;
        for i in 0..count {
            if complete && pages >= total_pages {
                break;
            }
            let off = usize::try_from(i)
                .ok()
                .and_then(|i| i.checked_mul(16))
                .and_then(|o| o.checked_add(at + 0x30));
            let (Some(base_page), Some(page_count)) = (
                off.and_then(|o| u64_at(buf, o)),
                off.and_then(|o| u64_at(buf, o + 8)),
            ) else {
                return Err(format!(
                    "the RDMP table of {count} PFN ranges runs past the end of the file"
                ));
            };
            if base_page == 0 {
                break;
            }
            pages = pages.saturating_add(page_count);
            runs.push(PhysicalRun {
                base_page,
                page_count,
            });
        }
        Self::from_runs(&runs, first_page)
    }

    /// The bitmap header at `at` (`SDMP`/`FDMP`), checked against the file length.
    pub fn from_bitmap(buf: &[u8], at: usize) -> Result<PhysicalMemory, String> {
        let sig = buf.get(at..at.saturating_add(8)).unwrap_or_default();
        if sig != b"SDMPDUMP" && sig != b"FDMPDUMP" {
            return Err(format!(
                "no SDMP/FDMP bitmap header at {at:#x} (found {:?})",
                String::from_utf8_lossy(sig)
            ));
        }
        let (Some(first_page), Some(_present), Some(pages)) = (
            u64_at(buf, at + 0x20),
            u64_at(buf, at + 0x28),
            u64_at(buf, at + 0x30),
        ) else {
            return Err("the bitmap header is cut short".into());
        };
        let bitmap_offset = at + 0x38;
        let bitmap_bytes = pages.div_ceil(8);
        let bitmap_end = (bitmap_offset as u64).checked_add(bitmap_bytes);
        if bitmap_end.is_none_or(|end| end > buf.len() as u64) {
            return Err(format!(
                "the bitmap of {pages:#x} pages does not fit in the file ({:#x} bytes)",
                buf.len()
            ));
        }
        if pages.checked_mul(PAGE_SIZE).is_none() {
            return Err(format!("the bitmap's page count {pages:#x} overflows"));
        }
        Ok(PhysicalMemory::Bitmap(Bitmap {
            bitmap_offset,
            pages,
            first_page,
            rank: OnceLock::new(),
        }))
    }

    /// File offset of physical page `pfn`, when the dump holds it (not checked against the
    /// file length: the caller's slice access does that).
    pub fn page_offset(&self, buf: &[u8], pfn: u64) -> Option<u64> {
        match self {
            PhysicalMemory::None => None,
            PhysicalMemory::Runs(runs) => {
                let idx = runs.partition_point(|r| r.base_page <= pfn);
                let run = runs.get(idx.checked_sub(1)?)?;
                let skip = pfn - run.base_page;
                (skip < run.page_count)
                    .then(|| run.file_offset.checked_add(skip.checked_mul(PAGE_SIZE)?))
                    .flatten()
            }
            PhysicalMemory::Bitmap(b) => b.page_offset(buf, pfn),
        }
    }

    /// Number of physical pages the layout describes (present or not, for bitmaps: present).
    pub fn page_count(&self, buf: &[u8]) -> u64 {
        match self {
            PhysicalMemory::None => 0,
            PhysicalMemory::Runs(runs) => runs.iter().map(|r| r.page_count).sum(),
            PhysicalMemory::Bitmap(b) => b.rank(buf).last().copied().unwrap_or(0),
        }
    }
}

impl Bitmap {
    fn bit(&self, buf: &[u8], n: u64) -> bool {
        let byte = self.bitmap_offset as u64 + n / 8;
        usize::try_from(byte)
            .ok()
            .and_then(|b| buf.get(b))
            .is_some_and(|v| v & (1 << (n % 8)) != 0)
    }

    fn bytes<'a>(&self, buf: &'a [u8]) -> &'a [u8] {
        let len = usize::try_from(self.pages.div_ceil(8)).unwrap_or(0);
        buf.get(self.bitmap_offset..self.bitmap_offset.saturating_add(len))
            .unwrap_or_default()
    }

    /// Cumulative present-page counts at each block start, plus the total at the end.
    fn rank(&self, buf: &[u8]) -> &[u64] {
        self.rank.get_or_init(|| {
            let bytes = self.bytes(buf);
            let per_block = (RANK_BLOCK_BITS / 8) as usize;
            let mut out = Vec::with_capacity(bytes.len() / per_block + 2);
            let mut total = 0u64;
            for chunk in bytes.chunks(per_block) {
                out.push(total);
                total += chunk.iter().map(|b| u64::from(b.count_ones())).sum::<u64>();
            }
            // The last byte may hold bits past `pages`: they are not pages.
            let extra = (self.pages.div_ceil(8) * 8).saturating_sub(self.pages);
            if extra > 0 {
                if let Some(last) = bytes.last() {
                    let mask = !(0xffu8 >> extra);
                    total -= u64::from((last & mask).count_ones());
                }
            }
            out.push(total);
            out
        })
    }

    fn page_offset(&self, buf: &[u8], pfn: u64) -> Option<u64> {
        if pfn >= self.pages || !self.bit(buf, pfn) {
            return None;
        }
        let rank = self.rank(buf);
        let block = pfn / RANK_BLOCK_BITS;
        let mut index = *rank.get(usize::try_from(block).ok()?)?;
        let block_start_byte = (block * RANK_BLOCK_BITS / 8) as usize;
        let bytes = self.bytes(buf);
        let within = (pfn % RANK_BLOCK_BITS) as usize;
        let full_bytes = bytes.get(block_start_byte..block_start_byte + within / 8)?;
        index += full_bytes
            .iter()
            .map(|b| u64::from(b.count_ones()))
            .sum::<u64>();
        let partial = *bytes.get(block_start_byte + within / 8)?;
        let mask = (1u16 << (within % 8)) as u8 - 1;
        index += u64::from((partial & mask).count_ones());
        self.first_page.checked_add(index.checked_mul(PAGE_SIZE)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_are_checked() {
        let ok = PhysicalMemory::from_runs(
            &[
                PhysicalRun {
                    base_page: 1,
                    page_count: 2,
                },
                PhysicalRun {
                    base_page: 10,
                    page_count: 1,
                },
            ],
            0x2000,
        )
        .ok();
        let ok = ok.as_ref();
        assert_eq!(ok.and_then(|m| m.page_offset(&[], 0)), None);
        assert_eq!(ok.and_then(|m| m.page_offset(&[], 1)), Some(0x2000));
        assert_eq!(ok.and_then(|m| m.page_offset(&[], 2)), Some(0x3000));
        assert_eq!(ok.and_then(|m| m.page_offset(&[], 3)), None);
        assert_eq!(ok.and_then(|m| m.page_offset(&[], 10)), Some(0x4000));
        let overflow = [PhysicalRun {
            base_page: u64::MAX - 1,
            page_count: 5,
        }];
        assert!(PhysicalMemory::from_runs(&overflow, 0x2000).is_err());
        let overlap = [
            PhysicalRun {
                base_page: 5,
                page_count: 5,
            },
            PhysicalRun {
                base_page: 6,
                page_count: 1,
            },
        ];
        assert!(PhysicalMemory::from_runs(&overlap, 0x2000).is_err());
    }

    #[test]
    fn bitmap_ranks() {
        let mut buf = vec![0u8; 0x38 + 2];
        buf[..8].copy_from_slice(b"SDMPDUMP");
        buf[0x20..0x28].copy_from_slice(&0x1000u64.to_le_bytes());
        buf[0x30..0x38].copy_from_slice(&12u64.to_le_bytes());
        buf[0x38] = 0b1000_0101; // pages 0, 2, 7
        buf[0x39] = 0b1111_0010; // page 9; bits 12.. are past the end
        let m = PhysicalMemory::from_bitmap(&buf, 0).ok();
        let m = m.as_ref();
        let at = |p| m.and_then(|m| m.page_offset(&buf, p));
        assert_eq!(at(0), Some(0x1000));
        assert_eq!(at(1), None);
        assert_eq!(at(2), Some(0x2000));
        assert_eq!(at(7), Some(0x3000));
        assert_eq!(at(9), Some(0x4000));
        assert_eq!(at(12), None);
        assert_eq!(m.map(|m| m.page_count(&buf)), Some(4));
    }
}
