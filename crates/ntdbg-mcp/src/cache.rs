//! The bounded in-memory cache of full command outputs, read back with `read_output`.
//!
//! Every executed command's whole text is kept under a `command_id` (`c<N>-<tag>`, where the tag
//! is random per server run). The cache holds at most [`OutputCache::MAX_ENTRIES`] outputs and
//! [`OutputCache::MAX_BYTES`] bytes; the oldest go first. An id that was issued but has been
//! dropped is reported as expired, so an agent knows to run the command again.

use crate::error::ToolError;
use ntdbg_engine::ErrorCode;
use std::collections::VecDeque;
use std::sync::Arc;

/// One cached output.
#[derive(Debug)]
pub struct CachedOutput {
    /// The id it is read back by.
    pub command_id: String,
    /// The session that ran it.
    pub session_id: String,
    /// The command text.
    pub command: String,
    /// The whole output.
    pub text: String,
}

/// Full outputs of earlier commands, oldest dropped first.
#[derive(Debug)]
pub struct OutputCache {
    entries: VecDeque<(u64, Arc<CachedOutput>)>,
    bytes: usize,
    next: u64,
    tag: String,
    max_entries: usize,
    max_bytes: usize,
}

impl OutputCache {
    /// Most outputs kept.
    pub const MAX_ENTRIES: usize = 1024;
    /// Most bytes of output kept.
    pub const MAX_BYTES: usize = 64 << 20;

    /// An empty cache whose ids carry `tag`.
    pub fn new(tag: &str) -> OutputCache {
        OutputCache::with_limits(tag, Self::MAX_ENTRIES, Self::MAX_BYTES)
    }

    /// An empty cache with other limits (tests).
    pub fn with_limits(tag: &str, max_entries: usize, max_bytes: usize) -> OutputCache {
        OutputCache {
            entries: VecDeque::new(),
            bytes: 0,
            next: 1,
            tag: tag.to_string(),
            max_entries: max_entries.max(1),
            max_bytes,
        }
    }

    /// Stores an output and returns its id. The newest output is always kept, even when it
    /// alone is larger than the byte limit.
    pub fn insert(&mut self, session_id: &str, command: &str, text: String) -> Arc<CachedOutput> {
        let n = self.next;
        self.next = self.next.saturating_add(1);
        let entry = Arc::new(CachedOutput {
            command_id: format!("c{n}-{}", self.tag),
            session_id: session_id.to_string(),
            command: command.to_string(),
            text,
        });
        self.bytes = self.bytes.saturating_add(entry.text.len());
        self.entries.push_back((n, entry.clone()));
        while self.entries.len() > 1
            && (self.entries.len() > self.max_entries || self.bytes > self.max_bytes)
        {
            if let Some((_, old)) = self.entries.pop_front() {
                self.bytes = self.bytes.saturating_sub(old.text.len());
            }
        }
        entry
    }

    /// Finds an output by id.
    ///
    /// # Errors
    /// `output_expired` for an id this server issued and has since dropped, `unknown_output`
    /// for anything else.
    pub fn get(&self, command_id: &str) -> Result<Arc<CachedOutput>, ToolError> {
        let parsed = command_id
            .strip_prefix('c')
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(n, tag)| Some((n.parse::<u64>().ok()?, tag)));
        match parsed {
            Some((n, tag)) if tag == self.tag => {
                if let Some((_, entry)) = self.entries.iter().find(|(k, _)| *k == n) {
                    return Ok(entry.clone());
                }
                if n < self.next {
                    return Err(ToolError::new(
                        ErrorCode::OutputExpired,
                        format!(
                            "the output of {command_id} has expired: it was dropped from the bounded cache (the newest {} outputs, {} MiB at most, are kept) or its session was closed",
                            self.max_entries,
                            self.max_bytes >> 20
                        ),
                    )
                    .with_hint("run the command again with run_command (or use output_file to keep a whole output)"));
                }
                Err(unknown(command_id))
            }
            _ => Err(unknown(command_id)),
        }
    }

    /// Drops the outputs of a closed session.
    pub fn remove_session(&mut self, session_id: &str) {
        let before = self.entries.len();
        self.entries.retain(|(_, e)| e.session_id != session_id);
        if self.entries.len() != before {
            self.bytes = self.entries.iter().map(|(_, e)| e.text.len()).sum();
        }
    }

    /// Number of outputs held.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.len()
    }
}

fn unknown(command_id: &str) -> ToolError {
    ToolError::new(
        ErrorCode::UnknownOutput,
        format!("no output with id {command_id:?}"),
    )
    .with_hint("use a command_id from a run_command result of this server run")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn oldest_dropped_first_and_expired_ids_say_so() {
        let mut cache = OutputCache::with_limits("ab12", 2, 1 << 20);
        let a = cache.insert("s1", "k", "one".into());
        let b = cache.insert("s1", "lm", "two".into());
        let c = cache.insert("s1", "r", "three".into());
        assert_eq!(cache.len(), 2);
        assert_eq!(cache.get(&a.command_id).unwrap_err().code, "output_expired");
        assert_eq!(cache.get(&b.command_id).unwrap().text, "two");
        assert_eq!(cache.get(&c.command_id).unwrap().text, "three");
        assert_eq!(cache.get("c99-ab12").unwrap_err().code, "unknown_output");
        assert_eq!(cache.get("c1-ffff").unwrap_err().code, "unknown_output");
        assert_eq!(cache.get("garbage").unwrap_err().code, "unknown_output");
    }

    #[test]
    fn byte_limit_keeps_the_newest() {
        let mut cache = OutputCache::with_limits("t", 100, 10);
        cache.insert("s1", "a", "x".repeat(8));
        let big = cache.insert("s1", "b", "y".repeat(50));
        assert_eq!(cache.len(), 1);
        assert!(cache.get(&big.command_id).is_ok());
    }

    #[test]
    fn closing_a_session_drops_its_outputs() {
        let mut cache = OutputCache::new("t");
        let a = cache.insert("s1", "a", "x".into());
        let b = cache.insert("s2", "b", "y".into());
        cache.remove_session("s1");
        assert!(cache.get(&a.command_id).is_err());
        assert!(cache.get(&b.command_id).is_ok());
    }
}
