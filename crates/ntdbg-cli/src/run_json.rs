//! `ntdbg run --json`: a batch's results as one JSON array, streamed to the writer.
//!
//! Every object's keys come out in sorted order, as when the array was built as a
//! `serde_json::Value` first (the output has not changed); the entries and the stacks of their
//! typed results are written straight from the results instead of through that tree.

use ntdbg_commands::{CommandResult, ErrorCode, SortedJson};
use serde::Serialize;
use std::io::Write;

/// One command's entry (fields in name order: the order they are written in).
#[derive(Serialize)]
struct Entry<'a> {
    command: &'a str,
    error: Option<EntryError<'a>>,
    index: usize,
    output: &'a str,
    result: Option<SortedJson<'a>>,
    status: &'static str,
}

/// A failed command's error (fields in name order).
#[derive(Serialize)]
struct EntryError<'a> {
    code: ErrorCode,
    hint: Option<&'a str>,
    message: &'a str,
}

impl<'a> From<&'a CommandResult> for Entry<'a> {
    fn from(r: &'a CommandResult) -> Entry<'a> {
        Entry {
            command: &r.command,
            error: r.error.as_ref().map(|e| EntryError {
                code: e.code,
                hint: e.hint.as_deref(),
                message: &e.message,
            }),
            index: r.index,
            output: &r.output,
            result: r.typed.as_ref().map(|t| t.sorted_json()),
            status: r.status.name(),
        }
    }
}

/// Writes `results` as a pretty-printed JSON array and a newline.
pub fn write(out: &mut impl Write, results: &[CommandResult]) -> anyhow::Result<()> {
    let entries: Vec<Entry<'_>> = results.iter().map(Entry::from).collect();
    crate::pretty_json::to_writer_pretty(&mut *out, &entries)?;
    writeln!(out)?;
    Ok(())
}
