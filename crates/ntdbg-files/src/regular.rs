//! Opening only regular files: a FIFO, a socket or a device named like a dump or a symbol
//! file is refused with one clear error instead of blocking (or acting on) anything.

use std::fmt;
use std::fs::{File, FileType};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// What a path named instead of a regular file; the error inside the [`io::Error`] that
/// [`open_regular`] returns for it (find it with `get_ref()` and `downcast_ref`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotRegularFile {
    /// The path given.
    pub path: PathBuf,
    /// What it is, with its article: `a directory`, `a named pipe (FIFO)`, `a socket`, …
    pub kind: &'static str,
}

impl fmt::Display for NotRegularFile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} is {}, not a regular file",
            self.path.display(),
            self.kind
        )
    }
}

impl std::error::Error for NotRegularFile {}

/// What a file type is, in words; `None` for a regular file.
fn irregular_kind(file_type: FileType) -> Option<&'static str> {
    if file_type.is_file() {
        return None;
    }
    if file_type.is_dir() {
        return Some("a directory");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_fifo() {
            return Some("a named pipe (FIFO)");
        }
        if file_type.is_socket() {
            return Some("a socket");
        }
        if file_type.is_char_device() {
            return Some("a character device");
        }
        if file_type.is_block_device() {
            return Some("a block device");
        }
    }
    Some("not a regular file")
}

/// The error for a path that names `kind`.
fn not_regular(path: &Path, kind: &'static str) -> io::Error {
    let error_kind = if kind == "a directory" {
        io::ErrorKind::IsADirectory
    } else {
        io::ErrorKind::InvalidInput
    };
    io::Error::new(
        error_kind,
        NotRegularFile {
            path: path.to_path_buf(),
            kind,
        },
    )
}

/// Fails unless `file_type` is a regular file's.
fn require_regular(path: &Path, file_type: FileType) -> io::Result<()> {
    match irregular_kind(file_type) {
        None => Ok(()),
        Some(kind) => Err(not_regular(path, kind)),
    }
}

/// Opens `path` for reading if it is a regular file (links followed); anything else fails
/// with a [`NotRegularFile`] inside the error, without being opened or waited on.
///
/// The path is looked at first, so a FIFO or a device is never opened; the file is then
/// opened without blocking (`O_NONBLOCK`, no controlling terminal) and the open file itself
/// checked, so a path changed into a FIFO between the two steps is refused too. The file
/// returned reads as usual (blocking mode restored).
pub fn open_regular(path: &Path) -> io::Result<File> {
    require_regular(path, std::fs::metadata(path)?.file_type())?;
    let file = open_without_blocking(path)?;
    require_regular(path, file.metadata()?.file_type())?;
    #[cfg(unix)]
    restore_blocking(&file)?;
    Ok(file)
}

#[cfg(unix)]
fn open_without_blocking(path: &Path) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)
}

#[cfg(not(unix))]
fn open_without_blocking(path: &Path) -> io::Result<File> {
    File::open(path)
}

/// Clears `O_NONBLOCK` again on a regular file (where Linux ignores it, but a network or
/// FUSE file system may not).
#[cfg(unix)]
fn restore_blocking(file: &File) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let fd = file.as_raw_fd();
    // SAFETY: `fd` is open for as long as `file` is borrowed; F_GETFL/F_SETFL only read and
    // set its status flags.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags < 0 || libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) < 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Fails when `path` exists (links followed) and is not a regular file: for a file that a
/// library opens by path itself (SQLite's database and its `-wal` and `-shm` files), or that
/// is about to be created. A missing path is fine. (What the path names can still change
/// before the library opens it; [`open_regular`] closes that gap where ntdbg opens the file.)
pub fn require_regular_or_missing(path: &Path) -> io::Result<()> {
    match std::fs::metadata(path) {
        Ok(meta) => require_regular(path, meta.file_type()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// The whole of the regular file at `path` (see [`open_regular`]), at most `limit` bytes:
/// a longer file fails with [`io::ErrorKind::FileTooLarge`].
pub fn read_regular(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    let file = open_regular(path)?;
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(io::Error::new(
            io::ErrorKind::FileTooLarge,
            format!("{} is over {limit} bytes", path.display()),
        ));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ntdbg_testutil::corrupt::TempDir;

    fn refusal(error: &io::Error) -> &NotRegularFile {
        error
            .get_ref()
            .and_then(|e| e.downcast_ref::<NotRegularFile>())
            .expect("a NotRegularFile error")
    }

    #[test]
    fn a_regular_file_opens_and_reads() {
        let dir = TempDir::new("regular-file");
        let path = dir.write("a.dmp", b"MDMP....");
        let mut text = String::new();
        open_regular(&path)
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, "MDMP....");
        assert_eq!(read_regular(&path, 8).unwrap(), b"MDMP....");
        let long = read_regular(&path, 7).unwrap_err();
        assert_eq!(long.kind(), io::ErrorKind::FileTooLarge);
    }

    #[test]
    fn a_directory_or_a_missing_path_is_refused() {
        let dir = TempDir::new("regular-dir");
        let error = open_regular(dir.path()).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::IsADirectory);
        assert_eq!(refusal(&error).kind, "a directory");
        let missing = open_regular(&dir.path().join("none.dmp")).unwrap_err();
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
        assert_eq!(
            require_regular_or_missing(dir.path()).unwrap_err().kind(),
            io::ErrorKind::IsADirectory
        );
    }

    /// A FIFO nobody writes to would block `open` forever; here it is refused at once.
    #[cfg(unix)]
    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let dir = TempDir::new("regular-fifo");
        let fifo = dir.path().join("crash.dmp");
        let name = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        let error = open_regular(&fifo).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::InvalidInput);
        assert_eq!(refusal(&error).kind, "a named pipe (FIFO)");
        assert_eq!(
            error.to_string(),
            format!(
                "{} is a named pipe (FIFO), not a regular file",
                fifo.display()
            )
        );
        // The same through a link.
        let link = dir.path().join("link.dmp");
        std::os::unix::fs::symlink(&fifo, &link).unwrap();
        assert_eq!(
            refusal(&open_regular(&link).unwrap_err()).kind,
            "a named pipe (FIFO)"
        );
        assert!(read_regular(&fifo, 100).is_err());
        assert_eq!(
            refusal(&require_regular_or_missing(&fifo).unwrap_err()).kind,
            "a named pipe (FIFO)"
        );
        assert!(require_regular_or_missing(&dir.path().join("new.db")).is_ok());
    }

    #[cfg(unix)]
    #[test]
    fn a_device_is_refused_without_being_opened() {
        let error = open_regular(Path::new("/dev/null")).unwrap_err();
        assert_eq!(refusal(&error).kind, "a character device");
    }
}
