//! Where a symbol file is filed in a symbol store (`ntdbg symbols upload`): a PDB under its
//! GUID and age, a PE image under its timestamp and size, a Breakpad `.sym` file under its
//! `MODULE` line's debug id and the PDB's name: the places [`crate::SymbolStore`] looks.

use std::io::Read;
use std::path::Path;

use ntdbg_formats::pe::{PeInfo, PeLayout};
use ntdbg_formats::store::{breakpad_sym_name, file_name_of, parse_debug_id, pdb_key};
use pdb_addr2line::pdb::PDB;

use crate::source::io;
use crate::source::panic_guard::guarded;
use crate::SymbolError;

/// The first bytes of a PDB 7.0 (MSF) file.
const MSF_MAGIC: &[u8] = b"Microsoft C/C++ MSF 7.00\r\n";
/// Bytes read to tell the kinds apart (and to find a `.sym` file's `MODULE` line).
const HEAD: usize = 4096;

/// A symbol file's place in a symbol store: `name/key/file`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StorePlace {
    /// The folder: the PDB's or image's file name (`crashy.pdb`, `crashy.exe`).
    pub name: String,
    /// The build's key: GUID and age, timestamp and size, or the Breakpad debug id.
    pub key: String,
    /// The file's name in that folder (`crashy.pdb`, `crashy.exe`, `crashy.sym`).
    pub file: String,
    /// `pdb`, `pe` or `breakpad`.
    pub kind: &'static str,
}

/// Where the symbol file at `path` belongs in a symbol store, read from its contents.
pub fn store_place(path: &Path) -> Result<StorePlace, SymbolError> {
    let mut head = Vec::with_capacity(HEAD);
    std::fs::File::open(path)
        .and_then(|f| f.take(HEAD as u64).read_to_end(&mut head))
        .map_err(|e| io(path, e))?;
    let own_name = || {
        path.file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    };
    if head.starts_with(MSF_MAGIC) {
        let key = pdb_identity_key(path)?;
        return Ok(StorePlace {
            name: own_name(),
            key,
            file: own_name(),
            kind: "pdb",
        });
    }
    if head.starts_with(b"MZ") {
        let bytes = std::fs::read(path).map_err(|e| io(path, e))?;
        let info = PeInfo::parse(&bytes, PeLayout::File).map_err(|source| SymbolError::Pe {
            path: path.to_path_buf(),
            source,
        })?;
        return Ok(StorePlace {
            name: own_name(),
            key: info.image_key(),
            file: own_name(),
            kind: "pe",
        });
    }
    if head.starts_with(b"MODULE ") {
        return breakpad_place(path, &head);
    }
    Err(SymbolError::NotSymbolFile {
        path: path.to_path_buf(),
    })
}

/// A PDB's own GUID and age as a store key.
fn pdb_identity_key(path: &Path) -> Result<String, SymbolError> {
    let file = std::fs::File::open(path).map_err(|e| io(path, e))?;
    let pdb_err = |source: pdb_addr2line::pdb::Error| SymbolError::Pdb {
        path: path.to_path_buf(),
        source: source.into(),
    };
    guarded(path, "PDB reader", || {
        let mut pdb = PDB::open(file).map_err(pdb_err)?;
        let own = crate::pdb_sym::read_identity(&mut pdb).map_err(pdb_err)?;
        Ok(pdb_key(&own.guid, own.age()))
    })
}

/// A `.sym` file's place from its `MODULE os arch id name` line.
fn breakpad_place(path: &Path, head: &[u8]) -> Result<StorePlace, SymbolError> {
    let bad = |message: &str| SymbolError::Breakpad {
        path: path.to_path_buf(),
        message: message.to_string(),
    };
    let line = head
        .split(|&b| b == b'\n')
        .next()
        .map(|l| String::from_utf8_lossy(l).trim_end().to_string())
        .unwrap_or_default();
    let fields: Vec<&str> = line.splitn(5, ' ').collect();
    let [_, _os, _arch, id, name] = fields.as_slice() else {
        return Err(bad("its MODULE line is not `MODULE os arch id name`"));
    };
    parse_debug_id(id).map_err(|_| bad("its MODULE line's debug id is not hex GUID and age"))?;
    let name = file_name_of(name.trim());
    if name.is_empty() {
        return Err(bad("its MODULE line names no debug file"));
    }
    Ok(StorePlace {
        name: name.to_string(),
        key: id.to_ascii_uppercase(),
        file: breakpad_sym_name(name),
        kind: "breakpad",
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ntdbg_testutil::corrupt::TempDir;

    #[test]
    fn the_sample_pdb_and_image_are_filed_by_their_identity() {
        let pdb = store_place(&ntdbg_testutil::sample("crashy.pdb")).unwrap();
        assert_eq!((pdb.name.as_str(), pdb.kind), ("crashy.pdb", "pdb"));
        assert_eq!(pdb.file, "crashy.pdb");
        assert_eq!(pdb.key.len(), 33, "{}", pdb.key);
        let exe = store_place(&ntdbg_testutil::sample("crashy.exe")).unwrap();
        assert_eq!((exe.name.as_str(), exe.kind), ("crashy.exe", "pe"));
        assert!(exe.key.len() > 8, "{}", exe.key);
    }

    #[test]
    fn breakpad_files_go_under_the_pdb_name() {
        let dir = TempDir::new("filing");
        let temp = |name: &str, bytes: &[u8]| dir.write(name, bytes);
        let p = temp(
            "x.sym",
            b"MODULE windows x86_64 99b57c97e2c099b24c4c44205044422e1 crashy.pdb\nFILE 0 a.c\n",
        );
        let place = store_place(&p).unwrap();
        assert_eq!(place.name, "crashy.pdb");
        assert_eq!(place.key, "99B57C97E2C099B24C4C44205044422E1");
        assert_eq!(place.file, "crashy.sym");
        let bad = temp("y.sym", b"MODULE windows x86_64 nothex crashy.pdb\n");
        assert!(matches!(
            store_place(&bad),
            Err(SymbolError::Breakpad { .. })
        ));
        let other = temp("z.txt", b"hello");
        assert!(matches!(
            store_place(&other),
            Err(SymbolError::NotSymbolFile { .. })
        ));
        let truncated_pe = temp("t.exe", b"MZ\x90\x00");
        assert!(matches!(
            store_place(&truncated_pe),
            Err(SymbolError::Pe { .. })
        ));
    }
}
