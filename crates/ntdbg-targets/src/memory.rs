//! Virtual memory as a target exposes it: contiguous present chunks, holes reported.

use std::borrow::Cow;
use std::ops::Range;
use std::sync::Arc;

/// Whatever holds bytes that [`MemoryView::shared_bytes`] lends (a dump's memory mapping),
/// able to say whether they changed on disk.
pub type SharedOwner = Arc<dyn ntdbg_files::ByteSource>;

/// One contiguous range of memory captured in a target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryRegion {
    /// First virtual address.
    pub base: u64,
    /// Length in bytes.
    pub size: u64,
}

impl MemoryRegion {
    /// One past the last address (saturating).
    pub fn end(&self) -> u64 {
        self.base.saturating_add(self.size)
    }
    /// Whether `addr` lies inside the region.
    pub fn contains(&self, addr: u64) -> bool {
        addr >= self.base && addr < self.end()
    }
}

/// Reading virtual memory. Implementors supply [`MemoryView::read_chunk`]; everything else
/// is built on it and never invents bytes.
pub trait MemoryView {
    /// The bytes present at `addr`, at most `max` of them, contiguous from `addr`.
    /// `None` when `addr` itself is not present.
    fn read_chunk(&self, addr: u64, max: usize) -> Option<Cow<'_, [u8]>>;

    /// The captured memory regions, sorted by base address.
    fn regions(&self) -> Vec<MemoryRegion>;

    /// Exactly `len` bytes from `addr` without copying them: their owner (a memory-mapped
    /// dump) and where they lie in it. `None` when they are not one contiguous captured run
    /// of an owner that can be shared; [`MemoryView::read_exact`] copies instead.
    fn shared_bytes(&self, _addr: u64, _len: usize) -> Option<(SharedOwner, Range<usize>)> {
        None
    }

    /// `len` bytes from `addr`, each `None` where the target has no data.
    fn read_virtual(&self, addr: u64, len: usize) -> Vec<Option<u8>> {
        let mut out = Vec::with_capacity(len);
        let mut cursor = addr;
        while out.len() < len {
            let want = len - out.len();
            match self.read_chunk(cursor, want) {
                Some(chunk) if !chunk.is_empty() => {
                    out.extend(chunk.iter().map(|b| Some(*b)));
                    cursor = cursor.wrapping_add(chunk.len() as u64);
                }
                _ => {
                    // Skip to the next present region (or fill the rest with holes).
                    let next = self
                        .regions()
                        .into_iter()
                        .map(|r| r.base)
                        .find(|&b| b > cursor)
                        .map(|b| b - cursor)
                        .unwrap_or(u64::MAX);
                    let gap = usize::try_from(next).unwrap_or(usize::MAX).min(want);
                    out.extend(std::iter::repeat_n(None, gap));
                    cursor = cursor.wrapping_add(gap as u64);
                }
            }
        }
        out
    }

    /// Exactly `len` bytes from `addr`, or `None` if any of them is missing.
    fn read_exact(&self, addr: u64, len: usize) -> Option<Vec<u8>> {
        // Grow with what is really there: `len` may come from a corrupt header.
        let mut out = Vec::new();
        self.read_chunks(addr, len, &mut |chunk| out.extend_from_slice(chunk))?;
        Some(out)
    }

    /// Hands `take` the consecutive chunks that make up exactly `len` bytes from `addr`, in
    /// order; `None` (after some chunks, maybe) if any byte is missing.
    fn read_chunks(&self, addr: u64, len: usize, take: &mut dyn FnMut(&[u8])) -> Option<()> {
        let mut done = 0;
        while done < len {
            let chunk = self.read_chunk(addr.checked_add(done as u64)?, len - done)?;
            if chunk.is_empty() {
                return None;
            }
            let chunk = &chunk[..chunk.len().min(len - done)];
            take(chunk);
            done += chunk.len();
        }
        Some(())
    }

    /// A little-endian unsigned value of `size` bytes (1, 2, 4 or 8), read without
    /// allocating (the stack walk reads four per frame).
    fn read_uint(&self, addr: u64, size: usize) -> Option<u64> {
        if !matches!(size, 1 | 2 | 4 | 8) {
            return None;
        }
        let mut buf = [0u8; 8];
        // Almost always one captured run holds the whole value: take it from that chunk
        // without the chunk-by-chunk walk (a stack walk reads several values per frame).
        if let Some(chunk) = self.read_chunk(addr, size) {
            if let Some(value) = chunk.get(..size) {
                buf[..size].copy_from_slice(value);
                return Some(u64::from_le_bytes(buf));
            }
        }
        let mut filled = 0;
        self.read_chunks(addr, size, &mut |chunk| {
            buf[filled..filled + chunk.len()].copy_from_slice(chunk);
            filled += chunk.len();
        })?;
        Some(u64::from_le_bytes(buf))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two captured runs, `[0x1000, 0x1004)` and `[0x1004, 0x1008)`, each answered alone
    /// (a read across them takes two chunks); nothing at `0x1008`.
    struct TwoRuns;

    impl MemoryView for TwoRuns {
        fn read_chunk(&self, addr: u64, max: usize) -> Option<Cow<'_, [u8]>> {
            const BYTES: [u8; 8] = [1, 2, 3, 4, 5, 6, 7, 8];
            let (start, end) = match addr {
                0x1000..0x1004 => (addr - 0x1000, 4),
                0x1004..0x1008 => (addr - 0x1000, 8),
                _ => return None,
            };
            let start = start as usize;
            Some(Cow::Borrowed(&BYTES[start..end.min(start + max)]))
        }

        fn regions(&self) -> Vec<MemoryRegion> {
            vec![
                MemoryRegion {
                    base: 0x1000,
                    size: 4,
                },
                MemoryRegion {
                    base: 0x1004,
                    size: 4,
                },
            ]
        }
    }

    #[test]
    fn reads_join_chunks_and_never_invent_bytes() {
        let m = TwoRuns;
        assert_eq!(m.read_uint(0x1000, 8), Some(0x0807_0605_0403_0201));
        assert_eq!(m.read_uint(0x1002, 4), Some(0x0605_0403));
        assert_eq!(m.read_uint(0x1007, 1), Some(8));
        assert_eq!(m.read_exact(0x1003, 3), Some(vec![4, 5, 6]));
        // A byte missing at the end, a size that is no integer, and nothing at all.
        assert_eq!(m.read_uint(0x1006, 4), None);
        assert_eq!(m.read_exact(0x1006, 4), None);
        assert_eq!(m.read_uint(0x1000, 3), None);
        assert_eq!(m.read_uint(0x2000, 8), None);
    }
}
