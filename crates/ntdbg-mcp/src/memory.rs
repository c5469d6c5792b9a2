//! Closing a session and giving its memory back to the operating system.
//!
//! glibc's allocator keeps freed heap pages for reuse and raises its mmap threshold after large
//! frees, so a long-running server that closed a hundred sessions would otherwise keep their
//! peak resident size for good. After a session is dropped the heap is trimmed once, and so it
//! is after a long tool call (`~*k` over 100,000 threads freed 440 MB that the server kept until
//! the session closed). On Windows
//! Rust's allocator is the process heap, which is compacted instead (free blocks coalesced, large
//! free ranges decommitted); elsewhere the allocator's own policy applies.

use crate::client::ClientId;
use crate::error::ToolError;
use crate::sessions::DETACH_TIMEOUT;
use crate::state::State;
use ntdbg_engine::live::Leave;
use std::time::{Duration, Instant};

/// A tool call that ran this long may have freed much memory: the heap is trimmed after it.
/// Shorter calls free little, and trimming after each would cost them page faults later.
const LONG_CALL: Duration = Duration::from_millis(250);

/// What closing a session did.
pub(crate) struct Closed {
    /// The session's id as the registry spells it.
    pub id: String,
    /// For a live session: how the detach went (breakpoints removed, target resumed).
    pub detach: Option<String>,
}

/// Closes the session `id` of `client` (by `close_session` or the idle sweeper, named in `why`): removes
/// it and its cached outputs, detaches a live target leaving it running or suspended (blocking, bounded by
/// [`DETACH_TIMEOUT`]), frees it unless a running call still holds it, and trims the heap.
///
/// # Errors
/// `unknown_session`, listing the open sessions; a live target that could not be detached
/// (the session is closed all the same).
pub(crate) fn close_session(
    state: &State,
    client: &ClientId,
    id: &str,
    why: &str,
    leave: Leave,
) -> Result<Closed, ToolError> {
    let slot = state.sessions.remove(client, id)?;
    state.outputs().remove_session(&slot.id);
    let detach = match &slot.live {
        Some(live) => Some(
            live.close_leaving(DETACH_TIMEOUT, leave)
                .map_err(ToolError::from)?,
        ),
        None => None,
    };
    tracing::info!(session = %slot.id, "closed a session ({why})");
    let id = slot.id.clone();
    drop(slot);
    release_freed_memory();
    Ok(Closed { id, detach })
}

/// After a tool call that began at `started`: if it ran long, returns the memory its work
/// freed to the OS, off the async runtime's threads.
pub(crate) fn trim_after_call(started: Instant) {
    if started.elapsed() >= LONG_CALL {
        tokio::task::spawn_blocking(release_freed_memory);
    }
}

/// Returns free heap pages to the OS where the allocator supports it (glibc on Linux, the
/// process heap on Windows).
fn release_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only walks the allocator's own free lists; it takes no pointers.
    unsafe {
        libc::malloc_trim(0);
    }
    #[cfg(windows)]
    // SAFETY: GetProcessHeap takes nothing and returns the heap Rust's allocator uses;
    // HeapCompact only reorganises that heap's free blocks (flags 0: serialized access).
    unsafe {
        use windows_sys::Win32::System::Memory::{GetProcessHeap, HeapCompact};
        HeapCompact(GetProcessHeap(), 0);
    }
}

#[cfg(test)]
mod tests {
    /// Trimming after frees is harmless: memory allocated afterwards is usable.
    #[test]
    fn release_after_frees_keeps_the_heap_usable() {
        let blocks: Vec<Vec<u8>> = (0..64).map(|i| vec![i as u8; 1 << 16]).collect();
        drop(blocks);
        super::release_freed_memory();
        let again = vec![7u8; 1 << 20];
        assert!(again.iter().all(|&b| b == 7));
    }
}
