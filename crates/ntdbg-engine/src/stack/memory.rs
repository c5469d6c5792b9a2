//! The stack memory one walk reads: the captured region around the stack pointer.

use std::borrow::Cow;

/// A thread's stack bytes from `base`.
pub(crate) struct StackMemory<'a> {
    pub(crate) base: u64,
    pub(crate) bytes: Cow<'a, [u8]>,
    /// Pointer size in bytes (4 or 8).
    pub(crate) pointer_size: usize,
}

impl StackMemory<'_> {
    /// The pointer-sized little-endian value at `addr`, when it lies in the stack.
    pub(crate) fn pointer_at(&self, addr: u64) -> Option<u64> {
        let start = usize::try_from(addr.checked_sub(self.base)?).ok()?;
        let bytes = self
            .bytes
            .get(start..start.checked_add(self.pointer_size)?)?;
        // Fixed-size reads: a copy of a length only known at run time is a `memmove` call,
        // and unwind data reads a word per restored register.
        match *bytes {
            [a, b, c, d] => Some(u64::from(u32::from_le_bytes([a, b, c, d]))),
            [a, b, c, d, e, f, g, h] => Some(u64::from_le_bytes([a, b, c, d, e, f, g, h])),
            _ => None,
        }
    }

    /// Whether `addr` lies in the stack.
    pub(crate) fn contains(&self, addr: u64) -> bool {
        addr.checked_sub(self.base)
            .is_some_and(|off| off < self.bytes.len() as u64)
    }
}
