//! `run_command` and `read_output`.
//!
//! A batch goes through the command layer's one pipeline ([`Batch`]) on the blocking pool;
//! after a failed command it goes on or stops as `on_error` says ([`on_error_for`]: on dumps it
//! goes on by default, since "not in the dump" is routine there). The runner's per-command
//! callback hands each result to this side and stops the batch when the time limit ran out: the command running when time runs out is reported `timed_out`
//! (and cancelled: a long loop stops at its next check, other work runs to its end while the
//! session stays busy), the rest `not_executed`. A cancelled request cancels the batch the
//! same way ([`crate::progress`]).

use crate::client::ClientId;
use crate::dto::{
    CommandResultDto, CommandStatus, OutputFileReport, OutputFormat, ReadOutputParams,
    ReadOutputResult, RunCommandParams, RunCommandResult,
};
use crate::error::ToolError;
use crate::rendered::Rendered;
use crate::state::busy;
use crate::state::{internal_error, State};
use crate::symbol_policy;
use crate::text::{self, PREVIEW_THRESHOLD};
use ntdbg_commands::{Batch, CommandError, CommandResult, OnError, Policy, SymbolPathGate};
use ntdbg_engine::{ErrorCode, Interrupt};
use ntdbg_symbols::SymbolPath;
use std::fmt::Write as _;
use std::io::Write as _;
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Most commands in one batch.
pub const MAX_COMMANDS: usize = 64;
/// Default time limit of a batch.
pub const DEFAULT_TIMEOUT_MS: u64 = 30_000;
/// Longest time limit a batch may ask for.
pub const MAX_TIMEOUT_MS: u64 = 600_000;
/// Preview bytes one response may carry across all its commands; past it, each further
/// output is cut to [`MIN_PREVIEW`].
const RESPONSE_BUDGET: usize = 64 * 1024;
/// The smallest preview of an output.
const MIN_PREVIEW: usize = 2 * 1024;
/// The most JSON the typed results of one `format: "json"` answer may take together. Past it
/// a command's result is left out with a note in `output`. MCP clients refuse larger messages
/// (the official Python SDK reads at most 1 MiB per server-sent event, so `~*k` on a
/// 100-thread dump failed over HTTP), and a `~*k` over 25,000 threads made 180 MB of JSON,
/// which as a `serde_json::Value` and its rendered copies took the server to 2 GB.
const TYPED_RESPONSE_BUDGET: usize = 768 << 10;
/// Extra time a batch on a live target gets beyond `timeout_ms`: each resume waits up to
/// `timeout_ms` for the stop, then the session reads the stopped target.
const LIVE_GRACE: Duration = Duration::from_secs(3);

/// The whole text one command of a batch printed.
#[derive(Debug, Clone, Default)]
pub struct CommandText {
    /// The `~` number of the prompt it ran at; `None` when it did not run.
    pub thread: Option<usize>,
    /// Its whole output, or its error as rendered; empty when it did not run.
    pub text: String,
}

/// A batch's answer (previews, as `run_command` returns it) and each command's whole text,
/// for front ends that show whole outputs (the drop-in profiles).
#[derive(Debug)]
pub struct BatchOutput {
    /// The `run_command` answer.
    pub rendered: Rendered<RunCommandResult>,
    /// The whole text of each command, by index.
    pub full: Vec<CommandText>,
}

/// Runs a batch of WinDbg commands in a session.
pub async fn run_command(
    state: &Arc<State>,
    p: RunCommandParams,
) -> Result<Rendered<RunCommandResult>, ToolError> {
    run_command_with(state, p, Interrupt::new()).await
}

/// Runs a batch of WinDbg commands in a session; `interrupt` cancels it and receives its
/// progress.
pub async fn run_command_with(
    state: &Arc<State>,
    p: RunCommandParams,
    interrupt: Interrupt,
) -> Result<Rendered<RunCommandResult>, ToolError> {
    let text_only = p.format == OutputFormat::Text;
    Ok(run_batch_with(state, p, interrupt)
        .await?
        .rendered
        .text_only(text_only))
}

/// Runs a batch of WinDbg commands in a session, keeping each command's whole text.
pub async fn run_batch(state: &Arc<State>, p: RunCommandParams) -> Result<BatchOutput, ToolError> {
    run_batch_with(state, p, Interrupt::new()).await
}

/// [`run_batch`] under `interrupt`: the session's commands check it (a cancel stops the one
/// running, reported `failed` with code `cancelled`, and the rest) and report progress to it;
/// the time limit running out cancels it too, so the session is soon free again.
async fn run_batch_with(
    state: &Arc<State>,
    p: RunCommandParams,
    interrupt: Interrupt,
) -> Result<BatchOutput, ToolError> {
    let slot = state.sessions.get(&ClientId::current(), &p.session_id)?;
    let batch = split(&p.command)?;
    let output_path = match p.output_file.as_deref().filter(|f| !f.trim().is_empty()) {
        Some(f) => Some(check_output_file(state, f)?),
        None => None,
    };
    let timeout_ms = p
        .timeout_ms
        .unwrap_or(DEFAULT_TIMEOUT_MS)
        .clamp(1, MAX_TIMEOUT_MS);
    let live = slot.live.clone();
    let on_error = on_error_for(p.on_error, live.is_some());
    let batch = batch.on_error(on_error);
    let mut budget = Duration::from_millis(timeout_ms);
    if let Some(live) = &live {
        live.set_command_wait(budget);
        budget += LIVE_GRACE;
    }
    let deadline = tokio::time::Instant::now() + budget;
    let guard = tokio::time::timeout_at(deadline, slot.session.clone().lock_owned())
        .await
        .map_err(|_| busy(&slot.id))?;

    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<CommandResult>();
    let stop = Arc::new(AtomicBool::new(false));
    let stop_engine = stop.clone();
    let engine_batch = batch.clone();
    let (trailer_tx, trailer_rx) = tokio::sync::oneshot::channel::<String>();
    let allowed = state.allowed.clone();
    let engine_interrupt = interrupt.clone();
    let symbol_gate = symbol_path_gate(state);
    let handle = tokio::task::spawn_blocking(move || {
        let mut session = guard;
        let before = session.set_interrupt(engine_interrupt);
        // Over MCP a command chooses which host files are read (`.sympath+ DIR`) and writes
        // files (`.dump FILE`) only inside the allowed directories.
        let policy = Policy {
            refuse_host_effects: true,
            symbol_path_gate: Some(symbol_gate),
            file_gate: Some(Arc::new(move |path: &Path| {
                allowed.check_writable(path).map_err(|e| {
                    let error = CommandError::new(e.code, e.message);
                    match e.hint {
                        Some(hint) => error.with_hint(hint),
                        None => error,
                    }
                })
            })),
        };
        engine_batch.run(&mut session, policy, |result| {
            let delivered = tx.send(result.clone()).is_ok();
            if delivered && !stop_engine.load(Ordering::Relaxed) {
                ControlFlow::Continue(())
            } else {
                ControlFlow::Break(())
            }
        });
        session.set_interrupt(before);
        let _ = trailer_tx.send(session.trailer());
    });

    let commands = batch.commands();
    let mut outcomes: Vec<CommandResult> = Vec::with_capacity(commands.len());
    let mut timed_out = false;
    loop {
        match tokio::time::timeout_at(deadline, rx.recv()).await {
            Ok(Some(outcome)) => {
                let goes_on = on_error.goes_on_after(&outcome);
                outcomes.push(outcome);
                if !goes_on {
                    break;
                }
            }
            Ok(None) => break,
            Err(_) => {
                stop.store(true, Ordering::Relaxed);
                interrupt.cancel();
                timed_out = true;
                break;
            }
        }
    }
    // The engine thread ended without reporting every command although the batch would have
    // gone on: it panicked in the next one.
    let mut crashed = None;
    if !timed_out
        && outcomes.len() < commands.len()
        && outcomes.last().is_none_or(|o| on_error.goes_on_after(o))
    {
        if let Err(join) = handle.await {
            crashed = Some(internal_error("running a command", &join));
        }
    }

    let format = p.format;
    let mut builder = BatchBuilder::new(state, &slot.id, format);
    for outcome in outcomes {
        builder.executed(outcome);
    }
    let next = builder.results.len();
    if let Some(command) = commands.get(next) {
        if timed_out {
            builder.stopped(
                next,
                command,
                CommandStatus::TimedOut,
                timeout_error(timeout_ms),
            );
        } else if let Some(error) = crashed {
            builder.stopped(next, command, CommandStatus::Failed, error);
        }
    }
    for (index, command) in commands.iter().enumerate().skip(builder.results.len()) {
        builder.not_executed(index, command);
    }
    let output_file = output_path.map(|path| write_output_file(&path, &builder.full_text));
    let trailer = match tokio::time::timeout_at(deadline, trailer_rx).await {
        Ok(Ok(t)) => t,
        _ => match &live {
            Some(l) => l.state().trailer(),
            None => "[dump]".to_string(),
        },
    };
    Ok(builder.finish(output_file, trailer))
}

/// What a batch does after a failed command: what the caller asked, else go on in a dump (a
/// read past the memory a minidump captured is routine and says nothing about the next
/// command) and stop on a live target (a failed `bp` must not be followed by its `g`).
pub(crate) fn on_error_for(asked: Option<OnError>, live: bool) -> OnError {
    asked.unwrap_or(if live {
        OnError::Stop
    } else {
        OnError::Continue
    })
}

/// The check `.sympath`, `.sympath+` and `.symfix` pass over MCP: folders inside the allowed
/// directories, servers the server was configured with.
fn symbol_path_gate(state: &State) -> SymbolPathGate {
    let (allowed, servers) = (state.allowed.clone(), state.symbol_servers.clone());
    Arc::new(move |path: &SymbolPath| {
        symbol_policy::check(path, &allowed, &servers).map_err(|e| {
            let error = CommandError::new(e.code, e.message);
            match e.hint {
                Some(hint) => error.with_hint(hint),
                None => error,
            }
        })
    })
}

/// Splits a batch with the command layer's splitter, enforcing the command limit.
fn split(line: &str) -> Result<Batch, ToolError> {
    let batch = Batch::split(line).map_err(|e| {
        let hinted = e.code == ErrorCode::SyntaxError;
        let error = ToolError::from(e);
        if hinted {
            error.with_hint("close every quote and brace; separate commands with ';'")
        } else {
            error
        }
    })?;
    let count = batch.commands().len();
    if count == 0 {
        return Err(
            ToolError::new(ErrorCode::EmptyCommand, "the command line is empty")
                .with_hint("give a WinDbg command such as kb, r or lm; `help` lists them"),
        );
    }
    if count > MAX_COMMANDS {
        return Err(ToolError::new(
            ErrorCode::TooManyCommands,
            format!("{count} commands in one batch; at most {MAX_COMMANDS} are allowed"),
        )
        .with_hint("split the batch over several run_command calls"));
    }
    Ok(batch)
}

fn timeout_error(timeout_ms: u64) -> ToolError {
    ToolError::new(
        ErrorCode::TimedOut,
        format!("the command did not finish within {timeout_ms} ms"),
    )
    .with_hint(
        "raise timeout_ms or run less at once; the session stays busy until the command ends",
    )
}

/// Checks an `output_file` before anything runs: inside an allowed directory, not existing.
fn check_output_file(state: &State, file: &str) -> Result<PathBuf, ToolError> {
    let path = state.allowed.check_writable(Path::new(file))?;
    if std::fs::symlink_metadata(&path).is_ok() {
        return Err(
            ToolError::new(ErrorCode::FileExists, format!("{file} already exists"))
                .with_hint("name a new file: output_file never overwrites"),
        );
    }
    Ok(path)
}

fn write_output_file(path: &Path, text: &str) -> OutputFileReport {
    // `create_new` refuses a file (or link) that appeared since the check.
    let written = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .and_then(|mut f| f.write_all(text.as_bytes()));
    OutputFileReport {
        path: path.display().to_string(),
        written: written.is_ok(),
        bytes: if written.is_ok() { text.len() } else { 0 },
        error: written.err().map(|e| e.to_string()),
    }
}

/// `typed` as JSON, with its size, when that takes at most `budget` bytes (measured by writing
/// it to a counter that stops at the budget, so an oversized result is never built twice),
/// else `None`.
fn typed_within<T: serde::Serialize>(
    typed: &T,
    budget: usize,
) -> Option<(serde_json::Value, usize)> {
    struct Counter {
        written: usize,
        budget: usize,
    }
    impl std::io::Write for Counter {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.written += buf.len();
            if self.written > self.budget {
                return Err(std::io::Error::other("over the typed-result budget"));
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut counter = Counter { written: 0, budget };
    serde_json::to_writer(&mut counter, typed).ok()?;
    Some((serde_json::to_value(typed).ok()?, counter.written))
}

/// Collects per-command results: caches full outputs, cuts previews, renders the text.
struct BatchBuilder<'a> {
    state: &'a State,
    /// The client running the batch, who alone may read its outputs back.
    client: ClientId,
    session_id: &'a str,
    format: OutputFormat,
    results: Vec<CommandResultDto>,
    full: Vec<CommandText>,
    text: String,
    full_text: String,
    budget: usize,
    /// What is left of [`TYPED_RESPONSE_BUDGET`].
    typed_budget: usize,
}

impl<'a> BatchBuilder<'a> {
    fn new(state: &'a State, session_id: &'a str, format: OutputFormat) -> Self {
        BatchBuilder {
            state,
            client: ClientId::current(),
            session_id,
            format,
            results: Vec::new(),
            full: Vec::new(),
            text: String::new(),
            full_text: String::new(),
            budget: RESPONSE_BUDGET,
            typed_budget: TYPED_RESPONSE_BUDGET,
        }
    }

    fn executed(&mut self, outcome: CommandResult) {
        let CommandResult {
            index,
            command,
            thread,
            ..
        } = &outcome;
        let (index, thread, command) = (*index, *thread, command.clone());
        let prompt = format!("0:{thread:03}> {command}\n");
        let (status, output, typed, error) = match outcome.error {
            None => (
                CommandStatus::Succeeded,
                outcome.output,
                outcome.typed,
                None,
            ),
            Some(e) => {
                // A command that needs a halted target while it still runs was not run.
                let status = if e.code == ErrorCode::TargetRunning {
                    CommandStatus::NotExecuted
                } else {
                    CommandStatus::Failed
                };
                let error = ToolError::from(e);
                (status, error.render(), None, Some(error))
            }
        };
        let entry = self
            .state
            .outputs()
            .insert(&self.client, self.session_id, &command, output);
        self.full.push(CommandText {
            thread: Some(thread),
            text: entry.text.clone(),
        });
        let limit = PREVIEW_THRESHOLD.min(self.budget).max(MIN_PREVIEW);
        let (mut preview, truncated) = text::preview(&entry.text, limit, &entry.command_id);
        let result = match (self.format, typed) {
            (OutputFormat::Json, Some(t)) => {
                let result = typed_within(&t, self.typed_budget);
                match &result {
                    Some((_, size)) => self.typed_budget -= size,
                    None => {
                        let _ = writeln!(
                            preview,
                            "[typed result left out: with this answer's others its JSON passes \
                             the {} KiB an answer carries (MCP clients refuse larger messages); \
                             run the command on fewer threads or items, or alone; read_output \
                             has the whole text]",
                            TYPED_RESPONSE_BUDGET >> 10
                        );
                    }
                }
                result.map(|(value, _)| value)
            }
            _ => None,
        };
        self.budget = self.budget.saturating_sub(preview.len());
        self.full_text.push_str(&prompt);
        push_line(&mut self.full_text, &entry.text);
        // The id lets a text-only client grep or re-read the output later (read_output).
        let _ = writeln!(self.text, "{}  [{}]", prompt.trim_end(), entry.command_id);
        push_line(&mut self.text, &preview);
        self.results.push(CommandResultDto {
            index,
            command,
            status,
            output: preview,
            command_id: Some(entry.command_id.clone()),
            bytes_total: entry.text.len(),
            truncated,
            result,
            error,
        });
    }

    fn stopped(&mut self, index: usize, command: &str, status: CommandStatus, error: ToolError) {
        let _ = writeln!(self.text, "> {command}\n{}", error.render());
        self.full.push(CommandText {
            thread: None,
            text: error.render(),
        });
        self.results.push(CommandResultDto {
            index,
            command: command.to_string(),
            status,
            output: String::new(),
            command_id: None,
            bytes_total: 0,
            truncated: false,
            result: None,
            error: Some(error),
        });
    }

    /// A command after the one that failed or timed out: listed once, with the others, in the
    /// `not executed:` line and in `retry` ([`Self::finish`]).
    fn not_executed(&mut self, index: usize, command: &str) {
        self.full.push(CommandText::default());
        self.results.push(CommandResultDto {
            index,
            command: command.to_string(),
            status: CommandStatus::NotExecuted,
            output: String::new(),
            command_id: None,
            bytes_total: 0,
            truncated: false,
            result: None,
            error: None,
        });
    }

    fn finish(mut self, output_file: Option<OutputFileReport>, trailer: String) -> BatchOutput {
        let executed = self
            .results
            .iter()
            .filter(|r| r.status != CommandStatus::NotExecuted)
            .count();
        // Every command that did not run (after a failure, a timeout, or on a running
        // target), as one line to send again once the cause is fixed; the structured results
        // carry each one with status not_executed.
        let not_run: Vec<&str> = self
            .results
            .iter()
            .filter(|r| r.status == CommandStatus::NotExecuted)
            .map(|r| r.command.as_str())
            .collect();
        if !not_run.is_empty() {
            let _ = writeln!(self.text, "not executed: {}", not_run.join("; "));
        }
        if let Some(f) = &output_file {
            match &f.error {
                None => {
                    let _ = writeln!(
                        self.text,
                        "(whole output written to {}, {} bytes)",
                        f.path, f.bytes
                    );
                }
                Some(e) => {
                    let _ = writeln!(self.text, "(output_file {} NOT written: {e})", f.path);
                }
            }
        }
        self.text.push_str(&trailer);
        // A batch in which a command failed (or ran out of time) is an error result, its
        // per-command results still in the structured content.
        let failed = self
            .results
            .iter()
            .any(|r| matches!(r.status, CommandStatus::Failed | CommandStatus::TimedOut));
        let result = RunCommandResult {
            session_id: self.session_id.to_string(),
            commands_executed: executed,
            commands_skipped: self.results.len() - executed,
            results: self.results,
            trailer,
            output_file,
        };
        BatchOutput {
            rendered: Rendered::new(result, self.text).error_if(failed),
            full: self.full,
        }
    }
}

fn push_line(out: &mut String, text: &str) {
    out.push_str(text);
    if !text.is_empty() && !text.ends_with('\n') {
        out.push('\n');
    }
}

/// Default page of `read_output`, in lines.
pub const DEFAULT_PAGE: usize = 200;
/// Most lines one `read_output` page returns.
pub const MAX_PAGE: usize = 2000;
/// Most bytes one `read_output` page returns (past its first line).
const MAX_PAGE_BYTES: usize = 64 * 1024;

/// Pages or greps a cached output, by line (numbered from 1, as grep numbers them).
pub fn read_output(
    state: &Arc<State>,
    p: ReadOutputParams,
) -> Result<Rendered<ReadOutputResult>, ToolError> {
    let entry = state
        .outputs()
        .get(&ClientId::current(), p.command_id.trim())?;
    let limit = p.limit.unwrap_or(DEFAULT_PAGE).clamp(1, MAX_PAGE);
    let grep = p.grep.filter(|g| !g.is_empty());
    let page = text::page_lines(
        &entry.text,
        p.offset,
        limit,
        MAX_PAGE_BYTES,
        grep.as_deref(),
    );
    let lines_total = text::line_count(&entry.text);
    let matches = grep.as_deref().map(|g| text::count_matches(&entry.text, g));
    let mut rendered = page.text.clone();
    if let Some(next) = page.next {
        if !rendered.ends_with('\n') {
            rendered.push('\n');
        }
        let _ = write!(
            rendered,
            "[from line {} of {lines_total}; next: read_output(command_id=\"{}\", offset={next})]",
            page.first, entry.command_id
        );
    } else if page.text.is_empty() {
        rendered = match matches {
            Some(_) => format!("(no matching lines from line {})", page.first),
            None => format!("(line {} is past the end: {lines_total} lines)", page.first),
        };
    }
    let result = ReadOutputResult {
        command_id: entry.command_id.clone(),
        command: entry.command.clone(),
        offset: page.first,
        text: page.text,
        bytes_total: entry.text.len(),
        lines_total,
        next_offset: page.next,
        matches,
    };
    Ok(Rendered::new(result, rendered).text_only(p.format == OutputFormat::Text))
}
