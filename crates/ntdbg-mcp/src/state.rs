//! What every connection of one server shares: the allowed directories, the open sessions and
//! the output cache. Over HTTP each MCP connection gets its own handler, all over one `State`.

use crate::cache::OutputCache;
use crate::error::ToolError;
use crate::paths::AllowedDirs;
use crate::sessions::SessionRegistry;
use crate::symbol_policy::SymbolServers;
use crate::tasks::Tasks;
use ntdbg_engine::ErrorCode;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// The default idle timeout: long enough for an agent (or its person) to think between
/// calls, short enough that forgotten sessions do not pile up over a working day.
pub const DEFAULT_IDLE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3600);

/// Server-wide state.
#[derive(Debug)]
pub struct State {
    /// Where files may be read and written.
    pub allowed: AllowedDirs,
    /// Open sessions.
    pub sessions: SessionRegistry,
    /// Whether sessions stay off symbol servers.
    pub offline: bool,
    /// The HTTP symbol servers clients may name in symbol paths.
    pub symbol_servers: SymbolServers,
    /// Whether live sessions refuse run control, breakpoints and writes (`--read-only`).
    pub read_only: bool,
    /// The live targets clients may attach (`--allow-attach`).
    pub attach: crate::attach_policy::AttachPolicy,
    /// Sessions unused this long are closed (`None`: never).
    pub idle_timeout: Option<std::time::Duration>,
    /// The crash database `query_crashes` answers from (`ntdbg mcp --db`).
    pub crash_store: Option<ntdbg_store::DbLocation>,
    /// Parsed symbols the dump sessions and `triage_dumps` share (`--symbol-memory`).
    pub shared_symbols: Arc<ntdbg_symbols::SharedSymbols>,
    /// The tasks long tool calls run as (the Tasks extension of MCP 2026-07-28).
    pub tasks: Tasks,
    outputs: Mutex<OutputCache>,
}

impl State {
    /// A fresh state: no sessions, an empty cache.
    pub fn new(allowed: AllowedDirs) -> State {
        State {
            allowed,
            sessions: SessionRegistry::new(),
            offline: false,
            symbol_servers: SymbolServers::default(),
            read_only: false,
            attach: crate::attach_policy::AttachPolicy::default(),
            idle_timeout: Some(DEFAULT_IDLE_TIMEOUT),
            crash_store: None,
            shared_symbols: Arc::new(ntdbg_symbols::SharedSymbols::new(
                ntdbg_symbols::DEFAULT_SYMBOL_MEMORY,
            )),
            tasks: Tasks::default(),
            outputs: Mutex::new(OutputCache::new()),
        }
    }

    /// The output cache (held only for short, non-blocking work).
    pub fn outputs(&self) -> MutexGuard<'_, OutputCache> {
        self.outputs.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Runs synchronous engine work on the blocking pool; a panic becomes an `internal_error`.
pub async fn blocking<T, F>(what: &str, work: F) -> Result<T, ToolError>
where
    F: FnOnce() -> Result<T, ToolError> + Send + 'static,
    T: Send + 'static,
{
    match tokio::task::spawn_blocking(work).await {
        Ok(result) => result,
        Err(join) => Err(internal_error(what, &join)),
    }
}

/// The error for engine work that panicked or was cancelled.
pub fn internal_error(what: &str, join: &tokio::task::JoinError) -> ToolError {
    tracing::error!(what, panic = join.is_panic(), "engine task failed");
    ToolError::new(
        ErrorCode::InternalError,
        format!("the engine failed unexpectedly while {what}"),
    )
    .with_hint("this is a bug in ntdbg: report it with the dump if you can")
    .unrecoverable()
}

/// How long a call waits for a session that another call is using.
pub const BUSY_WAIT: std::time::Duration = std::time::Duration::from_secs(120);

/// The error for a session another call holds too long.
pub fn busy(id: &str) -> ToolError {
    ToolError::new(
        ErrorCode::SessionBusy,
        format!("session {id} is still running an earlier command"),
    )
    .with_hint("wait and retry, or use another session; close_session frees it")
}
