//! The mcp-windbg profile: `list_dumps`, `open_cdb_dump`/`open_kd_dump`, `run_cdb_command`/
//! `run_kd_command`, `close_cdb_session`/`close_kd_session`, `open_cdb_remote`,
//! `open_kd_session`, `send_ctrl_break`, `wait_for_break`, and the prompts `dump-triage`,
//! `remote-triage`, `kernel-triage`.
//!
//! Session ids are ntdbg's own with a `cdb-` (user mode) or `kd-` (kernel) prefix; a tool of
//! the other kind refuses the id and names the right tool. The 0.x tool names
//! (`open_windbg_dump`, `run_windbg_cmd`, …) are served too ([`legacy`]). Answers are console text, as
//! mcp-windbg's are: `open_*_dump` starts with `session_id: …` and runs the standard triage
//! (`.lastevent`, `!analyze -v`, then `kb`, `lm`, `~` when asked).

mod args;
mod ids;
mod legacy;
mod prompts;

use args::{
    BreakArgs, CloseKdArgs, ListDumpsArgs, OpenDumpArgs, OpenRemoteArgs, RunArgs, SessionArgs,
    WaitArgs,
};
use ids::{lookup, resolve, Mode};

use crate::console_text;
use crate::Host;
use ntdbg_engine::ErrorCode;
use ntdbg_mcp::dto::{
    CloseSessionParams, ListDumpsParams, ListDumpsResult, OutputFormat, RunCommandParams,
    RunStateResult, SessionParams, WaitForEventParams,
};
use ntdbg_mcp::limits::MAX_TIMEOUT_MS;
use ntdbg_mcp::schema;
use ntdbg_mcp::Rendered;
use ntdbg_mcp::ToolError;
use ntdbg_mcp::{blocking, Api};
use rmcp::handler::server::wrapper::Parameters;
use rmcp::{tool, tool_router};
use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

/// The workflow sentence of the server instructions.
pub const WORKFLOW: &str = "Windows crash-dump analysis (ntdbg, mcp-windbg tool names). Workflow: list_dumps -> open_cdb_dump (user-mode dump) or open_kd_dump (kernel dump) -> run_cdb_command / run_kd_command with the session_id (\"kb\", \"r\", \"lm\", \"!analyze -v\") -> close_cdb_session / close_kd_session.";

/// The tools and prompts only a live target can use.
pub const LIVE_ONLY: &[&str] = &[
    "open_cdb_remote",
    "open_kd_session",
    "send_ctrl_break",
    "wait_for_break",
    "remote-triage",
    "open_windbg_remote",
    "close_windbg_remote",
];

/// The tools and prompts only a dump file can use.
pub const DUMP_ONLY: &[&str] = &[
    "list_dumps",
    "open_cdb_dump",
    "open_kd_dump",
    "dump-triage",
    "kernel-triage",
    "open_windbg_dump",
    "close_windbg_dump",
    "list_windbg_dumps",
];

const LIST_DUMPS: &str = "List the Windows crash dump files in a directory (default: the first allowed directory) with kind, arch, OS build and exception headline. Open user-mode dumps with open_cdb_dump, kernel dumps with open_kd_dump.";
const OPEN_CDB_DUMP: &str = "Open and triage a user-mode Windows crash dump: runs .lastevent and !analyze -v (plus kb, lm, ~ when asked) and returns the output with `session_id: cdb-…` on the first line. Use the id with run_cdb_command and close_cdb_session. For a kernel dump (MEMORY.DMP, Minidump\\*.dmp) use open_kd_dump.";
const OPEN_KD_DUMP: &str = "Open and triage a kernel crash dump (MEMORY.DMP, Minidump\\*.dmp): runs .lastevent and !analyze -v (plus kb, lm, ~ when asked) and returns the output with `session_id: kd-…` on the first line. Use the id with run_kd_command and close_kd_session. For a user-mode dump use open_cdb_dump.";
const OPEN_CDB_REMOTE: &str = "Attach to a user-mode remote debug server (cdb -server). Needs cdb.exe on a Windows host: this build has no cdb engine, so it answers an error on every host (not_available). Dump files: open_cdb_dump.";
const OPEN_KD_SESSION: &str = "Attach to a live kernel target (kd -k: KDNET, named pipe, serial). Needs kd.exe on a Windows host: this build has no kd engine, so it answers an error on every host (not_available). Kernel dump files: open_kd_dump.";
const RUN_CDB_COMMAND: &str = "Run WinDbg commands on a user-mode session (cdb- id from open_cdb_dump): kb, r, lm, ~*k, dq, u, !analyze -v, …; several separated by ';'. Returns the console output.";
const RUN_KD_COMMAND: &str = "Run WinDbg commands on a kernel session (kd- id from open_kd_dump): kb, r, lm, !analyze -v, …; several separated by ';'. Returns the console output.";
const CLOSE_CDB_SESSION: &str = "Close a user-mode (cdb-) session and free its resources.";
const CLOSE_KD_SESSION: &str = "Close a kernel (kd-) session and free its resources; resume (default true) lets a live target run again.";
const SEND_CTRL_BREAK: &str = "Break into a running live session: session_id (cdb-, kd-), or 0.x's dump_path or connection_string. Dumps never run: an error for them.";
const WAIT_FOR_BREAK: &str = "Wait until a resumed live target (cdb- or kd- id) stops, and return what it printed. Dump sessions never run, so this answers an error for them.";

/// Default time for opening and triaging a dump.
const OPEN_TIMEOUT_S: u64 = 180;
/// Default time for a user-mode command.
const CDB_COMMAND_TIMEOUT_S: u64 = 60;
/// Default time for a kernel command.
const KD_COMMAND_TIMEOUT_S: u64 = 120;
/// Default time `wait_for_break` waits.
const WAIT_TIMEOUT_S: u64 = 300;

/// The default time limit of a command of `mode`, in seconds.
fn command_timeout(mode: Mode) -> u64 {
    match mode {
        Mode::Cdb => CDB_COMMAND_TIMEOUT_S,
        Mode::Kd => KD_COMMAND_TIMEOUT_S,
    }
}

/// The time limit of a call: the one asked for (in seconds) or the default, at most
/// [`MAX_TIMEOUT_MS`].
fn time_limit(seconds: Option<u64>, default_s: u64) -> Duration {
    let ms = seconds
        .unwrap_or(default_s)
        .saturating_mul(1000)
        .clamp(1, MAX_TIMEOUT_MS);
    Duration::from_millis(ms)
}

fn timed_out(what: &str, limit: Duration) -> ToolError {
    ToolError::new(
        ErrorCode::TimedOut,
        format!("{what} did not finish within {} s", limit.as_secs()),
    )
    .with_hint("raise timeout_seconds")
}

/// Refuses a dump of the other kind before opening it, naming the right tool.
async fn check_dump_kind(api: &Api, path: &str, mode: Mode) -> Result<(), ToolError> {
    let path = api.check_existing(Path::new(path))?;
    let summary = blocking("reading the dump header", move || {
        Ok(ntdbg_analysis::listing::summarize_dump(&path))
    })
    .await?;
    // Files that are no dump at all get open_dump's own error.
    let Some(kind) = summary.kind else {
        return Ok(());
    };
    let actual = Mode::of_kind(&kind);
    if actual == mode {
        return Ok(());
    }
    Err(ToolError::new(
        ErrorCode::WrongDumpKind,
        format!(
            "{} is a {kind} dump, not a {} one",
            summary.path,
            mode.noun()
        ),
    )
    .with_hint(format!("open it with {}", actual.open_tool())))
}

/// The triage commands `open_*_dump` runs.
fn triage_commands(a: &OpenDumpArgs) -> String {
    let mut commands = vec![".lastevent", "!analyze -v"];
    for (wanted, command) in [
        (a.include_stack_trace, "kb"),
        (a.include_modules, "lm"),
        (a.include_threads, "~"),
    ] {
        if wanted {
            commands.push(command);
        }
    }
    commands.join("; ")
}

/// Runs `command` on session `raw` and returns the console text.
async fn run_console(
    api: &Api,
    raw: String,
    command: String,
    mode: Mode,
    limit: Duration,
) -> Result<String, ToolError> {
    let timeout_ms = u64::try_from(limit.as_millis()).unwrap_or(MAX_TIMEOUT_MS);
    let batch = api
        .run_batch(RunCommandParams {
            session_id: raw,
            command,
            timeout_ms: Some(timeout_ms.max(1)),
            format: OutputFormat::Text,
            output_file: None,
            on_error: None,
        })
        .await?;
    Ok(console_text(&batch, mode == Mode::Kd))
}

/// The `list_dumps` text: full paths, to pass as dump_path, and the tool that opens each.
fn listing_text(listing: &ListDumpsResult) -> String {
    let mut text = format!(
        "{} crash dump(s) in {}\n",
        listing.dumps.len(),
        listing.directory
    );
    for d in &listing.dumps {
        let _ = match (&d.kind, &d.error) {
            (Some(kind), None) => writeln!(
                text,
                "{}  ({kind} dump, {} MB; {}) {}",
                d.path,
                d.size.div_ceil(1 << 20),
                Mode::of_kind(kind).open_tool(),
                d.headline.as_deref().unwrap_or("")
            ),
            (_, Some(e)) => writeln!(text, "{}  (unreadable: {})", d.path, e.message),
            (None, None) => writeln!(text, "{}", d.path),
        };
    }
    if listing.truncated {
        text.push_str("(listing stopped at its limit: name a subfolder to see more)\n");
    }
    text
}

/// The text of a live-target answer.
fn run_state_text(id: &str, r: &Rendered<RunStateResult>) -> String {
    let mut text = format!("session {id}: {}\n", r.value.run_state);
    for event in &r.value.events {
        let _ = writeln!(text, "{}", event.text);
    }
    text.push_str(&r.value.trailer);
    text
}

/// The answer of the tools that need a cdb/kd engine.
fn needs_cdb_engine(tool: &str, instead: &str) -> ToolError {
    let host = if cfg!(windows) {
        "this build has no cdb/kd engine yet"
    } else {
        "it needs cdb.exe/kd.exe on a Windows host, and this host is not Windows"
    };
    ToolError::new(ErrorCode::NotAvailable, format!("{tool} is not available: {host}"))
        .with_hint(format!(
            "dump files work on every host: {instead}; live user-mode targets over GDB remote: run `ntdbg mcp` (default profile) and use attach"
        ))
        .unrecoverable()
}

// The macro adds public `*_tool_attr` functions without docs.
#[allow(missing_docs)]
#[tool_router(router = mcp_windbg_tools, vis = "pub(crate)")]
impl Host {
    #[tool(
        name = "list_dumps",
        input_schema = schema::input::<ListDumpsArgs>(),
        description = LIST_DUMPS,
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn mcp_windbg_list_dumps(
        &self,
        Parameters(a): Parameters<ListDumpsArgs>,
    ) -> Result<String, ToolError> {
        self.mcp_windbg_listing(a).await
    }

    #[tool(
        input_schema = schema::input::<OpenDumpArgs>(),
        description = OPEN_CDB_DUMP,
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = true)
    )]
    async fn open_cdb_dump(
        &self,
        Parameters(a): Parameters<OpenDumpArgs>,
    ) -> Result<String, ToolError> {
        self.open_profile_dump(a, Mode::Cdb).await
    }

    #[tool(
        input_schema = schema::input::<OpenDumpArgs>(),
        description = OPEN_KD_DUMP,
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = true)
    )]
    async fn open_kd_dump(
        &self,
        Parameters(a): Parameters<OpenDumpArgs>,
    ) -> Result<String, ToolError> {
        self.open_profile_dump(a, Mode::Kd).await
    }

    #[tool(
        input_schema = schema::input::<RunArgs>(),
        description = RUN_CDB_COMMAND,
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = true)
    )]
    async fn run_cdb_command(
        &self,
        Parameters(a): Parameters<RunArgs>,
    ) -> Result<String, ToolError> {
        self.run_profile_command(a, Mode::Cdb).await
    }

    #[tool(
        input_schema = schema::input::<RunArgs>(),
        description = RUN_KD_COMMAND,
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = true)
    )]
    async fn run_kd_command(
        &self,
        Parameters(a): Parameters<RunArgs>,
    ) -> Result<String, ToolError> {
        self.run_profile_command(a, Mode::Kd).await
    }

    #[tool(
        input_schema = schema::input::<SessionArgs>(),
        description = CLOSE_CDB_SESSION,
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = true, open_world_hint = false)
    )]
    async fn close_cdb_session(
        &self,
        Parameters(a): Parameters<SessionArgs>,
    ) -> Result<String, ToolError> {
        self.close_profile_session(&a.session_id, None, Mode::Cdb)
            .await
    }

    #[tool(
        input_schema = schema::input::<CloseKdArgs>(),
        description = CLOSE_KD_SESSION,
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = true, open_world_hint = false)
    )]
    async fn close_kd_session(
        &self,
        Parameters(a): Parameters<CloseKdArgs>,
    ) -> Result<String, ToolError> {
        self.close_profile_session(&a.session_id, Some(a.resume), Mode::Kd)
            .await
    }

    #[tool(
        input_schema = schema::input::<OpenRemoteArgs>(),
        description = OPEN_CDB_REMOTE,
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = true)
    )]
    async fn open_cdb_remote(
        &self,
        Parameters(_a): Parameters<OpenRemoteArgs>,
    ) -> Result<String, ToolError> {
        Err(needs_cdb_engine(
            "open_cdb_remote",
            "open_cdb_dump opens user-mode dumps",
        ))
    }

    #[tool(
        input_schema = schema::input::<OpenRemoteArgs>(),
        description = OPEN_KD_SESSION,
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = true)
    )]
    async fn open_kd_session(
        &self,
        Parameters(_a): Parameters<OpenRemoteArgs>,
    ) -> Result<String, ToolError> {
        Err(needs_cdb_engine(
            "open_kd_session",
            "open_kd_dump opens kernel dumps",
        ))
    }

    #[tool(
        input_schema = schema::input::<BreakArgs>(),
        description = SEND_CTRL_BREAK,
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = true, open_world_hint = true)
    )]
    async fn send_ctrl_break(
        &self,
        Parameters(a): Parameters<BreakArgs>,
    ) -> Result<String, ToolError> {
        let (raw, shown) = match (a.session_id, a.dump_path, a.connection_string) {
            (Some(id), None, None) => (self.any_session(&id)?, id.trim().to_string()),
            (None, Some(path), None) => match self.session_of_dump(&path)? {
                Some(raw) => (raw, path),
                None => return Ok(format!("no open session for {path}\n")),
            },
            (None, None, Some(_)) => {
                return Err(needs_cdb_engine(
                    "send_ctrl_break on a remote connection",
                    "dump sessions never run",
                ))
            }
            _ => return Err(legacy::one_of_path_or_connection("send_ctrl_break")),
        };
        let stopped = self
            .api()
            .break_in(SessionParams { session_id: raw })
            .await?;
        Ok(run_state_text(&shown, &stopped))
    }

    #[tool(
        input_schema = schema::input::<WaitArgs>(),
        description = WAIT_FOR_BREAK,
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = false, open_world_hint = true)
    )]
    async fn wait_for_break(
        &self,
        Parameters(a): Parameters<WaitArgs>,
    ) -> Result<String, ToolError> {
        let raw = self.any_session(&a.session_id)?;
        let limit = time_limit(a.timeout_seconds, WAIT_TIMEOUT_S);
        let params = WaitForEventParams {
            session_id: raw,
            timeout_ms: u64::try_from(limit.as_millis()).ok(),
            since_ms: None,
        };
        let stopped = tokio::time::timeout(limit, self.api().wait_for_event(params))
            .await
            .map_err(|_| timed_out("wait_for_break", limit))??;
        Ok(run_state_text(a.session_id.trim(), &stopped))
    }
}

impl Host {
    /// `open_cdb_dump` / `open_kd_dump`: open_dump, then the triage batch, within the time
    /// limit.
    async fn open_profile_dump(&self, a: OpenDumpArgs, mode: Mode) -> Result<String, ToolError> {
        let (id, triage) = self.open_and_triage(a, Some(mode), true).await?;
        Ok(format!("session_id: {id}\n\n{triage}"))
    }

    /// `list_dumps` (and 0.x's `list_windbg_dumps`): full paths and the tool that opens each.
    async fn mcp_windbg_listing(&self, a: ListDumpsArgs) -> Result<String, ToolError> {
        let params = ListDumpsParams {
            directory: a.directory_path,
            recursive: a.recursive,
            format: OutputFormat::Json,
        };
        let listing = self.api().list_dumps(params).await?.value;
        Ok(listing_text(&listing))
    }

    /// `run_cdb_command` / `run_kd_command`.
    async fn run_profile_command(&self, a: RunArgs, mode: Mode) -> Result<String, ToolError> {
        let raw = resolve(self.api(), &a.session_id, mode, mode.run_tool())?;
        let limit = time_limit(a.timeout_seconds, command_timeout(mode));
        run_console(self.api(), raw, a.command, mode, limit).await
    }

    /// `close_cdb_session` / `close_kd_session`.
    async fn close_profile_session(
        &self,
        id: &str,
        resume: Option<bool>,
        mode: Mode,
    ) -> Result<String, ToolError> {
        let raw = resolve(self.api(), id, mode, mode.close_tool())?;
        let params = CloseSessionParams {
            session_id: raw,
            resume,
        };
        self.api().close_session(params).await?;
        Ok(format!("closed session {}\n", id.trim()))
    }

    /// The ntdbg session behind a `cdb-` or `kd-` id, of either kind.
    fn any_session(&self, id: &str) -> Result<String, ToolError> {
        Ok(lookup(self.api(), id)?.1.id.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn triage_runs_what_was_asked_for() {
        let mut a = OpenDumpArgs {
            dump_path: "x.dmp".into(),
            include_stack_trace: false,
            include_modules: false,
            include_threads: false,
            symbols_path: None,
            timeout_seconds: None,
        };
        assert_eq!(triage_commands(&a), ".lastevent; !analyze -v");
        a.include_stack_trace = true;
        a.include_threads = true;
        assert_eq!(triage_commands(&a), ".lastevent; !analyze -v; kb; ~");
    }

    #[test]
    fn time_limits_are_bounded() {
        assert_eq!(time_limit(None, 60), Duration::from_secs(60));
        assert_eq!(time_limit(Some(0), 60), Duration::from_millis(1));
        assert_eq!(
            time_limit(Some(u64::MAX), 60),
            Duration::from_millis(MAX_TIMEOUT_MS)
        );
    }
}
