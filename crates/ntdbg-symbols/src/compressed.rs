//! Compressed symbol-store files: a store may hold `NAME` as the CAB `NAM_` (the last
//! character replaced by `_`), on a server or in a local folder; both the downloader and the
//! local lookup expand it into the cache.

use std::io::{Read, Write};
use std::path::Path;

/// Most bytes expanded from one cabinet (as many as one download may bring).
const MAX_EXPANDED: u64 = 4 << 30;

/// The compressed store name: the last character replaced by `_` (`crashy.pdb` → `crashy.pd_`).
pub(crate) fn compressed_name(name: &str) -> String {
    let mut s = name.to_string();
    s.pop();
    s.push('_');
    s
}

/// Expands the file `name` (or the cabinet's only file) from the CAB at `cab` into `target`.
pub(crate) fn decompress_cab(cab: &Path, name: &str, target: &Path) -> std::io::Result<u64> {
    let file = std::fs::File::open(cab)?;
    let mut cabinet = cab::Cabinet::new(std::io::BufReader::new(file))?;
    let entries: Vec<String> = cabinet
        .folder_entries()
        .flat_map(|f| {
            f.file_entries()
                .map(|e| e.name().to_string())
                .collect::<Vec<_>>()
        })
        .collect();
    let inner = entries
        .iter()
        .find(|e| e.eq_ignore_ascii_case(name))
        .or_else(|| entries.first().filter(|_| entries.len() == 1))
        .cloned()
        .ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::NotFound,
                format!("the cabinet does not hold {name}"),
            )
        })?;
    let mut reader = cabinet.read_file(&inner)?;
    if let Some(parent) = target.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let temp = target.with_extension("ntdbg-expand");
    let result = std::fs::File::create(&temp).and_then(|mut out| {
        let n = std::io::copy(&mut (&mut reader).take(MAX_EXPANDED), &mut out)?;
        out.flush()?;
        Ok(n)
    });
    match result {
        Ok(n) => std::fs::rename(&temp, target).map(|()| n),
        Err(e) => {
            let _ = std::fs::remove_file(&temp);
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compressed_names_replace_the_last_character() {
        assert_eq!(compressed_name("crashy.pdb"), "crashy.pd_");
    }
}
