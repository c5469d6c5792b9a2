//! The interactive prompt: read a line, run it, print the output (and, on a live target,
//! the run-state trailer). On a terminal it has a line editor with history, reverse search
//! and completion, a banner, colour and Ctrl-C (cancels the command, or breaks into a running
//! live target); with piped input it reads plain lines, so scripts see exactly the prompt
//! and the outputs.

mod banner;
mod complete;
mod editor;
mod interrupt;
mod style;
mod transcript;

use ntdbg_commands::Status;
use ntdbg_engine::live::RunState;
use ntdbg_engine::Session;
use rustyline::error::ReadlineError;
use std::io::{BufRead, IsTerminal};
use style::Style;
use transcript::Transcript;

/// The prompt a command runs at, as the debuggers show it: `0:000> ` (thread 0) in a
/// user-mode session, `N: kd> ` in a kernel session (N the processor that bugchecked, 0 when
/// the dump does not say).
pub fn prompt(session: &Session, thread: usize) -> String {
    let target = session.target();
    if target.kind().is_kernel() {
        let processor = target.bugcheck().and_then(|b| b.processor).unwrap_or(0);
        format!("{processor}: kd> ")
    } else {
        format!("0:{thread:03}> ")
    }
}

/// Reads command lines until `q`, `quit`, `exit` or end of input: through the line editor
/// when stdin and stdout are a terminal, else plain lines from stdin.
pub fn run(session: &mut Session) -> anyhow::Result<()> {
    if std::io::stdin().is_terminal() && std::io::stdout().is_terminal() {
        interactive(session)
    } else {
        plain(session)
    }
}

/// What to do after a line.
#[derive(Debug, PartialEq, Eq)]
enum Flow {
    Continue,
    Quit,
}

/// Piped input: the prompt, the line read (echoed, as a terminal would show it), its output.
fn plain(session: &mut Session) -> anyhow::Result<()> {
    let stdin = std::io::stdin();
    let mut shown = Transcript::new(Style::new(false));
    let mut line = String::new();
    loop {
        let prompt = prompt(
            session,
            session.thread_number(session.current_thread_index()),
        );
        shown.prompt(&prompt)?;
        line.clear();
        if stdin.lock().read_line(&mut line)? == 0 {
            shown.show("\n")?;
            return Ok(());
        }
        shown.echo(&prompt, line.trim())?;
        if execute(session, &mut shown, line.trim())? == Flow::Quit {
            return Ok(());
        }
    }
}

/// A terminal: banner, line editor, history, completion, colour, Ctrl-C.
fn interactive(session: &mut Session) -> anyhow::Result<()> {
    let style = Style::detect();
    let mut shown = Transcript::new(style);
    shown.show(&banner::banner(session))?;
    let running = interrupt::Running::default();
    interrupt::install(session.live().cloned(), running.clone());
    let (mut editor, history) = editor::open(style)?;
    loop {
        let prompt = prompt(
            session,
            session.thread_number(session.current_thread_index()),
        );
        if let Some(helper) = editor.helper_mut() {
            helper.candidates = complete::Candidates::of(session);
        }
        let line = match editor.readline(&prompt) {
            Ok(line) => line,
            Err(ReadlineError::Interrupted) => {
                // Ctrl-C at the prompt: the line is dropped, like a shell; a running live
                // target is broken into.
                if let Some(live) = session
                    .live()
                    .filter(|l| matches!(l.state(), RunState::Running))
                {
                    interrupt::break_in(live);
                }
                continue;
            }
            Err(ReadlineError::Eof) => return Ok(()),
            Err(ReadlineError::Signal(_)) => continue,
            Err(e) => return Err(e.into()),
        };
        let text = line.trim();
        shown.typed(&prompt, text)?;
        if !text.is_empty() && !is_quit(text) {
            editor::remember(&mut editor, history.as_ref(), text);
        }
        running.arm(session);
        if execute(session, &mut shown, text)? == Flow::Quit {
            return Ok(());
        }
    }
}

/// `q` on a live target: breakpoints out and detached, and a word that the target runs on.
fn leave_live_target(live: &ntdbg_engine::live::LiveControl) -> String {
    match live.close(interrupt::BREAK_IN_WAIT) {
        Ok(done) if matches!(live.state(), ntdbg_engine::live::RunState::Detached) => {
            format!("q: {done}: the target runs on without the debugger\n")
        }
        Ok(done) => format!("q: {done}\n"),
        Err(e) => format!("q: detaching failed ({e}); the stub is left to end the session\n"),
    }
}

fn is_quit(text: &str) -> bool {
    matches!(text, "q" | "qq" | "quit" | "exit")
}

/// What `help` adds at the prompt: the REPL's own commands, which the command table (shared
/// with `ntdbg run` and the MCP tools) does not hold.
const REPL_HELP: &str = "
At this prompt:
  .logopen FILE                      copy the session (commands and output) to FILE
  .logappend FILE                    the same, appending to FILE
  .logclose                          stop copying
  q, quit, exit (or Ctrl-D)          leave ntdbg
";

/// Runs one line: the REPL's own commands (quit, the log file) or a batch of debugger
/// commands, showing each result.
fn execute(session: &mut Session, shown: &mut Transcript, text: &str) -> anyhow::Result<Flow> {
    if text.is_empty() {
        return Ok(Flow::Continue);
    }
    if is_quit(text) {
        if let Some(live) = session.live() {
            shown.show(&leave_live_target(live))?;
        }
        return Ok(Flow::Quit);
    }
    match shown.log_command(text) {
        Some(Ok(said)) => shown.show(&said)?,
        Some(Err(e)) => shown.show_error(&format!("error: {e}\n"))?,
        None => {
            run_batch(session, shown, text)?;
            if matches!(text, "help" | ".help") {
                shown.show(REPL_HELP)?;
            }
        }
    }
    if session.live().is_some() {
        shown.show(&format!("{}\n", session.trailer()))?;
    }
    Ok(Flow::Continue)
}

fn run_batch(session: &mut Session, shown: &mut Transcript, text: &str) -> std::io::Result<()> {
    let results = match ntdbg_commands::run_batch(session, text) {
        Ok(results) => results,
        Err(e) => return shown.show_error(&format!("error: {e}\n")),
    };
    for r in &results {
        match r.status {
            Status::Succeeded => shown.show(&r.output)?,
            // Listed once, below: a cancelled 900-command line gets one line, not 900.
            Status::NotExecuted => {}
            _ => {
                let hint = r
                    .error
                    .as_ref()
                    .map_or(String::new(), |e| crate::hints::line(e.code));
                shown.show_error(&format!("error: {}\n{hint}", r.output))?;
            }
        }
    }
    if let Some(line) = crate::skipped::line(&results) {
        shown.show(&format!("({line})\n"))?;
    }
    Ok(())
}
