//! Memory as commands show it: the dump's bytes and, where the dump lacks them inside a
//! module, the read-only bytes of the module's image file found on the symbol path (as
//! WinDbg reads minidumps, which rarely hold code or constants).
//!
//! Nothing is invented: writable sections (`.data`) are never taken from the image (the
//! process may have changed them), and every byte that came from an image is reported as such.

use crate::Session;
use minidump::MinidumpModule;
use ntdbg_symbols::ModuleSymbols;
use ntdbg_targets::{MemoryRegion, TargetKind};
use std::ops::Range;
use std::sync::Arc;

/// Where a span of readable memory comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MemorySource {
    /// The dump (or the live target) holds the bytes.
    Dump,
    /// A module's image file holds them (a read-only section, relocated to the load address).
    Image,
}

/// A contiguous run of readable memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemorySpan {
    /// The addresses.
    pub range: Range<u64>,
    /// Where the bytes come from.
    pub source: MemorySource,
}

/// The result of [`Session::read_memory`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemoryRead {
    /// One entry per byte; `None` where neither the dump nor an image file holds it.
    pub bytes: Vec<Option<u8>>,
    /// The address ranges whose bytes came from an image file, sorted and disjoint.
    pub from_image: Vec<Range<u64>>,
}

impl MemoryRead {
    /// Whether no byte at all could be read.
    pub fn is_missing(&self) -> bool {
        self.bytes.iter().all(Option::is_none)
    }
}

/// A module's image-backed range with what is needed to read it.
struct ImageRange {
    range: Range<u64>,
    base: u64,
    symbols: Arc<ModuleSymbols>,
}

impl Session {
    /// Reads `len` bytes at `addr`: from the dump, and for holes inside a module from the
    /// read-only sections of its image file (not for live targets, whose memory is the truth).
    pub fn read_memory(&self, addr: u64, len: usize) -> MemoryRead {
        let mut bytes = self.target().read_virtual(addr, len);
        let mut from_image: Vec<Range<u64>> = Vec::new();
        if bytes.iter().all(Option::is_some) {
            return MemoryRead { bytes, from_image };
        }
        let end = addr.saturating_add(len as u64);
        for image in self.image_ranges(addr..end, true) {
            let Some(data) = image.symbols.image_file_bytes(
                image.range.start - image.base,
                (image.range.end - image.range.start) as usize,
            ) else {
                continue;
            };
            for (i, b) in data.iter().enumerate() {
                let at = image.range.start + i as u64;
                let slot = &mut bytes[(at - addr) as usize];
                if slot.is_some() {
                    continue;
                }
                *slot = Some(*b);
                match from_image.last_mut() {
                    Some(last) if last.end == at => last.end = at + 1,
                    _ => from_image.push(at..at + 1),
                }
            }
        }
        MemoryRead { bytes, from_image }
    }

    /// Every readable span of `range`, sorted by address: the dump's captured regions, and
    /// the image-backed ranges of modules where the dump holds nothing. With `load_images`
    /// false, only modules whose symbols are already loaded contribute their images (a wide
    /// range must not load every module's symbols; see [`Session::modules_not_loaded`]).
    pub fn memory_spans(&self, range: Range<u64>, load_images: bool) -> Vec<MemorySpan> {
        let dump: Vec<Range<u64>> = self
            .target()
            .regions()
            .into_iter()
            .filter_map(|r| clip(r.base..r.end(), &range))
            .collect();
        let mut spans: Vec<MemorySpan> = dump
            .iter()
            .map(|r| MemorySpan {
                range: r.clone(),
                source: MemorySource::Dump,
            })
            .collect();
        for image in self.image_ranges(range, load_images) {
            for part in subtract(image.range, &dump) {
                spans.push(MemorySpan {
                    range: part,
                    source: MemorySource::Image,
                });
            }
        }
        spans.sort_by_key(|s| s.range.start);
        spans
    }

    /// The captured regions nearest `addr` that do not hold it: the last one ending at or
    /// before it and the first one starting after it.
    pub fn nearest_dump_regions(&self, addr: u64) -> (Option<MemoryRegion>, Option<MemoryRegion>) {
        let regions = self.target().regions();
        let before = regions.iter().rev().find(|r| r.end() <= addr).copied();
        let after = regions.iter().find(|r| r.base > addr).copied();
        (before, after)
    }

    /// How many modules overlapping `range` have not had their symbols (and image) loaded.
    pub fn modules_not_loaded(&self, range: Range<u64>) -> usize {
        self.modules_in(&range)
            .iter()
            .filter(|m| self.symbols().loaded(m.raw.base_of_image).is_none())
            .count()
    }

    /// The modules overlapping `range`.
    fn modules_in(&self, range: &Range<u64>) -> Vec<&MinidumpModule> {
        self.target()
            .modules()
            .by_addr()
            .filter(|m| {
                let base = m.raw.base_of_image;
                base < range.end
                    && base.saturating_add(u64::from(m.raw.size_of_image)) > range.start
            })
            .collect()
    }

    /// The image-backed ranges of the modules overlapping `range`, clipped to it. With `load`,
    /// those modules' symbols are loaded (that is where their images are found); without, only
    /// modules already loaded count.
    fn image_ranges(&self, range: Range<u64>, load: bool) -> Vec<ImageRange> {
        if self.target().kind() == TargetKind::Live || range.is_empty() {
            return Vec::new();
        }
        let modules = self.modules_in(&range);
        if load && modules.len() > 1 {
            self.preload_symbols(&modules);
        }
        let mut out = Vec::new();
        for m in modules {
            let base = m.raw.base_of_image;
            let symbols = if load {
                self.module_symbols(m)
            } else {
                match self.symbols().loaded(base) {
                    Some(s) => s,
                    None => continue,
                }
            };
            for rva in symbols.image_file_ranges() {
                let abs = base.saturating_add(rva.start)..base.saturating_add(rva.end);
                if let Some(part) = clip(abs, &range) {
                    out.push(ImageRange {
                        range: part,
                        base,
                        symbols: symbols.clone(),
                    });
                }
            }
        }
        out
    }
}

/// `r` cut to `bounds`, if anything is left.
fn clip(r: Range<u64>, bounds: &Range<u64>) -> Option<Range<u64>> {
    let start = r.start.max(bounds.start);
    let end = r.end.min(bounds.end);
    (start < end).then_some(start..end)
}

/// The parts of `r` not covered by `covered` (sorted, disjoint).
fn subtract(r: Range<u64>, covered: &[Range<u64>]) -> Vec<Range<u64>> {
    let mut out = Vec::new();
    let mut at = r.start;
    for c in covered
        .iter()
        .filter(|c| c.end > r.start && c.start < r.end)
    {
        if c.start > at {
            out.push(at..c.start);
        }
        at = at.max(c.end);
    }
    if at < r.end {
        out.push(at..r.end);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subtract_leaves_the_uncovered_parts() {
        let whole = subtract(0..100, &[]);
        assert_eq!((whole.len(), whole.first()), (1, Some(&(0..100))));
        assert_eq!(
            subtract(0..100, &[10..20, 50..60]),
            vec![0..10, 20..50, 60..100]
        );
        let middle = subtract(10..20, &[0..15, 18..30]);
        assert_eq!((middle.len(), middle.first()), (1, Some(&(15..18))));
        assert!(subtract(10..20, std::slice::from_ref(&(0..30))).is_empty());
    }

    #[test]
    fn clip_cuts_to_the_bounds() {
        assert_eq!(clip(0..100, &(50..150)), Some(50..100));
        assert_eq!(clip(0..10, &(10..20)), None);
    }
}
