//! Small memory (triage) dumps: the `TRIAGE_DUMP64` header after the dump header, its driver
//! list and the memory it carries (the crashing thread's stack and the data blocks); of 32-bit
//! ones (`TRIAGE_DUMP32`: x86, ARMNT) the header and the driver list.

use super::header::{u32_at, u64_at};

/// Where a driver entry's fields lie: `DUMP_DRIVER_ENTRY{32,64}` is the name offset, then a
/// `KLDR_DATA_TABLE_ENTRY` laid out at the pointer width.
struct DriverEntryLayout {
    /// Size of one entry.
    size: usize,
    /// `DllBase` and its width in bytes.
    base: (usize, usize),
    /// `SizeOfImage`.
    image_size: usize,
    /// `CheckSum`.
    checksum: usize,
    /// `TimeDateStamp`.
    timestamp: usize,
}

/// `DUMP_DRIVER_ENTRY64`.
const DRIVER_ENTRY64: DriverEntryLayout = DriverEntryLayout {
    size: 0x90,
    base: (0x38, 8),
    image_size: 0x48,
    checksum: 0x80,
    timestamp: 0x88,
};

/// `DUMP_DRIVER_ENTRY32`.
const DRIVER_ENTRY32: DriverEntryLayout = DriverEntryLayout {
    size: 0x4c,
    base: (0x1c, 4),
    image_size: 0x24,
    checksum: 0x44,
    timestamp: 0x48,
};
/// Size of one `TRIAGE_DATA_BLOCK64`.
const DATA_BLOCK64_SIZE: usize = 16;
/// Upper bound on listed drivers (a real dump has a few hundred).
const MAX_DRIVERS: usize = 8192;
/// Upper bound on data blocks (a real dump has a few thousand).
const MAX_DATA_BLOCKS: usize = 1 << 20;
/// Longest driver name, in UTF-16 units (MAX_PATH).
const MAX_NAME_CHARS: usize = 260;

/// The `TRIAGE_DUMP64` header fields.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TriageHeader {
    /// `ServicePackBuild`.
    pub service_pack_build: u32,
    /// `SizeOfDump`.
    pub size_of_dump: u32,
    /// `ValidOffset`.
    pub valid_offset: u32,
    /// `ContextOffset`.
    pub context_offset: u32,
    /// `ExceptionOffset`.
    pub exception_offset: u32,
    /// `MmOffset`.
    pub mm_offset: u32,
    /// `UnloadedDriversOffset`.
    pub unloaded_drivers_offset: u32,
    /// `PrcbOffset`: a copy of the crashing processor's KPRCB.
    pub prcb_offset: u32,
    /// `ProcessOffset`: a copy of the current EPROCESS.
    pub process_offset: u32,
    /// `ThreadOffset`: a copy of the current ETHREAD.
    pub thread_offset: u32,
    /// `CallStackOffset`: the stack bytes from `TopOfStack`.
    pub call_stack_offset: u32,
    /// `SizeOfCallStack`.
    pub size_of_call_stack: u32,
    /// `DriverListOffset`.
    pub driver_list_offset: u32,
    /// `DriverCount`.
    pub driver_count: u32,
    /// `StringPoolOffset`.
    pub string_pool_offset: u32,
    /// `StringPoolSize`.
    pub string_pool_size: u32,
    /// `BrokenDriverOffset`.
    pub broken_driver_offset: u32,
    /// `TriageOptions`.
    pub triage_options: u32,
    /// `TopOfStack`: the virtual address of the first call-stack byte.
    pub top_of_stack: u64,
    /// `BStoreOffset` (IA-64 only).
    pub bstore_offset: u32,
    /// `SizeOfBStore`.
    pub size_of_bstore: u32,
    /// `LimitOfBStore`.
    pub limit_of_bstore: u64,
    /// `DataPageAddress`.
    pub data_page_address: u64,
    /// `DataPageOffset`.
    pub data_page_offset: u32,
    /// `DataPageSize`.
    pub data_page_size: u32,
    /// `DebuggerDataOffset`.
    pub debugger_data_offset: u32,
    /// `DebuggerDataSize`.
    pub debugger_data_size: u32,
    /// `DataBlocksOffset`.
    pub data_blocks_offset: u32,
    /// `DataBlocksCount`.
    pub data_blocks_count: u32,
}

impl TriageHeader {
    /// Parses the triage header at `at` (right after the 64-bit dump header).
    pub fn parse64(buf: &[u8], at: usize) -> Option<TriageHeader> {
        let r = |off: usize| u32_at(buf, at.checked_add(off)?);
        let q = |off: usize| u64_at(buf, at.checked_add(off)?);
        Some(TriageHeader {
            top_of_stack: q(0x48)?,
            bstore_offset: r(0x50)?,
            size_of_bstore: r(0x54)?,
            limit_of_bstore: q(0x58)?,
            data_page_address: q(0x60)?,
            data_page_offset: r(0x68)?,
            data_page_size: r(0x6c)?,
            debugger_data_offset: r(0x70)?,
            debugger_data_size: r(0x74)?,
            data_blocks_offset: r(0x78)?,
            data_blocks_count: r(0x7c)?,
            ..TriageHeader::leading_fields(&r)?
        })
    }

    /// Parses a `TRIAGE_DUMP32` at `at` (right after the 32-bit dump header): the same fields
    /// at 32-bit widths, without the IA-64 backing store.
    pub fn parse32(buf: &[u8], at: usize) -> Option<TriageHeader> {
        let r = |off: usize| u32_at(buf, at.checked_add(off)?);
        Some(TriageHeader {
            top_of_stack: u64::from(r(0x48)?),
            data_page_address: u64::from(r(0x4c)?),
            data_page_offset: r(0x50)?,
            data_page_size: r(0x54)?,
            debugger_data_offset: r(0x58)?,
            debugger_data_size: r(0x5c)?,
            data_blocks_offset: r(0x60)?,
            data_blocks_count: r(0x64)?,
            ..TriageHeader::leading_fields(&r)?
        })
    }

    /// The 32-bit fields both layouts share (offsets 0x00–0x44, read by `r`); the others keep
    /// their defaults.
    fn leading_fields(r: &impl Fn(usize) -> Option<u32>) -> Option<TriageHeader> {
        Some(TriageHeader {
            service_pack_build: r(0x00)?,
            size_of_dump: r(0x04)?,
            valid_offset: r(0x08)?,
            context_offset: r(0x0c)?,
            exception_offset: r(0x10)?,
            mm_offset: r(0x14)?,
            unloaded_drivers_offset: r(0x18)?,
            prcb_offset: r(0x1c)?,
            process_offset: r(0x20)?,
            thread_offset: r(0x24)?,
            call_stack_offset: r(0x28)?,
            size_of_call_stack: r(0x2c)?,
            driver_list_offset: r(0x30)?,
            driver_count: r(0x34)?,
            string_pool_offset: r(0x38)?,
            string_pool_size: r(0x3c)?,
            broken_driver_offset: r(0x40)?,
            triage_options: r(0x44)?,
            ..TriageHeader::default()
        })
    }
}

/// Where `EPROCESS.ImageFileName` may lie in the EPROCESS copy of a triage dump: after the
/// process's `KPROCESS` and its early fields on every build (Windows 7 to 11, x86, x64, ARM64:
/// 0x16c to 0x5a8), before the end of the structure.
const IMAGE_FILE_NAME_RANGE: std::ops::Range<usize> = 0x100..0xB00;
/// `ImageFileName` is a `UCHAR[15]`.
const IMAGE_FILE_NAME_LEN: usize = 15;

/// The current process's name from the triage dump's copy of its EPROCESS: the
/// `ImageFileName` field, found without the kernel's symbols as the one 15-byte field in
/// [`IMAGE_FILE_NAME_RANGE`] that holds an image name (`name.exe`, or a kernel process's
/// name: `System`, `Registry`, `MemCompression`, `Secure System`, `Idle`), zero-padded.
/// `(name, offset in the EPROCESS)`; `None` without a copy, or with none or several
/// candidates.
pub fn process_image_name(buf: &[u8], triage: &TriageHeader) -> Option<(String, usize)> {
    let start = triage.process_offset as usize;
    if start == 0 {
        return None;
    }
    let end = start.checked_add(IMAGE_FILE_NAME_RANGE.end + IMAGE_FILE_NAME_LEN)?;
    let eprocess = buf.get(start..end.min(buf.len()))?;
    let mut found = IMAGE_FILE_NAME_RANGE.filter_map(|at| {
        let field = eprocess.get(at..at + IMAGE_FILE_NAME_LEN)?;
        let name = image_name(field)?;
        // The name starts the field: the byte before it is not part of a longer text.
        let before = *eprocess.get(at - 1)?;
        (!before.is_ascii_graphic()).then_some((name, at))
    });
    let first = found.next()?;
    found.next().is_none().then_some(first)
}

/// The image name a zero-padded `ImageFileName` field holds, if it holds one.
fn image_name(field: &[u8]) -> Option<String> {
    let len = field.iter().position(|b| *b == 0).unwrap_or(field.len());
    if len < 2 || field[len..].iter().any(|b| *b != 0) {
        return None;
    }
    let name = std::str::from_utf8(&field[..len]).ok()?;
    let allowed = |c: char| c.is_ascii_alphanumeric() || "._- ".contains(c);
    if !name.chars().all(allowed) || name.starts_with(['.', ' ']) {
        return None;
    }
    let lower = name.to_ascii_lowercase();
    // A 15-character name is cut short: its extension may be missing.
    let image = [".exe", ".com", ".scr"].iter().any(|e| lower.ends_with(e))
        || (len == IMAGE_FILE_NAME_LEN && name.contains('.'));
    let kernel = [
        "System",
        "Registry",
        "MemCompression",
        "Secure System",
        "Idle",
    ]
    .contains(&name);
    (image || kernel).then(|| name.to_string())
}

/// One loaded driver from the triage driver list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DriverEntry {
    /// The name as the string pool gives it (often a `\SystemRoot\…` path).
    pub name: String,
    /// `DllBase`.
    pub base: u64,
    /// `SizeOfImage`.
    pub size: u32,
    /// `CheckSum`.
    pub checksum: u32,
    /// `TimeDateStamp`.
    pub timestamp: u32,
}

/// The driver list of a 64-bit triage dump; entries whose fields lie outside the file are
/// skipped.
pub fn drivers64(buf: &[u8], triage: &TriageHeader) -> Vec<DriverEntry> {
    drivers(buf, triage, &DRIVER_ENTRY64)
}

/// The driver list of a 32-bit triage dump.
pub fn drivers32(buf: &[u8], triage: &TriageHeader) -> Vec<DriverEntry> {
    drivers(buf, triage, &DRIVER_ENTRY32)
}

fn drivers(buf: &[u8], triage: &TriageHeader, layout: &DriverEntryLayout) -> Vec<DriverEntry> {
    let count = (triage.driver_count as usize).min(MAX_DRIVERS);
    let start = triage.driver_list_offset as usize;
    let mut out = Vec::new();
    for i in 0..count {
        let Some(at) = i
            .checked_mul(layout.size)
            .and_then(|o| o.checked_add(start))
        else {
            break;
        };
        if at.saturating_add(layout.size) > buf.len() {
            break;
        }
        let base = match layout.base.1 {
            8 => u64_at(buf, at + layout.base.0),
            _ => u32_at(buf, at + layout.base.0).map(u64::from),
        };
        let (Some(name_off), Some(base), Some(size), Some(checksum), Some(timestamp)) = (
            u32_at(buf, at),
            base,
            u32_at(buf, at + layout.image_size),
            u32_at(buf, at + layout.checksum),
            u32_at(buf, at + layout.timestamp),
        ) else {
            continue;
        };
        let name = dump_string(buf, name_off as usize).unwrap_or_else(|| format!("driver{i}"));
        out.push(DriverEntry {
            name,
            base,
            size,
            checksum,
            timestamp,
        });
    }
    out
}

/// A `DUMP_STRING` (u32 length in UTF-16 units, then the characters).
fn dump_string(buf: &[u8], at: usize) -> Option<String> {
    let chars = (u32_at(buf, at)? as usize).min(MAX_NAME_CHARS);
    let start = at.checked_add(4)?;
    let bytes = buf.get(start..start.checked_add(chars * 2)?)?;
    let units: Vec<u16> = bytes
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    Some(String::from_utf16_lossy(&units))
}

/// A captured virtual range: `(virtual address, file offset, size)`.
pub type Block = (u64, usize, usize);

/// The call stack, the data page and the data blocks, each checked to lie inside the file.
pub fn memory_blocks64(buf: &[u8], triage: &TriageHeader) -> Vec<Block> {
    let mut out = Vec::new();
    let mut push = |va: u64, off: usize, size: usize| {
        if size > 0 && off.checked_add(size).is_some_and(|end| end <= buf.len()) {
            out.push((va, off, size));
        }
    };
    push(
        triage.top_of_stack,
        triage.call_stack_offset as usize,
        triage.size_of_call_stack as usize,
    );
    if triage.data_page_address != 0 {
        push(
            triage.data_page_address,
            triage.data_page_offset as usize,
            triage.data_page_size as usize,
        );
    }
    let count = (triage.data_blocks_count as usize).min(MAX_DATA_BLOCKS);
    let start = triage.data_blocks_offset as usize;
    for i in 0..count {
        let Some(at) = i
            .checked_mul(DATA_BLOCK64_SIZE)
            .and_then(|o| o.checked_add(start))
        else {
            break;
        };
        let (Some(va), Some(off), Some(size)) =
            (u64_at(buf, at), u32_at(buf, at + 8), u32_at(buf, at + 12))
        else {
            break;
        };
        push(va, off as usize, size as usize);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(s: &[u8]) -> [u8; 15] {
        let mut f = [0u8; 15];
        f[..s.len()].copy_from_slice(s);
        f
    }

    #[test]
    fn image_file_names() {
        assert_eq!(image_name(&field(b"System")).as_deref(), Some("System"));
        assert_eq!(
            image_name(&field(b"notepad.exe")).as_deref(),
            Some("notepad.exe")
        );
        assert_eq!(
            image_name(b"SearchProtocolH"),
            None,
            "15 characters with no dot"
        );
        assert_eq!(
            image_name(b"MsMpEng.exe\0\0\x01\0"),
            None,
            "not zero-padded"
        );
        assert_eq!(image_name(&field(b"Systemx")), None);
        assert_eq!(image_name(&field(b"a")), None);
    }

    #[test]
    fn the_one_image_name_of_the_eprocess_copy() {
        let mut buf = vec![0x11u8; 0x40 + 0xC00];
        let at = 0x40 + 0x150;
        buf[at - 1] = 0;
        buf[at..at + 15].copy_from_slice(&field(b"cmd.exe"));
        let triage = TriageHeader {
            process_offset: 0x40,
            ..TriageHeader::default()
        };
        assert_eq!(
            process_image_name(&buf, &triage),
            Some(("cmd.exe".into(), 0x150))
        );
        // Two candidates: no answer.
        let other = 0x40 + 0x300;
        buf[other - 1] = 0;
        buf[other..other + 15].copy_from_slice(&field(b"System"));
        assert_eq!(process_image_name(&buf, &triage), None);
    }
}
