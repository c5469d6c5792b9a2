//! The mcp-windbg prompts: `dump-triage`, `remote-triage`, `kernel-triage`.

use crate::Host;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{PromptMessage, Role};
use rmcp::{prompt, prompt_router};
use schemars::JsonSchema;
use serde::Deserialize;

/// Arguments of `dump-triage`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct DumpTriageArgs {
    /// The crash dump to analyse (optional: ask the user, or list_dumps, when missing).
    pub dump_path: Option<String>,
}

/// Arguments of `remote-triage` and `kernel-triage`.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct LiveTriageArgs {
    /// The connection string (optional: ask the user when missing).
    pub connection_string: Option<String>,
}

const REPORT: &str = "Report: what happened (exception or bugcheck, code, address), where (module!function+offset, source line, module version), why (the evidence), the crash signature, and what could not be known. State only what the output shows.";

// The macro adds public `*_prompt_attr` functions without docs.
#[allow(missing_docs)]
#[prompt_router(router = "mcp_windbg_prompts", vis = "pub(crate)")]
impl Host {
    /// Triage one crash dump.
    #[prompt(
        name = "dump-triage",
        description = "Triage a single crash dump with open_cdb_dump / open_kd_dump and run_*_command: the steps and what to report."
    )]
    async fn dump_triage(&self, Parameters(a): Parameters<DumpTriageArgs>) -> Vec<PromptMessage> {
        let target = a
            .dump_path
            .map(|p| format!("the crash dump {p}"))
            .unwrap_or_else(|| {
                "a crash dump (ask which one, or pick one from list_dumps)".to_string()
            });
        let text = format!(
            "Triage {target}.\n\
             1. list_dumps on its folder shows whether it is a user-mode or a kernel dump.\n\
             2. open_cdb_dump(dump_path=…) for a user-mode dump, open_kd_dump for a kernel dump, with include_stack_trace=true. Keep the session_id from the first line; read .lastevent and !analyze -v.\n\
             3. run_cdb_command (run_kd_command for kd- ids) with \".ecxr; kb\", then \"r\", \"u @$ip L8\", \"lmv m MODULE\" for the faulting module.\n\
             4. If the cause is still unclear: \"~*k\" for every thread, \"dps @rsp L20\", \"dq ADDR\" for the memory an access violation names.\n\
             5. close_cdb_session / close_kd_session when done.\n{REPORT}"
        );
        vec![PromptMessage::new_text(Role::User, text)]
    }

    /// Investigate a live user-mode target.
    #[prompt(
        name = "remote-triage",
        description = "Investigate a live user-mode target through a cdb debugging server (needs a Windows host with cdb.exe)."
    )]
    async fn remote_triage(&self, Parameters(a): Parameters<LiveTriageArgs>) -> Vec<PromptMessage> {
        let target = a
            .connection_string
            .unwrap_or_else(|| "(ask the user for the -remote connection string)".into());
        let text = format!(
            "Investigate the live user-mode target at {target}.\n\
             1. open_cdb_remote(connection_string=…). If it answers not_available, this ntdbg host cannot reach cdb debugging servers: say so, and ask for a crash dump of the process instead (then follow dump-triage).\n\
             2. send_ctrl_break(session_id) if the target runs; then run_cdb_command \"~*k\" for every thread, \"!analyze -v\", \"lm\".\n\
             3. To let it run until it fails: run_cdb_command \"g\", then wait_for_break(session_id).\n\
             4. close_cdb_session when done.\n{REPORT}"
        );
        vec![PromptMessage::new_text(Role::User, text)]
    }

    /// Investigate a live kernel target.
    #[prompt(
        name = "kernel-triage",
        description = "Investigate a kernel target over a -k connection (needs a Windows host with kd.exe); kernel dump files go through open_kd_dump."
    )]
    async fn kernel_triage(&self, Parameters(a): Parameters<LiveTriageArgs>) -> Vec<PromptMessage> {
        let target = a
            .connection_string
            .unwrap_or_else(|| "(ask the user for the -k connection string)".into());
        let text = format!(
            "Investigate the kernel target at {target}.\n\
             1. open_kd_session(connection_string=…). If it answers not_available, this ntdbg host cannot drive kd: ask for the kernel dump (MEMORY.DMP or Minidump\\*.dmp) and open it with open_kd_dump instead.\n\
             2. run_kd_command \"!analyze -v\", then \"kb\", \"lmv m DRIVER\" for the faulting driver, \"r\", \"u @$ip L8\".\n\
             3. For a live target that runs: send_ctrl_break, or \"g\" and wait_for_break to catch the bugcheck.\n\
             4. close_kd_session when done (it resumes a live machine by default).\n{REPORT}"
        );
        vec![PromptMessage::new_text(Role::User, text)]
    }
}
