//! Idle-session expiry: a sweeper task closes sessions no tool has used for the server's idle
//! timeout (`ntdbg mcp --idle-timeout SECS`), so an agent that forgets `close_session` does not
//! keep dumps mapped and symbols loaded forever. A session busy with a command counts as used.

use crate::client::ClientId;
use crate::memory::close_session;
use crate::state::State;
use ntdbg_engine::live::Leave;
use std::sync::Arc;
use std::time::Duration;

/// How often the sweeper looks: a quarter of the timeout, between 100 ms and a minute.
fn sweep_interval(timeout: Duration) -> Duration {
    (timeout / 4).clamp(Duration::from_millis(100), Duration::from_secs(60))
}

/// Closes every session idle for `timeout` or longer, with its cached outputs, and forgets
/// expired tasks; returns the session ids closed.
pub(crate) fn sweep_once(state: &State, timeout: Duration) -> Vec<String> {
    state.tasks.sweep();
    let mut closed = Vec::new();
    for slot in state.sessions.list(&ClientId::Server) {
        if slot.busy() {
            slot.touch();
            continue;
        }
        if slot.idle_for() < timeout {
            continue;
        }
        let id = slot.id.clone();
        drop(slot);
        if let Ok(done) = close_session(
            state,
            &ClientId::Server,
            &id,
            "idle session",
            Leave::Running,
        ) {
            closed.push(done.id);
        }
    }
    closed
}

/// Starts the sweeper on the current tokio runtime when `state` has an idle timeout; it runs
/// until the runtime shuts down.
pub(crate) fn spawn_sweeper(state: &Arc<State>) {
    let Some(timeout) = state.idle_timeout else {
        return;
    };
    let state = Arc::downgrade(state);
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(sweep_interval(timeout));
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticks.tick().await;
            let Some(state) = state.upgrade() else {
                return;
            };
            // Closing a live session detaches over the network: off the async workers.
            let _ = tokio::task::spawn_blocking(move || sweep_once(&state, timeout)).await;
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paths::AllowedDirs;
    use crate::state::DEFAULT_IDLE_TIMEOUT;

    fn sample_state() -> State {
        let allowed = AllowedDirs::new(&[ntdbg_testutil::repo_root().join("testdata")]).unwrap();
        State::new(allowed)
    }

    fn open(state: &State) -> String {
        let path = ntdbg_testutil::sample("crashy-x64-null.dmp");
        let session = ntdbg_engine::Session::open_dump(&path, Some("")).unwrap();
        state
            .sessions
            .insert(session, path, None, ClientId::Server)
            .id
            .clone()
    }

    #[test]
    fn intervals_stay_sane() {
        assert_eq!(
            sweep_interval(Duration::from_secs(2)),
            Duration::from_millis(500)
        );
        assert_eq!(
            sweep_interval(Duration::from_millis(1)),
            Duration::from_millis(100)
        );
        assert_eq!(
            sweep_interval(DEFAULT_IDLE_TIMEOUT),
            Duration::from_secs(60)
        );
    }

    #[test]
    fn idle_sessions_close_and_used_or_busy_ones_stay() {
        let state = sample_state();
        let idle = open(&state);
        let used = open(&state);
        let busy = open(&state);
        let held = state.sessions.get(&ClientId::Server, &busy).unwrap();
        let _guard = held.session.try_lock().unwrap();
        std::thread::sleep(Duration::from_millis(300));
        state.sessions.get(&ClientId::Server, &used).unwrap();
        assert_eq!(
            sweep_once(&state, Duration::from_millis(200)),
            vec![idle.clone()]
        );
        assert!(state.sessions.get(&ClientId::Server, &idle).is_err());
        assert!(state.sessions.get(&ClientId::Server, &used).is_ok());
        assert!(state.sessions.get(&ClientId::Server, &busy).is_ok());
    }
}
