//! The ntoseye profile: `command`, `open` and `close`, as ntoseye's MCP server names them, on
//! one session at a time, opened by `open` or at startup
//! (`ntdbg mcp --profile ntoseye --dump PATH`, or `--backend gdb --connect HOST:PORT`).
//!
//! `command` runs a WinDbg command line through ntdbg's command runner with the runner's
//! run control (a resuming command waits up to `timeout_ms` for the stop; a command that
//! needs a halted target waits, then reports it was not run; `break` interrupts) and answers
//! the output with ntoseye's `[target ...]` trailer, or with `format: json` the
//! `{ok, output, result, target, debug_output}` object. Refusals are ntoseye's JSON-RPC
//! errors ([`refusal`]).

mod args;
mod line;
mod refusal;
mod reply;
mod target;

use args::{Backend, CommandArgs, Format, OpenArgs};
use line::Step;
use ntdbg_engine::ErrorCode;
use refusal::{no_session, still_opening, Refusal};
use reply::{line_output, single_result, without_trailer, CommandReply, CommandValue};

use crate::Host;
use crate::{push_capped, Slot, StartupTarget};
use ntdbg_mcp::dto::{
    CloseSessionParams, OutputFormat, RunCommandParams, SessionParams, WaitForEventParams,
};
use ntdbg_mcp::schema;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::CallToolResult;
use rmcp::{tool, tool_router, ErrorData};
use serde_json::{json, Value};

/// The workflow sentence of the server instructions.
pub const WORKFLOW: &str = "Windows debugging (ntdbg, ntoseye tool names): one session at a time. Workflow: open (backend dump, connect PATH; or backend gdb, connect HOST:PORT) -> command (\"!analyze -v\", \"k\", \"dt TYPE ADDR\", \"lm\"; format json for typed results) -> close.";

const COMMAND: &str = "Run one WinDbg command line (`;` separates commands; a failing command ends the line) and return its output followed by a `[target ...]` trailer with the run state. `help` lists commands. Run control: `g`/`p`/`t`/`gu` resume and wait up to timeout_ms for the next stop; if none comes the result ends with `[target running]`. A command that needs a halted target (`k`, `r`, `bp`, ...) sent while it runs waits up to timeout_ms, else is reported not run; `break` interrupts. An empty line only waits for a stop. format=json returns {ok, output, result, target, debug_output}: `result` is the typed result of a single command, else null; debug_output is always empty (ntdbg captures no guest DbgPrint).";
const OPEN: &str = "Attach to a target: backend=dump with connect=<.dmp path>, or backend=gdb with connect=host:port (gdbserver, QEMU -s, winedbg --gdb). kd, kdnet and memory are not available in ntdbg. One session at a time: close the open one first. Returns {status:\"connected\", backend, connect, processors}.";
const CLOSE: &str = "Close the active debugger session (a live target is resumed) so a new one can be opened. Returns {status:\"closed\"}.";

// The macro adds public `*_tool_attr` functions without docs.
#[allow(missing_docs)]
#[tool_router(router = ntoseye_tools, vis = "pub(crate)")]
impl Host {
    #[tool(
        name = "command",
        input_schema = schema::input::<CommandArgs>(),
        output_schema = schema::output::<CommandValue>(),
        description = COMMAND,
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = false, open_world_hint = true)
    )]
    async fn ntoseye_command(
        &self,
        Parameters(a): Parameters<CommandArgs>,
    ) -> Result<CommandReply, ErrorData> {
        let timeout_ms = args::timeout_ms(a.timeout_ms)?;
        let format = a.format;
        let id = self.ntoseye_session("call open to attach")?;
        let (output, ok, result) = match line::steps(&a.line) {
            Ok(steps) if steps.is_empty() => {
                (self.wait_for_stop(&id, timeout_ms).await, true, None)
            }
            Ok(steps) => self.run_steps(&id, &steps, timeout_ms, format).await,
            Err(e) => (format!("{}\n", e.render()), false, None),
        };
        let target = target::snapshot(self.api(), &id).await;
        Ok(CommandReply {
            value: CommandValue {
                ok,
                output,
                result,
                target,
                debug_output: Vec::new(),
            },
            format,
        })
    }

    #[tool(
        name = "open",
        input_schema = schema::input::<OpenArgs>(),
        description = OPEN,
        annotations(read_only_hint = false, destructive_hint = false, idempotent_hint = false, open_world_hint = true)
    )]
    async fn ntoseye_open(
        &self,
        Parameters(a): Parameters<OpenArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        if a.key.is_some() && a.backend != Backend::Kdnet {
            return Err(Refusal::params(
                ErrorCode::InvalidArguments,
                format!("{} does not use 'key'", a.backend.name()),
                "give key only with backend kdnet",
            )
            .into());
        }
        let target = a.backend.target(a.connect.as_deref())?;
        // A session the server closed meanwhile frees the slot.
        self.ntoseye_slot();
        if let Err(held) = self.implicit().claim() {
            return Err(match held {
                Slot::Opening => still_opening(),
                _ => Refusal::request(
                    ErrorCode::SessionBusy,
                    "a debugger session is already active or opening",
                    "call close first: this server holds one session at a time",
                ),
            }
            .into());
        }
        let label = a.backend.name();
        let id = match self.open_target(&target).await {
            Ok(id) => id,
            Err(e) => {
                self.implicit().abandon();
                return Err(Refusal::failed(&format!("failed to open ({label})"), e).into());
            }
        };
        self.implicit().opened(id.clone());
        let processors = self.processors(&id).await;
        Ok(CallToolResult::structured(json!({
            "status": "connected",
            "backend": label,
            "connect": a.connect,
            "processors": processors,
        })))
    }

    #[tool(
        name = "close",
        description = CLOSE,
        annotations(read_only_hint = false, destructive_hint = true, idempotent_hint = false, open_world_hint = false)
    )]
    async fn ntoseye_close(&self) -> Result<CallToolResult, ErrorData> {
        if self.ntoseye_slot() == Slot::Opening {
            return Err(still_opening().into());
        }
        let id = self
            .implicit()
            .take()
            .ok_or_else(|| no_session("nothing to close"))?;
        let params = CloseSessionParams {
            session_id: id,
            resume: None,
        };
        self.api()
            .close_session(params)
            .await
            .map_err(|e| Refusal::failed("close failed", e))?;
        Ok(CallToolResult::structured(json!({ "status": "closed" })))
    }
}

impl Host {
    /// Runs the steps of a line in order until one fails: the output, whether all succeeded,
    /// and the typed result of a line of one command.
    async fn run_steps(
        &self,
        id: &str,
        steps: &[Step],
        timeout_ms: u64,
        format: Format,
    ) -> (String, bool, Option<Value>) {
        let mut output = String::new();
        let mut ok = true;
        let mut result = None;
        for step in steps {
            if !ok {
                let note = format!("not run: {} (an earlier command failed)", step.text());
                push_capped(&mut output, &note);
                continue;
            }
            let text = match step {
                Step::Break => self.ntoseye_break(id).await,
                Step::Commands(commands) => {
                    let params = RunCommandParams {
                        session_id: id.to_string(),
                        command: commands.clone(),
                        timeout_ms: Some(timeout_ms),
                        format: match format {
                            Format::Text => OutputFormat::Text,
                            Format::Json => OutputFormat::Json,
                        },
                        output_file: None,
                        // ntoseye ends a line at its first failing command.
                        on_error: Some(ntdbg_commands::OnError::Stop),
                    };
                    match self.api().run_batch(params).await {
                        Ok(ran) => {
                            let (text, all) = line_output(&ran);
                            if steps.len() == 1 {
                                result = single_result(&ran);
                            }
                            if all {
                                Ok(text)
                            } else {
                                Err(text)
                            }
                        }
                        Err(e) => Err(format!("{}\n", e.render())),
                    }
                }
            };
            let text = text.unwrap_or_else(|failed| {
                ok = false;
                failed
            });
            if !push_capped(&mut output, &text) {
                break;
            }
        }
        (output, ok, result)
    }

    /// ntoseye's `break`: interrupts a running live target (ntdbg's `break_in`); on a halted
    /// one, or a dump, it does nothing and says so.
    async fn ntoseye_break(&self, id: &str) -> Result<String, String> {
        let halted = "the target is halted: break did nothing\n".to_string();
        let live = match self.api().session(id) {
            Ok(slot) => slot.live.clone(),
            Err(e) => return Err(format!("{}\n", e.render())),
        };
        match live {
            None => Ok(halted),
            Some(live) if live.state().name() == "halted" => Ok(halted),
            Some(_) => {
                let params = SessionParams {
                    session_id: id.to_string(),
                };
                self.api()
                    .break_in(params)
                    .await
                    .map(|stopped| without_trailer(&stopped.text, &stopped.value.trailer))
                    .map_err(|e| format!("{}\n", e.render()))
            }
        }
    }

    /// The slot, emptied first when its session is gone (the idle sweeper closes sessions
    /// unused for `--idle-timeout`).
    fn ntoseye_slot(&self) -> Slot {
        let slot = self.implicit().slot();
        if let Slot::Open(id) = &slot {
            if !self.api().sessions().iter().any(|s| &s.id == id) {
                self.implicit().forget(id);
                return Slot::Empty;
            }
        }
        slot
    }

    /// The ntoseye session's id, or ntoseye's refusal for `doing` without one.
    fn ntoseye_session(&self, doing: &str) -> Result<String, Refusal> {
        match self.ntoseye_slot() {
            Slot::Open(id) => Ok(id),
            Slot::Opening => Err(still_opening()),
            Slot::Empty => Err(no_session(doing)),
        }
    }

    /// An empty `command` line: waits up to `timeout_ms` for a live target to stop and
    /// answers what the stop printed; a dump never runs, so there is nothing to wait for.
    async fn wait_for_stop(&self, id: &str, timeout_ms: u64) -> String {
        let is_live = self.api().session(id).is_ok_and(|slot| slot.live.is_some());
        if !is_live {
            return String::new();
        }
        let params = WaitForEventParams {
            session_id: id.to_string(),
            timeout_ms: Some(timeout_ms),
            since_ms: None,
        };
        match self.api().wait_for_event(params).await {
            Ok(waited) => {
                let trailer = &waited.value.trailer;
                let text = waited
                    .text
                    .strip_suffix(trailer.as_str())
                    .unwrap_or(&waited.text);
                text.to_string()
            }
            Err(e) => format!("{}\n", e.render()),
        }
    }

    /// The processor count the target records, for `open`'s answer.
    async fn processors(&self, id: &str) -> Option<u32> {
        let slot = self.api().session(id).ok()?;
        let session = slot.session.lock().await;
        let count = session.target().system().cpu_count;
        (count > 0).then_some(count)
    }
}

/// The startup target of `--backend NAME --connect WHERE` (ntoseye's start-up flags).
///
/// # Errors
/// An unknown backend, or one ntdbg does not serve (the message says why and what to use).
pub fn startup_target(backend: &str, connect: Option<&str>) -> Result<StartupTarget, String> {
    let backend = Backend::parse(backend)?;
    backend
        .target(connect)
        .map_err(|r| format!("{} ({})", r.message, r.hint))
}
