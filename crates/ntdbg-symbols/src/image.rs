//! A module's image in mapped layout, from a file on the symbol path or from dump memory.
//!
//! Unwinding x64 and ARM64 code needs the image's `.pdata` and the unwind data it points to.
//! An image file is read on demand ([`crate::image_file`]): only the ranges asked for, laid
//! out as the loader would map them. One read from dump memory may have holes (pages the
//! dump does not hold), so the byte ranges really read are kept and checked before any
//! unwind data is trusted.

use std::ops::Range;
use std::path::PathBuf;

use ntdbg_files::{FileChanged, WatchedFile};
use ntdbg_formats::pe::{Export, PeInfo, PeLayout, MAX_MAPPED_IMAGE_SIZE};
use ntdbg_formats::FormatError;

use crate::image_file::FileImage;
use crate::SharedBytes;

/// Where an image's bytes came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ImageSource {
    /// A file found on the symbol path (verified by timestamp and size).
    File(PathBuf),
    /// The module's memory in the dump.
    DumpMemory,
}

/// An image in mapped layout (offset = RVA).
#[derive(Debug)]
pub(crate) struct MappedImage {
    /// The parsed headers.
    pub info: PeInfo,
    /// Where it came from.
    pub source: ImageSource,
    /// Whether the bytes are as they were at the module's load address: false when base
    /// relocations could not be applied (the image still serves unwinding, whose tables hold
    /// RVAs, but not memory display).
    pub at_load_address: bool,
    content: Content,
}

/// Where the bytes are.
#[derive(Debug)]
enum Content {
    /// Read from dump memory: unread pages are zero and not in `valid` (sorted, disjoint RVA
    /// ranges that hold real data).
    Memory {
        bytes: SharedBytes,
        valid: Vec<Range<u32>>,
    },
    /// A file read on demand; all of `0..SizeOfImage` is real (the loader zero-fills what
    /// the file does not hold).
    File(FileImage),
}

impl MappedImage {
    /// Opens an image file (`len` bytes) as the loader would map it at `load_base`: sections
    /// at their RVAs, base relocations applied when `load_base` is not the image's preferred
    /// base. Only the headers are read now; the rest when asked for.
    pub fn from_file(file: WatchedFile, load_base: u64) -> Result<MappedImage, FormatError> {
        let path = file.path().to_path_buf();
        let (info, image, at_load_address) = FileImage::open(file, load_base)?;
        Ok(MappedImage {
            info,
            source: ImageSource::File(path),
            at_load_address,
            content: Content::File(image),
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
            return Ok(Some(MappedImage::in_memory(
                info,
                bytes,
                vec![Range {
                    start: 0,
                    end: size,
                }],
            )));
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
        Ok(Some(MappedImage::in_memory(info, bytes.into(), valid)))
    }

    fn in_memory(info: PeInfo, bytes: SharedBytes, valid: Vec<Range<u32>>) -> MappedImage {
        MappedImage {
            info,
            source: ImageSource::DumpMemory,
            at_load_address: true,
            content: Content::Memory { bytes, valid },
        }
    }

    /// The image's length in mapped layout.
    fn len(&self) -> u32 {
        match &self.content {
            Content::Memory { bytes, .. } => u32::try_from(bytes.len()).unwrap_or(u32::MAX),
            Content::File(file) => file.size(),
        }
    }

    /// Bytes of the image held in memory (a file image: its page cache and relocations).
    pub fn resident_bytes(&self) -> usize {
        match &self.content {
            Content::Memory { bytes, .. } => bytes.len(),
            Content::File(file) => file.held_bytes(),
        }
    }

    /// Bytes really read (from dump memory; a file image: all of it).
    pub fn bytes_read(&self) -> u64 {
        match &self.content {
            Content::Memory { valid, .. } => valid.iter().map(|r| u64::from(r.end - r.start)).sum(),
            Content::File(file) => u64::from(file.size()),
        }
    }

    /// Whether `len` bytes at `rva` were really read.
    pub fn is_valid(&self, rva: u32, len: u32) -> bool {
        let Some(end) = rva.checked_add(len) else {
            return false;
        };
        if len == 0 {
            return rva <= self.len();
        }
        let valid = match &self.content {
            Content::Memory { valid, .. } => valid,
            Content::File(file) => return end <= file.size(),
        };
        // Ranges may touch; walk them from the one holding `rva`.
        let mut at = rva;
        for r in valid.iter().skip_while(|r| r.end <= rva) {
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

    /// `Ok` while the bytes behind the image (its file, or the dump's mapping it borrows
    /// from) hold what they held when it was read. An owner of borrowed bytes already in
    /// `checked` (many images borrow from one dump) is not checked again; one found unchanged
    /// is added.
    pub fn check_source(&self, checked: &mut Vec<usize>) -> Result<(), FileChanged> {
        match &self.content {
            Content::Memory { bytes, .. } => {
                if !checked.contains(&bytes.owner_id()) {
                    bytes.check()?;
                    checked.push(bytes.owner_id());
                }
                Ok(())
            }
            Content::File(file) => file.check_source(),
        }
    }

    /// `len` bytes at `rva` if all of them were really read.
    pub fn read(&self, rva: u32, len: usize) -> Option<SharedBytes> {
        if !self.is_valid(rva, u32::try_from(len).ok()?) {
            return None;
        }
        self.read_laid_out(rva, len)
    }

    /// `len` bytes at `rva` as laid out, inside the image; an image read from dump memory
    /// gives zero for the pages it lacks.
    pub fn read_laid_out(&self, rva: u32, len: usize) -> Option<SharedBytes> {
        match &self.content {
            Content::Memory { bytes, .. } => {
                let start = rva as usize;
                bytes.slice(start..start.checked_add(len)?)
            }
            Content::File(file) => file.read(rva, len).map(SharedBytes::from),
        }
    }

    /// Up to `len` bytes at `rva`, as far as the really read range holding `rva` goes.
    pub fn read_up_to(&self, rva: u32, len: usize) -> Option<SharedBytes> {
        let range_end = match &self.content {
            Content::Memory { valid, .. } => valid.iter().find(|r| r.contains(&rva))?.end,
            Content::File(file) => (rva < file.size()).then_some(file.size())?,
        };
        let end = (range_end as usize).min((rva as usize).saturating_add(len));
        self.read_laid_out(rva, end - rva as usize)
    }

    /// The export table, when the directory is all there.
    pub fn exports(&self) -> Result<Vec<Export>, FormatError> {
        match &self.content {
            Content::Memory { bytes, .. } => self.info.exports(bytes, PeLayout::Mapped),
            Content::File(file) => {
                let whole = file
                    .read(0, file.size() as usize)
                    .ok_or(FormatError::Malformed {
                        what: "image file",
                        offset: 0,
                        reason: "unreadable: the file changed or an I/O error occurred",
                    })?;
                self.info.exports(&whole, PeLayout::Mapped)
            }
        }
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
        let len = self.len();
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
    pub fn read_only_bytes(&self, rva: u32, len: usize) -> Option<SharedBytes> {
        let range = self
            .read_only_ranges()
            .into_iter()
            .find(|r| r.contains(&rva))?;
        let end = (range.end as usize).min((rva as usize).saturating_add(len));
        self.read_laid_out(rva, end - rva as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ntdbg_formats::pe::{apply_base_relocations, map_file_image};

    fn crashy() -> (PathBuf, Vec<u8>) {
        let path = ntdbg_testutil::testdata("winelab/x64/crashy.exe");
        let bytes = std::fs::read(&path).unwrap();
        (path, bytes)
    }

    fn open(path: &std::path::Path, base: u64) -> MappedImage {
        MappedImage::from_file(WatchedFile::open(path).unwrap(), base).unwrap()
    }

    #[test]
    fn file_images_read_on_demand_match_the_whole_mapping() {
        ntdbg_testutil::require_testdata!();
        let (path, file) = crashy();
        let info = PeInfo::parse(&file, PeLayout::File).unwrap();
        // Damaged relocation tables too: the fix-ups before a bad entry are applied, as
        // apply_base_relocations leaves them, and the image is not at its load address.
        let relocs = info.data_directory(5).unwrap();
        let at = info
            .rva_to_offset(relocs.rva, relocs.size, PeLayout::File)
            .unwrap();
        let mut bad_type = file.clone();
        let entry = at + 8 + 2 * 3;
        let kept = u16::from_le_bytes([file[entry], file[entry + 1]]) & 0xfff;
        bad_type[entry..entry + 2].copy_from_slice(&((5 << 12) | kept).to_le_bytes());
        let mut outside = file.clone();
        outside[at..at + 4].copy_from_slice(&0xffff_f000u32.to_le_bytes());
        let dir = ntdbg_testutil::corrupt::TempDir::new("image-relocs");
        let copies = [
            (path, file),
            (dir.write("bad-type.exe", &bad_type), bad_type),
            (dir.write("outside.exe", &outside), outside),
        ];
        for (path, file) in &copies {
            for base in [info.image_base, 0x7ff6_1234_0000] {
                let mut whole = map_file_image(file, &info).unwrap();
                let relocated = apply_base_relocations(&mut whole, &info, base).is_ok();
                let image = open(path, base);
                assert_eq!(image.info, info);
                assert_eq!(image.at_load_address, relocated);
                let size = whole.len() as u32;
                // Reads across page edges, cached and not, and the whole image.
                for (rva, len) in [(0, 0x40), (0xff8, 16), (0x1ffc, 0x2010), (size - 3, 3)] {
                    let got = image.read(rva, len).unwrap();
                    assert_eq!(
                        &got[..],
                        &whole[rva as usize..rva as usize + len],
                        "{rva:#x}"
                    );
                }
                assert_eq!(&image.read(0, size as usize).unwrap()[..], &whole[..]);
                assert!(image.read(size - 3, 4).is_none());
                assert!(image.read(u32::MAX, 2).is_none());
                assert_eq!(image.read_up_to(size - 2, 100).unwrap().len(), 2);
            }
        }
    }

    #[test]
    fn truncated_image_files_fail_cleanly() {
        ntdbg_testutil::require_testdata!();
        let (_, file) = crashy();
        let dir = ntdbg_testutil::corrupt::TempDir::new("image-file");
        // Cut inside the headers: a clear error, no image.
        for cut in [0, 2, 0x40, 0x100, 0x200] {
            let path = dir.write(&format!("cut{cut}.exe"), &file[..cut]);
            let f = WatchedFile::open(&path).unwrap();
            assert!(MappedImage::from_file(f, 0).is_err());
        }
        // Truncated after opening (a file replaced in place under a server): reads fail,
        // nothing panics, and the image says that its file changed.
        let path = dir.write("later.exe", &file);
        let image = open(&path, 0x1_4000_0000);
        assert_eq!(image.check_source(&mut Vec::new()), Ok(()));
        std::fs::write(&path, &file[..0x400]).unwrap();
        let pdata = image.info.exception_directory.unwrap();
        assert!(image.read(pdata.rva, pdata.size as usize).is_none());
        assert!(image.exports().is_err());
        assert!(image.check_source(&mut Vec::new()).is_err());
    }

    #[test]
    fn sparse_memory_images_track_their_holes() {
        ntdbg_testutil::require_testdata!();
        let (path, _) = crashy();
        let base = 0x1_4000_0000u64;
        let full = open(&path, base);
        let text = full
            .info
            .sections
            .iter()
            .find(|s| s.name == ".text")
            .unwrap()
            .clone();
        // A dump that holds everything except .text.
        let bytes = full.read(0, full.info.size_of_image as usize).unwrap();
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
        assert!(image.read(t.virtual_address, 1).is_none());
        assert!(image.is_valid(0, 0x40));
        let pdata = full.info.exception_directory.unwrap();
        assert!(image.is_valid(pdata.rva, pdata.size));
        assert_eq!(
            image.read(pdata.rva, pdata.size as usize).unwrap().to_vec(),
            full.read(pdata.rva, pdata.size as usize).unwrap().to_vec()
        );
        assert!(!image.is_valid(u32::MAX, 2));
        // Nothing readable: no image.
        let nothing = |_: u64, _: usize| -> Option<SharedBytes> { None };
        assert!(MappedImage::from_memory(&nothing, base, 0x5c000)
            .unwrap()
            .is_none());
    }
}
