//! Bytes shared with their owner instead of copied: a module image borrowed from a dump's
//! memory mapping, a mapped symbol file, or a buffer read for it. Cloning is a
//! reference-count increment.

use std::fmt;
use std::io;
use std::ops::{Deref, Range};
use std::path::Path;
use std::sync::Arc;

use ntdbg_files::{ByteSource, FileChanged};

/// Whatever holds the bytes: a mapped dump or symbol file, a `Vec<u8>`, …
pub type ByteOwner = Arc<dyn ByteSource>;

/// A view of `range` inside an owner's bytes.
#[derive(Clone)]
pub struct SharedBytes {
    owner: ByteOwner,
    range: Range<usize>,
}

impl SharedBytes {
    /// `range` of `owner`'s bytes; `None` when the range does not lie inside them.
    pub fn new(owner: ByteOwner, range: Range<usize>) -> Option<SharedBytes> {
        let len = owner.bytes().len();
        (range.start <= range.end && range.end <= len).then_some(SharedBytes { owner, range })
    }

    /// The part `range` (relative to this view) of these bytes, sharing the same owner.
    pub fn slice(&self, range: Range<usize>) -> Option<SharedBytes> {
        let start = self.range.start.checked_add(range.start)?;
        let end = self.range.start.checked_add(range.end)?;
        (range.start <= range.end && end <= self.range.end).then(|| SharedBytes {
            owner: self.owner.clone(),
            range: start..end,
        })
    }
}

impl SharedBytes {
    /// The bytes of the regular file at `path` ([`ntdbg_files::open_regular`]). On Unix they
    /// are mapped read-only: pages come from the page cache as they are touched, with no copy
    /// into a fresh buffer (a large `.sym` read whole spent more time in the kernel's copy and
    /// page faults than in being scanned). The file may be truncated or rewritten while it is
    /// mapped: [`SharedBytes::check`] then says so (a vanished page reads as zeros, never a
    /// signal). Elsewhere (Windows refuses to replace or delete a mapped file, which the
    /// symbol cache does) they are read into memory.
    pub fn of_file(path: &Path) -> io::Result<SharedBytes> {
        #[cfg(unix)]
        {
            let map = ntdbg_files::FileMap::open(path)?;
            let len = map.len();
            Ok(SharedBytes {
                owner: Arc::new(map),
                range: 0..len,
            })
        }
        #[cfg(not(unix))]
        {
            use std::io::Read;
            let mut bytes = Vec::new();
            ntdbg_files::open_regular(path)?.read_to_end(&mut bytes)?;
            Ok(SharedBytes::from(bytes))
        }
    }

    /// `Ok` while the owner holds what it held when these bytes were taken (a mapped file
    /// not truncated or rewritten since; bytes in memory always).
    pub fn check(&self) -> Result<(), FileChanged> {
        self.owner.check()
    }

    /// Which owner holds these bytes (the same number for every view of one owner), so that
    /// a caller checking many views checks each owner once.
    pub(crate) fn owner_id(&self) -> usize {
        Arc::as_ptr(&self.owner).cast::<()>() as usize
    }
}

impl From<Vec<u8>> for SharedBytes {
    fn from(bytes: Vec<u8>) -> SharedBytes {
        let range = 0..bytes.len();
        SharedBytes {
            owner: Arc::new(bytes),
            range,
        }
    }
}

impl Deref for SharedBytes {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // The range was checked against the owner, whose length never changes.
        self.owner.bytes().get(self.range.clone()).unwrap_or(&[])
    }
}

impl fmt::Debug for SharedBytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SharedBytes({} bytes)", self.range.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_stay_inside_their_owner() {
        let whole = SharedBytes::from(vec![1u8, 2, 3, 4, 5]);
        assert_eq!(&*whole, &[1, 2, 3, 4, 5]);
        let mid = whole.slice(1..4).unwrap();
        assert_eq!(&*mid, &[2, 3, 4]);
        assert_eq!(&*mid.slice(1..2).unwrap(), &[3]);
        assert!(mid.slice(2..4).is_none());
        assert!(whole.slice(usize::MAX..usize::MAX).is_none());
        let owner: ByteOwner = Arc::new(vec![0u8; 3]);
        assert!(SharedBytes::new(owner.clone(), 0..4).is_none());
        assert_eq!(SharedBytes::new(owner, 1..3).unwrap().len(), 2);
    }

    #[test]
    fn a_file_reads_whole_whether_mapped_or_empty() {
        let dir = ntdbg_testutil::corrupt::TempDir::new("shared-bytes");
        let full = dir.write("full.sym", b"MODULE windows x86 0 a.pdb\n");
        assert_eq!(
            &*SharedBytes::of_file(&full).unwrap(),
            b"MODULE windows x86 0 a.pdb\n"
        );
        let empty = dir.write("empty.sym", b"");
        assert!(SharedBytes::of_file(&empty).unwrap().is_empty());
        let missing = SharedBytes::of_file(&dir.path().join("missing.sym")).unwrap_err();
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
    }
}
