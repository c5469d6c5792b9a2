//! A module's image as mapped memory, from a file on the symbol path or from dump memory.
//!
//! Unwinding x64 and ARM64 code needs the image's `.pdata` and the unwind data it points to.
//! An image read from a file is laid out as the loader would map it; one read from dump
//! memory may have holes (pages the dump does not hold), so the byte ranges really read are
//! kept and checked before any unwind data is trusted.

use std::ops::Range;
use std::path::PathBuf;

use ntdbg_formats::pe::{map_file_image, PeInfo, PeLayout, MAX_MAPPED_IMAGE_SIZE};
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
}

impl MappedImage {
    /// Maps a file image.
    pub fn from_file(file: &[u8], path: PathBuf) -> Result<MappedImage, FormatError> {
        let info = PeInfo::parse(file, PeLayout::File)?;
        let bytes = map_file_image(file, &info)?;
        let len = bytes.len() as u32;
        Ok(MappedImage {
            bytes: bytes.into(),
            // The loader zero-fills what the file does not hold, so all of it is real.
            valid: vec![Range { start: 0, end: len }],
            info,
            source: ImageSource::File(path),
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
        let full = MappedImage::from_file(&file, PathBuf::from("crashy.exe")).unwrap();
        let base = 0x1_4000_0000u64;
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
