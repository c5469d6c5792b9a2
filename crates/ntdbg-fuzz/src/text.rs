//! Entry points over text: the command-line parser and the MASM expression evaluator.

use ntdbg_commands::parse::{parse_command, split_commands};
use ntdbg_engine::expr::{evaluate, evaluate_prefix, parse_range, split_args};
use ntdbg_engine::Session;
use std::borrow::Cow;

/// A WinDbg command line: split into commands, each parsed (name, thread prefix, arguments).
pub fn command_line(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let _ = parse_command(&text);
    if let Ok(commands) = split_commands(&text) {
        for command in commands {
            let _ = parse_command(command.value);
        }
    }
}

thread_local! {
    /// The session expressions are evaluated in: the repository's x64 null-write sample with
    /// its PDB, so registers, memory, `poi` and symbols all resolve.
    static SESSION: Option<Session> = {
        let dump = ntdbg_testutil::sample("crashy-x64-null.dmp");
        let symbols = ntdbg_testutil::repo_root().join("testdata");
        Session::open_dump(&dump, symbols.to_str()).ok()
    };
}

/// A MASM expression, evaluated whole, as a prefix, as a range and split into arguments,
/// in a real session.
pub fn expression(data: &[u8]) {
    let text: Cow<'_, str> = String::from_utf8_lossy(data);
    SESSION.with(|session| {
        let Some(session) = session else {
            return;
        };
        let _ = evaluate(&text, session);
        let _ = evaluate_prefix(&text, session);
        let _ = parse_range(&text, session);
        let _ = split_args(&text);
    });
}
