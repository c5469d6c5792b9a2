//! Tool parameters and structured results: the wire shapes of the MCP tool contract.
//!
//! Field names are part of the contract (`../shared/design.md`, "MCP tool contract"). Doc
//! comments become the schema descriptions an agent reads, so they say what to pass and what
//! comes back, briefly: every word here counts against the `tools/list` budget.

use crate::error::ToolError;
use ntdbg_analysis::{EventFacts, Inference, ModuleFacts, StackEntry};
pub use ntdbg_commands::OnError;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

// ---------------------------------------------------------------- parameters

/// `list_dumps` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListDumpsParams {
    /// Folder to scan (default: the first allowed directory).
    pub directory: Option<String>,
    /// Also scan subfolders.
    #[serde(default)]
    pub recursive: bool,
    /// "json" adds the typed listing.
    #[serde(default)]
    pub format: OutputFormat,
}

/// `triage_dumps` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TriageDumpsParams {
    /// Folder to triage (default: the first allowed directory).
    pub directory: Option<String>,
    /// Also triage subfolders.
    #[serde(default)]
    pub recursive: bool,
    /// Symbol path, as in open_dump.
    pub symbols_path: Option<String>,
    /// "json" adds the typed buckets, each with a full analysis.
    #[serde(default)]
    pub format: OutputFormat,
}

/// `open_dump` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OpenDumpParams {
    /// Dump file (.dmp), inside an allowed directory.
    pub path: String,
    /// WinDbg symbol path: folders and srv*CACHE*URL servers, ';'-separated. Default: the dump's folder, then _NT_SYMBOL_PATH.
    pub symbols_path: Option<String>,
    /// Include the faulting thread's stack.
    #[serde(default)]
    pub include_stack: bool,
    /// Include the module list.
    #[serde(default)]
    pub include_modules: bool,
    /// Include the thread list.
    #[serde(default)]
    pub include_threads: bool,
    /// Open another session if already open.
    #[serde(default)]
    pub new_session: bool,
}

/// Output format of the tools whose answer is text (`run_command`, `read_output`,
/// `analyze_crash`, `list_dumps`, `triage_dumps`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum OutputFormat {
    /// The text only.
    #[default]
    Text,
    /// The text and the typed value as structured content.
    Json,
}

/// `run_command` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunCommandParams {
    /// Session id from open_dump.
    pub session_id: String,
    /// WinDbg command line; several commands separated by ';' or newlines (at most 64).
    pub command: String,
    /// Time limit for the batch in ms (default 30000, max 600000).
    pub timeout_ms: Option<u64>,
    /// "json" adds each command's typed result.
    #[serde(default)]
    pub format: OutputFormat,
    /// Also write the whole output to this file (inside an allowed directory).
    pub output_file: Option<String>,
    /// After a failed command: "continue" (default on dumps, where "not in the dump" is
    /// routine) or "stop" (default on live targets).
    pub on_error: Option<OnError>,
}

/// `analyze_crash` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnalyzeCrashParams {
    /// Session id from open_dump.
    pub session_id: String,
    /// "json" adds the typed report.
    #[serde(default)]
    pub format: OutputFormat,
}

/// Arguments naming one session.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionParams {
    /// Session id from open_dump.
    pub session_id: String,
}

/// `read_output` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadOutputParams {
    /// command_id from a run_command result.
    pub command_id: String,
    /// First line, from 1.
    #[serde(default)]
    pub offset: usize,
    /// Most lines (default 200, max 2000).
    pub limit: Option<usize>,
    /// Only lines containing this (any case), numbered.
    pub grep: Option<String>,
    /// "json" adds the typed page.
    #[serde(default)]
    pub format: OutputFormat,
}

/// `close_session` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CloseSessionParams {
    /// Session id.
    pub session_id: String,
    /// Live targets: resume on detach (default true; GDB stubs always resume).
    pub resume: Option<bool>,
}

/// `attach` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AttachParams {
    /// gdb:HOST:PORT, or on Windows pid:N or exe:PATH ARGS.
    pub target: String,
    /// WinDbg symbol path.
    pub symbols_path: Option<String>,
    /// Connection timeout in seconds.
    pub timeout_seconds: Option<u64>,
}

/// `wait_for_event` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WaitForEventParams {
    /// Session id.
    pub session_id: String,
    /// How long to wait in ms.
    pub timeout_ms: Option<u64>,
    /// Replay events from this many ms ago.
    pub since_ms: Option<u64>,
}

// ---------------------------------------------------------------- results

/// `list_dumps` result: the same JSON as `ntdbg list --json`.
pub use ntdbg_targets::listing::DumpListing as ListDumpsResult;

/// `open_dump` result: the new session and the first triage.
#[derive(Debug, Serialize, JsonSchema)]
pub struct OpenDumpResult {
    /// Pass this to the other tools.
    pub session_id: String,
    /// Already open: its session.
    pub reused: bool,
    /// The dump file.
    pub target: String,
    /// Dump kind (user, kernel, …).
    pub kind: String,
    /// x86 | x64 | arm64.
    pub arch: String,
    /// Windows version.
    pub os_build: String,
    /// Thread count.
    pub threads: usize,
    /// Module count.
    pub modules: usize,
    /// The last event (exception), decoded.
    pub event: EventFacts,
    /// What happened, where, in one line.
    pub headline: String,
    /// The report's conclusions, cause first, each with its basis (as many as fit the answer's
    /// budget; analyze_crash has all).
    pub inferences: Vec<Inference>,
    /// Top frame of the faulting stack.
    pub faulting_frame: Option<StackEntry>,
    /// Module holding the exception address.
    pub faulting_module: Option<ModuleFacts>,
    /// Crash signature, module!function.
    pub signature: String,
    /// Faulting stack, when include_stack.
    pub stack: Option<Vec<StackEntry>>,
    /// Modules, when include_modules.
    pub module_list: Option<Vec<ModuleBrief>>,
    /// Threads, when include_threads.
    pub thread_list: Option<Vec<ThreadBrief>>,
    /// Suggested next calls: the report's next commands, then analyze_crash.
    pub next_steps: Vec<String>,
}

/// A loaded module.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ModuleBrief {
    /// WinDbg module name.
    pub name: String,
    /// Base address.
    pub base: String,
    /// SizeOfImage.
    pub size: String,
    /// Image path as recorded.
    pub image: String,
}

/// A thread.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ThreadBrief {
    /// ~ number.
    pub index: usize,
    /// OS thread id.
    pub id: String,
    /// Thread name.
    pub name: Option<String>,
    /// Raised the last event.
    pub event: bool,
}

/// What happened to one command of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CommandStatus {
    /// It ran.
    Succeeded,
    /// It ran and failed (with on_error "stop", later commands were not run).
    Failed,
    /// The time limit ran out.
    TimedOut,
    /// Skipped after a failure (on_error "stop"), a cancel or a time-out.
    NotExecuted,
}

/// One command's result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct CommandResultDto {
    /// Position in the batch.
    pub index: usize,
    /// The command.
    pub command: String,
    /// What happened.
    pub status: CommandStatus,
    /// The output, or a head+tail preview when truncated.
    pub output: String,
    /// Id of the full output for read_output (null if not run).
    pub command_id: Option<String>,
    /// Size of the full output in bytes.
    pub bytes_total: usize,
    /// Whether output is a preview.
    pub truncated: bool,
    /// Typed result (format "json"), else null.
    #[schemars(schema_with = "free_object")]
    pub result: Option<serde_json::Value>,
    /// Why it failed.
    pub error: Option<ToolError>,
}

fn free_object(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({ "type": ["object", "null"] })
}

/// `run_command` result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct RunCommandResult {
    /// The session.
    pub session_id: String,
    /// One per command, in order.
    pub results: Vec<CommandResultDto>,
    /// Commands run.
    pub commands_executed: usize,
    /// Commands not run.
    pub commands_skipped: usize,
    /// Target state: [dump] for dumps.
    pub trailer: String,
    /// Outcome of output_file.
    pub output_file: Option<OutputFileReport>,
}

/// Whether `output_file` was written.
#[derive(Debug, Serialize, JsonSchema)]
pub struct OutputFileReport {
    /// The file.
    pub path: String,
    /// Whether the write succeeded.
    pub written: bool,
    /// Bytes written.
    pub bytes: usize,
    /// Why not.
    pub error: Option<String>,
}

/// `read_output` result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ReadOutputResult {
    /// The output read.
    pub command_id: String,
    /// The command that produced it.
    pub command: String,
    /// First line of this page.
    pub offset: usize,
    /// The page.
    pub text: String,
    /// Bytes in all.
    pub bytes_total: usize,
    /// Lines in all.
    pub lines_total: usize,
    /// Line of the next page, null at the end.
    pub next_offset: Option<usize>,
    /// Matching lines, with grep.
    pub matches: Option<usize>,
}

/// `list_sessions` result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct ListSessionsResult {
    /// Open sessions, oldest first.
    pub sessions: Vec<SessionInfo>,
    /// The parsed symbols the server's sessions share (`--symbol-memory`).
    pub shared_symbols: SharedSymbolsInfo,
}

/// The server's shared parsed-symbol cache: what it holds and how often it was used.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SharedSymbolsInfo {
    /// Modules whose parsed symbols it holds.
    pub modules: usize,
    /// Their approximate size in bytes.
    pub bytes: u64,
    /// The limit in bytes; the least recently used are dropped above it.
    pub limit: u64,
    /// Module loads answered from it.
    pub hits: u64,
    /// Module loads that parsed symbols (no matching entry).
    pub loads: u64,
    /// Entries dropped to stay under the limit.
    pub evictions: u64,
}

/// One open session.
#[derive(Debug, Serialize, JsonSchema)]
pub struct SessionInfo {
    /// Session id.
    pub session_id: String,
    /// The dump file.
    pub target: String,
    /// Dump kind.
    pub kind: String,
    /// x86 | x64 | arm64.
    pub arch: String,
    /// dump (live: running | halted).
    pub run_state: String,
    /// A command is running in it now.
    pub busy: bool,
    /// Symbol path given at open (null: default).
    pub symbols_path: Option<String>,
    /// Seconds since open.
    pub age_seconds: u64,
}

/// `close_session` result.
#[derive(Debug, Serialize, JsonSchema)]
pub struct CloseSessionResult {
    /// The closed session.
    pub session_id: String,
    /// Closed before: nothing done.
    pub already_closed: bool,
    /// Sessions still open.
    pub open_sessions: Vec<String>,
    /// Live: what closing did; null for dumps.
    pub detach: Option<String>,
}

/// `attach` result (live targets).
#[derive(Debug, Serialize, JsonSchema)]
pub struct AttachResult {
    /// Session id.
    pub session_id: String,
    /// The connection.
    pub target: String,
    /// live.
    pub kind: String,
    /// x86 | x64 | arm64.
    pub arch: String,
    /// halted | running | exited.
    pub run_state: String,
    /// Number of threads.
    pub threads: usize,
    /// Why the target is stopped.
    pub stop: String,
    /// [target halted @ ~N ADDRESS SYMBOL].
    pub trailer: String,
}

/// `break_in` / `wait_for_event` result (live targets).
#[derive(Debug, Serialize, JsonSchema)]
pub struct RunStateResult {
    /// Session id.
    pub session_id: String,
    /// halted | running | exited | detached.
    pub run_state: String,
    /// True when the wait ended without a stop.
    pub timed_out: bool,
    /// Events replayed (since_ms) and new ones, oldest first.
    pub events: Vec<LiveEventInfo>,
    /// The target-state trailer.
    pub trailer: String,
}

/// One event of a live target.
#[derive(Debug, Serialize, JsonSchema)]
pub struct LiveEventInfo {
    /// attached|resumed|stopped|exited|detached|event.
    pub kind: String,
    /// How long ago it happened, in ms.
    pub ms_ago: u64,
    /// What the debugger printed for it.
    pub text: String,
}
