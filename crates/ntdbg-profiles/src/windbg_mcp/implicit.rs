//! The one session of the single-session profiles, shared by every connection: windbg-mcp's,
//! opened at startup from `--dump` or `--attach` and released by `wm_detach` or `wm_shutdown`;
//! ntoseye's, opened at startup or by `open` and released by `close`; chensiling's, opened at
//! startup from `--dump` (`--pid`/`--exe` on Windows) or recorded as not available.

use ntdbg_engine::ErrorCode;
use ntdbg_mcp::ToolError;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard, PoisonError};

/// What `--profile windbg-mcp` (or `ntoseye`, `chensiling`) opens at startup.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StartupTarget {
    /// A dump file (`--dump PATH`).
    Dump(PathBuf),
    /// A live target (`--attach TARGET`, e.g. gdb:HOST:PORT).
    Attach(String),
    /// A start-up form this build cannot serve (chensiling's `--connect`, or `--pid` off
    /// Windows): the server runs and every tool answers `not_available` with this reason.
    Unavailable(String),
}

/// The one session of a single-session profile, shared by every connection.
#[derive(Debug, Default)]
pub struct ImplicitSession(Mutex<Implicit>);

#[derive(Debug, Default)]
enum Implicit {
    /// Started without `--dump` or `--attach`.
    #[default]
    NoTarget,
    /// To be opened by `open_startup_target`.
    Pending(StartupTarget),
    /// ntoseye's `open` is opening a target.
    Opening,
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
    pub(crate) fn id(&self) -> Result<String, ToolError> {
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
    pub(crate) fn opened(&self, id: String) {
        *self.lock() = Implicit::Open(id);
    }

    /// Records that the startup target cannot be served, and why.
    pub(super) fn unavailable(&self, reason: String) {
        *self.lock() = Implicit::Unavailable(reason);
    }
}

/// What a single-session profile's slot holds, as ntoseye's tools ask.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Slot {
    /// No session: `open` may open one.
    Empty,
    /// An `open` is under way.
    Opening,
    /// The ntdbg session id.
    Open(String),
}

impl ImplicitSession {
    /// What the slot holds now.
    pub(crate) fn slot(&self) -> Slot {
        match &*self.lock() {
            Implicit::Open(id) => Slot::Open(id.clone()),
            Implicit::Opening => Slot::Opening,
            _ => Slot::Empty,
        }
    }

    /// Reserves an empty slot for an `open`; what the slot holds when it is not empty.
    pub(crate) fn claim(&self) -> Result<(), Slot> {
        let mut implicit = self.lock();
        match &*implicit {
            Implicit::Open(id) => Err(Slot::Open(id.clone())),
            Implicit::Opening => Err(Slot::Opening),
            _ => {
                *implicit = Implicit::Opening;
                Ok(())
            }
        }
    }

    /// Gives up a reservation whose `open` failed.
    pub(crate) fn abandon(&self) {
        let mut implicit = self.lock();
        if matches!(*implicit, Implicit::Opening) {
            *implicit = Implicit::NoTarget;
        }
    }

    /// Empties the slot if it still holds session `id` (closed by the server meanwhile).
    pub(crate) fn forget(&self, id: &str) {
        let mut implicit = self.lock();
        if matches!(&*implicit, Implicit::Open(open) if open == id) {
            *implicit = Implicit::NoTarget;
        }
    }

    /// Empties the slot for `close`: the session id, when one was open.
    pub(crate) fn take(&self) -> Option<String> {
        let mut implicit = self.lock();
        match &*implicit {
            Implicit::Open(id) => {
                let id = id.clone();
                *implicit = Implicit::NoTarget;
                Some(id)
            }
            _ => None,
        }
    }
}

impl Implicit {
    fn id(&self) -> Result<String, ToolError> {
        match self {
            Implicit::Open(id) => Ok(id.clone()),
            Implicit::Opening => Err(ToolError::new(
                ErrorCode::NotAttached,
                "the target is still being opened",
            )
            .with_hint("retry shortly")),
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
