//! Running command lines: batches, thread prefixes (`~3 k`, `~*k`, `~2s`), and per-command
//! status. The one entry point every front end uses.

use crate::error::{excerpt, CommandError};
use crate::output::{CommandOutput, TypedResult};
use crate::parse::{self, ThreadSelector};
use crate::spec::{Effect, Invocation};
use crate::{commands, live, table};
use ntdbg_engine::live::ThreadId;
use ntdbg_engine::Session;
use serde::Serialize;

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
    /// An earlier command failed, so it was not run.
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

/// The result of one command of a batch.
#[derive(Debug, Clone)]
pub struct CommandResult {
    /// Position in the batch.
    pub index: usize,
    /// The command text.
    pub command: String,
    /// What happened.
    pub status: Status,
    /// The output text (or the error message).
    pub output: String,
    /// The typed result, when the command has one and succeeded.
    pub typed: Option<TypedResult>,
    /// The error, when it failed.
    pub error: Option<CommandError>,
}

/// Runs a batch: commands separated by `;` or newlines. The first failure stops the rest,
/// which are reported as not executed.
pub fn run_batch(session: &mut Session, line: &str) -> Result<Vec<CommandResult>, CommandError> {
    if line.len() > MAX_LINE_BYTES {
        return Err(CommandError::new(
            "line_too_long",
            format!(
                "Command line of {} bytes is too long (at most {MAX_LINE_BYTES})",
                line.len()
            ),
        )
        .with_hint("split the work into several commands"));
    }
    let commands = parse::split_commands(line).map_err(|e| CommandError::syntax(e.to_string()))?;
    let mut results = Vec::with_capacity(commands.len());
    let mut failed = false;
    for (index, cmd) in commands.iter().enumerate() {
        let text = cmd.value.to_string();
        if failed {
            results.push(CommandResult {
                index,
                command: text,
                status: Status::NotExecuted,
                output: String::new(),
                typed: None,
                error: None,
            });
            continue;
        }
        match run_command(session, &text) {
            Ok(out) => results.push(CommandResult {
                index,
                command: text,
                status: Status::Succeeded,
                output: out.text,
                typed: out.typed,
                error: None,
            }),
            Err(err) => {
                failed = true;
                results.push(CommandResult {
                    index,
                    command: text,
                    status: Status::Failed,
                    output: err.to_string(),
                    typed: None,
                    error: Some(err),
                });
            }
        }
    }
    Ok(results)
}

/// What a front end lets commands do, read from each command's [`CommandSpec`] metadata
/// (never from its name, so aliases cannot slip past).
///
/// [`CommandSpec`]: crate::spec::CommandSpec
#[derive(Debug, Clone, Copy, Default)]
pub struct Policy {
    /// Refuse commands that act on the host (choose which files or servers are read, start
    /// processes) when they are given arguments; showing state stays allowed.
    pub refuse_host_effects: bool,
}

/// [`run_command`] under a front end's [`Policy`].
pub fn run_command_with(
    session: &mut Session,
    text: &str,
    policy: Policy,
) -> Result<CommandOutput, CommandError> {
    if policy.refuse_host_effects {
        let line = parse::parse_command(text).map_err(|e| CommandError::syntax(e.to_string()))?;
        let acts = table::lookup(line.name).is_some_and(|spec| spec.host_effect);
        if acts && !line.args.trim().is_empty() {
            return Err(CommandError::new(
                "host_effect_refused",
                format!(
                    "'{}' with arguments acts on the host and is refused here",
                    excerpt(line.name)
                ),
            )
            .with_hint("give the symbol path when opening the dump (open_dump symbols_path)"));
        }
    }
    run_command(session, text)
}

/// Runs one command (no `;` splitting), honouring a thread prefix. On a live target a stop
/// that happened since the last command is shown first; a command that needs a halted
/// target waits for a stop (up to the session's command wait) or is not run.
pub fn run_command(session: &mut Session, text: &str) -> Result<CommandOutput, CommandError> {
    let line = parse::parse_command(text).map_err(|e| CommandError::syntax(e.to_string()))?;
    if session.live().is_none() {
        return run_parsed(session, &line);
    }
    if let Some(spec) = table::lookup(line.name) {
        live::gate(session, spec)?;
    }
    let banner = commands::run_control::shown_stop(session)?.text;
    match run_parsed(session, &line) {
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

/// `~N g`, `~*g`, `~N p`: run control with a thread prefix resumes (or steps) only that
/// thread, or all of them; `None` for every other command.
fn run_on_threads(
    session: &mut Session,
    line: &parse::CommandLine<'_>,
    selector: &ThreadSelector,
    threads: &[usize],
) -> Result<Option<CommandOutput>, CommandError> {
    let runs =
        table::lookup(line.name).is_some_and(|s| matches!(s.effect, Effect::Run | Effect::Step));
    let Some(live) = session.live().cloned().filter(|_| runs) else {
        return Ok(None);
    };
    if !matches!(selector, ThreadSelector::All) {
        let [index] = threads[..] else {
            return Err(CommandError::syntax("run control takes one thread or ~*"));
        };
        session.set_current_thread(index)?;
        let tid = session.target().threads()[index].id;
        live.pin_thread(Some(ThreadId::new(u64::from(tid))));
    }
    let out = dispatch(session, line.name, line.args);
    live.pin_thread(None);
    out.map(Some)
}

fn run_parsed(
    session: &mut Session,
    line: &parse::CommandLine<'_>,
) -> Result<CommandOutput, CommandError> {
    let Some(selector) = &line.thread else {
        return dispatch(session, line.name, line.args);
    };
    let threads = select_threads(session, selector)?;
    if let Some(out) = run_on_threads(session, line, selector, &threads)? {
        return Ok(out);
    }
    // `~Ns` switches; `~N` / `~*` alone list; anything else runs on each selected thread.
    if line.name.eq_ignore_ascii_case("s") && line.args.is_empty() {
        let [index] = threads[..] else {
            return Err(CommandError::syntax("~s needs exactly one thread"));
        };
        session.set_current_thread(index)?;
        return crate::render::registers::show_current(session);
    }
    if line.name == "~" && line.args.is_empty() {
        return crate::render::threads::list(session, Some(&threads));
    }
    let saved = session.current_thread_index();
    let mut text = String::new();
    let mut typed = Vec::new();
    for index in threads.iter().copied() {
        session.set_current_thread(index)?;
        if threads.len() > 1 {
            text.push_str(&crate::render::threads::header_line(session, index));
            text.push('\n');
        }
        let result = dispatch(session, line.name, line.args);
        match result {
            Ok(out) => {
                text.push_str(&out.text);
                if threads.len() > 1 {
                    text.push('\n');
                }
                typed.extend(out.typed);
            }
            Err(e) => {
                let _ = session.set_current_thread(saved);
                return Err(e);
            }
        }
    }
    let _ = session.set_current_thread(saved);
    let typed = match typed.len() {
        0 => None,
        1 => typed.pop(),
        _ => {
            let stacks: Vec<_> = typed
                .into_iter()
                .filter_map(|t| match t {
                    TypedResult::Stack(s) => Some(s),
                    _ => None,
                })
                .collect();
            Some(TypedResult::Stacks { stacks })
        }
    };
    Ok(CommandOutput { text, typed })
}

fn dispatch(session: &mut Session, name: &str, args: &str) -> Result<CommandOutput, CommandError> {
    let spec = table::lookup(name).ok_or_else(|| {
        CommandError::new(
            "unknown_command",
            format!("Unknown command '{}'", excerpt(name)),
        )
        .with_hint("run `help` for the list of supported commands")
    })?;
    (spec.handler)(session, &Invocation { name, args })
}

fn select_threads(
    session: &Session,
    selector: &ThreadSelector,
) -> Result<Vec<usize>, CommandError> {
    let threads = session.target().threads();
    let bad = |what: String| {
        CommandError::new(
            "no_such_thread",
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
        ThreadSelector::Index(i) => {
            let i = *i as usize;
            if i >= threads.len() {
                return Err(bad(format!("~{i}")));
            }
            vec![i]
        }
        ThreadSelector::Id(id) => vec![threads
            .iter()
            .position(|t| t.id == *id)
            .ok_or_else(|| bad(format!("~~[{id:#x}]")))?],
    })
}
