//! Read-only file mappings that survive the file being truncated underneath.

use std::fmt;
use std::io;
use std::ops::Deref;
use std::path::Path;

use crate::identity::{FileChanged, WatchedFile};

/// Bytes lent to readers that keep them (`Arc<dyn ByteSource>`): a file mapping, or a buffer.
/// [`ByteSource::check`] says whether they still hold what the file held when it was opened.
pub trait ByteSource: Send + Sync {
    /// The bytes.
    fn bytes(&self) -> &[u8];

    /// `Ok` while the bytes are those of the file as it was opened; bytes in memory never
    /// change.
    fn check(&self) -> Result<(), FileChanged> {
        Ok(())
    }
}

impl ByteSource for Vec<u8> {
    fn bytes(&self) -> &[u8] {
        self
    }
}

/// A regular file mapped read-only. Pages that vanish while it is mapped (the file was
/// truncated: `truncate`, or `cp` over it, which truncates first; or its storage failed)
/// read as zeros instead of raising `SIGBUS` (on Unix; Windows refuses to truncate a mapped
/// file), and [`FileMap::check`] then fails, as it does when the file's size or
/// modification time changed. A reader checks after work whose answer it keeps or shows.
pub struct FileMap {
    /// Dropped before the mapping: the handler must never patch a page unmapped since.
    #[cfg(unix)]
    registration: Option<crate::fault::Registration>,
    /// `None` for an empty file (nothing to map).
    map: Option<memmap2::Mmap>,
    file: WatchedFile,
}

impl FileMap {
    /// Maps the regular file at `path` ([`crate::open_regular`]).
    pub fn open(path: &Path) -> io::Result<FileMap> {
        FileMap::new(WatchedFile::open(path)?)
    }

    /// Maps an open file.
    pub fn new(file: WatchedFile) -> io::Result<FileMap> {
        if file.is_empty() {
            return Ok(FileMap {
                #[cfg(unix)]
                registration: None,
                map: None,
                file,
            });
        }
        // SAFETY: a read-only mapping. The file may be truncated or written while it is
        // mapped: on Unix the registration below turns a vanished page into zeros (never a
        // signal) and `check` reports the change; Windows refuses to truncate a mapped file.
        let map = unsafe { memmap2::Mmap::map(file.file()) }?;
        #[cfg(unix)]
        let registration = Some(
            crate::fault::register(map.as_ptr() as usize, map.len()).ok_or_else(|| {
                io::Error::other(format!(
                    "cannot map {}: too many files mapped at once",
                    file.path().display()
                ))
            })?,
        );
        Ok(FileMap {
            #[cfg(unix)]
            registration,
            map: Some(map),
            file,
        })
    }

    /// The path the file was opened from.
    pub fn path(&self) -> &Path {
        self.file.path()
    }

    /// Whether a page of the mapping vanished (and now reads as zeros): one atomic load, for
    /// checks on every lookup.
    pub fn faulted(&self) -> bool {
        #[cfg(unix)]
        {
            self.registration.as_ref().is_some_and(|r| r.faults() > 0)
        }
        #[cfg(not(unix))]
        {
            false
        }
    }

    /// `Ok` while the mapping holds the file as it was opened: no page vanished, and the
    /// file's size and modification time are unchanged (one `fstat`).
    pub fn check(&self) -> Result<(), FileChanged> {
        self.check_faults()?;
        self.file.check()
    }

    /// [`FileMap::check`] without the modification time, for a file whose time is moved on
    /// purpose (a cache marking an entry as recently used) and whose bytes have checks of
    /// their own.
    pub fn check_length(&self) -> Result<(), FileChanged> {
        self.check_faults()?;
        self.file.check_length()
    }

    /// Fails when a page vanished, saying how the file changed when it still can.
    fn check_faults(&self) -> Result<(), FileChanged> {
        if !self.faulted() {
            return Ok(());
        }
        self.file.check_length()?;
        Err(self
            .file
            .changed("part of it could not be read any more".to_string()))
    }
}

impl Deref for FileMap {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.map.as_deref().unwrap_or(&[])
    }
}

impl AsRef<[u8]> for FileMap {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl ByteSource for FileMap {
    fn bytes(&self) -> &[u8] {
        self
    }
    fn check(&self) -> Result<(), FileChanged> {
        FileMap::check(self)
    }
}

impl fmt::Debug for FileMap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FileMap")
            .field("path", &self.path())
            .field("len", &self.len())
            .field("faulted", &self.faulted())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ntdbg_testutil::corrupt::TempDir;

    const PAGE: usize = 64 * 1024; // a multiple of every page size in use

    fn pattern(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i % 251) as u8 + 1).collect()
    }

    fn cut(path: &Path, len: u64) {
        std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .unwrap()
            .set_len(len)
            .unwrap();
    }

    /// The whole file, read byte by byte through the mapping (each page touched).
    fn sum(bytes: &[u8]) -> u64 {
        bytes.iter().map(|&b| u64::from(b)).sum()
    }

    #[test]
    fn a_mapping_reads_its_file_and_an_empty_file_maps_to_nothing() {
        let dir = TempDir::new("file-map");
        let bytes = pattern(3 * PAGE);
        let path = dir.write("a.dmp", &bytes);
        let map = FileMap::open(&path).unwrap();
        assert_eq!(&*map, &bytes[..]);
        assert_eq!(map.check(), Ok(()));
        assert!(!map.faulted());
        let empty = FileMap::open(&dir.write("empty.dmp", b"")).unwrap();
        assert!(empty.is_empty());
        assert_eq!(empty.check(), Ok(()));
        assert!(FileMap::open(dir.path()).is_err());
    }

    /// The file is cut to one page under the mapping: the pages past the cut read as zeros
    /// (on Linux they would raise SIGBUS), the mapping says it changed, and a second mapping
    /// of another file is untouched.
    #[cfg(unix)]
    #[test]
    fn a_file_truncated_under_its_mapping_reads_zeros_and_says_so() {
        let dir = TempDir::new("file-map-cut");
        let bytes = pattern(3 * PAGE);
        let path = dir.write("cut.dmp", &bytes);
        let other = dir.write("other.dmp", &bytes);
        let map = FileMap::open(&path).unwrap();
        let untouched = FileMap::open(&other).unwrap();
        cut(&path, PAGE as u64);
        let after = sum(&map);
        assert_eq!(after, sum(&bytes[..PAGE]));
        assert!(map.faulted());
        let changed = map.check().unwrap_err();
        assert_eq!(
            changed.what,
            format!("its size went from {} to {PAGE} bytes", 3 * PAGE)
        );
        assert_eq!(sum(&untouched), sum(&bytes));
        assert_eq!(untouched.check(), Ok(()));
        // Cut to nothing and written again to its old length (what `cp` over it does): the
        // pages read the new bytes or zeros, never a signal, and the change is reported.
        let again = FileMap::open(&other).unwrap();
        std::fs::write(&other, vec![7u8; 3 * PAGE]).unwrap();
        let _ = sum(&again);
        assert!(again.check().is_err());
        drop(map);
        drop(again);
        drop(untouched);
        // Slots are reused after their mappings go.
        for _ in 0..100 {
            assert_eq!(FileMap::open(&path).unwrap().len(), PAGE);
        }
    }

    /// A SIGBUS that is not from one of our mappings still ends the process: the test runs
    /// itself in a child that maps a file without us and reads past its cut end.
    #[cfg(unix)]
    #[test]
    fn a_fault_outside_our_mappings_still_ends_the_process() {
        use std::os::unix::process::ExitStatusExt;
        const CHILD: &str = "NTDBG_FILES_FOREIGN_FAULT";
        if let Some(path) = std::env::var_os(CHILD) {
            let path = std::path::PathBuf::from(path);
            let _ours = FileMap::open(&path).unwrap(); // the handler is installed
            let file = std::fs::File::open(&path).unwrap();
            // SAFETY: a test that expects the read below to raise SIGBUS.
            let foreign = unsafe { memmap2::Mmap::map(&file) }.unwrap();
            cut(&path, 0);
            println!("read {}", sum(&foreign));
            std::process::exit(0); // not reached when the fault ends the process
        }
        let dir = TempDir::new("file-map-foreign");
        let path = dir.write("foreign.dmp", &pattern(2 * PAGE));
        let status = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "map::tests::a_fault_outside_our_mappings_still_ends_the_process",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD, &path)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status()
            .unwrap();
        assert_eq!(status.signal(), Some(libc::SIGBUS), "{status:?}");
    }
}
