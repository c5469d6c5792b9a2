//! Running command lines: the one pipeline every front end (CLI, REPL, MCP, the drop-in
//! profiles) uses.
//!
//! A line is split into commands ([`Batch::split`]); each command is parsed once, resolved to
//! its table entry once, admitted once (the front end's [`Policy`] and, on a live target, the
//! run-state gate, both decided by the entry's metadata), then executed, with its `~` thread
//! prefix, into a [`CommandOutput`]. [`Batch::run`] runs the commands in order and asks a
//! callback after each one whether to go on; after a failure it stops or goes on as the
//! batch's [`OnError`] says (one rule for MCP's `on_error` and the CLI's `--keep-going`).

use crate::error::{excerpt, CommandError, ErrorCode};
use crate::output::{CommandOutput, ThreadError, ThreadResult, TypedResult};
use crate::parse::{self, CommandLine, ThreadSelector};
use crate::policy::Policy;
use crate::spec::{CommandSpec, Effect, HostEffect, Invocation};
use crate::{commands, live, suggest, table};
use ntdbg_engine::live::ThreadId;
use ntdbg_engine::Session;
use serde::Serialize;
use std::ops::ControlFlow;

/// Longest command line accepted.
pub const MAX_LINE_BYTES: usize = 64 * 1024;

/// The status of one command of a batch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// It ran.
    Succeeded,
    /// It ran and failed.
    Failed,
    /// It did not finish in time.
    TimedOut,
    /// An earlier command failed (and the batch stops on errors), or was cancelled, so it was
    /// not run.
    NotExecuted,
}

impl Status {
    /// Stable key.
    pub fn name(self) -> &'static str {
        match self {
            Status::Succeeded => "succeeded",
            Status::Failed => "failed",
            Status::TimedOut => "timed_out",
            Status::NotExecuted => "not_executed",
        }
    }
}

/// What a batch does after a command fails. A cancelled or timed-out command always stops the
/// batch: the commands after it would be cancelled too.
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum OnError {
    /// Report the later commands not executed (the CLI's default, and MCP's on live targets,
    /// where a failed `bp` must not be followed by a `g`).
    #[default]
    Stop,
    /// Run the later commands anyway (`--keep-going`; MCP's default on dumps, where "not in
    /// the dump" is routine and says nothing about the next command).
    Continue,
}

impl OnError {
    /// Whether a batch goes on after `result`.
    pub fn goes_on_after(self, result: &CommandResult) -> bool {
        match result.status {
            Status::Succeeded => true,
            Status::TimedOut | Status::NotExecuted => false,
            Status::Failed => {
                self == OnError::Continue
                    && result
                        .error
                        .as_ref()
                        .is_none_or(|e| e.code != ErrorCode::Cancelled)
            }
        }
    }
}

/// The result of one command of a batch.
#[derive(Debug, Clone)]
pub struct CommandResult {
    /// Position in the batch.
    pub index: usize,
    /// The command text.
    pub command: String,
    /// The `~` number of the current thread when the command was given (the prompt's
    /// `0:00N>`).
    pub thread: usize,
    /// What happened.
    pub status: Status,
    /// The output text (or the error message).
    pub output: String,
    /// The typed result, when the command has one and succeeded.
    pub typed: Option<TypedResult>,
    /// The error, when it failed.
    pub error: Option<CommandError>,
}

/// A command line split into its commands (on top-level `;` and newlines; quotes and `{}`
/// blocks kept whole), ready to run.
#[derive(Debug, Clone)]
pub struct Batch {
    commands: Vec<String>,
    on_error: OnError,
}

impl Batch {
    /// Splits `line`. A line over [`MAX_LINE_BYTES`], an unterminated quote or block, or a
    /// stray `}` is an error; blank commands are dropped.
    pub fn split(line: &str) -> Result<Batch, CommandError> {
        if line.len() > MAX_LINE_BYTES {
            return Err(CommandError::new(
                ErrorCode::LineTooLong,
                format!(
                    "Command line of {} bytes is too long (at most {MAX_LINE_BYTES})",
                    line.len()
                ),
            )
            .with_hint("split the work into several commands"));
        }
        let parts =
            parse::split_commands(line).map_err(|e| CommandError::syntax(e.render(line)))?;
        Ok(Batch {
            commands: parts.iter().map(|c| c.value.to_string()).collect(),
            on_error: OnError::default(),
        })
    }

    /// The batch, going on after a failed command or stopping as `on_error` says.
    pub fn on_error(mut self, on_error: OnError) -> Batch {
        self.on_error = on_error;
        self
    }

    /// The commands, in order.
    pub fn commands(&self) -> &[String] {
        &self.commands
    }

    /// Runs the commands in order under `policy`, calling `each` with every result as soon
    /// as its command ends. A failure (unless the batch goes on after errors, [`OnError`]), a
    /// cancelled command, or `each` answering [`ControlFlow::Break`] stops the batch: the
    /// later commands are reported [`Status::NotExecuted`].
    pub fn run(
        &self,
        session: &mut Session,
        policy: Policy,
        mut each: impl FnMut(&CommandResult) -> ControlFlow<()>,
    ) -> Vec<CommandResult> {
        let mut results = Vec::with_capacity(self.commands.len());
        let mut go_on = true;
        for (index, text) in self.commands.iter().enumerate() {
            let thread = session.thread_number(session.current_thread_index());
            let mut result = CommandResult {
                index,
                command: text.clone(),
                thread,
                status: Status::NotExecuted,
                output: String::new(),
                typed: None,
                error: None,
            };
            if go_on {
                match run_with(session, text, &policy) {
                    Ok(out) => {
                        result.status = Status::Succeeded;
                        result.output = out.text;
                        result.typed = out.typed;
                    }
                    Err(err) => {
                        result.status = Status::Failed;
                        result.output = err.to_string();
                        result.error = Some(err);
                    }
                }
                let flow = each(&result);
                go_on = self.on_error.goes_on_after(&result) && flow.is_continue();
            }
            results.push(result);
        }
        results
    }
}

/// Runs a batch: commands separated by `;` or newlines, with no front-end policy. The first
/// failure stops the rest, which are reported as not executed.
pub fn run_batch(session: &mut Session, line: &str) -> Result<Vec<CommandResult>, CommandError> {
    run_batch_with(session, line, OnError::Stop)
}

/// Runs a batch with no front-end policy, going on after a failure or stopping as `on_error`
/// says (`ntdbg run -c … --keep-going`).
pub fn run_batch_with(
    session: &mut Session,
    line: &str,
    on_error: OnError,
) -> Result<Vec<CommandResult>, CommandError> {
    let batch = Batch::split(line)?.on_error(on_error);
    Ok(batch.run(session, Policy::default(), |_| ControlFlow::Continue(())))
}

/// Runs one command (no `;` splitting) with no front-end policy, honouring a thread prefix.
/// On a live target a stop that happened since the last command is shown first; a command
/// that needs a halted target waits for a stop (up to the session's command wait) or is not
/// run.
pub fn run_command(session: &mut Session, text: &str) -> Result<CommandOutput, CommandError> {
    run_with(session, text, &Policy::default())
}

/// What a parsed command resolved to.
#[derive(Debug, Clone, Copy)]
enum Action {
    /// `~Ns`: make the selected thread current.
    SwitchThread,
    /// A command of the table.
    Command(&'static CommandSpec),
}

/// One command through the pipeline: parse, resolve, admit, execute; then the files it read
/// are checked, so that an answer read from a dump or symbol file that changed on disk
/// meanwhile is replaced by the error saying so.
fn run_with(
    session: &mut Session,
    text: &str,
    policy: &Policy,
) -> Result<CommandOutput, CommandError> {
    session.check_dump().map_err(file_changed)?;
    let result = run_unchecked(session, text, policy);
    // Also when it failed: its error may come from bytes that changed.
    session.check_files().map_err(file_changed)?;
    result
}

/// The error for a dump or symbol file that changed on disk, with what to do.
pub(crate) fn file_changed(e: ntdbg_engine::EngineError) -> CommandError {
    let hint = match e.code() {
        ErrorCode::DumpChanged => {
            "open the dump again, in a new session, to read what it holds now"
        }
        _ => "run the command again: the symbols are read again from what the files hold now",
    };
    CommandError::from(e).with_hint(hint)
}

/// [`run_with`] without the file checks.
fn run_unchecked(
    session: &mut Session,
    text: &str,
    policy: &Policy,
) -> Result<CommandOutput, CommandError> {
    let line = parse::parse_command(text).map_err(|e| CommandError::syntax(e.to_string()))?;
    let action = resolve(&line);
    if let Ok(Action::Command(spec)) = action {
        admit(session, spec, &line, policy)?;
    }
    if session.live().is_none() {
        return action.and_then(|a| execute(session, &line, a, policy));
    }
    let banner = commands::run_control::shown_stop(session)?.text;
    match action.and_then(|a| execute(session, &line, a, policy)) {
        Ok(mut out) => {
            out.text.insert_str(0, &banner);
            Ok(out)
        }
        Err(mut e) => {
            e.message.insert_str(0, &banner);
            Err(e)
        }
    }
}

/// Looks the command word up in the table, once.
fn resolve(line: &CommandLine<'_>) -> Result<Action, CommandError> {
    if line.thread.is_some() && line.name.eq_ignore_ascii_case("s") && line.args.is_empty() {
        return Ok(Action::SwitchThread);
    }
    table::lookup(line.name)
        .map(Action::Command)
        .ok_or_else(|| suggest::unknown_command(line.name))
}

/// Whether `spec` may run now: the front end's policy, then (on a live target) the run
/// state, waiting for a stop when the command needs one.
fn admit(
    session: &mut Session,
    spec: &CommandSpec,
    line: &CommandLine<'_>,
    policy: &Policy,
) -> Result<(), CommandError> {
    let gated = spec.host_effect == HostEffect::SymbolPath && policy.symbol_path_gate.is_some();
    if policy.refuse_host_effects
        && spec.host_effect != HostEffect::None
        && !gated
        && !line.args.trim().is_empty()
    {
        return Err(host_effect_refused(line.name));
    }
    live::gate(session, spec)
}

/// The refusal of a command that acts on the host where the front end does not allow it.
pub(crate) fn host_effect_refused(name: &str) -> CommandError {
    CommandError::new(
        ErrorCode::HostEffectRefused,
        format!(
            "'{}' acts on the host (chooses which files or servers are read) and is refused here",
            excerpt(name)
        ),
    )
}

/// Runs a resolved command, on the threads its `~` prefix selects.
fn execute(
    session: &mut Session,
    line: &CommandLine<'_>,
    action: Action,
    policy: &Policy,
) -> Result<CommandOutput, CommandError> {
    let spec = match action {
        Action::SwitchThread => {
            let selector = line.thread.as_ref().unwrap_or(&ThreadSelector::Current);
            let [index] = select_threads(session, selector)?[..] else {
                return Err(CommandError::syntax("~s needs exactly one thread"));
            };
            session.set_current_thread(index)?;
            return crate::render::registers::show_current(session);
        }
        Action::Command(spec) => spec,
    };
    if spec.no_args && !line.args.is_empty() {
        return Err(CommandError::syntax(format!(
            "Syntax error: '{}' takes no arguments, got '{}'",
            line.name, line.args
        )));
    }
    let invocation = Invocation {
        name: line.name,
        args: line.args,
        spec,
        policy,
    };
    let Some(selector) = &line.thread else {
        return (spec.handler)(session, &invocation);
    };
    let threads = select_threads(session, selector)?;
    let resumes = matches!(spec.effect, Effect::Run | Effect::Step);
    if let Some(live) = session.live().cloned().filter(|_| resumes) {
        // `~N g`, `~*g`, `~N p`: run control resumes (or steps) only that thread, or all.
        if !matches!(selector, ThreadSelector::All) {
            let [index] = threads[..] else {
                return Err(CommandError::syntax("run control takes one thread or ~*"));
            };
            session.set_current_thread(index)?;
            let tid = session.target().threads()[index].id;
            live.pin_thread(Some(ThreadId::new(u64::from(tid))));
        }
        let out = (spec.handler)(session, &invocation);
        live.pin_thread(None);
        return out;
    }
    // `~N` / `~*` alone list the selected threads.
    if line.name == "~" && line.args.is_empty() {
        return crate::render::threads::list(session, Some(&threads));
    }
    let headers = matches!(selector, ThreadSelector::All);
    on_each_thread(session, &threads, headers, &invocation)
}

/// The most text `~*CMD` gathers: past it the walk stops after the thread that crossed it and
/// says so in a last line, so a dump with very many threads (100,000 in a crafted 4.8 MB file)
/// cannot take the process to gigabytes of text and typed frames. A real process's `~*k`
/// stays far below it (a few hundred KiB for hundreds of threads).
pub(crate) const ALL_THREADS_OUTPUT_BUDGET: usize = 16 << 20;

/// Runs a command on each of `threads` in turn, as `~*CMD` and `~N CMD` do. With `headers`
/// (`~*`) each thread's block starts with its `~` line, marked as the listing marks it
/// (`.` the current thread, `#` the event thread), and a thread whose command fails shows
/// the error in its own block while the others still run; the current thread is the same
/// afterwards. `~*` stops at [`ALL_THREADS_OUTPUT_BUDGET`] with a note as its last line.
fn on_each_thread(
    session: &mut Session,
    threads: &[usize],
    headers: bool,
    invocation: &Invocation<'_>,
) -> Result<CommandOutput, CommandError> {
    let saved = session.current_thread_index();
    let mut text = String::new();
    let mut per_thread = Vec::with_capacity(threads.len());
    for (done, &index) in threads.iter().enumerate() {
        commands::util::thread_step(session, done, threads.len())?;
        if headers {
            text.push_str(&crate::render::threads::header_line(session, index));
            text.push('\n');
        }
        let switched = session
            .set_current_thread(index)
            .map(|_| ())
            .map_err(CommandError::from);
        let result = switched.and_then(|()| (invocation.spec.handler)(session, invocation));
        // Back to the current thread before the next header, so its marks stay the listing's.
        let _ = session.set_current_thread(saved);
        let thread_id = session.target().threads()[index].id;
        match result {
            Ok(out) => {
                text.push_str(&out.text);
                per_thread.push(ThreadResult {
                    thread: index,
                    thread_id: format!("{thread_id:#x}"),
                    result: out.typed.map(Box::new),
                    error: None,
                });
            }
            // A cancelled command stops the whole walk.
            Err(e) if e.code == ErrorCode::Cancelled => return Err(e),
            Err(e) if headers => {
                text.push_str(&e.message);
                text.push('\n');
                per_thread.push(ThreadResult {
                    thread: index,
                    thread_id: format!("{thread_id:#x}"),
                    result: None,
                    error: Some(ThreadError {
                        code: e.code.name().to_string(),
                        message: e.message,
                    }),
                });
            }
            // `~N CMD` runs on one thread: its failure is the command's.
            Err(e) => return Err(e),
        }
        if headers {
            text.push('\n');
            if text.len() >= ALL_THREADS_OUTPUT_BUDGET && done + 1 < threads.len() {
                let command = match invocation.args {
                    "" => invocation.name.to_string(),
                    args => format!("{} {args}", invocation.name),
                };
                text.push_str(&format!(
                    "~*{command}: stopped after {} of {} threads: output budget of {} MiB \
                     reached; use ~N {command} for one thread\n",
                    done + 1,
                    threads.len(),
                    ALL_THREADS_OUTPUT_BUDGET >> 20,
                ));
                break;
            }
        }
    }
    Ok(CommandOutput {
        text,
        typed: per_thread_result(per_thread, headers),
    })
}

/// The typed result of a command run on several threads: `~N CMD` on one thread keeps the
/// command's own; stack walks on every thread are [`TypedResult::Stacks`] (threads whose walk
/// failed show only in the text, as before); anything else is [`TypedResult::PerThread`],
/// every thread's result or error in order.
fn per_thread_result(mut per_thread: Vec<ThreadResult>, headers: bool) -> Option<TypedResult> {
    if per_thread
        .iter()
        .all(|t| t.result.is_none() && t.error.is_none())
    {
        return None;
    }
    if !headers && per_thread.len() == 1 {
        return per_thread.pop().and_then(|t| t.result.map(|r| *r));
    }
    let only_stacks = per_thread.iter().all(|t| match t.result.as_deref() {
        Some(TypedResult::Stack(_)) => true,
        None => t.error.is_some(),
        Some(_) => false,
    });
    if only_stacks && per_thread.iter().any(|t| t.result.is_some()) {
        let stacks = per_thread
            .into_iter()
            .filter_map(|t| match t.result.map(|r| *r) {
                Some(TypedResult::Stack(s)) => Some(s),
                _ => None,
            })
            .collect();
        return Some(TypedResult::Stacks { stacks });
    }
    Some(TypedResult::PerThread {
        threads: per_thread,
    })
}

/// The thread indexes a `~` selector names.
fn select_threads(
    session: &Session,
    selector: &ThreadSelector,
) -> Result<Vec<usize>, CommandError> {
    let threads = session.target().threads();
    let bad = |what: String| {
        CommandError::new(
            ErrorCode::NoSuchThread,
            format!("Illegal thread error in '{what}'"),
        )
        .with_hint("`~` lists the threads")
    };
    Ok(match selector {
        ThreadSelector::Current => vec![session.current_thread_index()],
        ThreadSelector::Event => vec![session
            .event_thread_index()
            .ok_or_else(|| bad("~#".into()))?],
        ThreadSelector::All => (0..threads.len()).collect(),
        ThreadSelector::Index(n) => {
            let n = *n as usize;
            vec![session
                .thread_index_of_number(n)
                .ok_or_else(|| bad(format!("~{n}")))?]
        }
        ThreadSelector::Id(id) => vec![threads
            .iter()
            .position(|t| t.id == *id)
            .ok_or_else(|| bad(format!("~~[{id:#x}]")))?],
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(sample: &str) -> Session {
        ntdbg_testutil::open_sample(sample)
    }

    #[test]
    fn each_command_is_parsed_and_looked_up_once() {
        let mut s = session("crashy-x64-thread.dmp");
        let line = "kn 2; ~*k; ~0 r rip; lm; .lastevent; ~1s; ~; ~* r rip";
        let batch = Batch::split(line).expect("splits");
        table::LOOKUPS.with(|n| n.set(0));
        let results = batch.run(&mut s, Policy::default(), |_| ControlFlow::Continue(()));
        for r in &results {
            assert_eq!(r.status, Status::Succeeded, "{}: {}", r.command, r.output);
        }
        // `~1s` switches without the table; every other command is one look-up, however
        // many threads it runs on.
        let lookups = table::LOOKUPS.with(|n| n.get());
        assert_eq!(lookups, results.len() - 1);
    }

    fn statuses(results: &[CommandResult]) -> Vec<Status> {
        results.iter().map(|r| r.status).collect()
    }

    #[test]
    fn a_batch_stops_at_a_failure_or_goes_on_as_told() {
        let mut s = session("crashy-x64-null.dmp");
        let line = "r rip; nosuchcommand; kn 1; db 0 L8";
        let stopped = run_batch(&mut s, line).expect("batch");
        use Status::*;
        assert_eq!(
            statuses(&stopped),
            [Succeeded, Failed, NotExecuted, NotExecuted]
        );
        let kept = run_batch_with(&mut s, line, OnError::Continue).expect("batch");
        assert_eq!(statuses(&kept)[..3], [Succeeded, Failed, Succeeded]);
        assert_ne!(kept[3].status, NotExecuted, "{}", kept[3].output);
        assert_eq!(
            kept[2].output,
            run_command(&mut s, "kn 1").expect("kn").text
        );
    }

    #[test]
    fn a_cancelled_command_stops_a_batch_that_goes_on_after_errors() {
        let mut s = session("crashy-x64-thread.dmp");
        let interrupt = ntdbg_engine::Interrupt::new();
        s.set_interrupt(interrupt.clone());
        interrupt.cancel();
        let results = run_batch_with(&mut s, "~*k; r rip; lm", OnError::Continue).expect("batch");
        assert_eq!(
            statuses(&results),
            [Status::Failed, Status::NotExecuted, Status::NotExecuted]
        );
    }

    #[test]
    fn a_cancelled_command_stops_and_the_session_answers_the_next_one() {
        let mut s = session("crashy-x64-thread.dmp");
        let stack = run_command(&mut s, "k").expect("k").text;
        let interrupt = ntdbg_engine::Interrupt::new();
        s.set_interrupt(interrupt.clone());
        interrupt.cancel();
        for line in ["~*k", "!uniqstack", "s -a 0 L?7fffffffffff \"never there\""] {
            let err = run_command(&mut s, line).expect_err(line);
            assert_eq!(err.code, ErrorCode::Cancelled, "{line}: {err}");
        }
        s.set_interrupt(ntdbg_engine::Interrupt::new());
        assert_eq!(run_command(&mut s, "k").expect("k").text, stack);
    }

    #[test]
    fn long_commands_report_growing_progress() {
        let mut s = session("crashy-x64-thread.dmp");
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = seen.clone();
        s.set_interrupt(ntdbg_engine::Interrupt::with_progress(move |p| {
            sink.lock().unwrap().push((p.done, p.total));
        }));
        for line in ["~*k", "!uniqstack", "s -a 0 L?7fffffffffff \"never there\""] {
            seen.lock().unwrap().clear();
            run_command(&mut s, line).expect(line);
            let seen = seen.lock().unwrap();
            assert!(!seen.is_empty(), "{line}: no progress");
            assert!(seen.windows(2).all(|w| w[0].0 < w[1].0), "{line}: {seen:?}");
            assert!(seen
                .iter()
                .all(|(done, total)| total.is_some_and(|t| *done < t)));
        }
    }
}
