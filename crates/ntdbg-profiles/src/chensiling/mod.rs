//! The chensiling Windbg-MCP profile: its 20 intent tools (`windbg_context`,
//! `windbg_analyze`, `windbg_backtrace`, …, `windbg_exec`) on the one session
//! `ntdbg mcp --profile chensiling --dump PATH` opens at startup.
//!
//! Every tool but `windbg_exec` answers a [`envelope::Envelope`] as structured content,
//! filled from the typed results of the commands it runs (never from their text); each
//! command is a source whose `command_id` pages its whole output in `windbg_output`.
//! `windbg_exec` answers raw text. Failures are envelopes too (`ok: false`, `errors` with a
//! stage, a hint in `next_actions`), except arguments that do not fit the schema.

mod args;
mod code;
mod control;
mod envelope;
mod inspect;
mod kernel;
mod output;
mod run;

use args::{
    AnalyzeArgs, BacktraceArgs, BlackboxArgs, BreakpointArgs, ContextArgs, ControlArgs,
    DisassembleArgs, EvaluateArgs, ExecArgs, LookupArgs, MappingArgs, ModuleArgs, OutputArgs,
    PoolArgs, ReadMemoryArgs, SessionArgs, SympathArgs, ThreadArgs, WriteMemoryArgs,
};
use envelope::Envelope;

use crate::Host;
use ntdbg_mcp::schema;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{tool, tool_router};

/// The workflow sentence of the server instructions (Windbg-MCP's recommended flow).
pub const WORKFLOW: &str = "Windows debugging (ntdbg, Windbg-MCP tool names) on the target this server opened at startup. Answers are ToolEnvelopes: read data first; sources[].command_id pages raw output via windbg_output. Flow: windbg_context -> windbg_analyze -> windbg_backtrace -> windbg_disassemble -> windbg_evaluate + windbg_read_memory -> windbg_output; windbg_exec only when no tool fits.";

// The macro adds public `*_tool_attr` functions without docs.
#[allow(missing_docs)]
#[tool_router(router = chensiling_tools, vis = "pub(crate)")]
impl Host {
    #[tool(
        input_schema = schema::input::<ContextArgs>(),
        output_schema = envelope::output_schema(),
        description = "Target kind, capabilities, registers, top frame, last event; modules/threads/processes on request.",
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn windbg_context(&self, Parameters(a): Parameters<ContextArgs>) -> Envelope {
        self.cs_context(a).await
    }

    #[tool(
        input_schema = schema::input::<AnalyzeArgs>(),
        output_schema = envelope::output_schema(),
        description = "!analyze -v: event, faulting ip and module, stack, inferences; crash adds exception registers.",
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = false)
    )]
    async fn windbg_analyze(&self, Parameters(a): Parameters<AnalyzeArgs>) -> Envelope {
        self.cs_analyze(a).await
    }

    #[tool(
        input_schema = schema::input::<BacktraceArgs>(),
        output_schema = envelope::output_schema(),
        description = "Stack frames; with frame: select it, return its locals.",
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = false)
    )]
    async fn windbg_backtrace(&self, Parameters(a): Parameters<BacktraceArgs>) -> Envelope {
        self.cs_backtrace(a).await
    }

    #[tool(
        input_schema = schema::input::<DisassembleArgs>(),
        output_schema = envelope::output_schema(),
        description = "Disassemble count instructions at an address expression.",
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn windbg_disassemble(&self, Parameters(a): Parameters<DisassembleArgs>) -> Envelope {
        self.cs_disassemble(a).await
    }

    #[tool(
        input_schema = schema::input::<EvaluateArgs>(),
        output_schema = envelope::output_schema(),
        description = "Evaluate a MASM expression: hex and decimal.",
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn windbg_evaluate(&self, Parameters(a): Parameters<EvaluateArgs>) -> Envelope {
        self.cs_evaluate(a).await
    }

    #[tool(
        input_schema = schema::input::<LookupArgs>(),
        output_schema = envelope::output_schema(),
        description = "Look up an address, symbol pattern, type or function.",
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn windbg_lookup(&self, Parameters(a): Parameters<LookupArgs>) -> Envelope {
        self.cs_lookup(a).await
    }

    #[tool(
        input_schema = schema::input::<ReadMemoryArgs>(),
        output_schema = envelope::output_schema(),
        description = "Read size elements of format at an address.",
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn windbg_read_memory(&self, Parameters(a): Parameters<ReadMemoryArgs>) -> Envelope {
        self.cs_read_memory(a).await
    }

    #[tool(
        input_schema = schema::input::<WriteMemoryArgs>(),
        output_schema = envelope::output_schema(),
        description = "Write bytes (live targets; ntdbg: not_available).",
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = false, open_world_hint = false)
    )]
    async fn windbg_write_memory(&self, Parameters(a): Parameters<WriteMemoryArgs>) -> Envelope {
        self.cs_write_memory(a).await
    }

    #[tool(
        input_schema = schema::input::<BreakpointArgs>(),
        output_schema = envelope::output_schema(),
        description = "Set, list, clear, enable, disable breakpoints (live targets).",
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = false, open_world_hint = false)
    )]
    async fn windbg_breakpoint(&self, Parameters(a): Parameters<BreakpointArgs>) -> Envelope {
        self.cs_breakpoint(a).await
    }

    #[tool(
        input_schema = schema::input::<ControlArgs>(),
        output_schema = envelope::output_schema(),
        description = "Go or step a live target; a go that times out leaves it running.",
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = false, open_world_hint = true)
    )]
    async fn windbg_control(&self, Parameters(a): Parameters<ControlArgs>) -> Envelope {
        self.cs_control(a).await
    }

    #[tool(
        input_schema = schema::input::<SympathArgs>(),
        output_schema = envelope::output_schema(),
        description = "Show, set, reload or check symbols; changes are verified.",
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = false, open_world_hint = true)
    )]
    async fn windbg_sympath(&self, Parameters(a): Parameters<SympathArgs>) -> Envelope {
        self.cs_sympath(a).await
    }

    #[tool(
        input_schema = schema::input::<SessionArgs>(),
        output_schema = envelope::output_schema(),
        description = "Command channel status, or interrupt a running target.",
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = false, open_world_hint = true)
    )]
    async fn windbg_session(&self, Parameters(a): Parameters<SessionArgs>) -> Envelope {
        self.cs_session(a).await
    }

    #[tool(
        input_schema = schema::input::<OutputArgs>(),
        output_schema = envelope::output_schema(),
        description = "Page a command's raw output by command_id.",
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn windbg_output(&self, Parameters(a): Parameters<OutputArgs>) -> Envelope {
        self.cs_output(a).await
    }

    #[tool(
        input_schema = schema::input::<ThreadArgs>(),
        output_schema = envelope::output_schema(),
        description = "A kernel thread (!thread) with its stack.",
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn windbg_thread(&self, Parameters(a): Parameters<ThreadArgs>) -> Envelope {
        self.cs_thread(a).await
    }

    #[tool(
        input_schema = schema::input::<ModuleArgs>(),
        output_schema = envelope::output_schema(),
        description = "One module: range, image, timestamp, symbols.",
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn windbg_module(&self, Parameters(a): Parameters<ModuleArgs>) -> Envelope {
        self.cs_module(a).await
    }

    #[tool(
        input_schema = schema::input::<MappingArgs>(),
        output_schema = envelope::output_schema(),
        description = "!pte of an address (ntdbg: not_available).",
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn windbg_memory_mapping(&self, Parameters(a): Parameters<MappingArgs>) -> Envelope {
        self.cs_memory_mapping(a).await
    }

    #[tool(
        input_schema = schema::input::<PoolArgs>(),
        output_schema = envelope::output_schema(),
        description = "Kernel pool at an address (ntdbg: not_available).",
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn windbg_pool(&self, Parameters(a): Parameters<PoolArgs>) -> Envelope {
        self.cs_pool(a).await
    }

    #[tool(
        input_schema = schema::input::<BlackboxArgs>(),
        output_schema = envelope::output_schema(),
        description = "Kernel blackbox records (ntdbg: not_available).",
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn windbg_blackbox(&self, Parameters(a): Parameters<BlackboxArgs>) -> Envelope {
        self.cs_blackbox(a).await
    }

    #[tool(
        input_schema = schema::input::<ModuleArgs>(),
        output_schema = envelope::output_schema(),
        description = "!chkimg a module (ntdbg: not_available).",
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn windbg_image_verify(&self, Parameters(a): Parameters<ModuleArgs>) -> Envelope {
        self.cs_image_verify(a).await
    }

    #[tool(
        input_schema = schema::input::<ExecArgs>(),
        description = "Raw WinDbg command, text answer; only when no tool fits.",
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = false, open_world_hint = true)
    )]
    async fn windbg_exec(&self, Parameters(a): Parameters<ExecArgs>) -> CallToolResult {
        self.cs_exec(a).await
    }
}
