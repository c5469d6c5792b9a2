//! The version resource (`VS_VERSIONINFO`): `VS_FIXEDFILEINFO` and the string table.

use object::pe as raw;

use super::{DataDirectory, PeBytes, PeInfo, PeLayout};
use crate::bytes::{align4, slice, u16_at, u32_at, utf16_z};
use crate::FormatError;

/// `VS_FIXEDFILEINFO.dwSignature`.
const VS_FFI_SIGNATURE: u32 = 0xFEEF_04BD;
/// Bit set in a resource directory entry's offset when it points to a subdirectory.
const SUBDIRECTORY: u32 = 0x8000_0000;
/// Longest string (in UTF-16 units) read from the version resource.
const MAX_STRING_UNITS: usize = 1024;
/// Most string-table entries kept.
const MAX_STRINGS: usize = 64;

/// An image's version resource.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VersionInfo {
    /// `dwFileVersionMS`/`LS` as four parts (major, minor, build, revision).
    pub file_version: [u16; 4],
    /// `dwProductVersionMS`/`LS` as four parts.
    pub product_version: [u16; 4],
    /// `dwFileFlags` masked by `dwFileFlagsMask` (debug, prerelease, patched, …).
    pub file_flags: u32,
    /// `dwFileOS`.
    pub file_os: u32,
    /// `dwFileType` (application, DLL, driver, …).
    pub file_type: u32,
    /// `dwFileSubtype`.
    pub file_subtype: u32,
    /// The first string table's entries (`CompanyName`, `FileDescription`, `FileVersion`, …),
    /// in file order.
    pub strings: Vec<(String, String)>,
}

impl VersionInfo {
    /// The file version as `major.minor.build.revision`.
    pub fn file_version_string(&self) -> String {
        join_version(&self.file_version)
    }

    /// The product version as `major.minor.build.revision`.
    pub fn product_version_string(&self) -> String {
        join_version(&self.product_version)
    }

    /// A string-table value by its key (case-insensitive), e.g. `"CompanyName"`.
    pub fn string(&self, key: &str) -> Option<&str> {
        self.strings
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(key))
            .map(|(_, v)| v.as_str())
    }
}

fn join_version(v: &[u16; 4]) -> String {
    format!("{}.{}.{}.{}", v[0], v[1], v[2], v[3])
}

/// Finds and parses `RT_VERSION` in the resource directory `dir`; `Ok(None)` when the image
/// has no version resource.
pub(crate) fn read_version(
    info: &PeInfo,
    bytes: &dyn PeBytes,
    layout: PeLayout,
    dir: DataDirectory,
) -> Result<Option<VersionInfo>, FormatError> {
    let rsrc = info.read_at_rva(bytes, layout, dir.rva, dir.size, "resource directory")?;
    let rsrc = &rsrc[..];
    let Some(by_type) = find_entry(rsrc, 0, Some(u32::from(raw::RT_VERSION)))? else {
        return Ok(None);
    };
    let by_name = subdirectory(by_type, dir.rva)?;
    let Some(by_lang) = find_entry(rsrc, by_name, None)? else {
        return Ok(None);
    };
    let lang = subdirectory(by_lang, dir.rva)?;
    let Some(leaf) = find_entry(rsrc, lang, None)? else {
        return Ok(None);
    };
    if leaf & SUBDIRECTORY != 0 {
        return Err(malformed(dir.rva, "version resource leaf is a directory"));
    }
    let entry = slice(rsrc, leaf as usize, 16, "resource data entry")?;
    let data_rva = u32_at(entry, 0, "resource data entry")?;
    let size = u32_at(entry, 4, "resource data entry")?;
    let data = info.read_at_rva(bytes, layout, data_rva, size, "version resource")?;
    parse_version_info(&data, data_rva).map(Some)
}

fn malformed(at: u32, reason: &'static str) -> FormatError {
    FormatError::Malformed {
        what: "resource directory",
        offset: u64::from(at),
        reason,
    }
}

fn subdirectory(entry: u32, at: u32) -> Result<usize, FormatError> {
    if entry & SUBDIRECTORY == 0 {
        return Err(malformed(at, "expected a subdirectory"));
    }
    Ok((entry & !SUBDIRECTORY) as usize)
}

/// The `OffsetToData` of the entry with integer id `id` (or of the first entry when `None`) in
/// the resource directory at `dir`.
fn find_entry(rsrc: &[u8], dir: usize, id: Option<u32>) -> Result<Option<u32>, FormatError> {
    let what = "resource directory";
    let named = u16_at(rsrc, dir + 12, what)? as usize;
    let ids = u16_at(rsrc, dir + 14, what)? as usize;
    for i in 0..named + ids {
        let at = dir + 16 + i * 8;
        let name = u32_at(rsrc, at, "resource directory entry")?;
        let offset = u32_at(rsrc, at + 4, "resource directory entry")?;
        match id {
            None => return Ok(Some(offset)),
            Some(want) if name == want => return Ok(Some(offset)),
            Some(_) => {}
        }
    }
    Ok(None)
}

/// One `VS_VERSIONINFO`-style block: header, key, value, children.
struct Block {
    key: String,
    /// Start of the value (after the key and its padding).
    value_start: usize,
    /// Value length as declared (bytes for binary values, UTF-16 units for text).
    value_len: usize,
    /// Whether the value is text (`wType` 1).
    is_text: bool,
    /// Start of the children.
    children_start: usize,
    /// End of the block (bounded by its parent).
    end: usize,
}

fn read_block(data: &[u8], at: usize, parent_end: usize) -> Result<Block, FormatError> {
    let what = "version block";
    let len = u16_at(data, at, what)? as usize;
    let value_len = u16_at(data, at + 2, what)? as usize;
    let kind = u16_at(data, at + 4, what)?;
    if len < 6 {
        return Err(FormatError::Malformed {
            what,
            offset: at as u64,
            reason: "block shorter than its header",
        });
    }
    let end = at.saturating_add(len).min(parent_end);
    let (key, after_key) = utf16_z(&data[..end.min(data.len())], at + 6, MAX_STRING_UNITS);
    let value_start = align4(after_key);
    let value_bytes = if kind == 1 { value_len * 2 } else { value_len };
    let children_start = align4(value_start.saturating_add(value_bytes)).min(end);
    Ok(Block {
        key,
        value_start,
        value_len,
        is_text: kind == 1,
        children_start,
        end,
    })
}

/// The blocks directly inside `parent`.
fn children(data: &[u8], parent: &Block) -> Vec<Block> {
    let mut out = Vec::new();
    let mut at = parent.children_start;
    while at + 6 <= parent.end {
        let Ok(block) = read_block(data, at, parent.end) else {
            break;
        };
        let next = align4(block.end);
        out.push(block);
        if next <= at {
            break;
        }
        at = next;
    }
    out
}

fn parse_version_info(data: &[u8], rva: u32) -> Result<VersionInfo, FormatError> {
    let root = read_block(data, 0, data.len())?;
    if root.key != "VS_VERSION_INFO" {
        return Err(FormatError::Malformed {
            what: "version resource",
            offset: u64::from(rva),
            reason: "key is not VS_VERSION_INFO",
        });
    }
    let what = "VS_FIXEDFILEINFO";
    let ffi = slice(data, root.value_start, 52, what)?;
    let signature = u32_at(ffi, 0, what)?;
    if signature != VS_FFI_SIGNATURE {
        return Err(FormatError::BadMagic {
            what,
            offset: u64::from(rva) + root.value_start as u64,
            found: u64::from(signature),
        });
    }
    let split = |ms: u32, ls: u32| [(ms >> 16) as u16, ms as u16, (ls >> 16) as u16, ls as u16];
    let mut info = VersionInfo {
        file_version: split(u32_at(ffi, 8, what)?, u32_at(ffi, 12, what)?),
        product_version: split(u32_at(ffi, 16, what)?, u32_at(ffi, 20, what)?),
        file_flags: u32_at(ffi, 24, what)? & u32_at(ffi, 28, what)?,
        file_os: u32_at(ffi, 32, what)?,
        file_type: u32_at(ffi, 36, what)?,
        file_subtype: u32_at(ffi, 40, what)?,
        strings: Vec::new(),
    };
    let string_tables = children(data, &root)
        .into_iter()
        .filter(|b| b.key == "StringFileInfo")
        .flat_map(|sfi| children(data, &sfi));
    if let Some(table) = string_tables.into_iter().next() {
        for entry in children(data, &table).into_iter().take(MAX_STRINGS) {
            let value = if entry.is_text && entry.value_len > 0 && entry.value_start < entry.end {
                utf16_z(&data[..entry.end], entry.value_start, MAX_STRING_UNITS).0
            } else {
                String::new()
            };
            info.strings.push((entry.key, value));
        }
    }
    Ok(info)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utf16(s: &str) -> Vec<u8> {
        s.encode_utf16()
            .chain([0])
            .flat_map(|u| u.to_le_bytes())
            .collect()
    }

    /// Builds one block: header, key, padding, value, padding, children.
    fn block(key: &str, kind: u16, value: &[u8], value_len: u16, children: &[Vec<u8>]) -> Vec<u8> {
        let mut b = vec![0, 0];
        b.extend_from_slice(&value_len.to_le_bytes());
        b.extend_from_slice(&kind.to_le_bytes());
        b.extend(utf16(key));
        while b.len() % 4 != 0 {
            b.push(0);
        }
        b.extend_from_slice(value);
        for child in children {
            while b.len() % 4 != 0 {
                b.push(0);
            }
            b.extend_from_slice(child);
        }
        let len = b.len() as u16;
        b[0..2].copy_from_slice(&len.to_le_bytes());
        b
    }

    fn sample() -> Vec<u8> {
        let mut ffi = Vec::new();
        for v in [
            VS_FFI_SIGNATURE,
            0x10000,
            0x000a_0000,
            0x4a61_0001,
            0x000a_0000,
            0x4a61_0000,
            0x3f,
            0x1,
            0x40004,
            2,
            0,
            0,
            0,
        ] {
            ffi.extend_from_slice(&v.to_le_bytes());
        }
        let company = block("CompanyName", 1, &utf16("Microsoft"), 10, &[]);
        let fv = block("FileVersion", 1, &utf16("10.0.19041.1"), 13, &[]);
        let table = block("040904B0", 1, &[], 0, &[company, fv]);
        let sfi = block("StringFileInfo", 1, &[], 0, &[table]);
        block("VS_VERSION_INFO", 0, &ffi, 52, &[sfi])
    }

    #[test]
    fn fixed_info_and_strings() {
        let info = parse_version_info(&sample(), 0x1000).unwrap();
        assert_eq!(info.file_version, [10, 0, 19041, 1]);
        assert_eq!(info.file_version_string(), "10.0.19041.1");
        assert_eq!(info.product_version_string(), "10.0.19041.0");
        assert_eq!(info.file_flags, 1);
        assert_eq!(info.file_type, 2);
        assert_eq!(info.string("companyname"), Some("Microsoft"));
        assert_eq!(info.string("FileVersion"), Some("10.0.19041.1"));
    }

    #[test]
    fn every_truncation_is_an_error_or_partial_never_a_panic() {
        let full = sample();
        for len in 0..full.len() {
            let _ = parse_version_info(&full[..len], 0);
        }
        let mut bad = full.clone();
        bad[0] = 2; // wLength shorter than the header
        bad[1] = 0;
        assert!(parse_version_info(&bad, 0).is_err());
    }
}
