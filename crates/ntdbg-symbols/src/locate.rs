//! Finding candidate files in search directories: plain and symbol-store layout, matching
//! names case-insensitively (Windows names on Linux disks), and `file.ptr` redirections.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use ntdbg_formats::store::store_components;

use crate::compressed::{compressed_name, decompress_cab};

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
    match listing(dir) {
        Some(listing) => listing.spelling(name).map(|n| dir.join(n)),
        // Unlistable (no read permission, say): only the exact spelling can be found.
        None => Some(dir.join(name)).filter(|p| p.exists()),
    }
}

/// The names in one directory, by ASCII-lower-cased name.
struct Listing {
    /// ASCII-lower-cased name → the on-disk spellings, in directory order.
    names: HashMap<String, Vec<String>>,
}

impl Listing {
    /// `name` as spelled on disk: exactly, else the first match ignoring ASCII case.
    fn spelling(&self, name: &str) -> Option<&str> {
        let spellings = self.names.get(&name.to_ascii_lowercase())?;
        spellings
            .iter()
            .find(|s| *s == name)
            .or_else(|| spellings.first())
            .map(String::as_str)
    }
}

/// Directories kept listed; the cache is emptied when it would grow past this.
const MAX_LISTED_DIRS: usize = 1024;
/// A directory changed this recently may change again within its timestamp's granularity
/// (file systems stamp with a coarse clock), so its listing is not kept.
const SETTLED_AFTER: Duration = Duration::from_secs(2);

/// Listings by directory. Each lookup costs one `stat` of the directory instead of a full
/// listing per candidate name: a symbol cache holds thousands of folders and every module is
/// looked for under several names. A listing is used only while the directory's modification
/// time is unchanged, so files added later are found.
static LISTINGS: Mutex<Option<KeptListings>> = Mutex::new(None);

/// Each folder's listing, with the modification time it was made at.
type KeptListings = HashMap<PathBuf, (SystemTime, Arc<Listing>)>;

/// The listing of `dir`, from the cache when the directory has not changed since.
fn listing(dir: &Path) -> Option<Arc<Listing>> {
    let meta = std::fs::metadata(dir).ok()?;
    if !meta.is_dir() {
        return None;
    }
    let modified = meta.modified().ok();
    let kept = |cache: &Option<KeptListings>| {
        let (listed_at, listing) = cache.as_ref()?.get(dir)?;
        (Some(*listed_at) == modified).then(|| listing.clone())
    };
    if let Some(listed) = kept(&LISTINGS.lock().unwrap_or_else(|e| e.into_inner())) {
        return Some(listed);
    }
    // Listed without the lock held: a large folder must not hold up lookups elsewhere.
    let mut names: HashMap<String, Vec<String>> = HashMap::new();
    for entry in std::fs::read_dir(dir).ok()?.filter_map(Result::ok) {
        if let Ok(name) = entry.file_name().into_string() {
            names
                .entry(name.to_ascii_lowercase())
                .or_default()
                .push(name);
        }
    }
    let listing = Arc::new(Listing { names });
    let settled = modified.filter(|m| m.elapsed().is_ok_and(|age| age >= SETTLED_AFTER));
    if let Some(listed_at) = settled {
        let mut cache = LISTINGS.lock().unwrap_or_else(|e| e.into_inner());
        let cache = cache.get_or_insert_with(HashMap::new);
        if cache.len() >= MAX_LISTED_DIRS {
            cache.clear();
        }
        cache.insert(dir.to_path_buf(), (listed_at, listing.clone()));
    }
    Some(listing)
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
        match ntdbg_files::read_regular(&ptr, 4096) {
            Ok(bytes) => {
                let text = String::from_utf8_lossy(&bytes);
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
    let compressed = compressed_name(name);
    let mut found: Vec<PathBuf> = redirected.into_iter().collect();
    if let Some(cab) = child_ci(&key_dir, &compressed).filter(|p| p.is_file()) {
        let target = crate::path::default_cache_dir()
            .join(name)
            .join(key)
            .join(name);
        if target.is_file() {
            found.push(target);
        } else {
            match decompress_cab(&cab, name, &target) {
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

    /// Unix only: two names that differ only in case need a case-sensitive file system, and
    /// std cannot open a folder to set its time on Windows.
    #[cfg(unix)]
    #[test]
    fn kept_listings_see_files_added_later_and_prefer_the_exact_spelling() {
        let dir = std::env::temp_dir().join(format!("ntdbg-listing-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("Crashy.PDB"), b"x").unwrap();
        std::fs::write(dir.join("crashy.pdb"), b"x").unwrap();
        // An hour old: settled, so its listing is kept.
        let hour_ago = SystemTime::now() - Duration::from_secs(3600);
        std::fs::File::open(&dir)
            .unwrap()
            .set_modified(hour_ago)
            .unwrap();
        assert_eq!(child_ci(&dir, "crashy.pdb"), Some(dir.join("crashy.pdb")));
        assert_eq!(child_ci(&dir, "Crashy.PDB"), Some(dir.join("Crashy.PDB")));
        assert!(child_ci(&dir, "ntdll.pdb").is_none());
        // Adding a file changes the folder's time: the kept listing is not used.
        std::fs::write(dir.join("NTDLL.pdb"), b"x").unwrap();
        assert_eq!(child_ci(&dir, "ntdll.pdb"), Some(dir.join("NTDLL.pdb")));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
