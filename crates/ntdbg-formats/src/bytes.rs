//! Bounds-checked little-endian reads from byte slices.
//!
//! Every read names the structure it belongs to, so a short input becomes a
//! [`FormatError::Truncated`] that says what was cut off and where.

use crate::FormatError;

/// `len` bytes at `offset`, or a truncation error naming `what`.
pub(crate) fn slice<'a>(
    data: &'a [u8],
    offset: usize,
    len: usize,
    what: &'static str,
) -> Result<&'a [u8], FormatError> {
    offset
        .checked_add(len)
        .and_then(|end| data.get(offset..end))
        .ok_or(FormatError::Truncated {
            what,
            offset: offset as u64,
            needed: len as u64,
            available: data.len().saturating_sub(offset) as u64,
        })
}

/// A fixed-size array at `offset`.
pub(crate) fn array<const N: usize>(
    data: &[u8],
    offset: usize,
    what: &'static str,
) -> Result<[u8; N], FormatError> {
    let s = slice(data, offset, N, what)?;
    let mut out = [0u8; N];
    out.copy_from_slice(s);
    Ok(out)
}

/// A little-endian `u16` at `offset`.
pub(crate) fn u16_at(data: &[u8], offset: usize, what: &'static str) -> Result<u16, FormatError> {
    array::<2>(data, offset, what).map(u16::from_le_bytes)
}

/// A little-endian `u32` at `offset`.
pub(crate) fn u32_at(data: &[u8], offset: usize, what: &'static str) -> Result<u32, FormatError> {
    array::<4>(data, offset, what).map(u32::from_le_bytes)
}

/// A little-endian `u64` at `offset`.
pub(crate) fn u64_at(data: &[u8], offset: usize, what: &'static str) -> Result<u64, FormatError> {
    array::<8>(data, offset, what).map(u64::from_le_bytes)
}

/// The bytes before the first NUL (or all of them), as lossy UTF-8.
pub(crate) fn c_string(data: &[u8]) -> String {
    let end = data.iter().position(|&b| b == 0).unwrap_or(data.len());
    String::from_utf8_lossy(&data[..end]).into_owned()
}

/// A NUL-terminated UTF-16LE string starting at `offset`, at most `max_units` code units.
///
/// Returns the text and the offset just past its terminator (or past the last unit read when
/// the input or the limit ends first).
pub(crate) fn utf16_z(data: &[u8], offset: usize, max_units: usize) -> (String, usize) {
    let mut units = Vec::new();
    let mut pos = offset;
    while units.len() < max_units {
        let Some(pair) = pos.checked_add(2).and_then(|end| data.get(pos..end)) else {
            break;
        };
        pos += 2;
        let unit = u16::from_le_bytes([pair[0], pair[1]]);
        if unit == 0 {
            break;
        }
        units.push(unit);
    }
    (String::from_utf16_lossy(&units), pos)
}

/// `value` rounded up to a multiple of 4 (saturating).
pub(crate) fn align4(value: usize) -> usize {
    value.saturating_add(3) & !3
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_are_bounded() {
        let data = [1u8, 2, 3];
        assert_eq!(u16_at(&data, 1, "x"), Ok(0x0302));
        let err = u32_at(&data, 1, "thing").unwrap_err();
        assert_eq!(
            err,
            FormatError::Truncated {
                what: "thing",
                offset: 1,
                needed: 4,
                available: 2
            }
        );
        assert!(slice(&data, usize::MAX, 2, "x").is_err());
        assert!(slice(&data, 5, 0, "x").is_err());
    }

    #[test]
    fn utf16_strings_stop_at_nul_or_end() {
        let data = [b'A', 0, b'B', 0, 0, 0, b'C', 0];
        assert_eq!(utf16_z(&data, 0, 100), ("AB".to_string(), 6));
        assert_eq!(utf16_z(&data, 6, 100), ("C".to_string(), 8));
        assert_eq!(utf16_z(&data, 7, 100), (String::new(), 7));
        assert_eq!(c_string(b"abc\0def"), "abc");
    }
}
