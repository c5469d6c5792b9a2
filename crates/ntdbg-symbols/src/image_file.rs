//! An image file read by position: the headers are parsed once, then only the byte ranges
//! asked for are read, laid out as the loader maps them (sections at their RVAs, zero where
//! the file holds nothing) and moved to the module's load address by its base relocations.
//!
//! Bytes read are those [`ntdbg_formats::pe::map_file_image`] followed by
//! [`ntdbg_formats::pe::apply_base_relocations`] would give, without holding `SizeOfImage`
//! bytes: a few 4 KiB pages are kept in a small cache (code read again and again while a
//! stack is scanned). The file stays open; a file truncated or replaced in place under a
//! long-lived server makes reads fail (`None`), never the process, and
//! [`FileImage::check_source`] says that it changed.

use std::borrow::Cow;
use std::fs::File;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};

use object::pe as raw;
use object::read::pe::RelocationBlockIterator;

use ntdbg_files::{FileChanged, WatchedFile};
use ntdbg_formats::pe::{PeBytes, PeInfo, PeLayout, MAX_MAPPED_IMAGE_SIZE};
use ntdbg_formats::FormatError;

/// Bytes per cached page.
const PAGE: u32 = 4096;
/// Pages kept per image.
const CACHED_PAGES: usize = 32;
/// Reads longer than this many pages bypass the cache (e.g. a whole export table).
const LONGEST_CACHED_READ: usize = 4;

/// Bytes the loader copies from the file: `len` bytes at file `offset` land at `rva`.
#[derive(Debug)]
struct Piece {
    rva: u32,
    len: u32,
    offset: u64,
}

/// One base relocation: `width` bytes at `rva` get the load delta added.
#[derive(Debug, Clone, Copy)]
struct Fixup {
    rva: u32,
    width: u8,
}

impl Fixup {
    fn end(&self) -> u32 {
        self.rva + u32::from(self.width)
    }
}

/// An image file read on demand in mapped layout.
#[derive(Debug)]
pub(crate) struct FileImage {
    file: WatchedFile,
    /// `SizeOfImage`.
    size: u32,
    /// What the loader copies from the file, in its order (a later piece overwrites an
    /// earlier one where a malformed section table makes them overlap).
    pieces: Vec<Piece>,
    /// Base relocations to apply, sorted by RVA, disjoint.
    fixups: Vec<Fixup>,
    /// Load address minus preferred base.
    delta: u64,
    /// Recently read pages. Behind a read-write lock so that the threads of a triage run
    /// read cached pages at once; the least recently used one is replaced.
    pages: RwLock<Vec<CachedPage>>,
    /// Counts page reads: a cached page's last use.
    clock: AtomicU64,
}

/// A page kept by [`FileImage`].
#[derive(Debug)]
struct CachedPage {
    /// Its number (RVA / [`PAGE`]).
    page: u32,
    /// Its bytes, mapped and relocated.
    bytes: Arc<[u8]>,
    /// The [`FileImage::clock`] of its last read.
    used: AtomicU64,
}

/// A file read by position as [`PeBytes`] (file layout), for parsing the headers.
struct FileBytes<'f> {
    file: &'f File,
    len: u64,
}

impl PeBytes for FileBytes<'_> {
    fn bytes_at(
        &self,
        offset: usize,
        len: usize,
        what: &'static str,
    ) -> Result<Cow<'_, [u8]>, FormatError> {
        let truncated = FormatError::Truncated {
            what,
            offset: offset as u64,
            needed: len as u64,
            available: self.len.saturating_sub(offset as u64),
        };
        let end = (offset as u64).checked_add(len as u64);
        if end.is_none_or(|end| end > self.len) {
            return Err(truncated);
        }
        let mut buf = vec![0u8; len];
        read_exact_at(self.file, &mut buf, offset as u64).map_err(|_| FormatError::Malformed {
            what,
            offset: offset as u64,
            reason: "unreadable: the file changed or an I/O error occurred",
        })?;
        Ok(Cow::Owned(buf))
    }
}

impl FileImage {
    /// Parses the headers of `file` and prepares reads as the image would be mapped at
    /// `load_base`. Also returns whether the base relocations could all
    /// be applied (as [`ntdbg_formats::pe::apply_base_relocations`] would: those before a
    /// bad entry are applied, the rest not). Overlapping relocations, which only a damaged
    /// table has, are all dropped and reported as not applied.
    pub fn open(
        file: WatchedFile,
        load_base: u64,
    ) -> Result<(PeInfo, FileImage, bool), FormatError> {
        let len = file.len();
        let info = PeInfo::parse_from(
            &FileBytes {
                file: file.file(),
                len,
            },
            PeLayout::File,
        )?;
        if info.size_of_image > MAX_MAPPED_IMAGE_SIZE {
            return Err(FormatError::Unsupported {
                what: "SizeOfImage (too large to map)",
                value: u64::from(info.size_of_image),
            });
        }
        let size = info.size_of_image;
        let mut pieces = Vec::with_capacity(info.sections.len() + 1);
        let headers = u64::from(info.size_of_headers.min(size)).min(len);
        pieces.push(Piece {
            rva: 0,
            len: headers as u32,
            offset: 0,
        });
        for section in &info.sections {
            let wanted = section.size_of_raw_data.min(section.mapped_size());
            let offset = u64::from(section.pointer_to_raw_data);
            // Clipped to the file and to the image, as the loader does.
            let clipped = u64::from(wanted)
                .min(len.saturating_sub(offset))
                .min(u64::from(size.saturating_sub(section.virtual_address)));
            if clipped > 0 {
                pieces.push(Piece {
                    rva: section.virtual_address,
                    len: clipped as u32,
                    offset,
                });
            }
        }
        let mut image = FileImage {
            file,
            size,
            pieces,
            fixups: Vec::new(),
            delta: load_base.wrapping_sub(info.image_base),
            pages: RwLock::new(Vec::new()),
            clock: AtomicU64::new(0),
        };
        let relocated = image.read_fixups(&info);
        Ok((info, image, relocated))
    }

    /// Collects the base relocations to apply; false when some could not be.
    fn read_fixups(&mut self, info: &PeInfo) -> bool {
        if self.delta == 0 {
            return true;
        }
        let Some(dir) = info.data_directory(raw::IMAGE_DIRECTORY_ENTRY_BASERELOC) else {
            return true;
        };
        let Some(table) = self.read_unrelocated(dir.rva, dir.size as usize) else {
            return false;
        };
        let mut fixups = Vec::new();
        let mut complete = true;
        'blocks: for block in RelocationBlockIterator::new(&table) {
            let Ok(block) = block else {
                complete = false;
                break;
            };
            for reloc in block {
                let width = match reloc.typ {
                    raw::IMAGE_REL_BASED_ABSOLUTE => continue,
                    raw::IMAGE_REL_BASED_HIGHLOW => 4,
                    raw::IMAGE_REL_BASED_DIR64 => 8,
                    _ => {
                        complete = false;
                        break 'blocks;
                    }
                };
                let fixup = Fixup {
                    rva: reloc.virtual_address,
                    width,
                };
                if fixup
                    .rva
                    .checked_add(u32::from(width))
                    .is_none_or(|end| end > self.size)
                {
                    complete = false;
                    break 'blocks;
                }
                fixups.push(fixup);
            }
        }
        fixups.sort_by_key(|f| f.rva);
        if fixups.windows(2).any(|w| w[0].end() > w[1].rva) {
            return false;
        }
        self.fixups = fixups;
        complete
    }

    /// `Ok` while the file holds what it held when it was opened.
    pub fn check_source(&self) -> Result<(), FileChanged> {
        self.file.check()
    }

    /// `SizeOfImage`.
    pub fn size(&self) -> u32 {
        self.size
    }

    /// `len` bytes at `rva`, mapped and relocated; `None` past the image's end or when the
    /// file can no longer be read.
    pub fn read(&self, rva: u32, len: usize) -> Option<Vec<u8>> {
        let end = rva.checked_add(u32::try_from(len).ok()?)?;
        if end > self.size {
            return None;
        }
        if len > LONGEST_CACHED_READ * PAGE as usize {
            let mut out = self.read_unrelocated(rva, len)?;
            self.relocate(rva, &mut out)?;
            return Some(out);
        }
        let mut out = Vec::with_capacity(len);
        let mut at = rva;
        while at < end {
            let page = at / PAGE;
            let bytes = self.page(page)?;
            let from = (at - page * PAGE) as usize;
            let to = ((end - page * PAGE) as usize).min(bytes.len());
            out.extend_from_slice(bytes.get(from..to)?);
            at = page * PAGE + to as u32;
        }
        Some(out)
    }

    /// Bytes held in memory: the page cache, the relocations and the layout (for the symbol
    /// cache's size accounting).
    pub fn held_bytes(&self) -> usize {
        let pages: usize = self
            .pages
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|p| p.bytes.len())
            .sum();
        pages
            + self.fixups.len() * std::mem::size_of::<Fixup>()
            + self.pieces.len() * std::mem::size_of::<Piece>()
    }

    /// Page `page` (mapped, relocated), from the cache or the file.
    fn page(&self, page: u32) -> Option<Arc<[u8]>> {
        let now = self.clock.fetch_add(1, Ordering::Relaxed);
        let cached = |pages: &[CachedPage]| {
            let hit = pages.iter().find(|p| p.page == page)?;
            hit.used.store(now, Ordering::Relaxed);
            Some(hit.bytes.clone())
        };
        if let Some(bytes) = cached(&self.pages.read().unwrap_or_else(PoisonError::into_inner)) {
            return Some(bytes);
        }
        let start = page * PAGE;
        let len = PAGE.min(self.size - start) as usize;
        let mut bytes = self.read_unrelocated(start, len)?;
        self.relocate(start, &mut bytes)?;
        let mut pages = self.pages.write().unwrap_or_else(PoisonError::into_inner);
        // Another thread may have read it meanwhile: keep one copy.
        if let Some(bytes) = cached(&pages) {
            return Some(bytes);
        }
        let bytes: Arc<[u8]> = bytes.into();
        if pages.len() == CACHED_PAGES {
            if let Some(oldest) =
                (0..pages.len()).min_by_key(|&i| pages[i].used.load(Ordering::Relaxed))
            {
                pages.swap_remove(oldest);
            }
        }
        pages.push(CachedPage {
            page,
            bytes: bytes.clone(),
            used: AtomicU64::new(now),
        });
        Some(bytes)
    }

    /// `len` bytes at `rva` as the loader lays the file out, before relocation.
    fn read_unrelocated(&self, rva: u32, len: usize) -> Option<Vec<u8>> {
        let end = rva.checked_add(u32::try_from(len).ok()?)?;
        if end > self.size {
            return None;
        }
        let mut out = vec![0u8; len];
        for piece in &self.pieces {
            let from = piece.rva.max(rva);
            let to = (piece.rva + piece.len).min(end);
            if from >= to {
                continue;
            }
            let dst = &mut out[(from - rva) as usize..(to - rva) as usize];
            read_exact_at(
                self.file.file(),
                dst,
                piece.offset + u64::from(from - piece.rva),
            )
            .ok()?;
        }
        Some(out)
    }

    /// Applies the fixups that touch `bytes` (mapped at `rva`); one that straddles its edge
    /// is computed from the whole slot.
    fn relocate(&self, rva: u32, bytes: &mut [u8]) -> Option<()> {
        let end = rva + bytes.len() as u32;
        let first = self.fixups.partition_point(|f| f.end() <= rva);
        for fixup in self.fixups[first..].iter().take_while(|f| f.rva < end) {
            let width = usize::from(fixup.width);
            let mut slot = [0u8; 8];
            if fixup.rva >= rva && fixup.end() <= end {
                let at = (fixup.rva - rva) as usize;
                slot[..width].copy_from_slice(&bytes[at..at + width]);
            } else {
                slot[..width].copy_from_slice(&self.read_unrelocated(fixup.rva, width)?);
            }
            // A HIGHLOW slot keeps the low 32 bits: the sum wraps as the loader's does.
            let moved = u64::from_le_bytes(slot)
                .wrapping_add(self.delta)
                .to_le_bytes();
            let overlap: Range<u32> = fixup.rva.max(rva)..fixup.end().min(end);
            let src = (overlap.start - fixup.rva) as usize..(overlap.end - fixup.rva) as usize;
            let dst = (overlap.start - rva) as usize..(overlap.end - rva) as usize;
            bytes[dst].copy_from_slice(&moved[src]);
        }
        Some(())
    }
}

/// Fills `buf` from `file` at `offset`; a short file is an error.
fn read_exact_at(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
    }
    #[cfg(windows)]
    {
        let mut done = 0;
        while done < buf.len() {
            let n = std::os::windows::fs::FileExt::seek_read(
                file,
                &mut buf[done..],
                offset + done as u64,
            )?;
            if n == 0 {
                return Err(std::io::ErrorKind::UnexpectedEof.into());
            }
            done += n;
        }
        Ok(())
    }
}
