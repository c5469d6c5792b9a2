//! PDBs read whole: opened, checked to be the build wanted, converted to Breakpad symbols.

use std::path::Path;

use breakpad_symbols::SymbolFile;
use ntdbg_formats::store::{PdbIdentity, PdbSignature};
use pdb_addr2line::pdb::PDB;

use super::io;
use super::panic_guard::guarded;
use crate::pdb_sym;
use crate::SymbolError;

/// Opens a PDB, checks its identity and converts it.
pub(crate) fn convert_pdb(
    path: &Path,
    want: &PdbIdentity,
    code: Option<&(String, String)>,
) -> Result<(SymbolFile, Vec<(String, u64)>), SymbolError> {
    let file = ntdbg_files::open_regular(path).map_err(|e| io(path, e))?;
    let pdb_err = pdb_error(path);
    guarded(path, "PDB reader", || {
        let mut pdb = PDB::open(file).map_err(|e| pdb_err(e.into()))?;
        check_identity(path, &mut pdb, want)?;
        let code = code.map(|(id, file)| (id.as_str(), file.as_str()));
        let converted =
            pdb_sym::convert(&mut pdb, &want.key(), &want.name, code).map_err(pdb_err)?;
        let sym = SymbolFile::from_bytes(converted.text.as_bytes()).map_err(|e| {
            SymbolError::Breakpad {
                path: path.to_path_buf(),
                message: format!("converted PDB did not parse: {e}"),
            }
        })?;
        Ok((sym, converted.data_symbols))
    })
}

/// Checks that the opened PDB at `path` is the one `want` names (GUID or signature, and age).
pub(crate) fn check_identity<'s, S: pdb_addr2line::pdb::Source<'s> + 's>(
    path: &Path,
    pdb: &mut PDB<'s, S>,
    want: &PdbIdentity,
) -> Result<(), SymbolError> {
    let own = pdb_sym::read_identity(pdb).map_err(|e| pdb_error(path)(e.into()))?;
    let matches = match &want.signature {
        PdbSignature::Pdb70 { guid, age } => own.matches_pdb70(guid, *age),
        PdbSignature::Pdb20 { signature, age } => own.matches_pdb20(*signature, *age),
    };
    if matches {
        return Ok(());
    }
    let found = match &want.signature {
        PdbSignature::Pdb70 { .. } => ntdbg_formats::store::pdb_key(&own.guid, own.age()),
        PdbSignature::Pdb20 { .. } => ntdbg_formats::store::pdb20_key(own.signature, own.age()),
    };
    Err(SymbolError::Mismatch {
        path: path.to_path_buf(),
        what: "GUID/age",
        expected: want.key(),
        found,
    })
}

/// Converts a PDB to Breakpad symbol text without checking its identity (for tools and
/// tests): the `MODULE` line carries the PDB's own GUID and age.
pub(crate) fn pdb_to_breakpad_text(path: &Path) -> Result<String, SymbolError> {
    let file = ntdbg_files::open_regular(path).map_err(|e| io(path, e))?;
    let pdb_err = pdb_error(path);
    guarded(path, "PDB reader", || {
        let mut pdb = PDB::open(file).map_err(|e| pdb_err(e.into()))?;
        let own = pdb_sym::read_identity(&mut pdb).map_err(|e| pdb_err(e.into()))?;
        let key = ntdbg_formats::store::pdb_key(&own.guid, own.age());
        let name = path
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        pdb_sym::convert(&mut pdb, &key, &name, None)
            .map(|c| c.text)
            .map_err(pdb_err)
    })
}

/// The error of the PDB reader on the file at `path`.
fn pdb_error(path: &Path) -> impl Fn(pdb_addr2line::Error) -> SymbolError + '_ {
    move |source| SymbolError::Pdb {
        path: path.to_path_buf(),
        source,
    }
}
