//! The mcp-windbg tools' arguments: names, types and optionality as mcp-windbg declares them.

use schemars::JsonSchema;
use serde::Deserialize;

/// `list_dumps` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ListDumpsArgs {
    /// Directory to search (default: the first allowed directory).
    pub directory_path: Option<String>,
    /// Search subdirectories too.
    #[serde(default)]
    pub recursive: bool,
}

/// `open_cdb_dump` / `open_kd_dump` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OpenDumpArgs {
    /// Path to the .dmp file, inside an allowed directory.
    pub dump_path: String,
    /// Include the stack trace (kb).
    #[serde(default)]
    pub include_stack_trace: bool,
    /// Include the loaded modules (lm).
    #[serde(default)]
    pub include_modules: bool,
    /// Include the threads (~).
    #[serde(default)]
    pub include_threads: bool,
    /// Extra symbol search path (';'-separated folders, srv*CACHE*URL).
    pub symbols_path: Option<String>,
    /// Time limit for opening and triage, in seconds (default 180).
    pub timeout_seconds: Option<u64>,
}

/// `open_cdb_remote` / `open_kd_session` arguments.
#[allow(dead_code, reason = "validated now, used once a cdb/kd engine exists")]
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OpenRemoteArgs {
    /// Connection string, e.g. tcp:Port=5005,Server=HOST or net:port=50000,key=….
    pub connection_string: String,
    /// Include the stack trace (kb).
    #[serde(default)]
    pub include_stack_trace: bool,
    /// Include the loaded modules (lm).
    #[serde(default)]
    pub include_modules: bool,
    /// Include the threads (~).
    #[serde(default)]
    pub include_threads: bool,
    /// Extra symbol search path.
    pub symbols_path: Option<String>,
    /// Connect time limit in seconds.
    pub timeout_seconds: Option<u64>,
}

/// `run_cdb_command` / `run_kd_command` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunArgs {
    /// Session id from open_cdb_dump (cdb-…) or open_kd_dump (kd-…).
    pub session_id: String,
    /// The command, e.g. kb or !analyze -v; several separated by ';'.
    pub command: String,
    /// Time limit in seconds (default 60 user mode, 120 kernel).
    pub timeout_seconds: Option<u64>,
}

/// `close_cdb_session` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionArgs {
    /// The session id.
    pub session_id: String,
}

/// `close_kd_session` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CloseKdArgs {
    /// The kd- session id.
    pub session_id: String,
    /// Resume a live target on close (default true); dumps ignore it.
    #[serde(default = "resume_by_default")]
    pub resume: bool,
}

fn resume_by_default() -> bool {
    true
}

/// `wait_for_break` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WaitArgs {
    /// A live session id (cdb- or kd-).
    pub session_id: String,
    /// How long to wait, in seconds (default 300).
    pub timeout_seconds: Option<u64>,
}

/// `send_ctrl_break` arguments: 1.x's session id, or 0.x's dump path or connection string.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BreakArgs {
    /// Session id (cdb-, kd-).
    pub session_id: Option<String>,
    /// 0.x: dump file.
    pub dump_path: Option<String>,
    /// 0.x: remote connection string.
    pub connection_string: Option<String>,
}
