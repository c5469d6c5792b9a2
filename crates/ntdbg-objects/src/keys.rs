//! The store's layout: dumps by content hash, symbols in symbol-server layout.

/// The folder of dumps: `dumps/HH/HASH.dmp` (`HH`: the hash's first two digits, so that no
/// local folder holds millions of files).
pub const DUMPS: &str = "dumps";
/// The folder of symbols: `symbols/NAME/KEY/FILE`, the layout of a symbol server
/// (`crashy.pdb/<GUID><AGE>/crashy.pdb`, `crashy.exe/<TIMESTAMP><SIZE>/crashy.exe`,
/// `crashy.pdb/<DEBUG ID>/crashy.sym`).
pub const SYMBOLS: &str = "symbols";
/// Every top folder of a store.
pub(crate) const FOLDERS: &[&str] = &[DUMPS, SYMBOLS];

/// The key of the dump whose SHA-256 is `hash` (lower-case hex).
pub fn dump_key(hash: &str) -> String {
    let shard = hash.get(..2).unwrap_or("00");
    format!("{DUMPS}/{shard}/{hash}.dmp")
}

/// The content hash (crash id) a dump key names: `dumps/ab/HASH.dmp` → `HASH`.
pub fn hash_of_dump_key(key: &str) -> Option<&str> {
    let rest = key.strip_prefix(DUMPS)?.strip_prefix('/')?;
    let (_, file) = rest.split_once('/')?;
    file.strip_suffix(".dmp")
        .filter(|h| h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The key of a symbol file filed under `name/key/file`.
pub fn symbol_key(name: &str, key: &str, file: &str) -> String {
    format!("{SYMBOLS}/{name}/{key}/{file}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout() {
        assert_eq!(dump_key("ab12"), "dumps/ab/ab12.dmp");
        let hash = "ab".repeat(32);
        assert_eq!(hash_of_dump_key(&dump_key(&hash)), Some(hash.as_str()));
        assert_eq!(hash_of_dump_key("dumps/ab/ab12.dmp"), None);
        assert_eq!(hash_of_dump_key("symbols/a/b/c"), None);
        assert_eq!(
            symbol_key("crashy.pdb", "99B5", "crashy.sym"),
            "symbols/crashy.pdb/99B5/crashy.sym"
        );
    }
}
