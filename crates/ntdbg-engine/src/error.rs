//! Engine errors.

use crate::ErrorCode;
use ntdbg_targets::TargetError;

/// An error from the engine. `code()` gives a stable key for machines.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EngineError {
    /// Opening the target failed.
    #[error(transparent)]
    Target(#[from] TargetError),
    /// The symbol path could not be parsed.
    #[error("bad symbol path: {0}")]
    SymbolPath(String),
    /// A thread number or id that does not exist.
    #[error("no thread {0} (use `~` to list threads)")]
    NoSuchThread(String),
    /// The target has no exception event (`.ecxr` on a dump without one).
    #[error(
        "the target has no exception context (a dump without an exception stream, or a live \
         target stopped by no exception)"
    )]
    NoExceptionContext,
    /// A thread without a register context.
    #[error("thread {0:#x} has no register context in the dump")]
    NoContext(u32),
    /// A context record could not be read at an address (`.cxr ADDR`).
    #[error("unable to read a context record at {0:#x}")]
    BadContextRecord(u64),
    /// A frame number past the end of the stack (`.frame N`).
    #[error("frame {0:#x} is not on the stack (use `kn` to list the frames)")]
    NoSuchFrame(usize),
    /// A frame whose variables cannot be listed (no PDB, no procedure record, no scope).
    #[error("no local variables in frame {frame:#x}: {why}")]
    NoFrameVariables {
        /// The frame number.
        frame: usize,
        /// Why.
        why: String,
    },
    /// Run control or a live target failed (connection, timeout, wrong state, policy).
    #[error("{message}")]
    Live {
        /// Stable key ([`ErrorCode::TargetRunning`], [`ErrorCode::TargetGone`],
        /// [`ErrorCode::ReadOnly`], [`ErrorCode::TimedOut`], …).
        code: ErrorCode,
        /// What went wrong.
        message: String,
        /// The error that caused this one (a protocol, Win32 or i/o error), kept for callers
        /// that walk [`std::error::Error::source`]; `None` when there was no underlying error.
        #[source]
        source: Option<Box<dyn std::error::Error + Send + Sync>>,
    },
    /// The work was cancelled through the session's [`Interrupt`](crate::Interrupt).
    #[error("cancelled")]
    Cancelled(#[from] crate::Cancelled),
    /// A process structure (`what`: "TEB", "PEB") whose memory the target does not hold, or
    /// whose address is unknown (0).
    #[error("{what} at {address:#x}: its memory is not available")]
    MemoryUnavailable {
        /// The structure.
        what: &'static str,
        /// Where it is (0: unknown).
        address: u64,
    },
    /// The dump file changed on disk (truncated, copied over, written) while the session had
    /// it open: nothing read from it since can be trusted.
    #[error("the dump {0}; nothing more is read from it in this session")]
    DumpChanged(ntdbg_files::FileChanged),
    /// A file the loaded symbols read (a Breakpad `.sym`, a symbol index, an image) changed
    /// on disk while in use; those symbols were dropped and are read again on next use.
    #[error(
        "a symbol file {0}; that module's symbols were dropped and are read again on next use"
    )]
    SymbolsChanged(ntdbg_files::FileChanged),
}

impl EngineError {
    /// A [`Live`](EngineError::Live) error with no underlying cause.
    pub(crate) fn live(code: ErrorCode, message: impl Into<String>) -> EngineError {
        EngineError::Live {
            code,
            message: message.into(),
            source: None,
        }
    }

    /// A [`Live`](EngineError::Live) error caused by `cause`, which stays reachable through
    /// [`source`](std::error::Error::source); `message` is what Display prints.
    pub(crate) fn live_from(
        code: ErrorCode,
        message: impl Into<String>,
        cause: impl std::error::Error + Send + Sync + 'static,
    ) -> EngineError {
        EngineError::Live {
            code,
            message: message.into(),
            source: Some(Box::new(cause)),
        }
    }

    /// The stable key of this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            EngineError::Target(e) => e.code(),
            EngineError::SymbolPath(_) => ErrorCode::BadSymbolPath,
            EngineError::NoSuchThread(_) => ErrorCode::NoSuchThread,
            EngineError::NoExceptionContext => ErrorCode::NoExceptionContext,
            EngineError::NoContext(_) => ErrorCode::NoContext,
            EngineError::BadContextRecord(_) => ErrorCode::BadContextRecord,
            EngineError::NoSuchFrame(_) => ErrorCode::NoSuchFrame,
            EngineError::NoFrameVariables { .. } => ErrorCode::NoFrameVariables,
            EngineError::Live { code, .. } => *code,
            EngineError::Cancelled(_) => ErrorCode::Cancelled,
            EngineError::MemoryUnavailable { .. } => ErrorCode::MemoryUnavailable,
            EngineError::DumpChanged(_) => ErrorCode::DumpChanged,
            EngineError::SymbolsChanged(_) => ErrorCode::SymbolFileChanged,
        }
    }
}
