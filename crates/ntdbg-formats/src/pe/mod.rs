//! PE images: headers, sections, the CodeView record, the exception and export directories,
//! version info.
//!
//! [`PeInfo::parse`] reads an image either as it lies in a file ([`PeLayout::File`]) or as the
//! loader mapped it, sections at their RVAs ([`PeLayout::Mapped`], e.g. read back from a
//! full-memory dump). Headers must be sound or parsing fails; the optional parts (debug
//! directory, resources) are best effort and their problems are kept in
//! [`PeInfo::warnings`] rather than failing the whole image.
//!
//! ```
//! use ntdbg_formats::pe::{Machine, PeInfo, PeLayout};
//! # let Some(dir) = ntdbg_testutil::testdata_dir() else { return };
//! let bytes = std::fs::read(dir.join("winelab/x64/crashy.exe")).unwrap();
//! let pe = PeInfo::parse(&bytes, PeLayout::File).unwrap();
//! assert_eq!(pe.machine, Machine::X64);
//! assert_eq!(pe.image_key(), "6B0CCCD25c000");
//! assert_eq!(pe.codeview.unwrap().identity().name, "crashy.pdb");
//! ```

mod codeview;
mod exports;
mod headers;
mod image;
pub mod pdata;
mod relocs;
mod source;
mod version;

pub use codeview::CodeViewRecord;
pub use exports::Export;
pub use headers::{FileHeader, OptionalHeader, PeHeaders, SectionTableEntry};
pub use image::{map_file_image, MAX_MAPPED_IMAGE_SIZE};
pub use relocs::apply_base_relocations;
pub use source::PeBytes;
pub use version::VersionInfo;

use object::pe as raw;

use std::borrow::Cow;

use crate::bytes::{u16_at, u32_at, u64_at};
use crate::FormatError;
use source::{read_u16, read_u32};

/// How the image bytes are laid out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PeLayout {
    /// As stored in a file: sections at their `PointerToRawData`.
    File,
    /// As mapped by the loader: sections at their RVAs (offset = RVA).
    Mapped,
}

/// The CPU an image is built for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Machine {
    /// 32-bit x86 (`IMAGE_FILE_MACHINE_I386`).
    X86,
    /// x64 (`IMAGE_FILE_MACHINE_AMD64`).
    X64,
    /// ARM64 (`IMAGE_FILE_MACHINE_ARM64`).
    Arm64,
    /// Anything else, with its raw `Machine` value.
    Other(u16),
}

impl Machine {
    /// From the COFF header's `Machine` field.
    pub fn from_raw(value: u16) -> Machine {
        match value {
            raw::IMAGE_FILE_MACHINE_I386 => Machine::X86,
            raw::IMAGE_FILE_MACHINE_AMD64 => Machine::X64,
            raw::IMAGE_FILE_MACHINE_ARM64 => Machine::Arm64,
            other => Machine::Other(other),
        }
    }

    /// A stable `snake_case` name (`x86`, `x64`, `arm64`, `other`).
    pub fn name(&self) -> &'static str {
        match self {
            Machine::X86 => "x86",
            Machine::X64 => "x64",
            Machine::Arm64 => "arm64",
            Machine::Other(_) => "other",
        }
    }
}

/// One entry of the section table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SectionHeader {
    /// The name (up to 8 bytes, NULs trimmed). A long name (`/nnn`, an offset into the COFF
    /// string table, as MinGW linkers write `.debug_frame`) is resolved when the image is
    /// parsed from a file that keeps its string table; otherwise it is kept as written.
    pub name: String,
    /// `VirtualAddress`: the section's RVA.
    pub virtual_address: u32,
    /// `VirtualSize`: its size in memory.
    pub virtual_size: u32,
    /// `PointerToRawData`: its file offset.
    pub pointer_to_raw_data: u32,
    /// `SizeOfRawData`: its size in the file.
    pub size_of_raw_data: u32,
    /// `Characteristics` flags.
    pub characteristics: u32,
}

impl SectionHeader {
    /// Size in memory: `VirtualSize`, or `SizeOfRawData` when that is zero (as the loader does).
    pub fn mapped_size(&self) -> u32 {
        if self.virtual_size != 0 {
            self.virtual_size
        } else {
            self.size_of_raw_data
        }
    }

    /// Whether `rva` lies in the section's memory range.
    pub fn contains_rva(&self, rva: u32) -> bool {
        rva >= self.virtual_address
            && u64::from(rva) < u64::from(self.virtual_address) + u64::from(self.mapped_size())
    }

    /// Whether the loader maps the section writable (`IMAGE_SCN_MEM_WRITE`): its contents at
    /// run time may differ from the file's.
    pub fn is_writable(&self) -> bool {
        self.characteristics & raw::IMAGE_SCN_MEM_WRITE != 0
    }

    /// Whether the section holds code (`IMAGE_SCN_MEM_EXECUTE` or `IMAGE_SCN_CNT_CODE`).
    pub fn is_executable(&self) -> bool {
        self.characteristics & (raw::IMAGE_SCN_MEM_EXECUTE | raw::IMAGE_SCN_CNT_CODE) != 0
    }
}

/// An entry of the optional header's data directory: where a table lives.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct DataDirectory {
    /// RVA of the table.
    pub rva: u32,
    /// Its size in bytes.
    pub size: u32,
}

impl DataDirectory {
    /// Whether the directory is absent (zero RVA or size).
    pub fn is_empty(&self) -> bool {
        self.rva == 0 || self.size == 0
    }
}

/// What [`PeInfo::parse`] learns about an image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeInfo {
    /// The CPU.
    pub machine: Machine,
    /// Whether the optional header is PE32+ (64-bit).
    pub pe32_plus: bool,
    /// COFF `TimeDateStamp` (the link time, or a hash for reproducible builds).
    pub time_date_stamp: u32,
    /// `SizeOfImage`: bytes the image occupies when mapped.
    pub size_of_image: u32,
    /// `SizeOfHeaders`.
    pub size_of_headers: u32,
    /// `ImageBase`: the preferred load address.
    pub image_base: u64,
    /// `AddressOfEntryPoint` (an RVA; 0 when none).
    pub entry_point: u32,
    /// `CheckSum`.
    pub checksum: u32,
    /// The section table.
    pub sections: Vec<SectionHeader>,
    /// The optional header's data directories, in their standard order.
    pub data_directories: Vec<DataDirectory>,
    /// The CodeView record naming the PDB, if the debug directory has one.
    pub codeview: Option<CodeViewRecord>,
    /// The exception directory (`.pdata`), if present.
    pub exception_directory: Option<DataDirectory>,
    /// The version resource, if present and readable.
    pub version: Option<VersionInfo>,
    /// Problems in optional parts (debug directory, resources) that were skipped.
    pub warnings: Vec<FormatError>,
}

/// Largest section count accepted (the Windows loader's limit is 96).
const MAX_SECTIONS: usize = 96;
/// Largest number of debug directory entries looked at.
const MAX_DEBUG_ENTRIES: usize = 64;
/// Size of one `IMAGE_DEBUG_DIRECTORY`.
const DEBUG_ENTRY_SIZE: usize = 28;
/// Size of one `IMAGE_SECTION_HEADER`.
const SECTION_HEADER_SIZE: usize = 40;

impl PeInfo {
    /// Parses the headers and the optional parts of an image laid out as `layout` says.
    ///
    /// Fails (never panics) when the DOS, NT, optional or section headers are missing,
    /// truncated or of an unknown kind.
    pub fn parse(bytes: &[u8], layout: PeLayout) -> Result<PeInfo, FormatError> {
        PeInfo::parse_from(&bytes, layout)
    }

    /// [`PeInfo::parse`] reading only the ranges it needs from `bytes` (e.g. a file read by
    /// position): the headers, the debug directory and CodeView record, the resource tree.
    pub fn parse_from(bytes: &dyn PeBytes, layout: PeLayout) -> Result<PeInfo, FormatError> {
        let mut info = parse_headers(bytes)?;
        info.read_optional_parts(bytes, layout);
        Ok(info)
    }

    /// The symbol-store key of the image (see [`crate::store::image_key`]).
    pub fn image_key(&self) -> String {
        crate::store::image_key(self.time_date_stamp, self.size_of_image)
    }

    /// The section whose memory range holds `rva`.
    pub fn section_for_rva(&self, rva: u32) -> Option<&SectionHeader> {
        self.sections.iter().find(|s| s.contains_rva(rva))
    }

    /// Data directory number `index` (e.g. `object::pe::IMAGE_DIRECTORY_ENTRY_DEBUG`), if
    /// present and non-empty.
    pub fn data_directory(&self, index: usize) -> Option<DataDirectory> {
        self.data_directories
            .get(index)
            .copied()
            .filter(|d| !d.is_empty())
    }

    /// The offset in `layout` bytes of `len` bytes at `rva`, if they are all backed by data.
    ///
    /// For [`PeLayout::File`] the range must lie in the headers or in one section's raw data;
    /// for [`PeLayout::Mapped`] the offset is the RVA itself.
    pub fn rva_to_offset(&self, rva: u32, len: u32, layout: PeLayout) -> Option<usize> {
        let end = u64::from(rva) + u64::from(len);
        match layout {
            PeLayout::Mapped => Some(rva as usize),
            PeLayout::File => {
                if end <= u64::from(self.size_of_headers) {
                    return Some(rva as usize);
                }
                let section = self.section_for_rva(rva)?;
                let delta = rva - section.virtual_address;
                let raw_end = u64::from(section.size_of_raw_data.min(section.mapped_size()));
                if u64::from(delta) + u64::from(len) > raw_end {
                    return None;
                }
                usize::try_from(u64::from(section.pointer_to_raw_data) + u64::from(delta)).ok()
            }
        }
    }

    /// `len` bytes at `rva` from image bytes in `layout`; `what` names the structure for the
    /// error.
    pub fn data_at_rva<'a>(
        &self,
        bytes: &'a [u8],
        layout: PeLayout,
        rva: u32,
        len: u32,
        what: &'static str,
    ) -> Result<&'a [u8], FormatError> {
        let offset = self.offset_of(rva, len, layout, what)?;
        crate::bytes::slice(bytes, offset, len as usize, what)
            .map_err(|_| out_of_range(rva, len, what))
    }

    /// [`PeInfo::data_at_rva`] from bytes read by position.
    pub(crate) fn read_at_rva<'a>(
        &self,
        bytes: &'a dyn PeBytes,
        layout: PeLayout,
        rva: u32,
        len: u32,
        what: &'static str,
    ) -> Result<Cow<'a, [u8]>, FormatError> {
        let offset = self.offset_of(rva, len, layout, what)?;
        bytes
            .bytes_at(offset, len as usize, what)
            .map_err(|_| out_of_range(rva, len, what))
    }

    /// [`PeInfo::rva_to_offset`], failing with the error [`PeInfo::data_at_rva`] gives.
    fn offset_of(
        &self,
        rva: u32,
        len: u32,
        layout: PeLayout,
        what: &'static str,
    ) -> Result<usize, FormatError> {
        self.rva_to_offset(rva, len, layout)
            .ok_or_else(|| out_of_range(rva, len, what))
    }

    fn read_optional_parts(&mut self, bytes: &dyn PeBytes, layout: PeLayout) {
        if layout == PeLayout::File {
            if let Err(e) = self.resolve_long_section_names(bytes) {
                self.warnings.push(e);
            }
        }
        self.exception_directory = self.data_directory(raw::IMAGE_DIRECTORY_ENTRY_EXCEPTION);
        match self.read_codeview(bytes, layout) {
            Ok(cv) => self.codeview = cv,
            Err(e) => self.warnings.push(e),
        }
        if let Some(dir) = self.data_directory(raw::IMAGE_DIRECTORY_ENTRY_RESOURCE) {
            match version::read_version(self, bytes, layout, dir) {
                Ok(v) => self.version = v,
                Err(e) => self.warnings.push(e),
            }
        }
    }

    /// Replaces `/nnn` section names by the names they point to in the COFF string table
    /// (after the symbol table, in the file only: the loader does not map it).
    fn resolve_long_section_names(&mut self, bytes: &dyn PeBytes) -> Result<(), FormatError> {
        /// Size of one COFF symbol record.
        const SYMBOL_SIZE: u64 = 18;
        /// The longest string table read (its names are short; a bad size must not cost much).
        const MAX_STRING_TABLE: u32 = 1 << 20;
        if !self.sections.iter().any(|s| s.name.starts_with('/')) {
            return Ok(());
        }
        let nt = read_u32(bytes, 0x3c, "DOS header")? as usize;
        let coff = nt + 4;
        let symbols = u64::from(read_u32(bytes, coff + 8, "COFF header")?);
        let count = u64::from(read_u32(bytes, coff + 12, "COFF header")?);
        if symbols == 0 {
            return Ok(());
        }
        let table =
            usize::try_from(symbols + count * SYMBOL_SIZE).map_err(|_| FormatError::Malformed {
                what: "COFF symbol table",
                offset: symbols,
                reason: "beyond the addressable range",
            })?;
        let size = read_u32(bytes, table, "COFF string table")?.min(MAX_STRING_TABLE);
        let strings = bytes.bytes_at(table, size as usize, "COFF string table")?;
        for section in &mut self.sections {
            let Some(offset) = section
                .name
                .strip_prefix('/')
                .and_then(|n| n.parse::<usize>().ok())
            else {
                continue;
            };
            if let Some(name) = strings.get(offset..).filter(|_| offset >= 4) {
                section.name = crate::bytes::c_string(name);
            }
        }
        Ok(())
    }

    fn read_codeview(
        &self,
        bytes: &dyn PeBytes,
        layout: PeLayout,
    ) -> Result<Option<CodeViewRecord>, FormatError> {
        let Some(dir) = self.data_directory(raw::IMAGE_DIRECTORY_ENTRY_DEBUG) else {
            return Ok(None);
        };
        let count = (dir.size as usize / DEBUG_ENTRY_SIZE).min(MAX_DEBUG_ENTRIES);
        let table = self.read_at_rva(
            bytes,
            layout,
            dir.rva,
            (count * DEBUG_ENTRY_SIZE) as u32,
            "debug directory",
        )?;
        for i in 0..count {
            let at = i * DEBUG_ENTRY_SIZE;
            let kind = u32_at(&table, at + 12, "debug directory entry")?;
            if kind != raw::IMAGE_DEBUG_TYPE_CODEVIEW {
                continue;
            }
            let size = u32_at(&table, at + 16, "debug directory entry")?;
            let address = u32_at(&table, at + 20, "debug directory entry")?;
            let pointer = u32_at(&table, at + 24, "debug directory entry")?;
            let data = match layout {
                PeLayout::Mapped if address != 0 => {
                    self.read_at_rva(bytes, layout, address, size, "CodeView record")?
                }
                PeLayout::Mapped => continue,
                PeLayout::File if pointer != 0 => {
                    bytes.bytes_at(pointer as usize, size as usize, "CodeView record")?
                }
                PeLayout::File => {
                    self.read_at_rva(bytes, layout, address, size, "CodeView record")?
                }
            };
            return codeview::parse_codeview(&data, u64::from(address)).map(Some);
        }
        Ok(None)
    }
}

/// `len` bytes at `rva` are not all backed by the image.
fn out_of_range(rva: u32, len: u32, what: &'static str) -> FormatError {
    FormatError::RvaOutOfRange {
        what,
        rva: u64::from(rva),
        size: u64::from(len),
    }
}

fn parse_headers(bytes: &dyn PeBytes) -> Result<PeInfo, FormatError> {
    let mz = read_u16(bytes, 0, "DOS header")?;
    if mz != raw::IMAGE_DOS_SIGNATURE {
        return Err(FormatError::BadMagic {
            what: "DOS header",
            offset: 0,
            found: u64::from(mz),
        });
    }
    let nt = read_u32(bytes, 0x3c, "DOS header")? as usize;
    let sig = read_u32(bytes, nt, "NT headers")?;
    if sig != raw::IMAGE_NT_SIGNATURE {
        return Err(FormatError::BadMagic {
            what: "NT headers",
            offset: nt as u64,
            found: u64::from(sig),
        });
    }
    let coff = nt + 4;
    let machine = read_u16(bytes, coff, "COFF header")?;
    let section_count = read_u16(bytes, coff + 2, "COFF header")? as usize;
    let time_date_stamp = read_u32(bytes, coff + 4, "COFF header")?;
    let optional_size = read_u16(bytes, coff + 16, "COFF header")? as usize;
    let opt = coff + 20;
    let optional = bytes.bytes_at(opt, optional_size, "optional header")?;
    let optional = &optional[..];
    let magic = u16_at(optional, 0, "optional header")?;
    let pe32_plus = match magic {
        raw::IMAGE_NT_OPTIONAL_HDR32_MAGIC => false,
        raw::IMAGE_NT_OPTIONAL_HDR64_MAGIC => true,
        other => {
            return Err(FormatError::Unsupported {
                what: "optional header magic",
                value: u64::from(other),
            })
        }
    };
    let what = "optional header";
    let entry_point = u32_at(optional, 16, what)?;
    let image_base = if pe32_plus {
        u64_at(optional, 24, what)?
    } else {
        u64::from(u32_at(optional, 28, what)?)
    };
    let size_of_image = u32_at(optional, 56, what)?;
    let size_of_headers = u32_at(optional, 60, what)?;
    let checksum = u32_at(optional, 64, what)?;
    let (count_at, dirs_at) = if pe32_plus { (108, 112) } else { (92, 96) };
    let dir_count = (u32_at(optional, count_at, what)? as usize).min(16);
    let mut data_directories = Vec::with_capacity(dir_count);
    for i in 0..dir_count {
        let at = dirs_at + i * 8;
        // Some linkers declare more directories than the optional header holds; stop there.
        let (Ok(rva), Ok(size)) = (u32_at(optional, at, what), u32_at(optional, at + 4, what))
        else {
            break;
        };
        data_directories.push(DataDirectory { rva, size });
    }
    if section_count > MAX_SECTIONS {
        return Err(FormatError::Malformed {
            what: "COFF header",
            offset: coff as u64,
            reason: "more than 96 sections",
        });
    }
    let table_at = opt + optional_size;
    let table = bytes.bytes_at(
        table_at,
        section_count * SECTION_HEADER_SIZE,
        "section table",
    )?;
    let mut sections = Vec::with_capacity(section_count);
    for entry in table.chunks_exact(SECTION_HEADER_SIZE) {
        let what = "section header";
        sections.push(SectionHeader {
            name: crate::bytes::c_string(&entry[..8]),
            virtual_size: u32_at(entry, 8, what)?,
            virtual_address: u32_at(entry, 12, what)?,
            size_of_raw_data: u32_at(entry, 16, what)?,
            pointer_to_raw_data: u32_at(entry, 20, what)?,
            characteristics: u32_at(entry, 36, what)?,
        });
    }
    Ok(PeInfo {
        machine: Machine::from_raw(machine),
        pe32_plus,
        time_date_stamp,
        size_of_image,
        size_of_headers,
        image_base,
        entry_point,
        checksum,
        sections,
        data_directories,
        codeview: None,
        exception_directory: None,
        version: None,
        warnings: Vec::new(),
    })
}

#[cfg(test)]
mod tests;
