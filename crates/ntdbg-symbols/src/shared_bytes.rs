//! Bytes shared with their owner instead of copied: a module image borrowed from a dump's
//! memory mapping, or a buffer read for it. Cloning is a reference-count increment.

use std::fmt;
use std::ops::{Deref, Range};
use std::sync::Arc;

/// Whatever holds the bytes: a memory-mapped dump file, a `Vec<u8>`, …
pub type ByteOwner = Arc<dyn AsRef<[u8]> + Send + Sync>;

/// A view of `range` inside an owner's bytes.
#[derive(Clone)]
pub struct SharedBytes {
    owner: ByteOwner,
    range: Range<usize>,
}

impl SharedBytes {
    /// `range` of `owner`'s bytes; `None` when the range does not lie inside them.
    pub fn new(owner: ByteOwner, range: Range<usize>) -> Option<SharedBytes> {
        let len = (*owner).as_ref().len();
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
        // The range was checked against the owner, whose bytes never change.
        (*self.owner)
            .as_ref()
            .get(self.range.clone())
            .unwrap_or(&[])
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
}
