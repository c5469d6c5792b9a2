//! The bounded in-memory cache of full command outputs, read back with `read_output`.
//!
//! Every executed command's whole text is kept under a `command_id` (`c-` and 64 random bits,
//! unguessable), for the client that ran it only ([`crate::client`]). The cache holds at most
//! [`OutputCache::MAX_ENTRIES`] outputs and [`OutputCache::MAX_BYTES`] bytes; the oldest go first.
//! An id that was issued but has been dropped is reported as expired (to its client; to any
//! other it is unknown), so an agent knows to run the command again.

use crate::client::{random_id, ClientId};
use crate::error::ToolError;
use ntdbg_engine::ErrorCode;
use std::collections::VecDeque;
use std::sync::Arc;

/// Random bytes in a command id.
const ID_BYTES: usize = 8;

/// One cached output.
#[derive(Debug)]
pub struct CachedOutput {
    /// The id it is read back by.
    pub command_id: String,
    /// The session that ran it.
    pub session_id: String,
    /// The client that ran it.
    pub owner: ClientId,
    /// The command text.
    pub command: String,
    /// The whole output.
    pub text: String,
}

/// Why an output the server issued is gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dropped {
    /// Dropped from the bounded cache to make room.
    ForRoom,
    /// Its session was closed.
    SessionClosed,
}

/// An output id that was issued and dropped.
#[derive(Debug)]
struct Expired {
    command_id: String,
    owner: ClientId,
    why: Dropped,
}

/// Full outputs of earlier commands, oldest dropped first.
#[derive(Debug)]
pub struct OutputCache {
    entries: VecDeque<Arc<CachedOutput>>,
    /// Ids dropped (for room, or with their closed session), newest last, with their client.
    expired: VecDeque<Expired>,
    bytes: usize,
    max_entries: usize,
    max_bytes: usize,
}

impl Default for OutputCache {
    fn default() -> OutputCache {
        OutputCache::new()
    }
}

impl OutputCache {
    /// Most outputs kept.
    pub const MAX_ENTRIES: usize = 1024;
    /// Most bytes of output kept.
    pub const MAX_BYTES: usize = 64 << 20;

    /// An empty cache.
    pub fn new() -> OutputCache {
        OutputCache::with_limits(Self::MAX_ENTRIES, Self::MAX_BYTES)
    }

    /// An empty cache with other limits (tests).
    pub fn with_limits(max_entries: usize, max_bytes: usize) -> OutputCache {
        OutputCache {
            entries: VecDeque::new(),
            expired: VecDeque::new(),
            bytes: 0,
            max_entries: max_entries.max(1),
            max_bytes,
        }
    }

    /// Stores an output `owner` ran and returns its id. The newest output is always kept, even
    /// when it alone is larger than the byte limit.
    pub fn insert(
        &mut self,
        owner: &ClientId,
        session_id: &str,
        command: &str,
        text: String,
    ) -> Arc<CachedOutput> {
        let entry = Arc::new(CachedOutput {
            command_id: random_id("c-", ID_BYTES),
            session_id: session_id.to_string(),
            owner: owner.clone(),
            command: command.to_string(),
            text,
        });
        self.bytes = self.bytes.saturating_add(entry.text.len());
        self.entries.push_back(entry.clone());
        while self.entries.len() > 1
            && (self.entries.len() > self.max_entries || self.bytes > self.max_bytes)
        {
            if let Some(old) = self.entries.pop_front() {
                self.bytes = self.bytes.saturating_sub(old.text.len());
                self.remember_dropped(&old, Dropped::ForRoom);
            }
        }
        entry
    }

    /// Finds an output `client` ran by its id.
    ///
    /// # Errors
    /// `output_expired` for an id this server issued to `client` and has since dropped to make
    /// room, `unknown_output` for anything else (another client's ids included).
    pub fn get(&self, client: &ClientId, command_id: &str) -> Result<Arc<CachedOutput>, ToolError> {
        if let Some(entry) = self
            .entries
            .iter()
            .find(|e| e.command_id == command_id && client.may_use(&e.owner))
        {
            return Ok(entry.clone());
        }
        let dropped = self
            .expired
            .iter()
            .find(|e| e.command_id == command_id && client.may_use(&e.owner));
        match dropped.map(|e| e.why) {
            Some(Dropped::ForRoom) => Err(ToolError::new(
                ErrorCode::OutputExpired,
                format!(
                    "the output of {command_id} has expired: it was dropped from the bounded cache (the newest {} outputs, {} MiB at most, are kept)",
                    self.max_entries,
                    self.max_bytes >> 20
                ),
            )
            .with_hint("run the command again with run_command (or use output_file to keep a whole output)")),
            Some(Dropped::SessionClosed) => Err(ToolError::new(
                ErrorCode::OutputExpired,
                format!("the output of {command_id} has expired with its session, which was closed"),
            )
            .with_hint("open the dump again and run the command there")),
            None => Err(unknown(command_id)),
        }
    }

    /// Drops the outputs of a closed session.
    pub fn remove_session(&mut self, session_id: &str) {
        let (gone, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut self.entries)
            .into_iter()
            .partition(|e| e.session_id == session_id);
        self.entries = kept.into();
        for old in &gone {
            self.remember_dropped(old, Dropped::SessionClosed);
        }
        if !gone.is_empty() {
            self.bytes = self.entries.iter().map(|e| e.text.len()).sum();
        }
    }

    /// Keeps the id of a dropped output (at most as many as outputs are kept), so its client
    /// hears that it expired rather than that it never was.
    fn remember_dropped(&mut self, old: &CachedOutput, why: Dropped) {
        if self.expired.len() == self.max_entries {
            self.expired.pop_front();
        }
        self.expired.push_back(Expired {
            command_id: old.command_id.clone(),
            owner: old.owner.clone(),
            why,
        });
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
    .with_hint("use a command_id from one of your own run_command results")
}

#[cfg(test)]
mod tests {
    use super::*;

    const ME: ClientId = ClientId::Stdio;

    #[test]
    fn oldest_dropped_first_and_expired_ids_say_so() {
        let mut cache = OutputCache::with_limits(2, 1 << 20);
        let a = cache.insert(&ME, "s1", "k", "one".into());
        let b = cache.insert(&ME, "s1", "lm", "two".into());
        let c = cache.insert(&ME, "s1", "r", "three".into());
        assert_eq!(cache.len(), 2);
        assert_eq!(
            cache.get(&ME, &a.command_id).unwrap_err().code,
            "output_expired"
        );
        assert_eq!(cache.get(&ME, &b.command_id).unwrap().text, "two");
        assert_eq!(cache.get(&ME, &c.command_id).unwrap().text, "three");
        assert_eq!(
            cache.get(&ME, "c-0000000000000000").unwrap_err().code,
            "unknown_output"
        );
        assert_eq!(
            cache.get(&ME, "garbage").unwrap_err().code,
            "unknown_output"
        );
    }

    #[test]
    fn another_client_s_outputs_are_unknown_even_once_expired() {
        let other = ClientId::HttpSession(Arc::from("other"));
        let mut cache = OutputCache::with_limits(1, 1 << 20);
        let mine = cache.insert(&ME, "s1", "k", "one".into());
        assert_eq!(
            cache.get(&other, &mine.command_id).unwrap_err().code,
            "unknown_output"
        );
        cache.insert(&ME, "s1", "k", "two".into());
        assert_eq!(
            cache.get(&other, &mine.command_id).unwrap_err().code,
            "unknown_output"
        );
        assert_eq!(
            cache.get(&ME, &mine.command_id).unwrap_err().code,
            "output_expired"
        );
    }

    #[test]
    fn byte_limit_keeps_the_newest() {
        let mut cache = OutputCache::with_limits(100, 10);
        cache.insert(&ME, "s1", "a", "x".repeat(8));
        let big = cache.insert(&ME, "s1", "b", "y".repeat(50));
        assert_eq!(cache.len(), 1);
        assert!(cache.get(&ME, &big.command_id).is_ok());
    }

    #[test]
    fn closing_a_session_drops_its_outputs() {
        let mut cache = OutputCache::new();
        let a = cache.insert(&ME, "s1", "a", "x".into());
        let b = cache.insert(&ME, "s2", "b", "y".into());
        cache.remove_session("s1");
        assert!(cache.get(&ME, &a.command_id).is_err());
        assert!(cache.get(&ME, &b.command_id).is_ok());
    }
}
