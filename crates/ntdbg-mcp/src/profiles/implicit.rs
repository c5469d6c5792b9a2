//! The one session of the profiles that work on a target named at startup (windbg-mcp,
//! chensiling): opened from `--dump` or `--attach` (`--pid`/`--exe`), shared by every
//! connection, released by `wm_detach` or `wm_shutdown`.

use crate::dto::{AttachParams, OpenDumpParams};
use crate::error::ToolError;
use crate::server::NtdbgServer;
use crate::tools;
use ntdbg_engine::ErrorCode;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// What `--profile windbg-mcp` or `--profile chensiling` opens at startup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartupTarget {
    /// A dump file (`--dump PATH`).
    Dump(PathBuf),
    /// A live target (`--attach TARGET`, e.g. gdb:HOST:PORT; `--pid N` is `pid:N`).
    Attach(String),
    /// A start-up form this build cannot serve (`--connect`, or `--pid` off Windows): the
    /// server runs and every tool answers `not_available` with this reason.
    Unavailable(String),
}

/// The one session of a startup-target profile, shared by every connection.
#[derive(Debug, Default)]
pub struct ImplicitSession(Mutex<Implicit>);

#[derive(Debug, Default)]
enum Implicit {
    /// Started without `--dump` or `--attach`.
    #[default]
    NoTarget,
    /// To be opened by `open_startup_target`.
    Pending(StartupTarget),
    /// The ntdbg session id.
    Open(String),
    /// The startup form cannot be served here; the reason.
    Unavailable(String),
    /// `wm_detach` closed it.
    Detached,
    /// `wm_shutdown` closed it.
    ShutDown,
}

impl ImplicitSession {
    fn lock(&self) -> MutexGuard<'_, Implicit> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Records the target to open at startup.
    pub(crate) fn set_startup(&self, target: StartupTarget) {
        *self.lock() = Implicit::Pending(target);
    }

    /// The open session's id, or why there is none.
    pub(super) fn id(&self) -> Result<String, ToolError> {
        self.lock().id()
    }

    /// Takes the open session out for `wm_detach`.
    pub(super) fn detach(&self) -> Result<String, ToolError> {
        let mut implicit = self.lock();
        let id = implicit.id()?;
        *implicit = Implicit::Detached;
        Ok(id)
    }

    /// Ends the profile's session for `wm_shutdown`: the open session's id, if one was open.
    pub(super) fn shut_down(&self) -> Result<Option<String>, ToolError> {
        let mut implicit = self.lock();
        let open = match &*implicit {
            Implicit::Open(id) => Some(id.clone()),
            Implicit::ShutDown => return implicit.id().map(Some),
            _ => None,
        };
        *implicit = Implicit::ShutDown;
        Ok(open)
    }

    /// The target to open at startup, if it is still to be opened.
    pub(super) fn pending(&self) -> Option<StartupTarget> {
        match &*self.lock() {
            Implicit::Pending(target) => Some(target.clone()),
            _ => None,
        }
    }

    /// Records the session opened for the startup target.
    pub(super) fn opened(&self, id: String) {
        *self.lock() = Implicit::Open(id);
    }

    /// Records that the startup target cannot be served, and why.
    pub(super) fn unavailable(&self, reason: String) {
        *self.lock() = Implicit::Unavailable(reason);
    }
}

impl NtdbgServer {
    /// Opens the target a profile was given at startup ([`Self::with_startup_target`]); does
    /// nothing without one. A form this build cannot serve is recorded, not an error: the
    /// server runs and its tools answer `not_available` with the reason.
    ///
    /// # Errors
    /// The target cannot be opened (the message says why, for the command line).
    pub async fn open_startup_target(&self) -> std::io::Result<()> {
        let Some(pending) = self.implicit().pending() else {
            return Ok(());
        };
        let opened = match &pending {
            StartupTarget::Unavailable(reason) => {
                self.implicit().unavailable(reason.clone());
                return Ok(());
            }
            StartupTarget::Dump(path) => {
                let params = OpenDumpParams {
                    path: path.display().to_string(),
                    symbols_path: None,
                    include_stack: false,
                    include_modules: false,
                    include_threads: false,
                    new_session: true,
                };
                tools::dumps::open_dump(self.state(), params)
                    .await
                    .map(|r| r.value.session_id)
            }
            StartupTarget::Attach(target) => {
                let params = AttachParams {
                    target: target.clone(),
                    symbols_path: None,
                    timeout_seconds: None,
                };
                tools::live::attach(self.state(), params)
                    .await
                    .map(|r| r.value.session_id)
            }
        };
        match opened {
            Ok(id) => {
                self.implicit().opened(id);
                Ok(())
            }
            Err(e) => {
                let flag = match &pending {
                    StartupTarget::Dump(path) => format!("--dump {}", path.display()),
                    StartupTarget::Attach(target) => format!("--attach {target}"),
                    StartupTarget::Unavailable(reason) => reason.clone(),
                };
                Err(std::io::Error::other(format!("{flag}: {}", e.render())))
            }
        }
    }
}

impl Implicit {
    fn id(&self) -> Result<String, ToolError> {
        match self {
            Implicit::Open(id) => Ok(id.clone()),
            Implicit::NoTarget | Implicit::Pending(_) => Err(ToolError::new(
                ErrorCode::NotAttached,
                "no target: this server was started without --dump or --attach",
            )
            .with_hint("restart it as `ntdbg mcp --profile windbg-mcp --dump PATH`")
            .unrecoverable()),
            Implicit::Unavailable(reason) => {
                Err(ToolError::new(ErrorCode::NotAvailable, reason.clone())
                    .with_hint("restart the server with --dump PATH (a crash dump) instead")
                    .unrecoverable())
            }
            Implicit::Detached => Err(ToolError::new(
                ErrorCode::NotAttached,
                "no target: wm_detach released it",
            )
            .with_hint("restart the server to open the target again")
            .unrecoverable()),
            Implicit::ShutDown => Err(ToolError::new(
                ErrorCode::Disconnected,
                "wm_shutdown ended this server's session",
            )
            .with_hint("restart the server to debug again")
            .unrecoverable()),
        }
    }
}
