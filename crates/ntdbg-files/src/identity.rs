//! Whether an open file still holds what it held when it was opened.

use std::fmt;
use std::fs::{File, Metadata};
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

/// A file changed on disk while it was open: truncated, copied over in place, or written.
/// What was read from it since may be wrong; the reader that gets this drops what it built
/// from the file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileChanged {
    /// The file.
    pub path: PathBuf,
    /// How it changed, in words.
    pub what: String,
}

impl fmt::Display for FileChanged {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} changed on disk while it was open: {}",
            self.path.display(),
            self.what
        )
    }
}

impl std::error::Error for FileChanged {}

/// What says that a file's content changed: its size and modification time (both move
/// whenever the file is written or truncated; a rename or `chmod` moves neither).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Identity {
    len: u64,
    modified: Option<SystemTime>,
}

impl Identity {
    fn of(meta: &Metadata) -> Identity {
        Identity {
            len: meta.len(),
            modified: meta.modified().ok(),
        }
    }
}

/// An open regular file that remembers its size and modification time at open, so that
/// [`WatchedFile::check`] can tell whether it changed since (one `fstat`).
#[derive(Debug)]
pub struct WatchedFile {
    file: File,
    path: PathBuf,
    opened: Identity,
}

impl WatchedFile {
    /// Opens the regular file at `path` ([`crate::open_regular`]).
    pub fn open(path: &Path) -> io::Result<WatchedFile> {
        WatchedFile::new(crate::open_regular(path)?, path.to_path_buf())
    }

    /// Watches `file`, opened from `path`, from now on.
    pub fn new(file: File, path: PathBuf) -> io::Result<WatchedFile> {
        let opened = Identity::of(&file.metadata()?);
        Ok(WatchedFile { file, path, opened })
    }

    /// The open file.
    pub fn file(&self) -> &File {
        &self.file
    }

    /// The path it was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its length when it was opened.
    pub fn len(&self) -> u64 {
        self.opened.len
    }

    /// Whether it was empty when it was opened.
    pub fn is_empty(&self) -> bool {
        self.opened.len == 0
    }

    /// `Ok` while the file's size and modification time are those it had when opened.
    pub fn check(&self) -> Result<(), FileChanged> {
        let now = self.same_length()?;
        if now.modified != self.opened.modified {
            return Err(self.changed("it was written to since it was opened".to_string()));
        }
        Ok(())
    }

    /// `Ok` while the file's size is the one it had when opened: for a file whose
    /// modification time is moved on purpose (a cache marking an entry as recently used) and
    /// whose content has checks of its own.
    pub fn check_length(&self) -> Result<(), FileChanged> {
        self.same_length().map(|_| ())
    }

    /// The file's identity now, when its size is the one it had when opened.
    fn same_length(&self) -> Result<Identity, FileChanged> {
        let now = match self.file.metadata() {
            Ok(meta) => Identity::of(&meta),
            Err(e) => return Err(self.changed(format!("it can no longer be examined ({e})"))),
        };
        if now.len != self.opened.len {
            return Err(self.changed(format!(
                "its size went from {} to {} bytes",
                self.opened.len, now.len
            )));
        }
        Ok(now)
    }

    /// The error saying that this file changed, and how.
    pub fn changed(&self, what: String) -> FileChanged {
        FileChanged {
            path: self.path.clone(),
            what,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ntdbg_testutil::corrupt::TempDir;

    #[test]
    fn a_file_truncated_or_rewritten_is_seen_to_change() {
        let dir = TempDir::new("watched-file");
        let path = dir.write("a.sym", b"MODULE windows x86 0 a.pdb\n");
        let watched = WatchedFile::open(&path).unwrap();
        assert_eq!(watched.len(), 27);
        assert_eq!(watched.check(), Ok(()));
        // Renamed: the open file is the same.
        let moved = dir.path().join("b.sym");
        std::fs::rename(&path, &moved).unwrap();
        assert_eq!(watched.check(), Ok(()));
        std::fs::OpenOptions::new()
            .write(true)
            .open(&moved)
            .unwrap()
            .set_len(4)
            .unwrap();
        let changed = watched.check().unwrap_err();
        assert_eq!(changed.what, "its size went from 27 to 4 bytes");
        assert!(changed.to_string().ends_with(
            "a.sym changed on disk while it was open: its size went from 27 to 4 bytes"
        ));

        // Same size, other bytes, later modification time.
        let other = dir.write("c.sym", b"0123");
        let watched = WatchedFile::open(&other).unwrap();
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(&other)
            .unwrap();
        let later = std::fs::metadata(&other).unwrap().modified().unwrap()
            + std::time::Duration::from_secs(5);
        file.set_modified(later).unwrap();
        assert_eq!(
            watched.check().unwrap_err().what,
            "it was written to since it was opened"
        );
    }
}
