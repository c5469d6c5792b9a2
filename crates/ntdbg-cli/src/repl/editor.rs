//! The line editor on a terminal (rustyline, Emacs keys): editing, history kept in a file
//! between runs, reverse search (Ctrl-R) and Tab completion.

use super::complete::Candidates;
use super::style::Style;
use rustyline::completion::Completer;
use rustyline::highlight::Highlighter;
use rustyline::hint::Hinter;
use rustyline::history::FileHistory;
use rustyline::validate::Validator;
use rustyline::{CompletionType, Config, Editor, Helper};
use std::borrow::Cow;
use std::path::PathBuf;

/// How many lines the history file keeps (the oldest go first).
pub const HISTORY_SIZE: usize = 1000;

/// The environment variable naming the history file instead of the default.
pub const HISTORY_ENV: &str = "NTDBG_HISTORY";

/// Completion and prompt colour for the editor.
pub struct ReplHelper {
    /// What Tab offers, refreshed before each prompt.
    pub candidates: Candidates,
    style: Style,
}

impl Completer for ReplHelper {
    type Candidate = String;

    fn complete(
        &self,
        line: &str,
        pos: usize,
        _ctx: &rustyline::Context<'_>,
    ) -> rustyline::Result<(usize, Vec<String>)> {
        Ok(self.candidates.complete(line, pos))
    }
}

impl Highlighter for ReplHelper {
    fn highlight_prompt<'b, 's: 'b, 'p: 'b>(
        &'s self,
        prompt: &'p str,
        _default: bool,
    ) -> Cow<'b, str> {
        Cow::Owned(self.style.prompt(prompt))
    }
}

impl Hinter for ReplHelper {
    type Hint = String;
}

impl Validator for ReplHelper {}

impl Helper for ReplHelper {}

/// The editor with its history loaded from [`history_path`] (a missing file is a fresh
/// start; an unreadable one is reported and history starts empty).
pub fn open(style: Style) -> anyhow::Result<(Editor<ReplHelper, FileHistory>, Option<PathBuf>)> {
    let config = Config::builder()
        .max_history_size(HISTORY_SIZE)?
        .history_ignore_dups(true)?
        .completion_type(CompletionType::List)
        .auto_add_history(false)
        .build();
    let mut editor = Editor::with_config(config)?;
    editor.set_helper(Some(ReplHelper {
        candidates: Candidates::default(),
        style,
    }));
    let path = history_path();
    if let Some(path) = &path {
        if path.exists() {
            if let Err(e) = editor.load_history(path) {
                eprintln!(
                    "warning: cannot read the history file {}: {e}",
                    path.display()
                );
            }
        }
    }
    Ok((editor, path))
}

/// Adds a line to the history and saves the file at once (so a killed session keeps it).
pub fn remember(editor: &mut Editor<ReplHelper, FileHistory>, path: Option<&PathBuf>, line: &str) {
    if editor.add_history_entry(line).is_err() {
        return;
    }
    let Some(path) = path else { return };
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    if let Err(e) = editor.save_history(path) {
        eprintln!(
            "warning: cannot save the history file {}: {e}",
            path.display()
        );
    }
}

/// The history file: `NTDBG_HISTORY` when set (empty: no history file), else
/// `ntdbg/history` under the user's data directory (`~/.local/share` on Linux,
/// `%APPDATA%` on Windows, `~/Library/Application Support` on macOS).
pub fn history_path() -> Option<PathBuf> {
    match std::env::var_os(HISTORY_ENV) {
        Some(v) if v.is_empty() => None,
        Some(v) => Some(PathBuf::from(v)),
        None => dirs::data_dir().map(|d| d.join("ntdbg").join("history")),
    }
}
