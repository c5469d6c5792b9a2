//! The crate's one error type.

use ntdbg_errors::ErrorCode;

/// Why a byte slice could not be read as the format asked for.
///
/// Every variant says what was being read and where, so a message such as
/// "truncated section table at offset 0x178" can be acted on. [`FormatError::code`] gives a
/// stable `snake_case` key for logs and machine-readable output.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum FormatError {
    /// The input ends before a structure does.
    #[error("truncated {what} at offset {offset:#x}: needs {needed} bytes, {available} available")]
    Truncated {
        /// The structure being read.
        what: &'static str,
        /// Where it starts in the input.
        offset: u64,
        /// How many bytes it needs.
        needed: u64,
        /// How many bytes are left from `offset`.
        available: u64,
    },
    /// A signature or magic number has the wrong value.
    #[error("bad {what} signature {found:#x} at offset {offset:#x}")]
    BadMagic {
        /// The structure whose signature was checked.
        what: &'static str,
        /// Where the signature is.
        offset: u64,
        /// The value found.
        found: u64,
    },
    /// A value is outside what this reader supports (e.g. an unknown optional-header kind).
    #[error("unsupported {what}: {value:#x}")]
    Unsupported {
        /// The field.
        what: &'static str,
        /// Its value.
        value: u64,
    },
    /// A relative virtual address points outside the image, or (file layout) into no section.
    #[error("{what} at RVA {rva:#x} (size {size:#x}) is outside the image data")]
    RvaOutOfRange {
        /// What the RVA was meant to locate.
        what: &'static str,
        /// The RVA.
        rva: u64,
        /// How many bytes were wanted there.
        size: u64,
    },
    /// A structure is present but internally inconsistent.
    #[error("malformed {what} at offset {offset:#x}: {reason}")]
    Malformed {
        /// The structure.
        what: &'static str,
        /// Where it is (an RVA for image structures).
        offset: u64,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// Unwinding needs a value the caller could not supply (stack memory or a register).
    #[error("unwinding needs {what} at {address:#x}, which is not available")]
    NeedsData {
        /// What was needed (`stack memory`, `register x29`, …).
        what: &'static str,
        /// The address (or register number) involved.
        address: u64,
    },
    /// A textual key (GUID, debug id, image key) does not parse.
    #[error("invalid {what} {text:?}: {reason}")]
    InvalidKey {
        /// What kind of key was expected.
        what: &'static str,
        /// The text given.
        text: String,
        /// What is wrong with it.
        reason: &'static str,
    },
}

impl FormatError {
    /// A stable `snake_case` name for this kind of error.
    pub fn code(&self) -> ErrorCode {
        match self {
            FormatError::Truncated { .. } => ErrorCode::Truncated,
            FormatError::BadMagic { .. } => ErrorCode::BadMagic,
            FormatError::Unsupported { .. } => ErrorCode::Unsupported,
            FormatError::RvaOutOfRange { .. } => ErrorCode::RvaOutOfRange,
            FormatError::Malformed { .. } => ErrorCode::Malformed,
            FormatError::NeedsData { .. } => ErrorCode::NeedsData,
            FormatError::InvalidKey { .. } => ErrorCode::InvalidKey,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_snake_case_and_messages_name_the_place() {
        let e = FormatError::Truncated {
            what: "section table",
            offset: 0x178,
            needed: 40,
            available: 3,
        };
        assert_eq!(e.code(), "truncated");
        assert_eq!(
            e.to_string(),
            "truncated section table at offset 0x178: needs 40 bytes, 3 available"
        );
    }
}
