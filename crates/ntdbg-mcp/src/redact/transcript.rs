//! `ntdbg mcp --transcript FILE`: one JSON line per tool call, with its arguments and its
//! result as the client received it (redacted under `--redact`).
//!
//! The file is opened for appending at start-up (created with mode 0600 on Unix, so other
//! users cannot read what the dumps held) and each line is written whole and flushed, so a
//! transcript survives a crash of the server up to its last call.

use serde_json::{json, Value};
use std::fs::File;
use std::io::Write;
use std::path::Path;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// An open transcript file.
#[derive(Debug)]
pub struct Transcript {
    file: Mutex<File>,
}

/// One call, as a transcript line records it.
#[derive(Debug)]
pub struct Entry<'a> {
    /// The tool's name.
    pub tool: &'a str,
    /// The arguments (redacted like the result).
    pub arguments: Value,
    /// The result as sent (`Ok`), or the protocol error (`Err`).
    pub outcome: Result<Value, Value>,
    /// Replacements made in the result, by category (empty without `--redact`).
    pub redacted: Value,
    /// How long the call took.
    pub elapsed: Duration,
}

impl Transcript {
    /// Opens (or creates, 0600) `path` for appending.
    pub fn open(path: &Path) -> std::io::Result<Transcript> {
        let mut options = std::fs::OpenOptions::new();
        options.create(true).append(true);
        #[cfg(unix)]
        {
            use std::os::unix::fs::OpenOptionsExt;
            options.mode(0o600);
        }
        Ok(Transcript {
            file: Mutex::new(options.open(path)?),
        })
    }

    /// Appends `entry` as one line and flushes it; a failed write is logged, not fatal.
    pub fn record(&self, entry: Entry<'_>) {
        let time = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let (key, outcome) = match entry.outcome {
            Ok(result) => ("result", result),
            Err(error) => ("error", error),
        };
        let mut line = json!({
            "time_ms": time,
            "tool": entry.tool,
            "arguments": entry.arguments,
            "elapsed_ms": entry.elapsed.as_millis() as u64,
            "redacted": entry.redacted,
        });
        line[key] = outcome;
        let mut text = line.to_string();
        text.push('\n');
        let mut file = self.file.lock().unwrap_or_else(PoisonError::into_inner);
        if let Err(e) = file.write_all(text.as_bytes()).and_then(|()| file.flush()) {
            tracing::warn!("cannot write the transcript: {e}");
        }
    }
}
