//! The server as the tools of a [`ToolSurface`](crate::ToolSurface) reach it: the same tool
//! calls ntdbg's own tools make, and the sessions, outputs and allowed directories they work
//! on, each answering only the client of the call.

use crate::cache::CachedOutput;
use crate::client::ClientId;
use crate::dto::{
    AnalyzeCrashParams, AttachParams, AttachResult, CloseSessionParams, CloseSessionResult,
    ListDumpsParams, ListDumpsResult, OpenDumpParams, OpenDumpResult, RunCommandParams,
    RunCommandResult, RunStateResult, SessionParams, WaitForEventParams,
};
use crate::error::ToolError;
use crate::rendered::Rendered;
use crate::sessions::{DumpIdentity, SessionSlot};
use crate::state::State;
use crate::tools;
use crate::tools::commands::BatchOutput;
use ntdbg_analysis::Report;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::{tool, tool_router};
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The server as a surface's tools reach it. Cheap to clone; every clone is the same server.
#[derive(Debug, Clone)]
pub struct Api {
    state: Arc<State>,
}

impl Api {
    /// The handle on `state`.
    pub(crate) fn new(state: Arc<State>) -> Api {
        Api { state }
    }

    /// `list_dumps`.
    pub async fn list_dumps(
        &self,
        p: ListDumpsParams,
    ) -> Result<Rendered<ListDumpsResult>, ToolError> {
        tools::dumps::list_dumps(&self.state, p).await
    }

    /// `open_dump`.
    pub async fn open_dump(
        &self,
        p: OpenDumpParams,
    ) -> Result<Rendered<OpenDumpResult>, ToolError> {
        tools::dumps::open_dump(&self.state, p).await
    }

    /// `analyze_crash`.
    pub async fn analyze_crash(
        &self,
        p: AnalyzeCrashParams,
    ) -> Result<Rendered<Report>, ToolError> {
        tools::sessions::analyze_crash(&self.state, p).await
    }

    /// `run_command`.
    pub async fn run_command(
        &self,
        p: RunCommandParams,
    ) -> Result<Rendered<RunCommandResult>, ToolError> {
        tools::commands::run_command(&self.state, p).await
    }

    /// `run_command`'s answer with each command's whole text, for surfaces that show whole
    /// outputs.
    pub async fn run_batch(&self, p: RunCommandParams) -> Result<BatchOutput, ToolError> {
        tools::commands::run_batch(&self.state, p).await
    }

    /// `close_session`.
    pub async fn close_session(
        &self,
        p: CloseSessionParams,
    ) -> Result<Rendered<CloseSessionResult>, ToolError> {
        tools::sessions::close_session(&self.state, p).await
    }

    /// `attach`.
    pub async fn attach(&self, p: AttachParams) -> Result<Rendered<AttachResult>, ToolError> {
        tools::live::attach(&self.state, p).await
    }

    /// `break_in`.
    pub async fn break_in(&self, p: SessionParams) -> Result<Rendered<RunStateResult>, ToolError> {
        tools::live::break_in(&self.state, p).await
    }

    /// `wait_for_event`.
    pub async fn wait_for_event(
        &self,
        p: WaitForEventParams,
    ) -> Result<Rendered<RunStateResult>, ToolError> {
        tools::live::wait_for_event(&self.state, p).await
    }

    /// The calling client's session `id`, marked as used now.
    ///
    /// # Errors
    /// `invalid_session` for an id the client does not have.
    pub fn session(&self, id: &str) -> Result<Arc<SessionSlot>, ToolError> {
        self.state.sessions.get(&ClientId::current(), id)
    }

    /// The calling client's sessions, not marked as used (as `list_sessions` lists them).
    pub fn sessions(&self) -> Vec<Arc<SessionSlot>> {
        self.state.sessions.list(&ClientId::current())
    }

    /// The calling client's session open on the dump at `path`, if any.
    ///
    /// # Errors
    /// `path` is outside the allowed directories or cannot be read.
    pub fn session_of_dump(&self, path: &Path) -> Result<Option<Arc<SessionSlot>>, ToolError> {
        let canonical = self.check_existing(path)?;
        Ok(DumpIdentity::of(&canonical).ok().and_then(|identity| {
            self.state
                .sessions
                .find_dump(&ClientId::current(), &identity)
        }))
    }

    /// The whole output of an earlier command, by its `command_id`, as `read_output` reads it.
    ///
    /// # Errors
    /// An unknown or expired id.
    pub fn output(&self, command_id: &str) -> Result<Arc<CachedOutput>, ToolError> {
        self.state.outputs().get(&ClientId::current(), command_id)
    }

    /// `path` made canonical, if it exists inside the allowed directories.
    ///
    /// # Errors
    /// Outside the allowed directories, a refused form (a network path), or missing.
    pub fn check_existing(&self, path: &Path) -> Result<PathBuf, ToolError> {
        self.state.allowed.check_existing(path)
    }

    /// Runs `work` as the server rather than the calling client: the sessions it opens are
    /// the server's, shared by every client (a single-session profile's start-up target).
    pub async fn as_server<F: Future>(&self, work: F) -> F::Output {
        ClientId::Server.scope(work).await
    }
}

/// The crash store's tool, served beside any surface when the server has a database.
#[tool_router(router = crash_store_tools, vis = "pub(crate)")]
impl Api {
    #[tool(
        input_schema = crate::schema::input::<tools::crashes::QueryCrashesParams>(),
        description = tools::crashes::QUERY_CRASHES,
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn query_crashes(
        &self,
        Parameters(p): Parameters<tools::crashes::QueryCrashesParams>,
    ) -> Result<Rendered<tools::crashes::QueryCrashesResult>, ToolError> {
        tools::crashes::query_crashes(&self.state, p).await
    }
}
