//! Where [`super::PeInfo::parse_from`] reads an image's bytes: all of them in memory, or a file
//! read by position on demand, so that parsing the headers and the optional parts needs only
//! the few ranges they occupy.

use std::borrow::Cow;

use crate::bytes::{slice, u16_at, u32_at};
use crate::FormatError;

/// An image's bytes, read by offset (file offset or RVA, as the layout says).
pub trait PeBytes {
    /// `len` bytes at `offset`, or a [`FormatError::Truncated`] naming `what` when the input
    /// ends first (`available` counting the bytes from `offset` to the end).
    fn bytes_at(
        &self,
        offset: usize,
        len: usize,
        what: &'static str,
    ) -> Result<Cow<'_, [u8]>, FormatError>;
}

impl PeBytes for &[u8] {
    fn bytes_at(
        &self,
        offset: usize,
        len: usize,
        what: &'static str,
    ) -> Result<Cow<'_, [u8]>, FormatError> {
        slice(self, offset, len, what).map(Cow::Borrowed)
    }
}

/// A little-endian `u16` at `offset` of `bytes`.
pub(crate) fn read_u16(
    bytes: &dyn PeBytes,
    offset: usize,
    what: &'static str,
) -> Result<u16, FormatError> {
    u16_at(&bytes.bytes_at(offset, 2, what)?, 0, what)
}

/// A little-endian `u32` at `offset` of `bytes`.
pub(crate) fn read_u32(
    bytes: &dyn PeBytes,
    offset: usize,
    what: &'static str,
) -> Result<u32, FormatError> {
    u32_at(&bytes.bytes_at(offset, 4, what)?, 0, what)
}
