//! The ntdbg MCP server: Windows crash-dump debugging for AI agents.
//!
//! [`NtdbgServer`] serves the tool contract of ntdbg's design (`list_dumps`, `open_dump`,
//! `analyze_crash`, `run_command`, `read_output`, `list_sessions`, `close_session`, and the
//! live-target tools `attach`, `break_in`, `wait_for_event` over the GDB remote protocol) plus the `triage-dump` and `triage-kernel-dump` prompts,
//! over stdio ([`serve_stdio`]) or streamable HTTP at `/mcp` ([`serve_http`]). This is the only
//! crate that knows MCP (rmcp); the engine below it is synchronous and runs on tokio's
//! blocking pool, one lock per session, so sessions never wait for each other.
//!
//! Security defaults: files are read and written only under the allowed directories
//! ([`AllowedDirs`], symbolic links and `..` resolved first); HTTP listens on loopback only
//! unless told otherwise with a bearer token, and refuses foreign `Origin`s.
//!
//! ```no_run
//! # async fn run() -> std::io::Result<()> {
//! let allowed = ntdbg_mcp::AllowedDirs::new(&["dumps".into()])?;
//! ntdbg_mcp::serve_stdio(ntdbg_mcp::NtdbgServer::new(allowed)).await
//! # }
//! ```

mod admission;
mod api;
mod attach_policy;
mod cache;
mod client;
pub mod dto;
mod error;
mod http;
mod idle;
mod listener;
mod listing;
mod logging;
mod memory;
mod paths;
mod progress;
mod prompts;
pub mod redact;
mod rendered;
mod report_text;
pub mod schema;
mod server;
mod sessions;
mod state;
mod stdio;
mod surface;
mod symbol_policy;
mod tasks;
mod text;
mod tool_sets;
mod tools;
mod triage_text;

pub use api::Api;
pub use attach_policy::AttachPolicy;
pub use cache::CachedOutput;
pub use error::ToolError;
pub use http::{app, serve_http, HttpOptions, ShutdownHandle, LOCAL_ORIGINS, MAX_REQUEST_BODY};
pub use listener::HttpLimits;
pub use logging::init_stderr_logging;
pub use paths::AllowedDirs;
pub use rendered::Rendered;
pub use schema::result_schemas;
pub use server::NtdbgServer;
pub use sessions::SessionSlot;
pub use state::blocking;
pub use state::DEFAULT_IDLE_TIMEOUT;
pub use stdio::{serve_io, serve_stdio, shutdown_signal, MAX_LINE};
pub use surface::{ServesApi, ToolSurface};
pub use text::floor_char;
pub use tool_sets::ToolSet;
pub use tools::commands::{BatchOutput, CommandText};

/// Output previews, batch limits and page sizes, as the tool contract states them.
pub mod limits {
    pub use crate::text::PREVIEW_THRESHOLD;
    pub use crate::tools::commands::{
        DEFAULT_PAGE, DEFAULT_TIMEOUT_MS, MAX_COMMANDS, MAX_PAGE, MAX_TIMEOUT_MS,
    };
    pub use crate::tools::dumps::FIRST_TRIAGE_BUDGET;
    /// All tool definitions together stay under this many characters of `tools/list` JSON
    /// (about 3,000 tokens).
    pub const TOOLS_LIST_BUDGET: usize = 12_000;
}

/// Which transport [`run`] serves.
#[derive(Debug, Clone)]
pub enum Transport {
    /// Newline-delimited JSON-RPC on stdin/stdout.
    Stdio,
    /// Streamable HTTP at `http://ADDR/mcp`.
    Http(HttpOptions),
}

/// Starts a tokio runtime and the idle-session sweeper, and serves until the client closes
/// stdin (stdio) or the process is interrupted (Ctrl-C; SIGTERM on Unix, Ctrl-Break or the
/// console closing on Windows); then every live session is detached cleanly (breakpoints
/// removed, target resumed). For binaries: the `ntdbg mcp` subcommand is this call.
///
/// # Errors
/// The HTTP security rules ([`HttpOptions::validate`]) and I/O errors.
pub fn run(server: NtdbgServer, transport: Transport) -> std::io::Result<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(server.start())?;
    let state = server.state().clone();
    let served = runtime.block_on(async move {
        server.spawn_idle_sweeper();
        let serve = async move {
            match transport {
                Transport::Stdio => serve_stdio(server).await,
                Transport::Http(options) => serve_http(server, options).await,
            }
        };
        tokio::select! {
            r = serve => r,
            () = stdio::shutdown_signal() => Ok(()),
        }
    });
    state.sessions.detach_all_live();
    served
}
