//! A module's image as mapped memory, from a file on the symbol path or from dump memory.
//!
//! Unwinding x64 and ARM64 code needs the image's `.pdata` and the unwind data it points to.
//! An image read from a file is laid out as the loader would map it; one read from dump
//! memory may have holes (pages the dump does not hold), so the byte ranges really read are
//! kept and checked before any unwind data is trusted.

use std::ops::Range;
use std::path::PathBuf;

use ntdbg_formats::pe::{
    apply_base_relocations, map_file_image, PeInfo, PeLayout, MAX_MAPPED_IMAGE_SIZE,
};
use ntdbg_formats::FormatError;

use crate::SharedBytes;

/// Where an image's bytes came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ImageSource {
    /// A file found on the symbol path (verified by timestamp and size).
    File(PathBuf),
    /// The module's memory in the dump.
    DumpMemory,
}

/// An image in mapped layout with the ranges backed by real data.
#[derive(Debug)]
pub(crate) struct MappedImage {
    /// The bytes, offset = RVA. Unread pages are zero and not in `valid`.
    pub bytes: SharedBytes,
    /// Sorted, disjoint RVA ranges that hold real data.
    pub valid: Vec<Range<u32>>,
    /// The parsed headers.
    pub info: PeInfo,
    /// Where it came from.
    pub source: ImageSource,
    /// Whether the bytes are as they were at the module's load address: false when base
    /// relocations could not be applied (the image still serves unwinding, whose tables hold
    /// RVAs, but not memory display).
    pub at_load_address: bool,
}

impl MappedImage {
    /// Maps a file image as the loader would at `load_base`: sections at their RVAs, base
    /// relocations applied when `load_base` is not the image's preferred base.
    pub fn from_file(
        file: &[u8],
        path: PathBuf,
        load_base: u64,
    ) -> Result<MappedImage, FormatError> {
        let info = PeInfo::parse(file, PeLayout::File)?;
        let mut bytes = map_file_image(file, &info)?;
        let at_load_address = apply_base_relocations(&mut bytes, &info, load_base).is_ok();
        let len = bytes.len() as u32;
        Ok(MappedImage {
            bytes: bytes.into(),
            // The loader zero-fills what the file does not hold, so all of it is real.
            valid: vec![Range { start: 0, end: len }],
            info,
            source: ImageSource::File(path),
            at_load_address,
        })
    }

    /// Reads the image at `base` from dump memory: all at once when the dump holds it whole,
    /// else the headers and then section by section. `None` when not even the headers are
    /// there.
    pub fn from_memory(
        read: &dyn Fn(u64, usize) -> Option<SharedBytes>,
        base: u64,
        size: u32,
    ) -> Result<Option<MappedImage>, FormatError> {
        if size == 0 || size > MAX_MAPPED_IMAGE_SIZE {
            return Ok(None);
        }
        if let Some(bytes) = read(base, size as usize).filter(|b| b.len() == size as usize) {
            let info = PeInfo::parse(&bytes, PeLayout::Mapped)?;
            return Ok(Some(MappedImage {
                bytes,
                valid: vec![Range {
                    start: 0,
                    end: size,
                }],
                info,
                source: ImageSource::DumpMemory,
                at_load_address: true,
            }));
        }
        let header_len = size.min(0x1000);
        let Some(header) =
            read(base, header_len as usize).filter(|b| b.len() == header_len as usize)
        else {
            return Ok(None);
        };
        let headers = PeInfo::parse(&header, PeLayout::Mapped)?;
        let mut sections = Vec::new();
        for s in &headers.sections {
            let start = s.virtual_address;
            let Some(end) = start.checked_add(s.mapped_size()).map(|e| e.min(size)) else {
                continue;
            };
            if start >= end {
                continue;
            }
            let len = (end - start) as usize;
            if let Some(data) = read(base + u64::from(start), len).filter(|d| d.len() == len) {
                sections.push((start..end, data));
            }
        }
        // Only lay out the whole image when the dump holds more than its headers: a dump
        // that captured headers alone must not cost SizeOfImage bytes of memory.
        let mut bytes = if sections.is_empty() {
            header.to_vec()
        } else {
            vec![0u8; size as usize]
        };
        bytes[..header.len()].copy_from_slice(&header);
        let mut valid = vec![Range {
            start: 0,
            end: header_len,
        }];
        for (range, data) in sections {
            bytes[range.start as usize..range.end as usize].copy_from_slice(&data);
            valid.push(range);
        }
        valid.sort_by_key(|r| r.start);
        let info = PeInfo::parse(&bytes, PeLayout::Mapped).unwrap_or(headers);
        Ok(Some(MappedImage {
            bytes: bytes.into(),
            valid,
            info,
            source: ImageSource::DumpMemory,
            at_load_address: true,
        }))
    }

    /// Whether `len` bytes at `rva` were really read.
    pub fn is_valid(&self, rva: u32, len: u32) -> bool {
        let Some(end) = rva.checked_add(len) else {
            return false;
        };
        if len == 0 {
            return (rva as usize) <= self.bytes.len();
        }
        // Ranges may touch; walk them from the one holding `rva`.
        let mut at = rva;
        for r in self.valid.iter().skip_while(|r| r.end <= rva) {
            if r.start > at {
                return false;
            }
            at = at.max(r.end);
            if at >= end {
                return true;
            }
        }
        false
    }

    /// The RVA ranges the loader maps from the file unchanged at run time: a file image's
    /// headers and read-only sections (code, constants), sorted. Writable sections (`.data`:
    /// the process may have changed them) and gaps between sections are left out, and an
    /// image read from dump memory has none (the dump itself holds those bytes), nor one
    /// whose relocations could not be applied.
    pub fn read_only_ranges(&self) -> Vec<Range<u32>> {
        if self.source == ImageSource::DumpMemory || !self.at_load_address {
            return Vec::new();
        }
        let len = u32::try_from(self.bytes.len()).unwrap_or(u32::MAX);
        let mut ranges = Vec::with_capacity(self.info.sections.len() + 1);
        ranges.push(0..self.info.size_of_headers.min(len));
        for s in self.info.sections.iter().filter(|s| !s.is_writable()) {
            let end = s.virtual_address.saturating_add(s.mapped_size()).min(len);
            if s.virtual_address < end {
                ranges.push(s.virtual_address..end);
            }
        }
        ranges.retain(|r| !r.is_empty());
        ranges.sort_by_key(|r| r.start);
        ranges
    }

    /// Up to `len` bytes at `rva` inside one of [`MappedImage::read_only_ranges`].
    pub fn read_only_bytes(&self, rva: u32, len: usize) -> Option<&[u8]> {
        let range = self
            .read_only_ranges()
            .into_iter()
            .find(|r| r.contains(&rva))?;
        let end = (range.end as usize).min(rva as usize + len);
        self.bytes.get(rva as usize..end)
    }

    /// The bytes at `rva` to the end of the image, if `rva` is inside it.
    pub fn at(&self, rva: u32) -> Option<&[u8]> {
        self.bytes.get(rva as usize..)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sparse_memory_images_track_their_holes() {
        ntdbg_testutil::require_testdata!();
        let file = std::fs::read(ntdbg_testutil::testdata("winelab/x64/crashy.exe")).unwrap();
        let base = 0x1_4000_0000u64;
        let full = MappedImage::from_file(&file, PathBuf::from("crashy.exe"), base).unwrap();
        let text = full
            .info
            .sections
            .iter()
            .find(|s| s.name == ".text")
            .unwrap()
            .clone();
        // A dump that holds everything except .text.
        let bytes = full.bytes.clone();
        let read = move |addr: u64, len: usize| -> Option<SharedBytes> {
            let rva = addr.checked_sub(base)? as usize;
            let text_range =
                text.virtual_address as usize..(text.virtual_address + text.virtual_size) as usize;
            if rva < text_range.end && rva + len > text_range.start {
                return None;
            }
            bytes.get(rva..rva + len).map(|b| b.to_vec().into())
        };
        let image = MappedImage::from_memory(&read, base, full.info.size_of_image)
            .unwrap()
            .unwrap();
        assert_eq!(image.source, ImageSource::DumpMemory);
        assert_eq!(image.info.codeview, full.info.codeview);
        let t = full
            .info
            .sections
            .iter()
            .find(|s| s.name == ".text")
            .unwrap();
        assert!(!image.is_valid(t.virtual_address, 1));
        assert!(image.is_valid(0, 0x40));
        let pdata = full.info.exception_directory.unwrap();
        assert!(image.is_valid(pdata.rva, pdata.size));
        assert!(!image.is_valid(u32::MAX, 2));
        // Nothing readable: no image.
        let nothing = |_: u64, _: usize| -> Option<SharedBytes> { None };
        assert!(MappedImage::from_memory(&nothing, base, 0x5c000)
            .unwrap()
            .is_none());
    }
}
