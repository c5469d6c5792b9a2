//! The MCP service: tool and prompt routing, server info, and argument errors as tool errors.
//!
//! [`NtdbgServer`] is cheap to clone: every clone shares one [`State`], so over HTTP each
//! connection's handler sees the same sessions and output cache. The `#[tool]` methods are
//! thin; the work lives in [`crate::tools`].

use crate::api::Api;
use crate::attach_policy::AttachPolicy;
use crate::client::ClientId;
use crate::dto::{
    AnalyzeCrashParams, AttachParams, AttachResult, CloseSessionParams, CloseSessionResult,
    ListDumpsParams, ListDumpsResult, ListSessionsResult, OpenDumpParams, OpenDumpResult,
    ReadOutputParams, ReadOutputResult, RunCommandParams, RunCommandResult, RunStateResult,
    SessionParams, TriageDumpsParams, WaitForEventParams,
};
use crate::error::ToolError;
use crate::paths::AllowedDirs;
use crate::progress::CallInterrupt;
use crate::redact::transcript::{Entry, Transcript};
use crate::redact::Redactor;
use crate::rendered::Rendered;
use crate::schema;
use crate::state::State;
use crate::surface::{ServesApi, ToolSurface};
use crate::tasks::{self, Admit, StatusSink};
use crate::tool_sets::{ToolKinds, ToolSet};
use crate::tools;
use ntdbg_analysis::triage::TriageResult;
use ntdbg_analysis::Report;
use rmcp::handler::server::router::prompt::PromptRouter;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::tool::ToolCallContext;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CancelTaskParams, GetTaskParams, GetTaskResult,
    Implementation, ServerCapabilities, ServerConfig, UpdateTaskParams,
};
use rmcp::service::RequestContext;
use rmcp::{prompt_handler, tool, tool_handler, tool_router, ErrorData, RoleServer, ServerHandler};
use std::sync::Arc;

const WORKFLOW: &str = "Windows crash-dump analysis and live debugging with WinDbg commands. Dumps: list_dumps (optional) -> open_dump -> analyze_crash -> run_command (\"kb\", \"r\", \"lmv m NAME\", \"u ADDR\"). Live targets: attach (gdb:HOST:PORT; on Windows pid:N, exe:PATH) -> run_command (bp, g, p, t, gu, k, r REG=VALUE, eb/ed, .dump) -> wait_for_event or break_in while it runs -> analyze_crash at an exception -> close_session.";
const LIST_DUMPS: &str = "List the crash dumps in a folder (default: the first allowed directory) with header facts: kind, arch, OS build, time, exception. Fast (headers only); unreadable files listed with the reason.";
const TRIAGE_DUMPS: &str = "Analyse every crash dump in a folder, grouped by crash signature: buckets largest first with count, first/last seen, modules and dumps; unreadable dumps listed as failed. format \"json\" adds each bucket's full analysis.";
const OPEN_DUMP: &str = "Open a Windows crash dump (user or kernel); one already open answers with its session (new_session: another). First text line: session_id; then the cause in at most 2000 characters: headline, the report's conclusions with their basis, faulting frame and module, signature, next run_command lines. analyze_crash has the whole report.";
const ANALYZE_CRASH: &str = "Full triage, like !analyze -v: decoded exception or bugcheck, faulting thread, frame, module and locals, signature, inferences with their basis, limitations, next commands. format \"json\" adds the typed report.";
const RUN_COMMAND: &str = "Run WinDbg commands in a session (\"help\" lists all): k/kp, .frame N; dv, ??/dx, r, lm, ~*k, !uniqstack, db/dps, !address, s, u/uf, ln, x. Up to 64, separated by ';' or newlines; on_error: a failure stops the rest on live targets, not on dumps (\"not in the dump\" is routine), unless told. Each output is headed by its [command_id]; over 16 KiB it is a head+tail preview (read_output has all). format \"json\" adds typed results. Ends with [dump], [target running] or [target halted].";
const READ_OUTPUT: &str = "Page (by line, from 1) or grep the full output of an earlier run_command by its command_id. Outputs stay in a bounded cache; an expired id says so (run the command again).";
const LIST_SESSIONS: &str =
    "List open sessions: id, dump, kind, arch, run state, symbol path, age.";
const CLOSE_SESSION: &str = "Close a session, freeing its memory and cached outputs. A live target loses its breakpoints and is detached (resume:false: suspended).";
const ATTACH: &str = "Attach to a live target: \"gdb:HOST:PORT\" (gdb stub); Windows: pid:N, exe:PATH ARGS. Starts halted (session_id on line 1). Then run_command: bp, g (waits timeout_ms), p, t, gu, k, r.";
const BREAK_IN: &str = "Stop a running live target now, even while another call runs on the session; returns at once if already stopped.";
const WAIT_FOR_EVENT: &str = "Wait up to timeout_ms (default 30000) for a running live target to stop; returns what it printed. since_ms replays earlier events so no stop is missed.";

/// The ntdbg MCP service.
#[derive(Debug, Clone)]
pub struct NtdbgServer {
    state: Arc<State>,
    /// The tools served in place of ntdbg's own (`--profile`), if any.
    surface: Option<Arc<ToolSurface<NtdbgServer>>>,
    /// The tool set chosen (`--tools`); `None`: by whether live targets are allowed.
    tool_set: Option<ToolSet>,
    /// `--redact`: what every result passes through before it leaves.
    redactor: Option<Arc<Redactor>>,
    /// `--transcript`: where every call and its result are recorded.
    transcript: Option<Arc<Transcript>>,
    tool_router: ToolRouter<NtdbgServer>,
    prompt_router: PromptRouter<NtdbgServer>,
}

impl NtdbgServer {
    /// Live sessions refuse run control, breakpoints and writes (`ntdbg mcp --read-only`).
    pub fn read_only(self, read_only: bool) -> NtdbgServer {
        self.configure(|state| state.read_only = read_only)
    }

    /// A server limited to `allowed` directories, with no sessions open.
    pub fn new(allowed: AllowedDirs) -> NtdbgServer {
        NtdbgServer {
            state: Arc::new(State::new(allowed)),
            surface: None,
            tool_set: None,
            redactor: None,
            transcript: None,
            tool_router: Self::tool_router(),
            prompt_router: Self::prompt_router(),
        }
    }

    /// Hides personal data in every result, error, progress message and the instructions
    /// (`ntdbg mcp --redact`; see [`crate::redact`]).
    pub fn with_redaction(mut self, redactor: Option<Redactor>) -> NtdbgServer {
        self.redactor = redactor.map(Arc::new);
        self
    }

    /// Records every call and its result, as sent, in `transcript` (`ntdbg mcp --transcript`).
    pub fn with_transcript(mut self, transcript: Option<Transcript>) -> NtdbgServer {
        self.transcript = transcript.map(Arc::new);
        self
    }

    /// Serves `surface`'s tools and prompts instead of ntdbg's own (a drop-in profile; see
    /// [`ToolSurface`]); `None`: ntdbg's own.
    pub fn with_surface(mut self, surface: Option<ToolSurface<NtdbgServer>>) -> NtdbgServer {
        self.surface = surface.map(Arc::new);
        self.route();
        self
    }

    /// Lists and answers only the tools of `set` (`ntdbg mcp --tools`; see [`ToolSet`]);
    /// `None`: every tool where live targets are allowed, else the dump tools.
    pub fn with_tools(mut self, set: Option<ToolSet>) -> NtdbgServer {
        self.tool_set = set;
        self.route();
        self
    }

    /// The live targets clients may attach (`ntdbg mcp --allow-attach`); without a chosen tool
    /// set, the live tools are listed only when some may be.
    pub fn with_attach_policy(self, policy: AttachPolicy) -> NtdbgServer {
        let mut server = self.configure(|state| state.attach = policy);
        server.route();
        server
    }

    /// Whether clients may open any live target.
    pub fn live_targets_allowed(&self) -> bool {
        self.state.attach.allows_any()
    }

    /// The tool set served: the one chosen, else by whether live targets are allowed.
    pub fn tool_set(&self) -> ToolSet {
        self.tool_set
            .unwrap_or_else(|| ToolSet::default_for(self.live_targets_allowed()))
    }

    /// Builds the routers: the surface's tools and prompts (else ntdbg's own), the crash
    /// store's tool when the server has a database, less what the tool set leaves out.
    fn route(&mut self) {
        let kinds;
        (self.tool_router, self.prompt_router, kinds) = match &self.surface {
            Some(surface) => (
                surface.tools.clone(),
                surface.prompts.clone(),
                surface.kinds,
            ),
            None => (Self::tool_router(), Self::prompt_router(), ToolKinds::NTDBG),
        };
        if self.state.crash_store.is_some() {
            self.tool_router +=
                ToolSurface::hosted(Api::clone, Api::crash_store_tools(), PromptRouter::new())
                    .tools;
        }
        for name in self.tool_set().left_out(kinds) {
            self.tool_router.remove_route(name);
            self.prompt_router.remove_route(name);
        }
    }

    /// Serves `query_crashes` on the crash database at `store` (`ntdbg mcp --db`); without
    /// one the tool is not listed.
    pub fn with_crash_store(self, store: ntdbg_store::DbLocation) -> NtdbgServer {
        let mut server = self.configure(|state| state.crash_store = Some(store));
        server.route();
        server
    }

    /// The state every connection shares.
    pub(crate) fn state(&self) -> &Arc<State> {
        &self.state
    }

    /// Does what the surface does when serving starts (opens the target a single-session
    /// profile was given on the command line, say).
    ///
    /// # Errors
    /// The surface's start failed (the message says why, for the command line).
    pub async fn start(&self) -> std::io::Result<()> {
        match &self.surface {
            Some(surface) => surface.start(&self.api()).await,
            None => Ok(()),
        }
    }

    /// Keeps every session this server opens off symbol servers (as `NTDBG_OFFLINE=1` does).
    pub fn offline(self, offline: bool) -> NtdbgServer {
        self.configure(|state| state.offline = offline)
    }

    /// Lets clients name these HTTP symbol servers too, besides Microsoft's and those of
    /// `_NT_SYMBOL_PATH` (`ntdbg mcp --symbol-server`).
    pub fn symbol_servers(self, urls: Vec<String>) -> NtdbgServer {
        self.configure(|state| state.symbol_servers.add(urls))
    }

    /// Bounds the parsed symbols the server's sessions share to about `bytes`
    /// (`ntdbg mcp --symbol-memory`; default [`ntdbg_symbols::DEFAULT_SYMBOL_MEMORY`]).
    pub fn symbol_memory(self, bytes: u64) -> NtdbgServer {
        self.configure(|state| {
            state.shared_symbols = std::sync::Arc::new(ntdbg_symbols::SharedSymbols::new(bytes))
        })
    }

    /// Closes sessions no tool has used for `timeout` (`None`: keep them until closed). The
    /// default is [`DEFAULT_IDLE_TIMEOUT`](crate::DEFAULT_IDLE_TIMEOUT); [`crate::run`] starts
    /// the sweeper.
    pub fn idle_timeout(self, timeout: Option<std::time::Duration>) -> NtdbgServer {
        self.configure(|state| state.idle_timeout = timeout)
    }

    /// Changes the state before the server is shared (a no-op once it has been cloned).
    fn configure(mut self, change: impl FnOnce(&mut State)) -> NtdbgServer {
        if let Some(state) = Arc::get_mut(&mut self.state) {
            change(state);
        }
        self
    }

    /// Starts closing idle sessions on the current tokio runtime (see [`Self::idle_timeout`]).
    pub fn spawn_idle_sweeper(&self) {
        crate::idle::spawn_sweeper(&self.state);
    }

    /// The tool definitions, as `tools/list` returns them.
    pub fn tools(&self) -> Vec<rmcp::model::Tool> {
        self.tool_router.list_all()
    }
}

impl ServesApi for NtdbgServer {
    fn api(&self) -> Api {
        Api::new(self.state.clone())
    }
}

#[tool_router]
impl NtdbgServer {
    #[tool(
        input_schema = schema::input::<ListDumpsParams>(),
        description = LIST_DUMPS,
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn list_dumps(
        &self,
        Parameters(p): Parameters<ListDumpsParams>,
    ) -> Result<Rendered<ListDumpsResult>, ToolError> {
        tools::dumps::list_dumps(&self.state, p).await
    }

    #[tool(
        input_schema = schema::input::<TriageDumpsParams>(),
        description = TRIAGE_DUMPS,
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = true)
    )]
    async fn triage_dumps(
        &self,
        Parameters(p): Parameters<TriageDumpsParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<Rendered<TriageResult>, ToolError> {
        let call = CallInterrupt::of(&context);
        tools::dumps::triage_dumps(&self.state, p, call.interrupt().clone()).await
    }

    #[tool(
        input_schema = schema::input::<OpenDumpParams>(),
        description = OPEN_DUMP,
        output_schema = schema::output::<OpenDumpResult>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = true, open_world_hint = true)
    )]
    async fn open_dump(
        &self,
        Parameters(p): Parameters<OpenDumpParams>,
    ) -> Result<Rendered<OpenDumpResult>, ToolError> {
        tools::dumps::open_dump(&self.state, p).await
    }

    #[tool(
        input_schema = schema::input::<AnalyzeCrashParams>(),
        description = ANALYZE_CRASH,
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = true)
    )]
    async fn analyze_crash(
        &self,
        Parameters(p): Parameters<AnalyzeCrashParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<Rendered<Report>, ToolError> {
        let call = CallInterrupt::of(&context);
        tools::sessions::analyze_crash_with(&self.state, p, call.interrupt().clone()).await
    }

    #[tool(
        input_schema = schema::input::<RunCommandParams>(),
        description = RUN_COMMAND,
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = false, open_world_hint = true)
    )]
    async fn run_command(
        &self,
        Parameters(p): Parameters<RunCommandParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<Rendered<RunCommandResult>, ToolError> {
        let call = CallInterrupt::of(&context);
        tools::commands::run_command_with(&self.state, p, call.interrupt().clone()).await
    }

    #[tool(
        input_schema = schema::input::<ReadOutputParams>(),
        description = READ_OUTPUT,
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn read_output(
        &self,
        Parameters(p): Parameters<ReadOutputParams>,
    ) -> Result<Rendered<ReadOutputResult>, ToolError> {
        tools::commands::read_output(&self.state, p)
    }

    #[tool(
        description = LIST_SESSIONS,
        output_schema = schema::output::<ListSessionsResult>(),
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = true, open_world_hint = false)
    )]
    async fn list_sessions(&self) -> Result<Rendered<ListSessionsResult>, ToolError> {
        Ok(tools::sessions::list_sessions(&self.state))
    }

    #[tool(
        input_schema = schema::input::<CloseSessionParams>(),
        description = CLOSE_SESSION,
        output_schema = schema::output::<CloseSessionResult>(),
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = true, open_world_hint = false)
    )]
    async fn close_session(
        &self,
        Parameters(p): Parameters<CloseSessionParams>,
    ) -> Result<Rendered<CloseSessionResult>, ToolError> {
        tools::sessions::close_session(&self.state, p).await
    }

    #[tool(
        input_schema = schema::input::<AttachParams>(),
        description = ATTACH,
        output_schema = schema::output::<AttachResult>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = true)
    )]
    async fn attach(
        &self,
        Parameters(p): Parameters<AttachParams>,
    ) -> Result<Rendered<AttachResult>, ToolError> {
        tools::live::attach(&self.state, p).await
    }

    #[tool(
        input_schema = schema::input::<SessionParams>(),
        description = BREAK_IN,
        output_schema = schema::output::<RunStateResult>(),
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = true, open_world_hint = true)
    )]
    async fn break_in(
        &self,
        Parameters(p): Parameters<SessionParams>,
    ) -> Result<Rendered<RunStateResult>, ToolError> {
        tools::live::break_in(&self.state, p).await
    }

    #[tool(
        input_schema = schema::input::<WaitForEventParams>(),
        description = WAIT_FOR_EVENT,
        output_schema = schema::output::<RunStateResult>(),
        annotations(read_only_hint = true, destructive_hint = false, idempotent_hint = false, open_world_hint = true)
    )]
    async fn wait_for_event(
        &self,
        Parameters(p): Parameters<WaitForEventParams>,
    ) -> Result<Rendered<RunStateResult>, ToolError> {
        tools::live::wait_for_event(&self.state, p).await
    }
}

#[tool_handler(router = self.tool_router)]
#[prompt_handler(router = self.prompt_router)]
impl ServerHandler for NtdbgServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_prompts()
            .enable_tasks()
            .build();
        let mut instructions = format!(
            "{} Files are limited to: {}.",
            self.surface.as_ref().map_or(WORKFLOW, |s| s.workflow),
            self.state.allowed.describe().join(", ")
        );
        if let Some(redactor) = &self.redactor {
            instructions = redactor.redact_text(&instructions, &mut Default::default());
        }
        ServerConfig::new(capabilities)
            .with_server_info(
                Implementation::new("ntdbg", env!("CARGO_PKG_VERSION"))
                    .with_title("ntdbg: Windows crash-dump debugger"),
            )
            .with_instructions(instructions)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let client = ClientId::of(&context);
        if tasks::eligible(&request.name, &context) && self.tool_router.has_route(&request.name) {
            match self.state.tasks.admit(&client) {
                Admit::Task => {
                    let (server, owner, name) =
                        (self.clone(), client.clone(), request.name.clone());
                    let request_ct = context.ct.clone();
                    let answer = move |stop, sink| {
                        let mut context = context;
                        context.ct = stop;
                        context.extensions.insert::<StatusSink>(sink);
                        async move { owner.scope(server.answer(request, context)).await }
                    };
                    return self
                        .state
                        .tasks
                        .call(&client, &name, request_ct, answer)
                        .await;
                }
                Admit::Refused(error) => return Ok(error.into()),
                Admit::Direct => {}
            }
        }
        client.scope(self.answer(request, context)).await
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        let task = self
            .state
            .tasks
            .get(&ClientId::of(&context), &request.task_id)?;
        Ok(GetTaskResult::new(task))
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.state
            .tasks
            .update(&ClientId::of(&context), &request.task_id)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.state
            .tasks
            .cancel(&ClientId::of(&context), &request.task_id)
    }
}

impl NtdbgServer {
    /// Runs one tool call and answers it: directly, or as the body of a task
    /// ([`crate::tasks::run`]).
    async fn answer(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let started = std::time::Instant::now();
        // The tool and its arguments, for the transcript.
        let recorded = self.transcript.is_some().then(|| {
            let arguments = request.arguments.clone().unwrap_or_default();
            (
                request.name.to_string(),
                serde_json::Value::Object(arguments),
            )
        });
        let context = ToolCallContext::new(self, request, context);
        let outcome = Redactor::scope(self.redactor.clone(), self.tool_router.call(context))
            .await
            .map(structure_argument_errors);
        crate::memory::trim_after_call(started);
        self.leave(recorded, outcome, started)
    }
}

impl NtdbgServer {
    /// The one way out of a tool call: redaction (`--redact`), then the transcript
    /// (`--transcript`), then the client.
    fn leave(
        &self,
        recorded: Option<(String, serde_json::Value)>,
        mut outcome: Result<CallToolResponse, ErrorData>,
        started: std::time::Instant,
    ) -> Result<CallToolResponse, ErrorData> {
        let mut counts = crate::redact::rules::Counts::default();
        if let Some(redactor) = &self.redactor {
            redactor.learn(&self.state.sessions.list(&ClientId::Server));
            match &mut outcome {
                Ok(response) => counts = redactor.redact_response(response),
                Err(error) => {
                    error.message = redactor.redact_text(&error.message, &mut counts).into();
                    if let Some(data) = &mut error.data {
                        redactor.redact_value(data, &mut counts);
                    }
                }
            }
        }
        if let (Some(transcript), Some((tool, mut arguments))) = (&self.transcript, recorded) {
            if let Some(redactor) = &self.redactor {
                redactor.redact_value(&mut arguments, &mut Default::default());
            }
            let unserializable = |e: serde_json::Error| serde_json::Value::String(e.to_string());
            transcript.record(Entry {
                tool: &tool,
                arguments,
                outcome: match &outcome {
                    Ok(CallToolResponse::Complete(result)) => {
                        Ok(serde_json::to_value(result).unwrap_or_else(unserializable))
                    }
                    Ok(CallToolResponse::Task(task)) => {
                        Ok(serde_json::to_value(task).unwrap_or_else(unserializable))
                    }
                    Ok(CallToolResponse::InputRequired(input)) => {
                        Ok(serde_json::to_value(input).unwrap_or_else(unserializable))
                    }
                    Ok(_) => Ok(serde_json::Value::Null),
                    Err(error) => Err(serde_json::to_value(error).unwrap_or_else(unserializable)),
                },
                redacted: counts.to_json(),
                elapsed: started.elapsed(),
            });
        }
        outcome
    }
}

/// rmcp answers arguments that do not fit a tool's schema with an unstructured error result;
/// give it the same `{code, message, hint, recoverable}` shape as every other tool error.
fn structure_argument_errors(response: CallToolResponse) -> CallToolResponse {
    match response {
        CallToolResponse::Complete(result)
            if result.is_error == Some(true) && result.structured_content.is_none() =>
        {
            let message = result
                .content
                .iter()
                .filter_map(|c| c.as_text().map(|t| t.text.clone()))
                .collect::<Vec<_>>()
                .join("\n");
            ToolError::invalid_arguments(message).into_result().into()
        }
        other => other,
    }
}
