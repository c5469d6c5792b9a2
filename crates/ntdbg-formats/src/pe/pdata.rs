//! The exception directory (`.pdata`) and x64 `UNWIND_INFO` headers.
//!
//! Unwinding itself is done elsewhere (framehop for x64, [`crate::unwind_arm64`] for ARM64);
//! this module finds the entry covering an address and checks that the unwind data it points
//! to is really there, so an unwinder never runs on missing bytes.

use crate::bytes::{slice, u32_at};
use crate::FormatError;

/// One x64 `RUNTIME_FUNCTION` (`IMAGE_RUNTIME_FUNCTION_ENTRY`): a function's range and its
/// `UNWIND_INFO`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RuntimeFunctionX64 {
    /// RVA of the first byte.
    pub begin: u32,
    /// RVA one past the last byte.
    pub end: u32,
    /// RVA of the `UNWIND_INFO`.
    pub unwind_info: u32,
}

/// One ARM64 `.pdata` entry (`IMAGE_ARM64_RUNTIME_FUNCTION_ENTRY`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RuntimeFunctionArm64 {
    /// RVA of the first byte.
    pub begin: u32,
    /// The `UnwindData` word: an `.xdata` RVA when its low two bits are 0, packed unwind data
    /// otherwise.
    pub unwind_data: u32,
}

impl RuntimeFunctionArm64 {
    /// The low two bits: 0 = `.xdata` record, 1 = packed, 2 = packed fragment, 3 = reserved.
    pub fn flag(&self) -> u32 {
        self.unwind_data & 3
    }
}

/// The x64 entries of an exception directory, cleaned up for lookup: entries with an empty
/// range or ending beyond `size_of_image` are dropped and the rest sorted by start.
pub fn read_runtime_functions_x64(pdata: &[u8], size_of_image: u32) -> Vec<RuntimeFunctionX64> {
    let mut out: Vec<RuntimeFunctionX64> = pdata
        .chunks_exact(12)
        .filter_map(|e| {
            Some(RuntimeFunctionX64 {
                begin: u32_at(e, 0, "RUNTIME_FUNCTION").ok()?,
                end: u32_at(e, 4, "RUNTIME_FUNCTION").ok()?,
                unwind_info: u32_at(e, 8, "RUNTIME_FUNCTION").ok()?,
            })
        })
        .filter(|f| f.begin < f.end && f.end <= size_of_image)
        .collect();
    out.sort_by_key(|f| f.begin);
    out
}

/// The ARM64 entries of an exception directory, sorted by start (entries past
/// `size_of_image` dropped).
pub fn read_runtime_functions_arm64(pdata: &[u8], size_of_image: u32) -> Vec<RuntimeFunctionArm64> {
    let mut out: Vec<RuntimeFunctionArm64> = pdata
        .chunks_exact(8)
        .filter_map(|e| {
            Some(RuntimeFunctionArm64 {
                begin: u32_at(e, 0, "ARM64 RUNTIME_FUNCTION").ok()?,
                unwind_data: u32_at(e, 4, "ARM64 RUNTIME_FUNCTION").ok()?,
            })
        })
        .filter(|f| f.begin < size_of_image)
        .collect();
    out.sort_by_key(|f| f.begin);
    out
}

/// The x64 entry whose range holds `rva` (entries as [`read_runtime_functions_x64`] gives
/// them).
pub fn lookup_x64(entries: &[RuntimeFunctionX64], rva: u32) -> Option<&RuntimeFunctionX64> {
    let i = entries.partition_point(|f| f.begin <= rva).checked_sub(1)?;
    entries.get(i).filter(|f| rva < f.end)
}

/// `UNW_FLAG_EHANDLER`.
const UNW_FLAG_EHANDLER: u8 = 1;
/// `UNW_FLAG_UHANDLER`.
const UNW_FLAG_UHANDLER: u8 = 2;
/// `UNW_FLAG_CHAININFO`.
const UNW_FLAG_CHAININFO: u8 = 4;

/// The fixed part of an x64 `UNWIND_INFO` and what follows its unwind codes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnwindInfoX64 {
    /// Version (1 or 2).
    pub version: u8,
    /// `UNW_FLAG_*` bits.
    pub flags: u8,
    /// Prologue length in bytes.
    pub prolog_size: u8,
    /// Number of 16-bit unwind code slots.
    pub code_count: u8,
    /// Frame register number (0 = none).
    pub frame_register: u8,
    /// Scaled frame register offset (×16).
    pub frame_offset: u8,
    /// With `UNW_FLAG_CHAININFO`: the primary entry this one continues.
    pub chained: Option<RuntimeFunctionX64>,
    /// Bytes the structure occupies up to and including the chain entry or handler RVA.
    pub len: usize,
}

impl UnwindInfoX64 {
    /// Parses the `UNWIND_INFO` at the start of `data`.
    ///
    /// Checks that all unwind codes (and the chain entry or handler RVA) are inside `data`.
    pub fn parse(data: &[u8]) -> Result<UnwindInfoX64, FormatError> {
        let what = "UNWIND_INFO";
        let head = slice(data, 0, 4, what)?;
        let version = head[0] & 7;
        let flags = head[0] >> 3;
        if !(1..=2).contains(&version) {
            return Err(FormatError::Unsupported {
                what: "UNWIND_INFO version",
                value: u64::from(version),
            });
        }
        let code_count = head[2];
        // Codes are padded to an even count.
        let codes_end = 4 + usize::from(code_count).div_ceil(2) * 4;
        slice(data, 4, codes_end - 4, what)?;
        let mut len = codes_end;
        let chained = if flags & UNW_FLAG_CHAININFO != 0 {
            let entry = slice(data, codes_end, 12, what)?;
            len += 12;
            Some(RuntimeFunctionX64 {
                begin: u32_at(entry, 0, what)?,
                end: u32_at(entry, 4, what)?,
                unwind_info: u32_at(entry, 8, what)?,
            })
        } else if flags & (UNW_FLAG_EHANDLER | UNW_FLAG_UHANDLER) != 0 {
            slice(data, codes_end, 4, what)?;
            len += 4;
            None
        } else {
            None
        };
        Ok(UnwindInfoX64 {
            version,
            flags,
            prolog_size: head[1],
            code_count,
            frame_register: head[3] & 0xf,
            frame_offset: head[3] >> 4,
            chained,
            len,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn x64_entries_are_cleaned_sorted_and_looked_up() {
        let mut pdata = Vec::new();
        for (b, e, u) in [
            (0x2000u32, 0x2040u32, 0x5000u32),
            (0x1000, 0x1010, 0x5010),
            (0x3000, 0x3000, 0),   // empty: dropped
            (0x4000, 0x9_0000, 0), // past the image: dropped
        ] {
            pdata.extend_from_slice(&b.to_le_bytes());
            pdata.extend_from_slice(&e.to_le_bytes());
            pdata.extend_from_slice(&u.to_le_bytes());
        }
        pdata.extend_from_slice(&[1, 2, 3]); // a partial trailing entry is ignored
        let entries = read_runtime_functions_x64(&pdata, 0x10000);
        assert_eq!(entries.len(), 2);
        assert_eq!(entries[0].begin, 0x1000);
        assert_eq!(
            lookup_x64(&entries, 0x100f).map(|f| f.unwind_info),
            Some(0x5010)
        );
        assert_eq!(lookup_x64(&entries, 0x1010), None);
        assert_eq!(lookup_x64(&entries, 0x0fff), None);
        assert_eq!(lookup_x64(&entries, 0x203f).map(|f| f.begin), Some(0x2000));
    }

    #[test]
    fn unwind_info_headers() {
        // version 1, no flags, prolog 4, 1 code (padded to 2 slots), no frame register
        let info = UnwindInfoX64::parse(&[0x01, 0x04, 0x01, 0x00, 0x04, 0x42, 0, 0]).unwrap();
        assert_eq!((info.version, info.code_count, info.len), (1, 1, 8));
        // chained: flags 4 → byte0 = 1 | 4 << 3
        let mut chained = vec![0x21, 0, 0, 0];
        chained.extend_from_slice(&0x1000u32.to_le_bytes());
        chained.extend_from_slice(&0x1100u32.to_le_bytes());
        chained.extend_from_slice(&0x5000u32.to_le_bytes());
        let info = UnwindInfoX64::parse(&chained).unwrap();
        assert_eq!(info.chained.map(|c| c.unwind_info), Some(0x5000));
        assert_eq!(
            UnwindInfoX64::parse(&chained[..10]).unwrap_err().code(),
            "truncated"
        );
        assert_eq!(
            UnwindInfoX64::parse(&[0x05, 0, 0, 0]).unwrap_err().code(),
            "unsupported"
        );
        assert!(UnwindInfoX64::parse(&[0x01, 0, 3, 0, 0, 0]).is_err());
    }
}
