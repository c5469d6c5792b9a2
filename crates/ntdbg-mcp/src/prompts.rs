//! Prompts: the playbooks a good engineer follows, `triage-dump` and `triage-kernel-dump`.

use crate::server::NtdbgServer;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{PromptMessage, Role};
use rmcp::{prompt, prompt_router};
use schemars::JsonSchema;
use serde::Deserialize;

/// Arguments of the triage prompts.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct TriageArgs {
    /// The dump file to triage.
    pub path: String,
}

const REPORT: &str = "Report: what crashed (exception or bugcheck, code and address), where \
(module!function+offset, source line, module version), why (the inference and the facts behind \
it), the crash signature, and what could not be known (limitations). State only what the \
evidence shows; say which frames were found by stack scanning.";

// The macro adds public `*_prompt_attr` functions without docs.
#[allow(missing_docs)]
#[prompt_router(vis = "pub(crate)")]
impl NtdbgServer {
    /// Triage a user-mode crash dump.
    #[prompt(
        name = "triage-dump",
        description = "Triage a user-mode crash dump: the steps, in order, and what to report."
    )]
    async fn triage_dump(&self, Parameters(args): Parameters<TriageArgs>) -> Vec<PromptMessage> {
        let text = format!(
            "Triage the Windows crash dump {path} with the ntdbg tools.\n\
             1. open_dump(path=\"{path}\"). Keep the session_id; read the first triage (exception, faulting frame, signature).\n\
             2. analyze_crash(session_id): exception decoded, faulting module and version, stack with source lines, inferences and limitations.\n\
             3. run_command(session_id, \".ecxr; kb\"): confirm the faulting stack and its arguments. Then \"r\" for the registers and \"u @$ip L8\" or \"ub @$ip L8\" for the faulting code, \"lmv m MODULE\" for the module's version and symbol file.\n\
             4. If a limitation says symbols are missing for a module that matters, open the dump again with symbols_path naming the folder with its PDB.\n\
             5. If the cause is still unclear: \"~*k\" for every thread, \"dps @rsp L20\" (x86: @esp) for the raw stack, \"db ADDR\" or \"dq ADDR\" for the memory an access violation names.\n\
             6. close_session(session_id) when done.\n{REPORT}",
            path = args.path
        );
        vec![PromptMessage::new_text(Role::User, text)]
    }

    /// Triage a kernel dump (bugcheck).
    #[prompt(
        name = "triage-kernel-dump",
        description = "Triage a kernel crash dump (MEMORY.DMP, Minidump\\*.dmp): the bugcheck steps and what to report."
    )]
    async fn triage_kernel_dump(
        &self,
        Parameters(args): Parameters<TriageArgs>,
    ) -> Vec<PromptMessage> {
        let text = format!(
            "Triage the Windows kernel dump {path} (a bugcheck) with the ntdbg tools.\n\
             1. list_dumps on its folder shows the kind (kernel-small, kernel, kernel-full, kernel-bitmap) and the headline.\n\
             2. open_dump(path=\"{path}\"). Keep the session_id; the first triage names the bugcheck and the faulting frame. If it answers unsupported_dump, report the headline from list_dumps and stop.\n\
             3. analyze_crash(session_id): bugcheck code, name and decoded parameters, faulting driver and its version, stack, inferences.\n\
             4. run_command(session_id, \"kb\"), then \"lmv m DRIVER\" for the faulting driver (vendor, timestamp, version), \"!analyze -v\", \"r\" and \"u @$ip L8\" for the faulting code.\n\
             5. For IRQL or pool bugchecks, name the parameters that matter (IRQL, address, pool tag) from the analysis; for a third-party driver, say so.\n\
             6. close_session(session_id) when done.\n{REPORT}",
            path = args.path
        );
        vec![PromptMessage::new_text(Role::User, text)]
    }
}
