//! Durable writes into a local store folder: what `object_store`'s `LocalFileSystem` does for a
//! put (a temporary file renamed into place), plus the `fsync`s that make it survive a power
//! cut — the file's data before the rename, the folder's entry after it, and each folder
//! created on the way.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// Writes `bytes` to `root/key` so that, once this returns, the file is complete on disk
/// under its name; a crash before that leaves at most a temporary file beside it.
pub(crate) fn put_durable(root: &Path, key: &str, bytes: &[u8]) -> std::io::Result<()> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    if key
        .split('/')
        .any(|part| part.is_empty() || part == "." || part == "..")
    {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{key:?} is not a store key"),
        ));
    }
    let target = root.join(key);
    let folder = target.parent().unwrap_or(root);
    create_folders(root, folder)?;
    let name = target.file_name().unwrap_or_default().to_string_lossy();
    let temp = folder.join(format!(
        ".{name}.{}-{}.tmp",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    let written = std::fs::File::create(&temp).and_then(|mut f| {
        f.write_all(bytes)?;
        f.sync_all()
    });
    if let Err(e) = written.and_then(|()| std::fs::rename(&temp, &target)) {
        let _ = std::fs::remove_file(&temp);
        return Err(e);
    }
    sync_folder(folder)
}

/// Creates `folder` (under `root`) and the folders above it that are missing, each made
/// durable in its parent.
fn create_folders(root: &Path, folder: &Path) -> std::io::Result<()> {
    if folder.is_dir() {
        return Ok(());
    }
    let mut missing = Vec::new();
    let mut at = folder;
    while !at.is_dir() && at.starts_with(root) && at != root {
        missing.push(at);
        at = at.parent().unwrap_or(root);
    }
    for dir in missing.into_iter().rev() {
        match std::fs::create_dir(dir) {
            Ok(()) => sync_folder(dir.parent().unwrap_or(root))?,
            // Another upload created it meanwhile.
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Makes a folder's entries durable (Unix: `fsync` on the folder; Windows has no such call:
/// NTFS journals renames itself).
fn sync_folder(folder: &Path) -> std::io::Result<()> {
    #[cfg(unix)]
    {
        std::fs::File::open(folder)?.sync_all()
    }
    #[cfg(not(unix))]
    {
        let _ = folder;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn objects_land_whole_and_bad_keys_are_refused() {
        let root = std::env::temp_dir().join(format!("ntdbg-objects-local-{}", std::process::id()));
        std::fs::create_dir_all(&root).unwrap();
        put_durable(&root, "dumps/ab/ab.dmp", b"MDMP one").unwrap();
        put_durable(&root, "dumps/ab/ab.dmp", b"MDMP two").unwrap();
        assert_eq!(
            std::fs::read(root.join("dumps/ab/ab.dmp")).unwrap(),
            b"MDMP two"
        );
        let left: Vec<_> = std::fs::read_dir(root.join("dumps/ab")).unwrap().collect();
        assert_eq!(left.len(), 1, "no temporary file is left behind");
        for bad in ["../x", "dumps//x", "/abs", "dumps/./x"] {
            assert!(put_durable(&root, bad, b"x").is_err(), "{bad}");
        }
        std::fs::remove_dir_all(&root).unwrap();
    }
}
