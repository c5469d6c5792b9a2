//! Open debugging sessions: many at once, each behind its own lock.
//!
//! The engine is synchronous, so tools run it on tokio's blocking pool while holding the
//! session's own async mutex: a slow command in one session never blocks another session, and
//! two calls on the same session take turns. Ids are `s-` and 96 random bits, unguessable; each
//! session belongs to the client that opened it ([`crate::client`]), and an id of another
//! client's session is answered exactly as one never issued.

use crate::client::{random_id, ClientId};
use crate::error::ToolError;
use ntdbg_engine::live::LiveControl;
use ntdbg_engine::ErrorCode;
use ntdbg_engine::Session;
use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

/// How many closed session ids the registry remembers, so closing one again is answered
/// "already closed" rather than "unknown".
const REMEMBERED_CLOSED: usize = 1024;

/// Random bytes in a session id.
const ID_BYTES: usize = 12;

/// Which file a dump session was opened from, to tell whether a later `open_dump` names the
/// same one: its canonical path, size and modification time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DumpIdentity {
    /// The canonical path.
    pub path: PathBuf,
    /// Size in bytes.
    pub len: u64,
    /// Last modification, where the file system records it.
    pub modified: Option<SystemTime>,
}

impl DumpIdentity {
    /// The identity of the file at `path` (already canonical).
    ///
    /// # Errors
    /// The file's metadata cannot be read.
    pub fn of(path: &Path) -> std::io::Result<DumpIdentity> {
        let meta = std::fs::metadata(path)?;
        Ok(DumpIdentity {
            path: path.to_path_buf(),
            len: meta.len(),
            modified: meta.modified().ok(),
        })
    }
}

/// How long detaching a live target may take when a session closes.
pub const DETACH_TIMEOUT: Duration = Duration::from_secs(5);

/// One open session and what `list_sessions` says about it.
#[derive(Debug)]
pub struct SessionSlot {
    /// The session id.
    pub id: String,
    /// The client that opened it.
    pub owner: ClientId,
    /// The dump's canonical path.
    pub path: PathBuf,
    /// `user` (and later the kernel kinds).
    pub kind: String,
    /// `x86`, `x64`, `arm64`.
    pub arch: String,
    /// The symbol path the client gave, if any (the default path is not echoed: it may come
    /// from the environment).
    pub symbols_path: Option<String>,
    /// When it was opened.
    pub opened: Instant,
    /// The dump file it was opened from (`None`: a live target, or a dump opened at start).
    pub identity: Option<DumpIdentity>,
    /// When a tool last asked for it (the idle sweeper closes it after `--idle-timeout`).
    last_used: Mutex<Instant>,
    /// The engine session; locked for the duration of each engine call.
    pub session: Arc<tokio::sync::Mutex<Session>>,
    /// Run control of a live target, usable without the session lock (`break_in`,
    /// `wait_for_event`); `None` for dumps.
    pub live: Option<Arc<LiveControl>>,
}

impl SessionSlot {
    /// `dump`, or the live target's run state (`halted`, `running`, `exited`, `detached`).
    pub fn run_state(&self) -> &'static str {
        self.live.as_ref().map_or("dump", |l| l.state().name())
    }

    /// Whether an engine call holds the session now.
    pub fn busy(&self) -> bool {
        self.session.try_lock().is_err()
    }

    /// Marks the session as used now.
    pub fn touch(&self) {
        *self
            .last_used
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Instant::now();
    }

    /// How long since a tool last asked for the session.
    pub fn idle_for(&self) -> std::time::Duration {
        self.last_used
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .elapsed()
    }
}

/// All open sessions, oldest first.
#[derive(Debug, Default)]
pub struct SessionRegistry {
    slots: Mutex<BTreeMap<u64, Arc<SessionSlot>>>,
    /// Recently closed ids, with the client each belonged to.
    closed: Mutex<VecDeque<(String, ClientId)>>,
    /// Orders the sessions by age (never shown).
    opened: Mutex<u64>,
}

impl SessionRegistry {
    /// An empty registry.
    pub fn new() -> SessionRegistry {
        SessionRegistry::default()
    }

    /// Registers a session `owner` opened and returns its slot.
    pub fn insert(
        &self,
        session: Session,
        path: PathBuf,
        symbols_path: Option<String>,
        owner: ClientId,
    ) -> Arc<SessionSlot> {
        self.insert_dump(session, path, symbols_path, None, owner)
    }

    /// Registers a session opened from a dump file with its identity, so that opening the
    /// same file again can find it ([`Self::find_dump`]).
    pub fn insert_dump(
        &self,
        session: Session,
        path: PathBuf,
        symbols_path: Option<String>,
        identity: Option<DumpIdentity>,
        owner: ClientId,
    ) -> Arc<SessionSlot> {
        let n = {
            let mut opened = self.opened.lock().unwrap_or_else(PoisonError::into_inner);
            *opened = opened.saturating_add(1);
            *opened
        };
        let live = session.live().cloned();
        let slot = Arc::new(SessionSlot {
            live,
            id: random_id("s-", ID_BYTES),
            owner,
            path,
            kind: session.target().kind().name().to_string(),
            arch: session.arch().name().to_string(),
            symbols_path,
            opened: Instant::now(),
            identity,
            last_used: Mutex::new(Instant::now()),
            session: Arc::new(tokio::sync::Mutex::new(session)),
        });
        self.lock().insert(n, slot.clone());
        slot
    }

    /// The oldest session `client` sees of the same dump file (same canonical path, size and
    /// modification time), marked as used now.
    pub fn find_dump(
        &self,
        client: &ClientId,
        identity: &DumpIdentity,
    ) -> Option<Arc<SessionSlot>> {
        let slot = self
            .lock()
            .values()
            .find(|s| s.identity.as_ref() == Some(identity) && client.lists(&s.owner))
            .cloned()?;
        slot.touch();
        Some(slot)
    }

    /// Whether `id` names a session of `client` this registry closed (among the last
    /// [`REMEMBERED_CLOSED`]).
    pub fn was_closed(&self, client: &ClientId, id: &str) -> bool {
        self.closed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .any(|(closed, owner)| closed == id.trim() && client.may_use(owner))
    }

    /// The session with `id`, if `client` may use it, marked as used now.
    ///
    /// # Errors
    /// `unknown_session`, listing the sessions `client` sees.
    pub fn get(&self, client: &ClientId, id: &str) -> Result<Arc<SessionSlot>, ToolError> {
        let slots = self.lock();
        let slot = slots
            .values()
            .find(|s| s.id == id.trim() && client.may_use(&s.owner))
            .cloned()
            .ok_or_else(|| unknown_session(id, client, &slots))?;
        slot.touch();
        Ok(slot)
    }

    /// Removes the session with `id`, if `client` may use it; its memory is freed once running
    /// calls finish.
    ///
    /// # Errors
    /// `unknown_session`, listing the sessions `client` sees.
    pub fn remove(&self, client: &ClientId, id: &str) -> Result<Arc<SessionSlot>, ToolError> {
        let mut slots = self.lock();
        let key = slots
            .iter()
            .find(|(_, s)| s.id == id.trim() && client.may_use(&s.owner))
            .map(|(k, _)| *k);
        match key.and_then(|k| slots.remove(&k)) {
            Some(slot) => {
                let mut closed = self.closed.lock().unwrap_or_else(PoisonError::into_inner);
                if closed.len() == REMEMBERED_CLOSED {
                    closed.pop_front();
                }
                closed.push_back((slot.id.clone(), slot.owner.clone()));
                Ok(slot)
            }
            None => Err(unknown_session(id, client, &slots)),
        }
    }

    /// Detaches every live session (breakpoints removed, target resumed) and closes them: what
    /// the server does on SIGINT/SIGTERM so that no stub is left waiting. Blocking.
    pub fn detach_all_live(&self) {
        let live: Vec<Arc<SessionSlot>> = self
            .list(&ClientId::Server)
            .into_iter()
            .filter(|s| s.live.is_some())
            .collect();
        for slot in live {
            if let Some(control) = &slot.live {
                match control.close(DETACH_TIMEOUT) {
                    Ok(what) => tracing::info!(session = %slot.id, "{what}"),
                    Err(e) => tracing::warn!(session = %slot.id, "detaching failed: {e}"),
                }
            }
            let _ = self.remove(&ClientId::Server, &slot.id);
        }
    }

    /// The open sessions `client` sees, oldest first.
    pub fn list(&self, client: &ClientId) -> Vec<Arc<SessionSlot>> {
        self.lock()
            .values()
            .filter(|s| client.lists(&s.owner))
            .cloned()
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Arc<SessionSlot>>> {
        self.slots.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn unknown_session(
    id: &str,
    client: &ClientId,
    slots: &BTreeMap<u64, Arc<SessionSlot>>,
) -> ToolError {
    let open: Vec<String> = slots
        .values()
        .filter(|s| client.lists(&s.owner))
        .map(|s| {
            let file = s
                .path
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_default();
            format!("{} ({file})", s.id)
        })
        .collect();
    let hint = if open.is_empty() {
        "no sessions are open: call open_dump or attach first".to_string()
    } else {
        format!("open sessions: {}", open.join(", "))
    };
    ToolError::new(
        ErrorCode::UnknownSession,
        format!("no open session with id {id:?} (it was never opened, was closed, or expired after being idle)"),
    )
    .with_hint(hint)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn open(path: &Path) -> Session {
        Session::open_dump(path, None).expect("sample opens")
    }

    #[test]
    fn the_same_file_finds_its_session_and_a_changed_one_does_not() {
        let dir = std::env::temp_dir().join(format!("ntdbg-sessions-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("mkdir");
        let dump = dir.join("a.dmp");
        std::fs::copy(ntdbg_testutil::sample("crashy-x64-null.dmp"), &dump).expect("copy");
        let registry = SessionRegistry::new();
        let me = ClientId::Stdio;
        let identity = DumpIdentity::of(&dump).expect("identity");
        // The session maps the original sample, not the copy: Windows refuses to overwrite a
        // file that is mapped, and the registry only keys on the identity.
        let session = open(&ntdbg_testutil::sample("crashy-x64-null.dmp"));
        let slot = registry.insert_dump(
            session,
            dump.clone(),
            None,
            Some(identity.clone()),
            me.clone(),
        );
        let found = registry.find_dump(&me, &identity).expect("found");
        assert_eq!(found.id, slot.id);
        // Another size (or time) is another file, even at the same path.
        std::fs::copy(ntdbg_testutil::sample("crashy-x64-divzero.dmp"), &dump).expect("copy");
        let changed = DumpIdentity::of(&dump).expect("identity");
        assert_ne!(changed, identity);
        assert!(registry.find_dump(&me, &changed).is_none());
        let _ = std::fs::remove_dir_all(dir);
    }

    #[test]
    fn closed_ids_are_remembered_and_others_are_not() {
        let registry = SessionRegistry::new();
        let me = ClientId::Stdio;
        let path = ntdbg_testutil::sample("crashy-x64-null.dmp");
        let slot = registry.insert(open(&path), path, None, me.clone());
        assert!(!registry.was_closed(&me, &slot.id));
        registry.remove(&me, &slot.id).expect("removed");
        assert!(registry.was_closed(&me, &slot.id));
        assert!(
            registry.remove(&me, &slot.id).is_err(),
            "a second remove is unknown"
        );
        assert!(!registry.was_closed(&me, "s-000000000000000000000000"));
    }

    /// Issue 35, item 4: another client's session is answered as one never opened, in every
    /// lookup, in the hint that lists open sessions, and after it is closed.
    #[test]
    fn another_client_s_session_is_unknown_to_it() {
        let registry = SessionRegistry::new();
        let path = ntdbg_testutil::sample("crashy-x64-null.dmp");
        let (a, b) = (
            ClientId::HttpSession(Arc::from("a")),
            ClientId::HttpSession(Arc::from("b")),
        );
        let identity = DumpIdentity::of(&path).expect("identity");
        let slot = registry.insert_dump(
            open(&path),
            path.clone(),
            None,
            Some(identity.clone()),
            a.clone(),
        );
        let never = "s-0123456789abcdef01234567";
        let foreign = registry.get(&b, &slot.id).unwrap_err();
        let unknown = registry.get(&b, never).unwrap_err();
        assert_eq!(foreign.code, unknown.code);
        assert_eq!(foreign.hint, unknown.hint);
        assert_eq!(foreign.message.replace(&slot.id, never), unknown.message);
        assert!(registry.list(&b).is_empty());
        assert!(registry.find_dump(&b, &identity).is_none());
        assert!(registry.remove(&b, &slot.id).is_err());
        assert_eq!(registry.list(&a).len(), 1, "b's attempts changed nothing");
        registry.remove(&a, &slot.id).expect("its owner closes it");
        assert!(!registry.was_closed(&b, &slot.id));
        assert!(registry.was_closed(&a, &slot.id));
    }
}
