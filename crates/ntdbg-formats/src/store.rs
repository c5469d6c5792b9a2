//! Symbol-store keys and names.
//!
//! A symbol store (Microsoft's `symstore` layout, also used by symbol servers and Breakpad)
//! files every debug file under `NAME/KEY/NAME`:
//!
//! - PDBs under their GUID and age: `crashy.pdb/99B57C97E2C099B24C4C44205044422E1/crashy.pdb`
//!   ([`pdb_key`]);
//! - images under their link timestamp and size: `crashy.exe/6B0CCCD25c000/crashy.exe`
//!   ([`image_key`]);
//! - Breakpad symbol files under the PDB's debug id with the `.pdb` extension swapped for
//!   `.sym` ([`breakpad_sym_name`]).
//!
//! Everything here is string arithmetic: no file is touched.

use std::fmt;

use crate::FormatError;

/// A GUID, held in textual byte order (the order of the hex digits in
/// `99B57C97-E2C0-99B2-4C4C-44205044422E`).
///
/// On disk (CodeView records, `MINIDUMP_MODULE`, PDB info streams) the first three fields are
/// little-endian; use [`Guid::from_le_bytes`] or [`Guid::from_fields`] for those.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Guid([u8; 16]);

impl Guid {
    /// A GUID from bytes already in textual order (as `uuid::Uuid::as_bytes` gives them).
    pub const fn from_bytes(bytes: [u8; 16]) -> Guid {
        Guid(bytes)
    }

    /// A GUID from its 16 on-disk bytes (`Data1` u32 LE, `Data2`/`Data3` u16 LE, `Data4`).
    pub fn from_le_bytes(raw: [u8; 16]) -> Guid {
        let mut b = raw;
        b[0..4].reverse();
        b[4..6].reverse();
        b[6..8].reverse();
        Guid(b)
    }

    /// A GUID from its four fields.
    pub fn from_fields(data1: u32, data2: u16, data3: u16, data4: [u8; 8]) -> Guid {
        let mut b = [0u8; 16];
        b[0..4].copy_from_slice(&data1.to_be_bytes());
        b[4..6].copy_from_slice(&data2.to_be_bytes());
        b[6..8].copy_from_slice(&data3.to_be_bytes());
        b[8..16].copy_from_slice(&data4);
        Guid(b)
    }

    /// The bytes in textual order.
    pub fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }

    /// Whether all bytes are zero (no real identity).
    pub fn is_nil(&self) -> bool {
        self.0 == [0; 16]
    }

    /// 32 upper-case hex digits, no dashes: the form used in store keys.
    pub fn to_simple_upper(&self) -> String {
        self.0.iter().map(|b| format!("{b:02X}")).collect()
    }

    /// Parses 32 hex digits, with or without dashes and braces.
    pub fn parse(text: &str) -> Result<Guid, FormatError> {
        let digits: String = text
            .trim()
            .trim_start_matches('{')
            .trim_end_matches('}')
            .chars()
            .filter(|&c| c != '-')
            .collect();
        let invalid = |reason| FormatError::InvalidKey {
            what: "GUID",
            text: text.to_string(),
            reason,
        };
        if digits.len() != 32 {
            return Err(invalid("expected 32 hex digits"));
        }
        let mut b = [0u8; 16];
        for (i, byte) in b.iter_mut().enumerate() {
            let pair = digits.get(i * 2..i * 2 + 2).ok_or(invalid("not ASCII"))?;
            *byte = u8::from_str_radix(pair, 16).map_err(|_| invalid("not hex"))?;
        }
        Ok(Guid(b))
    }
}

/// `99B57C97-E2C0-99B2-4C4C-44205044422E` (upper case, dashed).
impl fmt::Display for Guid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = &self.0;
        for (i, byte) in b.iter().enumerate() {
            if matches!(i, 4 | 6 | 8 | 10) {
                f.write_str("-")?;
            }
            write!(f, "{byte:02X}")?;
        }
        Ok(())
    }
}

/// The identity a PE image's CodeView record gives its PDB.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum PdbSignature {
    /// PDB 7.0 (`RSDS`): a GUID and an age.
    Pdb70 {
        /// The PDB's GUID.
        guid: Guid,
        /// The PDB's age (incremented on each relink that updates the PDB).
        age: u32,
    },
    /// PDB 2.0 (`NB10`): a 32-bit signature (a timestamp) and an age.
    Pdb20 {
        /// The signature.
        signature: u32,
        /// The age.
        age: u32,
    },
}

impl PdbSignature {
    /// The symbol-store key (see [`pdb_key`] and [`pdb20_key`]).
    pub fn key(&self) -> String {
        match *self {
            PdbSignature::Pdb70 { ref guid, age } => pdb_key(guid, age),
            PdbSignature::Pdb20 { signature, age } => pdb20_key(signature, age),
        }
    }

    /// The age.
    pub fn age(&self) -> u32 {
        match *self {
            PdbSignature::Pdb70 { age, .. } | PdbSignature::Pdb20 { age, .. } => age,
        }
    }

    /// The signature a symbol-store key names ([`PdbSignature::key`] read back): a PDB 7.0
    /// key (GUID and age), else a PDB 2.0 one (8 hex digits of signature, then the age).
    ///
    /// ```
    /// use ntdbg_formats::store::PdbSignature;
    /// let old = PdbSignature::Pdb20 { signature: 1, age: 2 };
    /// assert_eq!(PdbSignature::from_key(&old.key()), Some(old));
    /// ```
    pub fn from_key(key: &str) -> Option<PdbSignature> {
        if let Ok((guid, age)) = parse_debug_id(key) {
            return Some(PdbSignature::Pdb70 { guid, age });
        }
        let (signature, age) = (key.get(..8)?, key.get(8..)?);
        Some(PdbSignature::Pdb20 {
            signature: u32::from_str_radix(signature, 16).ok()?,
            age: u32::from_str_radix(age, 16).ok()?,
        })
    }
}

/// A PDB's identity: the file name and its signature.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PdbIdentity {
    /// The PDB file name (last path component only, e.g. `crashy.pdb`).
    pub name: String,
    /// The GUID/age (or signature/age) that must match the PDB's own.
    pub signature: PdbSignature,
}

impl PdbIdentity {
    /// An identity from a possibly full path (`Z:\build\crashy.pdb`): only the file name is kept.
    pub fn new(path: &str, signature: PdbSignature) -> PdbIdentity {
        PdbIdentity {
            name: file_name_of(path).to_string(),
            signature,
        }
    }

    /// The symbol-store key, which is also the Breakpad debug id.
    pub fn key(&self) -> String {
        self.signature.key()
    }
}

/// The symbol-store key of a PDB 7.0: the GUID as 32 upper-case hex digits in textual order,
/// then the age in upper-case hex without leading zeros.
///
/// This is also the Breakpad debug id (what `minidump`'s `debug_identifier().breakpad()`
/// prints).
///
/// ```
/// use ntdbg_formats::store::{pdb_key, Guid};
/// let guid = Guid::parse("99B57C97-E2C0-99B2-4C4C-44205044422E").unwrap();
/// assert_eq!(pdb_key(&guid, 1), "99B57C97E2C099B24C4C44205044422E1");
/// ```
pub fn pdb_key(guid: &Guid, age: u32) -> String {
    format!("{}{age:X}", guid.to_simple_upper())
}

/// The Breakpad debug id of a PDB 7.0: the same text as [`pdb_key`].
pub fn breakpad_debug_id(guid: &Guid, age: u32) -> String {
    pdb_key(guid, age)
}

/// The symbol-store key of a PDB 2.0: the signature as 8 upper-case hex digits, then the age.
pub fn pdb20_key(signature: u32, age: u32) -> String {
    format!("{signature:08X}{age:X}")
}

/// The symbol-store key of an image: `TimeDateStamp` as 8 upper-case hex digits, then
/// `SizeOfImage` in lower-case hex without leading zeros (the form symstore and symbol servers
/// use).
///
/// ```
/// assert_eq!(ntdbg_formats::store::image_key(0x6b0cccd2, 0x5c000), "6B0CCCD25c000");
/// ```
pub fn image_key(time_date_stamp: u32, size_of_image: u32) -> String {
    format!("{time_date_stamp:08X}{size_of_image:x}")
}

/// Splits a Breakpad debug id / PDB key (32 hex digits of GUID, then the age in hex) into its
/// parts.
pub fn parse_debug_id(text: &str) -> Result<(Guid, u32), FormatError> {
    let text = text.trim();
    let invalid = |reason| FormatError::InvalidKey {
        what: "debug id",
        text: text.to_string(),
        reason,
    };
    if text.len() <= 32 || !text.is_ascii() {
        return Err(invalid(
            "expected 32 hex digits of GUID followed by the age",
        ));
    }
    let (guid, age) = text.split_at(32);
    let guid = Guid::parse(guid).map_err(|_| invalid("GUID part is not hex"))?;
    let age = u32::from_str_radix(age, 16).map_err(|_| invalid("age is not hex"))?;
    Ok((guid, age))
}

/// The last component of a Windows or Unix path (`Z:\tmp\crashy.exe` → `crashy.exe`).
pub fn file_name_of(path: &str) -> &str {
    path.rsplit(['\\', '/']).next().unwrap_or(path)
}

/// The Breakpad symbol file name for a debug file: `.pdb` (any case) replaced by `.sym`,
/// otherwise `.sym` appended (`crashy.pdb` → `crashy.sym`, `libfoo.so` → `libfoo.so.sym`).
pub fn breakpad_sym_name(debug_file: &str) -> String {
    let name = file_name_of(debug_file);
    match name
        .len()
        .checked_sub(4)
        .and_then(|i| name.get(i..).map(|ext| (i, ext)))
    {
        Some((i, ext)) if ext.eq_ignore_ascii_case(".pdb") => format!("{}.sym", &name[..i]),
        _ => format!("{name}.sym"),
    }
}

/// The three components of a store path, `NAME/KEY/NAME`, to be joined under a store root.
pub fn store_components<'a>(file_name: &'a str, key: &'a str) -> [&'a str; 3] {
    [file_name, key, file_name]
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The winelab x64 `crashy.pdb` (clang + lld): its RSDS record and Breakpad debug id.
    const CRASHY_X64_DEBUG_ID: &str = "99B57C97E2C099B24C4C44205044422E1";

    #[test]
    fn pdb_key_of_crashy_x64() {
        // RSDS stores Data1..Data3 little-endian; this is the raw on-disk order.
        let raw = [
            0x97, 0x7C, 0xB5, 0x99, 0xC0, 0xE2, 0xB2, 0x99, 0x4C, 0x4C, 0x44, 0x20, 0x50, 0x44,
            0x42, 0x2E,
        ];
        let guid = Guid::from_le_bytes(raw);
        assert_eq!(guid.to_string(), "99B57C97-E2C0-99B2-4C4C-44205044422E");
        assert_eq!(pdb_key(&guid, 1), CRASHY_X64_DEBUG_ID);
        assert_eq!(breakpad_debug_id(&guid, 1), CRASHY_X64_DEBUG_ID);
        assert_eq!(
            Guid::from_fields(0x99B57C97, 0xE2C0, 0x99B2, *b"LLD PDB."),
            guid
        );
        assert_eq!(parse_debug_id(CRASHY_X64_DEBUG_ID), Ok((guid, 1)));
    }

    #[test]
    fn age_is_upper_hex_without_leading_zeros() {
        let guid = Guid::parse("{3249D99D-0C40-4931-8610-F4E4FB0B6936}").unwrap();
        assert_eq!(pdb_key(&guid, 1), "3249D99D0C4049318610F4E4FB0B69361");
        assert_eq!(pdb_key(&guid, 0x2a), "3249D99D0C4049318610F4E4FB0B69362A");
        assert_eq!(pdb20_key(0x3a2b, 0x1f), "00003A2B1F");
        assert!(parse_debug_id("3249D99D0C4049318610F4E4FB0B6936").is_err());
        assert!(parse_debug_id("3249D99D0C4049318610F4E4FB0B6936Z").is_err());
        assert!(Guid::parse("1234").is_err());
    }

    #[test]
    fn image_key_of_crashy_x64() {
        // winelab/x64/crashy.exe: TimeDateStamp 0x6b0cccd2, SizeOfImage 0x5c000.
        assert_eq!(image_key(0x6b0cccd2, 0x5c000), "6B0CCCD25c000");
        assert_eq!(image_key(0x1a, 0x1000), "0000001A1000");
    }

    #[test]
    fn names() {
        assert_eq!(file_name_of(r"Z:\tmp\crashy.exe"), "crashy.exe");
        assert_eq!(file_name_of("/usr/lib/libc.so.6"), "libc.so.6");
        assert_eq!(file_name_of("plain.dll"), "plain.dll");
        assert_eq!(file_name_of(r"C:\dir/mixed\x.pdb"), "x.pdb");
        assert_eq!(breakpad_sym_name(r"c:\b\Test_App.PDB"), "Test_App.sym");
        assert_eq!(breakpad_sym_name("libfoo.so"), "libfoo.so.sym");
        assert_eq!(breakpad_sym_name("é.pdb"), "é.sym");
        assert_eq!(breakpad_sym_name("ab"), "ab.sym");
        let id = PdbIdentity::new(
            r"Z:\x\crashy.pdb",
            PdbSignature::Pdb20 {
                signature: 1,
                age: 2,
            },
        );
        assert_eq!(id.name, "crashy.pdb");
        assert_eq!(id.key(), "000000012");
        assert_eq!(store_components("a.pdb", "K"), ["a.pdb", "K", "a.pdb"]);
    }
}
