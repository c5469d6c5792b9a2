//! mcp-windbg's 0.x tool names, served beside its 1.x ones because its users configured both
//! generations: `open_windbg_dump`, `run_windbg_cmd`, `close_windbg_dump`, `list_windbg_dumps`,
//! `open_windbg_remote`, `close_windbg_remote` (and `send_ctrl_break` with 0.x's `dump_path` or
//! `connection_string`, in the 1.x router). Parameters are 0.x's (v0.2 to v0.15).
//!
//! In 0.x a dump's session is named by the dump's path, not by an id: `open_windbg_dump` and
//! `run_windbg_cmd` use the session open on that file and open one when none is (as 0.x did),
//! `close_windbg_dump` closes it. One tool opens user and kernel dumps alike.

use super::args::{ListDumpsArgs, OpenDumpArgs};
use super::ids::Mode;
use super::{needs_cdb_engine, time_limit, OPEN_TIMEOUT_S};
use crate::Host;
use ntdbg_mcp::dto::{CloseSessionParams, OpenDumpParams};
use ntdbg_mcp::schema;
use ntdbg_mcp::ToolError;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::{tool, tool_router};
use schemars::JsonSchema;
use serde::Deserialize;
use std::path::Path;

/// `open_windbg_dump` arguments (0.x).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OpenLegacyArgs {
    /// Dump file.
    pub dump_path: String,
    /// Extra symbol path.
    pub symbols_path: Option<String>,
    /// Add kb.
    #[serde(default)]
    pub include_stack_trace: bool,
    /// Add lm.
    #[serde(default)]
    pub include_modules: bool,
    /// Add ~.
    #[serde(default)]
    pub include_threads: bool,
}

impl From<OpenLegacyArgs> for OpenDumpArgs {
    fn from(a: OpenLegacyArgs) -> OpenDumpArgs {
        OpenDumpArgs {
            dump_path: a.dump_path,
            include_stack_trace: a.include_stack_trace,
            include_modules: a.include_modules,
            include_threads: a.include_threads,
            symbols_path: a.symbols_path,
            timeout_seconds: None,
        }
    }
}

/// `open_windbg_remote` arguments (0.x).
#[allow(dead_code, reason = "validated now, used once a cdb engine exists")]
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OpenRemoteLegacyArgs {
    /// Remote connection string.
    pub connection_string: String,
    /// Add kb.
    #[serde(default)]
    pub include_stack_trace: bool,
    /// Add lm.
    #[serde(default)]
    pub include_modules: bool,
    /// Add ~.
    #[serde(default)]
    pub include_threads: bool,
}

/// `run_windbg_cmd` arguments (0.x).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunLegacyArgs {
    /// Dump file (opened if needed).
    pub dump_path: Option<String>,
    /// Remote connection string.
    pub connection_string: Option<String>,
    /// WinDbg command(s), ';'-separated.
    pub command: String,
    /// Extra symbol path.
    pub symbols_path: Option<String>,
}

/// `close_windbg_dump` arguments (0.x).
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DumpPathArgs {
    /// Dump file.
    pub dump_path: String,
}

/// `close_windbg_remote` arguments (0.x).
#[allow(dead_code, reason = "validated now, used once a cdb engine exists")]
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ConnectionArgs {
    /// Remote connection string.
    pub connection_string: String,
}

const OPEN_WINDBG_DUMP: &str =
    "mcp-windbg 0.x: open_cdb_dump/open_kd_dump, the session named by dump_path.";
const RUN_WINDBG_CMD: &str =
    "mcp-windbg 0.x: run WinDbg commands on the dump at dump_path (opened if needed).";
const CLOSE_WINDBG_DUMP: &str = "mcp-windbg 0.x: close the session of the dump at dump_path.";
const LIST_WINDBG_DUMPS: &str = "mcp-windbg 0.x name of list_dumps: dumps in directory_path.";
const OPEN_WINDBG_REMOTE: &str =
    "mcp-windbg 0.x name of open_cdb_remote (needs cdb.exe: not available).";
const CLOSE_WINDBG_REMOTE: &str =
    "mcp-windbg 0.x: close a remote connection (needs cdb.exe: not available).";

// The macro adds public `*_tool_attr` functions without docs.
#[allow(missing_docs)]
#[tool_router(router = mcp_windbg_legacy_tools, vis = "pub(crate)")]
impl Host {
    #[tool(
        input_schema = schema::input::<ListDumpsArgs>(),
        description = LIST_WINDBG_DUMPS,
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn list_windbg_dumps(
        &self,
        Parameters(a): Parameters<ListDumpsArgs>,
    ) -> Result<String, ToolError> {
        self.mcp_windbg_listing(a).await
    }

    #[tool(
        input_schema = schema::input::<OpenLegacyArgs>(),
        description = OPEN_WINDBG_DUMP,
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = true, open_world_hint = true)
    )]
    async fn open_windbg_dump(
        &self,
        Parameters(a): Parameters<OpenLegacyArgs>,
    ) -> Result<String, ToolError> {
        let shown = a.dump_path.clone();
        let (id, triage) = self.open_and_triage(a.into(), None, false).await?;
        Ok(format!("dump_path: {shown} (session {id})\n\n{triage}"))
    }

    #[tool(
        input_schema = schema::input::<RunLegacyArgs>(),
        description = RUN_WINDBG_CMD,
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = true)
    )]
    async fn run_windbg_cmd(
        &self,
        Parameters(a): Parameters<RunLegacyArgs>,
    ) -> Result<String, ToolError> {
        let path = match (a.dump_path, a.connection_string) {
            (Some(path), None) => path,
            (None, Some(_)) => {
                return Err(needs_cdb_engine(
                    "run_windbg_cmd on a remote connection",
                    "run_windbg_cmd with dump_path runs on dump files",
                ))
            }
            _ => return Err(one_of_path_or_connection("run_windbg_cmd")),
        };
        let params = OpenDumpParams {
            path,
            symbols_path: a.symbols_path,
            include_stack: false,
            include_modules: false,
            include_threads: false,
            new_session: false,
        };
        let opened = self.api().open_dump(params).await?.value;
        let mode = Mode::of_kind(&opened.kind);
        let limit = time_limit(None, super::command_timeout(mode));
        super::run_console(self.api(), opened.session_id, a.command, mode, limit).await
    }

    #[tool(
        input_schema = schema::input::<DumpPathArgs>(),
        description = CLOSE_WINDBG_DUMP,
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = true, open_world_hint = false)
    )]
    async fn close_windbg_dump(
        &self,
        Parameters(a): Parameters<DumpPathArgs>,
    ) -> Result<String, ToolError> {
        let Some(id) = self.session_of_dump(&a.dump_path)? else {
            return Ok(format!("no open session for {}\n", a.dump_path));
        };
        let params = CloseSessionParams {
            session_id: id,
            resume: None,
        };
        self.api().close_session(params).await?;
        Ok(format!("closed the session of {}\n", a.dump_path))
    }

    #[tool(
        input_schema = schema::input::<OpenRemoteLegacyArgs>(),
        description = OPEN_WINDBG_REMOTE,
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = true)
    )]
    async fn open_windbg_remote(
        &self,
        Parameters(_a): Parameters<OpenRemoteLegacyArgs>,
    ) -> Result<String, ToolError> {
        Err(needs_cdb_engine(
            "open_windbg_remote",
            "open_windbg_dump opens dump files",
        ))
    }

    #[tool(
        input_schema = schema::input::<ConnectionArgs>(),
        description = CLOSE_WINDBG_REMOTE,
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = true, open_world_hint = false)
    )]
    async fn close_windbg_remote(
        &self,
        Parameters(_a): Parameters<ConnectionArgs>,
    ) -> Result<String, ToolError> {
        Err(needs_cdb_engine(
            "close_windbg_remote",
            "close_windbg_dump closes dump sessions",
        ))
    }
}

impl Host {
    /// The id of the session open on the dump at `path`, if any (0.x names sessions by path).
    pub(super) fn session_of_dump(&self, path: &str) -> Result<Option<String>, ToolError> {
        Ok(self
            .api()
            .session_of_dump(Path::new(path))?
            .map(|slot| slot.id.clone()))
    }

    /// Opens a dump (or finds its open session unless `new_session`) and runs the triage
    /// commands; `mode` checks the dump's kind (`None`: either kind, 0.x's one tool). Returns
    /// the profile id and the triage's console text.
    pub(super) async fn open_and_triage(
        &self,
        a: OpenDumpArgs,
        mode: Option<Mode>,
        new_session: bool,
    ) -> Result<(String, String), ToolError> {
        let api = self.api();
        let limit = time_limit(a.timeout_seconds, OPEN_TIMEOUT_S);
        let deadline = tokio::time::Instant::now() + limit;
        if let Some(mode) = mode {
            super::check_dump_kind(api, &a.dump_path, mode).await?;
        }
        let params = OpenDumpParams {
            path: a.dump_path.clone(),
            symbols_path: a.symbols_path.clone(),
            include_stack: false,
            include_modules: false,
            include_threads: false,
            new_session,
        };
        // A late open is dropped whole: the session is registered only when it completes.
        let opened = tokio::time::timeout_at(deadline, api.open_dump(params))
            .await
            .map_err(|_| super::timed_out("opening the dump", limit))??
            .value;
        let mode = mode.unwrap_or_else(|| Mode::of_kind(&opened.kind));
        let id = super::ids::profile_id(mode, &opened.session_id);
        let remaining = deadline
            .saturating_duration_since(tokio::time::Instant::now())
            .max(std::time::Duration::from_millis(1));
        let triage = super::run_console(
            api,
            opened.session_id,
            super::triage_commands(&a),
            mode,
            remaining,
        )
        .await
        .unwrap_or_else(|e| format!("triage failed: {}\n", e.render()));
        Ok((id, triage))
    }
}

/// The error of a 0.x call that names neither a dump nor a connection, or both.
pub(super) fn one_of_path_or_connection(tool: &str) -> ToolError {
    ToolError::invalid_arguments(format!(
        "{tool} takes dump_path or connection_string (exactly one)"
    ))
    .with_hint("pass the dump_path given to open_windbg_dump")
}
