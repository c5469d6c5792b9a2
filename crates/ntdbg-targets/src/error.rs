//! Errors raised while opening or reading a target.

use ntdbg_errors::ErrorCode;
use std::path::PathBuf;

/// An error opening or reading a target. `code()` gives a stable key for machines.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TargetError {
    /// The file could not be opened or mapped.
    #[error("cannot open {path}: {cause}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The underlying error (part of the message, so not a separate `source`).
        cause: std::io::Error,
    },
    /// The file does not start with a dump signature we know.
    #[error("{path} is not a Windows dump file (signature {signature:?})")]
    NotADump {
        /// The file.
        path: PathBuf,
        /// The first bytes of the file, as text when printable.
        signature: String,
    },
    /// The file is a dump but its structure is damaged or cut short.
    #[error("{path} is a corrupt or truncated dump: {reason}")]
    Corrupt {
        /// The file.
        path: PathBuf,
        /// What was wrong.
        reason: String,
    },
    /// The dump is of a kind this build cannot open yet.
    #[error("{path}: {what} is not supported yet")]
    Unsupported {
        /// The file.
        path: PathBuf,
        /// What is unsupported.
        what: String,
    },
    /// A live target (GDB remote stub) failed: connection, timeout, protocol or stub error.
    #[error("live target {origin}: {source}")]
    Live {
        /// The connection string.
        origin: String,
        /// What the GDB remote client reported.
        source: ntdbg_gdbremote::GdbError,
    },
}

/// Whether `cause` says that the path names a FIFO, a socket or a device (a directory keeps
/// its `io_error`).
fn names_no_regular_file(cause: &std::io::Error) -> bool {
    cause.kind() != std::io::ErrorKind::IsADirectory
        && cause
            .get_ref()
            .is_some_and(|e| e.is::<ntdbg_files::NotRegularFile>())
}

impl TargetError {
    /// A stable snake_case key for this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            TargetError::Io { cause, .. } if cause.kind() == std::io::ErrorKind::NotFound => {
                ErrorCode::FileNotFound
            }
            TargetError::Io { cause, .. } if names_no_regular_file(cause) => {
                ErrorCode::NotARegularFile
            }
            TargetError::Io { .. } => ErrorCode::IoError,
            TargetError::NotADump { .. } => ErrorCode::NotADump,
            TargetError::Corrupt { .. } => ErrorCode::CorruptDump,
            TargetError::Unsupported { .. } => ErrorCode::UnsupportedDump,
            TargetError::Live { source, .. } => source.code(),
        }
    }
}
