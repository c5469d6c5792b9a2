//! The thread an exception context really belongs to: when the context's stack pointer lies in
//! another thread's stack rather than the stack of the thread the dump names (a crash reporter
//! that passed its own thread id with the crashing thread's exception pointers, or a context
//! copied between threads).

use crate::fault::read_pointer;
use crate::report::Inference;
use ntdbg_engine::Session;
use ntdbg_targets::{ExceptionEvent, ThreadInfo};

/// A thread's stack range: the TEB's StackLimit..StackBase when the dump holds the TEB, else
/// the memory the dump captured for it; with where it came from.
fn stack_range(session: &Session, t: &ThreadInfo) -> Option<(u64, u64, &'static str)> {
    let ptr = session.arch().pointer_size();
    if t.teb != 0 {
        let read = |off: u64| read_pointer(session, t.teb.wrapping_add(off), ptr);
        if let (Some(base), Some(limit)) = (read(ptr as u64), read(2 * ptr as u64)) {
            if limit < base {
                return Some((limit, base, "TEB StackLimit..StackBase"));
            }
        }
    }
    t.stack
        .as_ref()
        .map(|s| (s.base, s.end(), "the stack memory the dump captured"))
}

/// The inference, when the context's stack pointer is outside the named thread's stack and
/// inside exactly one other thread's.
pub(super) fn context_thread(session: &Session, event: &ExceptionEvent) -> Option<Inference> {
    let context = event.context.as_ref()?;
    let sp_name = if session.arch().pointer_size() == 8 {
        "rsp"
    } else {
        "esp"
    };
    let sp = ntdbg_engine::registers::register(context, sp_name)?;
    let threads = session.target().threads();
    let named = threads.iter().find(|t| t.id == event.thread_id)?;
    let (named_lo, named_hi, named_how) = stack_range(session, named)?;
    if named_lo <= sp && sp < named_hi {
        return None;
    }
    let mut owners = threads
        .iter()
        .filter(|t| t.id != event.thread_id)
        .filter_map(|t| {
            let (lo, hi, how) = stack_range(session, t)?;
            (lo <= sp && sp < hi).then_some((t, lo, hi, how))
        });
    let (owner, lo, hi, how) = owners.next()?;
    if owners.next().is_some() {
        return None;
    }
    let index = threads.iter().position(|t| t.id == owner.id).unwrap_or(0);
    Some(Inference::new(
        "context_thread",
        format!(
            "the exception context belongs to thread {:#x} (~{index}), not to thread {:#x} that the dump names: its stack pointer lies in that thread's stack, so the crash's stack and registers are ~{index}'s (the dump writer named the wrong thread)",
            owner.id, event.thread_id
        ),
        format!(
            "context {sp_name} = {sp:#x} is inside thread {:#x}'s stack {lo:#x}..{hi:#x} ({how}) and outside thread {:#x}'s {named_lo:#x}..{named_hi:#x} ({named_how})",
            owner.id, event.thread_id
        ),
    ))
}
