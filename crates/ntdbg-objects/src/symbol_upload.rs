//! `ntdbg symbols upload`: a PDB, PE image or Breakpad `.sym` file filed into a store's
//! `symbols/` folder in symbol-server layout, where workers, `analyze` and `ntdbg mcp` find
//! it as one more symbol path entry ([`crate::StoreUrl::symbol_path_entry`]).

use crate::{keys, ObjectError, Objects};
use ntdbg_symbols::StorePlace;
use std::path::Path;

/// A symbol file filed into a store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FiledSymbol {
    /// Its place: `name/key/file`.
    pub place: StorePlace,
    /// Its object key (`symbols/name/key/file`).
    pub key: String,
    /// Its size in bytes.
    pub size: u64,
    /// Whether the store had it already (nothing was written).
    pub already: bool,
}

/// Files the symbol file at `path` into `objects`, unless the store has that build's file
/// already.
pub fn upload_symbol_file(objects: &Objects, path: &Path) -> Result<FiledSymbol, ObjectError> {
    let place = ntdbg_symbols::store_place(path).map_err(|e| ObjectError::new(e.to_string()))?;
    let key = keys::symbol_key(&place.name, &place.key, &place.file);
    let size = std::fs::metadata(path)
        .map_err(|e| ObjectError::new(format!("{}: {e}", path.display())))?
        .len();
    if objects.exists_blocking(&key)? {
        return Ok(FiledSymbol {
            place,
            key,
            size,
            already: true,
        });
    }
    let bytes =
        std::fs::read(path).map_err(|e| ObjectError::new(format!("{}: {e}", path.display())))?;
    objects.put_blocking(&key, bytes.into())?;
    Ok(FiledSymbol {
        place,
        key,
        size,
        already: false,
    })
}
