//! The windbg-mcp tools' arguments: names, types and ranges as windbg-mcp declares them.

use schemars::JsonSchema;
use serde::Deserialize;

/// `wm_run_cmd` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RunCmdArgs {
    /// WinDbg commands separated by ';' or newlines; stops at the first failure.
    pub cmd: String,
    /// Time limit for the batch in ms (default 30000).
    #[schemars(range(min = 1, max = 120000))]
    pub timeout_ms: Option<u64>,
    /// Also write the whole output to this new file (inside an allowed directory).
    pub output_file: Option<String>,
    /// Head bytes of a cut combined output (default 8192).
    #[schemars(range(max = 1048576))]
    pub preview_bytes: Option<u64>,
}

/// `wm_wait_event` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WaitEventArgs {
    /// Event kinds to wait for: bugcheck, break, breakpoint_hit, module_load, module_unload, session_status, state_change.
    pub kinds: Vec<String>,
    /// How long to wait in ms (default 60000).
    pub timeout_ms: Option<u64>,
    /// Unix time in ms: also replay matching events newer than this.
    pub since_ms: Option<u64>,
}

/// `wm_break_in` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BreakInArgs {
    /// How long to wait for the break, in ms (default 30000).
    pub timeout_ms: Option<u64>,
}

/// `wm_analyze_crash` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AnalyzeArgs {
    /// Also write the raw output of .lastevent, !analyze -v, kb and lm to this new file.
    pub output_file: Option<String>,
}
