//! A minimal interactive prompt: read a line, run it, print the output (and, on a live
//! target, the run-state trailer).

use ntdbg_commands::Status;
use ntdbg_engine::Session;
use std::io::{BufRead, Write};

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

/// Reads command lines from stdin until `q`, `quit`, `exit` or end of input.
pub fn run(session: &mut Session) -> anyhow::Result<()> {
    let stdin = std::io::stdin();
    let mut out = std::io::stdout();
    let mut line = String::new();
    loop {
        write!(out, "{}", prompt(session, session.current_thread_index()))?;
        out.flush()?;
        line.clear();
        if stdin.lock().read_line(&mut line)? == 0 {
            writeln!(out)?;
            return Ok(());
        }
        let text = line.trim();
        match text {
            "" => continue,
            "q" | "qq" | "quit" | "exit" => return Ok(()),
            _ => {}
        }
        match ntdbg_commands::run_batch(session, text) {
            Ok(results) => {
                for r in results {
                    match r.status {
                        Status::Succeeded => write!(out, "{}", r.output)?,
                        Status::NotExecuted => writeln!(out, "(not executed: {})", r.command)?,
                        _ => {
                            let hint = r
                                .error
                                .as_ref()
                                .map_or(String::new(), |e| crate::hints::line(e.code));
                            write!(out, "error: {}\n{hint}", r.output)?;
                        }
                    }
                }
            }
            Err(e) => writeln!(out, "error: {e}")?,
        }
        if session.live().is_some() {
            writeln!(out, "{}", session.trailer())?;
        }
    }
}
