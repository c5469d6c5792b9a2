//! A minimal interactive prompt: read a line, run it, print the output (and, on a live
//! target, the run-state trailer).

use ntdbg_commands::Status;
use ntdbg_engine::Session;
use std::io::{BufRead, Write};

/// Reads command lines from stdin until `q`, `quit`, `exit` or end of input.
pub fn run(session: &mut Session) -> anyhow::Result<()> {
    let stdin = std::io::stdin();
    let mut out = std::io::stdout();
    let mut line = String::new();
    loop {
        write!(out, "0:{:03}> ", session.current_thread_index())?;
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
