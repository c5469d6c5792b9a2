//! Finding candidate files in search directories: plain and symbol-store layout, matching
//! names case-insensitively (Windows names on Linux disks), and `file.ptr` redirections.

use std::path::{Path, PathBuf};

use ntdbg_formats::store::store_components;

/// Where a candidate was looked for, for the `tried` list.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Layout {
    /// `DIR/NAME`.
    Plain,
    /// `DIR/NAME/KEY/NAME`.
    Store,
}

/// A file found on disk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Found {
    /// Its real path (with the on-disk spelling of every component).
    pub path: PathBuf,
}

/// The outcome of looking for one candidate.
#[derive(Debug)]
pub(crate) enum Lookup {
    /// The file exists.
    Found(Found),
    /// It does not; the string says where it was expected (for `tried`).
    Missing(String),
}

/// `dir/name`, matching `name` case-insensitively when the exact spelling is absent.
pub(crate) fn child_ci(dir: &Path, name: &str) -> Option<PathBuf> {
    if name.is_empty() || name == "." || name == ".." || name.contains(['/', '\\']) {
        return None;
    }
    let exact = dir.join(name);
    if exact.exists() {
        return Some(exact);
    }
    let entries = std::fs::read_dir(dir).ok()?;
    entries
        .filter_map(Result::ok)
        .find(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.eq_ignore_ascii_case(name))
        })
        .map(|e| e.path())
}

/// Follows `components` below `root`, each matched case-insensitively.
pub(crate) fn path_ci(root: &Path, components: &[&str]) -> Option<PathBuf> {
    let mut cur = root.to_path_buf();
    for c in components {
        cur = child_ci(&cur, c)?;
    }
    Some(cur)
}

/// Looks for `name` in `dir` in the given layout (`key` is needed for the store layout).
pub(crate) fn look(dir: &Path, layout: Layout, name: &str, key: &str) -> Lookup {
    let components: Vec<&str> = match layout {
        Layout::Plain => vec![name],
        Layout::Store => store_components(name, key).to_vec(),
    };
    match path_ci(dir, &components) {
        Some(path) if path.is_file() => Lookup::Found(Found { path }),
        _ => {
            let mut shown = dir.to_path_buf();
            for c in &components {
                shown.push(c);
            }
            Lookup::Missing(format!("{}: not found", shown.display()))
        }
    }
}

/// Store-layout extras next to where `NAME/KEY/NAME` would be: a `file.ptr` redirection
/// (followed when it points to an existing local file) and a CAB-compressed `NAME_` file,
/// expanded into the per-user cache ([`crate::default_cache_dir`]), where it is found again
/// next time. Returns the paths to try, and
/// notes for `tried`.
pub(crate) fn store_extras(dir: &Path, name: &str, key: &str) -> (Vec<PathBuf>, Vec<String>) {
    let mut notes = Vec::new();
    let Some(key_dir) = path_ci(dir, &[name, key]) else {
        return (Vec::new(), notes);
    };
    let mut redirected = None;
    if let Some(ptr) = child_ci(&key_dir, "file.ptr") {
        match std::fs::read(&ptr) {
            Ok(bytes) => {
                let text = String::from_utf8_lossy(&bytes[..bytes.len().min(4096)]);
                let text = text.trim();
                if let Some(target) = text.strip_prefix("PATH:") {
                    let target = PathBuf::from(target.trim());
                    if target.is_file() {
                        redirected = Some(target);
                    } else {
                        notes.push(format!(
                            "{}: points to {}, which is not a readable local file",
                            ptr.display(),
                            target.display()
                        ));
                    }
                } else {
                    notes.push(format!("{}: {}", ptr.display(), text));
                }
            }
            Err(e) => notes.push(format!("{}: {e}", ptr.display())),
        }
    }
    let mut compressed = name.to_string();
    compressed.pop();
    compressed.push('_');
    let mut found: Vec<PathBuf> = redirected.into_iter().collect();
    if let Some(cab) = child_ci(&key_dir, &compressed).filter(|p| p.is_file()) {
        let target = crate::path::default_cache_dir()
            .join(name)
            .join(key)
            .join(name);
        if target.is_file() {
            found.push(target);
        } else {
            match crate::download::decompress_cab(&cab, name, &target) {
                Ok(size) => {
                    notes.push(format!(
                        "{}: CAB expanded ({size} bytes) to {}",
                        cab.display(),
                        target.display()
                    ));
                    found.push(target);
                }
                Err(e) => notes.push(format!("{}: not a usable CAB file: {e}", cab.display())),
            }
        }
    }
    (found, notes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_insensitive_store_lookup() {
        let root = std::env::temp_dir().join(format!("ntdbg-locate-{}", std::process::id()));
        let key_dir = root.join("Crashy.PDB").join("abcdef1");
        std::fs::create_dir_all(&key_dir).unwrap();
        std::fs::write(key_dir.join("CRASHY.pdb"), b"x").unwrap();
        match look(&root, Layout::Store, "crashy.pdb", "ABCDEF1") {
            Lookup::Found(f) => assert!(f.path.ends_with("Crashy.PDB/abcdef1/CRASHY.pdb")),
            Lookup::Missing(m) => panic!("{m}"),
        }
        match look(&root, Layout::Plain, "crashy.pdb", "") {
            Lookup::Missing(m) => assert!(m.ends_with("crashy.pdb: not found"), "{m}"),
            Lookup::Found(f) => panic!("{f:?}"),
        }
        std::fs::write(key_dir.join("file.ptr"), b"MSG: not here").unwrap();
        std::fs::write(key_dir.join("crashy.pd_"), b"MSCF").unwrap();
        let (found, notes) = store_extras(&root, "crashy.pdb", "abcdef1");
        assert_eq!(found, Vec::<PathBuf>::new());
        assert_eq!(notes.len(), 2, "{notes:?}");
        assert!(notes[1].contains("not a usable CAB file"), "{notes:?}");
        assert!(child_ci(&root, "../etc").is_none());
        std::fs::remove_dir_all(&root).unwrap();
    }
}
