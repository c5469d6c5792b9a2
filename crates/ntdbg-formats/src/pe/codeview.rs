//! The CodeView debug record (`RSDS` / `NB10`) that names an image's PDB.

use crate::bytes::{array, c_string, slice, u32_at};
use crate::store::{Guid, PdbIdentity, PdbSignature};
use crate::FormatError;

/// `RSDS`: the PDB 7.0 CodeView signature.
const CV_SIGNATURE_RSDS: u32 = 0x5344_5352;
/// `NB10`: the PDB 2.0 CodeView signature.
const CV_SIGNATURE_NB10: u32 = 0x3031_424e;

/// The CodeView record of an image's debug directory.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CodeViewRecord {
    /// The PDB path as the linker wrote it (often a full build-machine path).
    pub pdb_path: String,
    /// The GUID/age (or signature/age) the PDB must have.
    pub signature: PdbSignature,
}

impl CodeViewRecord {
    /// The PDB identity (file name only, plus signature).
    pub fn identity(&self) -> PdbIdentity {
        PdbIdentity::new(&self.pdb_path, self.signature.clone())
    }
}

/// Parses a CodeView record; `at` is where it was found (for error messages).
pub(crate) fn parse_codeview(data: &[u8], at: u64) -> Result<CodeViewRecord, FormatError> {
    let what = "CodeView record";
    match u32_at(data, 0, what)? {
        CV_SIGNATURE_RSDS => {
            let guid = Guid::from_le_bytes(array::<16>(data, 4, what)?);
            let age = u32_at(data, 20, what)?;
            let path = slice(data, 24, data.len().saturating_sub(24), what)?;
            Ok(CodeViewRecord {
                pdb_path: c_string(path),
                signature: PdbSignature::Pdb70 { guid, age },
            })
        }
        CV_SIGNATURE_NB10 => {
            let signature = u32_at(data, 8, what)?;
            let age = u32_at(data, 12, what)?;
            let path = slice(data, 16, data.len().saturating_sub(16), what)?;
            Ok(CodeViewRecord {
                pdb_path: c_string(path),
                signature: PdbSignature::Pdb20 { signature, age },
            })
        }
        other => Err(FormatError::BadMagic {
            what,
            offset: at,
            found: u64::from(other),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rsds_and_nb10() {
        let mut rsds = b"RSDS".to_vec();
        rsds.extend_from_slice(&[
            0x97, 0x7C, 0xB5, 0x99, 0xC0, 0xE2, 0xB2, 0x99, 0x4C, 0x4C, 0x44, 0x20, 0x50, 0x44,
            0x42, 0x2E,
        ]);
        rsds.extend_from_slice(&1u32.to_le_bytes());
        rsds.extend_from_slice(b"Z:\\tmp\\crashy.pdb\0junk");
        let cv = parse_codeview(&rsds, 0).unwrap();
        assert_eq!(cv.pdb_path, r"Z:\tmp\crashy.pdb");
        assert_eq!(cv.identity().name, "crashy.pdb");
        assert_eq!(cv.identity().key(), "99B57C97E2C099B24C4C44205044422E1");

        let mut nb10 = b"NB10".to_vec();
        nb10.extend_from_slice(&0u32.to_le_bytes());
        nb10.extend_from_slice(&0x3a2bu32.to_le_bytes());
        nb10.extend_from_slice(&2u32.to_le_bytes());
        nb10.extend_from_slice(b"old.pdb\0");
        let cv = parse_codeview(&nb10, 0).unwrap();
        assert_eq!(cv.identity().key(), "00003A2B2");
    }

    #[test]
    fn short_or_unknown_records_are_errors() {
        assert_eq!(
            parse_codeview(b"RSDS\x01\x02", 0).unwrap_err().code(),
            "truncated"
        );
        assert_eq!(
            parse_codeview(b"XXXXabcd", 7).unwrap_err().code(),
            "bad_magic"
        );
        assert_eq!(parse_codeview(b"", 0).unwrap_err().code(), "truncated");
    }
}
