//! The `DUMP_HEADER64` (`PAGEDU64`) and `DUMP_HEADER32` (`PAGEDUMP`) headers of kernel dumps.

/// Little-endian `u32` at `off`, `None` past the end.
pub(crate) fn u32_at(buf: &[u8], off: usize) -> Option<u32> {
    let b = buf.get(off..off.checked_add(4)?)?;
    Some(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// Little-endian `u64` at `off`, `None` past the end.
pub(crate) fn u64_at(buf: &[u8], off: usize) -> Option<u64> {
    let b = buf.get(off..off.checked_add(8)?)?;
    let mut a = [0u8; 8];
    a.copy_from_slice(b);
    Some(u64::from_le_bytes(a))
}

/// What is written in place of every field the system did not fill in (`"PAGE"`).
pub const UNSET32: u32 = 0x4547_4150;
/// [`UNSET32`] twice, as a 64-bit field.
pub const UNSET64: u64 = 0x4547_4150_4547_4150;

/// Size of the 64-bit header; the dump's data starts after it.
pub const HEADER64_SIZE: usize = 0x2000;
/// Size of the 32-bit header.
pub const HEADER32_SIZE: usize = 0x1000;
/// Where the CONTEXT record lies in the 64-bit header.
pub const CONTEXT64_OFFSET: usize = 0x348;
/// Where the CONTEXT record lies in the 32-bit header.
pub const CONTEXT32_OFFSET: usize = 0x320;
/// Most runs that fit the header's 700-byte `PhysicalMemoryBlock` (64-bit).
pub const MAX_RUNS64: usize = (700 - 16) / 16;
/// Most runs that fit the header's 700-byte `PhysicalMemoryBlock` (32-bit).
pub const MAX_RUNS32: usize = (700 - 8) / 8;

/// One run of physical pages, as the header's `PhysicalMemoryBlock` lists them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PhysicalRun {
    /// First page frame number.
    pub base_page: u64,
    /// Number of pages.
    pub page_count: u64,
}

/// An `EXCEPTION_RECORD64` (or a widened `EXCEPTION_RECORD32`) from the header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderException {
    /// The exception code.
    pub code: u32,
    /// Flags.
    pub flags: u32,
    /// Chained record address.
    pub record: u64,
    /// Where it was raised.
    pub address: u64,
    /// The parameters (at most 15).
    pub parameters: Vec<u64>,
}

/// The fields of a kernel dump header, widened to 64 bits for 32-bit dumps.
#[derive(Debug, Clone)]
pub struct KernelHeader {
    /// `true` for `PAGEDU64`, `false` for `PAGEDUMP`.
    pub is64: bool,
    /// `0xf` for a free (retail) build, `0xc` for a checked build.
    pub major_version: u32,
    /// The OS build number (e.g. 19041).
    pub minor_version: u32,
    /// The kernel's page-table root (CR3) at the time of the dump.
    pub directory_table_base: u64,
    /// `MmPfnDatabase`.
    pub pfn_database: u64,
    /// `PsLoadedModuleList`.
    pub ps_loaded_module_list: u64,
    /// `PsActiveProcessHead`.
    pub ps_active_process_head: u64,
    /// `IMAGE_FILE_MACHINE_*` (0x8664 x64, 0x14c x86, 0xaa64 ARM64).
    pub machine_image_type: u32,
    /// Number of processors.
    pub number_processors: u32,
    /// The bugcheck code.
    pub bugcheck_code: u32,
    /// The four bugcheck parameters.
    pub bugcheck_parameters: [u64; 4],
    /// `KdDebuggerDataBlock`.
    pub kd_debugger_data_block: u64,
    /// `PhysicalMemoryBlock`: the physical memory runs (only meaningful for full dumps).
    pub runs: Vec<PhysicalRun>,
    /// `PhysicalMemoryBlock.NumberOfPages`.
    pub run_pages: u64,
    /// `NumberOfRuns` as written (may exceed what fits: then `runs` is empty and the header
    /// is corrupt for a full dump).
    pub run_count_raw: u32,
    /// The exception record (for bugchecks: the `KeBugCheckEx` breakpoint), when filled in.
    pub exception: Option<HeaderException>,
    /// `DumpType` (1 full, 2 kernel, 4 small/triage, 5 bitmap full, 6 bitmap kernel, 8–10 RDMP).
    pub dump_type: u32,
    /// `RequiredDumpSpace`.
    pub required_dump_space: u64,
    /// `SystemTime` (FILETIME), when filled in.
    pub system_time: Option<u64>,
    /// `SystemUpTime` (100 ns units), when filled in.
    pub system_up_time: Option<u64>,
    /// `SecondaryDataState`.
    pub secondary_data_state: u32,
    /// `ProductType`.
    pub product_type: u32,
    /// `SuiteMask`.
    pub suite_mask: u32,
    /// Where the CONTEXT record starts in the file.
    pub context_offset: usize,
    /// `PaeEnabled` of a 32-bit header: the page tables use the 3-level PAE format.
    pub pae_enabled: bool,
}

impl KernelHeader {
    /// Parses the header at the start of `buf`. `None` when the signature is not a kernel
    /// dump's; an `Err` text when it is but the header is cut short.
    pub fn parse(buf: &[u8]) -> Option<Result<KernelHeader, String>> {
        if buf.starts_with(b"PAGEDU64") {
            Some(parse64(buf))
        } else if buf.starts_with(b"PAGEDUMP") {
            Some(parse32(buf))
        } else {
            None
        }
    }

    /// The kind of dump the header announces (`None` for a DumpType this crate does not know),
    /// from the header alone: enough for a cheap listing of many dumps.
    pub fn kind(&self) -> Option<crate::model::TargetKind> {
        use crate::model::TargetKind;
        Some(match self.dump_type {
            1 | 10 => TargetKind::KernelFull,
            2 | 8 | 9 => TargetKind::Kernel,
            4 if self.bugcheck_code == 0 => TargetKind::KernelTriage,
            4 => TargetKind::KernelSmall,
            5 | 6 => TargetKind::KernelBitmap,
            _ => return None,
        })
    }

    /// Size of the header; dump data starts here.
    pub fn size(&self) -> usize {
        if self.is64 {
            HEADER64_SIZE
        } else {
            HEADER32_SIZE
        }
    }
}

fn filled32(v: u32) -> Option<u32> {
    (v != UNSET32).then_some(v)
}
fn filled64(v: u64) -> Option<u64> {
    (v != UNSET64 && v != 0).then_some(v)
}
/// Reads a 64-bit field, mapping the "unset" pattern to 0.
fn f64(buf: &[u8], off: usize) -> u64 {
    u64_at(buf, off).filter(|&v| v != UNSET64).unwrap_or(0)
}
fn f32(buf: &[u8], off: usize) -> u32 {
    u32_at(buf, off).filter(|&v| v != UNSET32).unwrap_or(0)
}

fn parse64(buf: &[u8]) -> Result<KernelHeader, String> {
    if buf.len() < HEADER64_SIZE {
        return Err(format!(
            "the file holds {:#x} bytes, less than the {HEADER64_SIZE:#x}-byte PAGEDU64 header",
            buf.len()
        ));
    }
    let run_count_raw = f32(buf, 0x88);
    let runs = if (run_count_raw as usize) <= MAX_RUNS64 {
        (0..run_count_raw as usize)
            .map(|i| PhysicalRun {
                base_page: f64(buf, 0x98 + i * 16),
                page_count: f64(buf, 0xa0 + i * 16),
            })
            .collect()
    } else {
        Vec::new()
    };
    let exception = exception64(buf, 0xf00);
    Ok(KernelHeader {
        is64: true,
        major_version: f32(buf, 0x08),
        minor_version: f32(buf, 0x0c),
        directory_table_base: f64(buf, 0x10),
        pfn_database: f64(buf, 0x18),
        ps_loaded_module_list: f64(buf, 0x20),
        ps_active_process_head: f64(buf, 0x28),
        machine_image_type: f32(buf, 0x30),
        number_processors: f32(buf, 0x34),
        bugcheck_code: f32(buf, 0x38),
        bugcheck_parameters: [
            f64(buf, 0x40),
            f64(buf, 0x48),
            f64(buf, 0x50),
            f64(buf, 0x58),
        ],
        kd_debugger_data_block: f64(buf, 0x80),
        runs,
        run_pages: f64(buf, 0x90),
        run_count_raw,
        exception,
        dump_type: f32(buf, 0xf98),
        required_dump_space: f64(buf, 0xfa0),
        system_time: u64_at(buf, 0xfa8).and_then(filled64),
        system_up_time: u64_at(buf, 0x1030).and_then(filled64),
        secondary_data_state: u32_at(buf, 0x103c).unwrap_or(0),
        product_type: f32(buf, 0x1040),
        suite_mask: f32(buf, 0x1044),
        context_offset: CONTEXT64_OFFSET,
        pae_enabled: false,
    })
}

fn exception64(buf: &[u8], at: usize) -> Option<HeaderException> {
    let code = u32_at(buf, at).and_then(filled32)?;
    let count = (f32(buf, at + 0x18) as usize).min(15);
    Some(HeaderException {
        code,
        flags: f32(buf, at + 4),
        record: f64(buf, at + 8),
        address: f64(buf, at + 0x10),
        parameters: (0..count).map(|i| f64(buf, at + 0x20 + i * 8)).collect(),
    })
}

fn parse32(buf: &[u8]) -> Result<KernelHeader, String> {
    if buf.len() < HEADER32_SIZE {
        return Err(format!(
            "the file holds {:#x} bytes, less than the {HEADER32_SIZE:#x}-byte PAGEDUMP header",
            buf.len()
        ));
    }
    let w = |off| u64::from(f32(buf, off));
    let run_count_raw = f32(buf, 0x64);
    let runs = if (run_count_raw as usize) <= MAX_RUNS32 {
        (0..run_count_raw as usize)
            .map(|i| PhysicalRun {
                base_page: w(0x6c + i * 8),
                page_count: w(0x70 + i * 8),
            })
            .collect()
    } else {
        Vec::new()
    };
    let exception = u32_at(buf, 0x7d0).and_then(filled32).map(|code| {
        let count = (f32(buf, 0x7d0 + 0x10) as usize).min(15);
        HeaderException {
            code,
            flags: f32(buf, 0x7d4),
            record: w(0x7d8),
            address: w(0x7dc),
            parameters: (0..count).map(|i| w(0x7e4 + i * 4)).collect(),
        }
    });
    Ok(KernelHeader {
        is64: false,
        major_version: f32(buf, 0x08),
        minor_version: f32(buf, 0x0c),
        directory_table_base: w(0x10),
        pfn_database: w(0x14),
        ps_loaded_module_list: w(0x18),
        ps_active_process_head: w(0x1c),
        machine_image_type: f32(buf, 0x20),
        number_processors: f32(buf, 0x24),
        bugcheck_code: f32(buf, 0x28),
        bugcheck_parameters: [w(0x2c), w(0x30), w(0x34), w(0x38)],
        kd_debugger_data_block: w(0x60),
        runs,
        run_pages: w(0x68),
        run_count_raw,
        exception,
        dump_type: f32(buf, 0xf88),
        required_dump_space: f64(buf, 0xfa0),
        system_time: u64_at(buf, 0xfc0).and_then(filled64),
        system_up_time: u64_at(buf, 0xfb8).and_then(filled64),
        secondary_data_state: u32_at(buf, 0xf90).unwrap_or(0),
        product_type: f32(buf, 0xf94),
        suite_mask: f32(buf, 0xf98),
        context_offset: CONTEXT32_OFFSET,
        pae_enabled: buf.get(0x5c).is_some_and(|&b| b == 1),
    })
}

/// Seconds since the Unix epoch for a FILETIME, when it is after 1970.
pub fn filetime_to_unix(ft: u64) -> Option<u64> {
    (ft / 10_000_000).checked_sub(11_644_473_600)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_and_foreign_buffers() {
        assert!(KernelHeader::parse(b"MDMP").is_none());
        assert!(matches!(KernelHeader::parse(b"PAGEDU64"), Some(Err(_))));
        assert!(matches!(KernelHeader::parse(b"PAGEDUMP"), Some(Err(_))));
    }

    #[test]
    fn too_many_runs_gives_no_runs() {
        let mut buf = vec![0u8; HEADER64_SIZE];
        buf[..8].copy_from_slice(b"PAGEDU64");
        buf[0x88..0x8c].copy_from_slice(&1000u32.to_le_bytes());
        let h = KernelHeader::parse(&buf).and_then(Result::ok);
        assert!(h.is_some_and(|h| h.runs.is_empty() && h.run_count_raw == 1000));
    }
}
