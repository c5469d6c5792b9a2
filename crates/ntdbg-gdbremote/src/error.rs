//! The one error type of this crate.

use ntdbg_errors::ErrorCode;
use std::time::Duration;

/// Everything that can go wrong talking to a GDB remote stub.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GdbError {
    /// The TCP connection could not be made.
    #[error("cannot connect to gdb stub at {addr}: {source}")]
    Connect {
        /// The address as given.
        addr: String,
        /// The cause.
        source: std::io::Error,
    },
    /// A socket read or write failed.
    #[error("gdb stub i/o error: {0}")]
    Io(#[from] std::io::Error),
    /// The stub did not answer in time.
    #[error("gdb stub did not answer {what} within {after:?}")]
    Timeout {
        /// What we were waiting for.
        what: String,
        /// How long we waited.
        after: Duration,
    },
    /// The stub closed the connection.
    #[error("gdb stub closed the connection")]
    Disconnected,
    /// The stub sent something that does not follow the protocol.
    #[error("gdb protocol error: {0}")]
    Protocol(String),
    /// The stub answered `E NN`.
    #[error("gdb stub refused {request}: error {code:#04x}")]
    Remote {
        /// The request (its first characters).
        request: String,
        /// The stub's error number.
        code: u8,
    },
    /// The stub answered with an empty packet: it does not support the request.
    #[error("gdb stub does not support {0}")]
    Unsupported(String),
    /// The target description (`target.xml`) could not be read or parsed.
    #[error("bad target description: {0}")]
    TargetXml(String),
    /// The request needs a stopped target, but it is running.
    #[error("target is running")]
    Running,
    /// The request needs a running target, but it is stopped.
    #[error("target is not running")]
    NotRunning,
    /// An argument was out of range (for example a packet with `$` or `#` in it).
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
}

impl GdbError {
    /// A stable, machine-readable code for this error (`timeout`, `disconnected`, …).
    pub fn code(&self) -> ErrorCode {
        match self {
            GdbError::Connect { .. } => ErrorCode::ConnectFailed,
            GdbError::Io(_) => ErrorCode::Io,
            GdbError::Timeout { .. } => ErrorCode::Timeout,
            GdbError::Disconnected => ErrorCode::Disconnected,
            GdbError::Protocol(_) => ErrorCode::Protocol,
            GdbError::Remote { .. } => ErrorCode::RemoteError,
            GdbError::Unsupported(_) => ErrorCode::Unsupported,
            GdbError::TargetXml(_) => ErrorCode::TargetXml,
            GdbError::Running => ErrorCode::TargetRunning,
            GdbError::NotRunning => ErrorCode::TargetNotRunning,
            GdbError::InvalidArgument(_) => ErrorCode::InvalidArgument,
        }
    }
}

/// Result with [`GdbError`].
pub type Result<T> = std::result::Result<T, GdbError>;
