//! Every field of the COFF file header and the optional header, for header dumps (`!dh`).
//!
//! [`super::PeInfo`] keeps what the debugger itself needs; this reads the rest (linker and
//! OS versions, subsystem, stack and heap sizes, characteristics) with `object`'s raw header
//! types, from either layout (the headers lie at the same offsets in both).

use object::pe as raw;
use object::pod::from_bytes;
use object::LittleEndian as LE;

use crate::bytes::{slice, u16_at, u32_at};
use crate::FormatError;

/// The COFF file header (`IMAGE_FILE_HEADER`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileHeader {
    /// `Machine`.
    pub machine: u16,
    /// `NumberOfSections`.
    pub number_of_sections: u16,
    /// `TimeDateStamp`.
    pub time_date_stamp: u32,
    /// `PointerToSymbolTable`.
    pub pointer_to_symbol_table: u32,
    /// `NumberOfSymbols`.
    pub number_of_symbols: u32,
    /// `SizeOfOptionalHeader`.
    pub size_of_optional_header: u16,
    /// `Characteristics` (`IMAGE_FILE_*`).
    pub characteristics: u16,
}

/// The optional header (`IMAGE_OPTIONAL_HEADER32`/`64`), widened to 64 bits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OptionalHeader {
    /// `Magic`: 0x10b (PE32) or 0x20b (PE32+).
    pub magic: u16,
    /// `MajorLinkerVersion`, `MinorLinkerVersion`.
    pub linker_version: (u8, u8),
    /// `SizeOfCode`.
    pub size_of_code: u32,
    /// `SizeOfInitializedData`.
    pub size_of_initialized_data: u32,
    /// `SizeOfUninitializedData`.
    pub size_of_uninitialized_data: u32,
    /// `AddressOfEntryPoint`.
    pub address_of_entry_point: u32,
    /// `BaseOfCode`.
    pub base_of_code: u32,
    /// `BaseOfData` (PE32 only).
    pub base_of_data: Option<u32>,
    /// `ImageBase`.
    pub image_base: u64,
    /// `SectionAlignment`.
    pub section_alignment: u32,
    /// `FileAlignment`.
    pub file_alignment: u32,
    /// `MajorOperatingSystemVersion`, `MinorOperatingSystemVersion`.
    pub os_version: (u16, u16),
    /// `MajorImageVersion`, `MinorImageVersion`.
    pub image_version: (u16, u16),
    /// `MajorSubsystemVersion`, `MinorSubsystemVersion`.
    pub subsystem_version: (u16, u16),
    /// `Win32VersionValue`.
    pub win32_version_value: u32,
    /// `SizeOfImage`.
    pub size_of_image: u32,
    /// `SizeOfHeaders`.
    pub size_of_headers: u32,
    /// `CheckSum`.
    pub checksum: u32,
    /// `Subsystem` (`IMAGE_SUBSYSTEM_*`).
    pub subsystem: u16,
    /// `DllCharacteristics` (`IMAGE_DLLCHARACTERISTICS_*`).
    pub dll_characteristics: u16,
    /// `SizeOfStackReserve`.
    pub size_of_stack_reserve: u64,
    /// `SizeOfStackCommit`.
    pub size_of_stack_commit: u64,
    /// `SizeOfHeapReserve`.
    pub size_of_heap_reserve: u64,
    /// `SizeOfHeapCommit`.
    pub size_of_heap_commit: u64,
    /// `LoaderFlags`.
    pub loader_flags: u32,
    /// `NumberOfRvaAndSizes`.
    pub number_of_rva_and_sizes: u32,
}

/// One `IMAGE_SECTION_HEADER` with every field.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SectionTableEntry {
    /// The name (NULs trimmed).
    pub name: String,
    /// `VirtualSize`.
    pub virtual_size: u32,
    /// `VirtualAddress`.
    pub virtual_address: u32,
    /// `SizeOfRawData`.
    pub size_of_raw_data: u32,
    /// `PointerToRawData`.
    pub pointer_to_raw_data: u32,
    /// `PointerToRelocations`.
    pub pointer_to_relocations: u32,
    /// `PointerToLinenumbers`.
    pub pointer_to_linenumbers: u32,
    /// `NumberOfRelocations`.
    pub number_of_relocations: u16,
    /// `NumberOfLinenumbers`.
    pub number_of_linenumbers: u16,
    /// `Characteristics` (`IMAGE_SCN_*`).
    pub characteristics: u32,
}

/// The file header, optional header and section table of an image.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PeHeaders {
    /// The COFF file header.
    pub file: FileHeader,
    /// The optional header.
    pub optional: OptionalHeader,
    /// The optional header's data directories, in their standard order (at most 16).
    pub data_directories: Vec<super::DataDirectory>,
    /// The section table.
    pub sections: Vec<SectionTableEntry>,
}

impl PeHeaders {
    /// Reads the headers at the start of `bytes` (an image in either layout; only the
    /// headers are needed). Fails, never panics, on truncated or malformed headers.
    pub fn parse(bytes: &[u8]) -> Result<PeHeaders, FormatError> {
        let nt = u32_at(bytes, 0x3c, "DOS header")? as usize;
        let coff_at = nt.checked_add(4).ok_or(FormatError::Malformed {
            what: "DOS header",
            offset: 0x3c,
            reason: "NT header offset overflows",
        })?;
        let coff_bytes = slice(
            bytes,
            coff_at,
            std::mem::size_of::<raw::ImageFileHeader>(),
            "COFF header",
        )?;
        let malformed = |what| FormatError::Malformed {
            what,
            offset: coff_at as u64,
            reason: "unaligned or short header",
        };
        let (coff, _) =
            from_bytes::<raw::ImageFileHeader>(coff_bytes).map_err(|_| malformed("COFF header"))?;
        let file = FileHeader {
            machine: coff.machine.get(LE),
            number_of_sections: coff.number_of_sections.get(LE),
            time_date_stamp: coff.time_date_stamp.get(LE),
            pointer_to_symbol_table: coff.pointer_to_symbol_table.get(LE),
            number_of_symbols: coff.number_of_symbols.get(LE),
            size_of_optional_header: coff.size_of_optional_header.get(LE),
            characteristics: coff.characteristics.get(LE),
        };
        let opt_at = coff_at + std::mem::size_of::<raw::ImageFileHeader>();
        let magic = u16_at(bytes, opt_at, "optional header")?;
        let optional = match magic {
            raw::IMAGE_NT_OPTIONAL_HDR64_MAGIC => {
                let b = slice(
                    bytes,
                    opt_at,
                    std::mem::size_of::<raw::ImageOptionalHeader64>(),
                    "optional header",
                )?;
                let (o, _) = from_bytes::<raw::ImageOptionalHeader64>(b)
                    .map_err(|_| malformed("optional header"))?;
                OptionalHeader {
                    magic,
                    linker_version: (o.major_linker_version, o.minor_linker_version),
                    size_of_code: o.size_of_code.get(LE),
                    size_of_initialized_data: o.size_of_initialized_data.get(LE),
                    size_of_uninitialized_data: o.size_of_uninitialized_data.get(LE),
                    address_of_entry_point: o.address_of_entry_point.get(LE),
                    base_of_code: o.base_of_code.get(LE),
                    base_of_data: None,
                    image_base: o.image_base.get(LE),
                    section_alignment: o.section_alignment.get(LE),
                    file_alignment: o.file_alignment.get(LE),
                    os_version: (
                        o.major_operating_system_version.get(LE),
                        o.minor_operating_system_version.get(LE),
                    ),
                    image_version: (o.major_image_version.get(LE), o.minor_image_version.get(LE)),
                    subsystem_version: (
                        o.major_subsystem_version.get(LE),
                        o.minor_subsystem_version.get(LE),
                    ),
                    win32_version_value: o.win32_version_value.get(LE),
                    size_of_image: o.size_of_image.get(LE),
                    size_of_headers: o.size_of_headers.get(LE),
                    checksum: o.check_sum.get(LE),
                    subsystem: o.subsystem.get(LE),
                    dll_characteristics: o.dll_characteristics.get(LE),
                    size_of_stack_reserve: o.size_of_stack_reserve.get(LE),
                    size_of_stack_commit: o.size_of_stack_commit.get(LE),
                    size_of_heap_reserve: o.size_of_heap_reserve.get(LE),
                    size_of_heap_commit: o.size_of_heap_commit.get(LE),
                    loader_flags: o.loader_flags.get(LE),
                    number_of_rva_and_sizes: o.number_of_rva_and_sizes.get(LE),
                }
            }
            raw::IMAGE_NT_OPTIONAL_HDR32_MAGIC => {
                let b = slice(
                    bytes,
                    opt_at,
                    std::mem::size_of::<raw::ImageOptionalHeader32>(),
                    "optional header",
                )?;
                let (o, _) = from_bytes::<raw::ImageOptionalHeader32>(b)
                    .map_err(|_| malformed("optional header"))?;
                OptionalHeader {
                    magic,
                    linker_version: (o.major_linker_version, o.minor_linker_version),
                    size_of_code: o.size_of_code.get(LE),
                    size_of_initialized_data: o.size_of_initialized_data.get(LE),
                    size_of_uninitialized_data: o.size_of_uninitialized_data.get(LE),
                    address_of_entry_point: o.address_of_entry_point.get(LE),
                    base_of_code: o.base_of_code.get(LE),
                    base_of_data: Some(o.base_of_data.get(LE)),
                    image_base: u64::from(o.image_base.get(LE)),
                    section_alignment: o.section_alignment.get(LE),
                    file_alignment: o.file_alignment.get(LE),
                    os_version: (
                        o.major_operating_system_version.get(LE),
                        o.minor_operating_system_version.get(LE),
                    ),
                    image_version: (o.major_image_version.get(LE), o.minor_image_version.get(LE)),
                    subsystem_version: (
                        o.major_subsystem_version.get(LE),
                        o.minor_subsystem_version.get(LE),
                    ),
                    win32_version_value: o.win32_version_value.get(LE),
                    size_of_image: o.size_of_image.get(LE),
                    size_of_headers: o.size_of_headers.get(LE),
                    checksum: o.check_sum.get(LE),
                    subsystem: o.subsystem.get(LE),
                    dll_characteristics: o.dll_characteristics.get(LE),
                    size_of_stack_reserve: u64::from(o.size_of_stack_reserve.get(LE)),
                    size_of_stack_commit: u64::from(o.size_of_stack_commit.get(LE)),
                    size_of_heap_reserve: u64::from(o.size_of_heap_reserve.get(LE)),
                    size_of_heap_commit: u64::from(o.size_of_heap_commit.get(LE)),
                    loader_flags: o.loader_flags.get(LE),
                    number_of_rva_and_sizes: o.number_of_rva_and_sizes.get(LE),
                }
            }
            other => {
                return Err(FormatError::Unsupported {
                    what: "optional header magic",
                    value: u64::from(other),
                })
            }
        };
        let info = super::PeInfo::parse(bytes, super::PeLayout::Mapped)?;
        let table_at = opt_at + usize::from(file.size_of_optional_header);
        let entry_size = std::mem::size_of::<raw::ImageSectionHeader>();
        let table = slice(
            bytes,
            table_at,
            info.sections.len() * entry_size,
            "section table",
        )?;
        let mut sections = Vec::with_capacity(info.sections.len());
        for entry in table.chunks_exact(entry_size) {
            let (h, _) = from_bytes::<raw::ImageSectionHeader>(entry)
                .map_err(|_| malformed("section header"))?;
            sections.push(SectionTableEntry {
                name: crate::bytes::c_string(&h.name),
                virtual_size: h.virtual_size.get(LE),
                virtual_address: h.virtual_address.get(LE),
                size_of_raw_data: h.size_of_raw_data.get(LE),
                pointer_to_raw_data: h.pointer_to_raw_data.get(LE),
                pointer_to_relocations: h.pointer_to_relocations.get(LE),
                pointer_to_linenumbers: h.pointer_to_linenumbers.get(LE),
                number_of_relocations: h.number_of_relocations.get(LE),
                number_of_linenumbers: h.number_of_linenumbers.get(LE),
                characteristics: h.characteristics.get(LE),
            });
        }
        Ok(PeHeaders {
            file,
            optional,
            data_directories: info.data_directories,
            sections,
        })
    }
}
