//! The thread an exception context really belongs to: when the context's stack pointer lies in
//! another thread's stack rather than the stack of the thread the dump names (a crash reporter
//! that passed its own thread id with the crashing thread's exception pointers, or a context
//! copied between threads). The engine finds it ([`Session::exception_context_owner`]) and
//! follows it: `.ecxr` and the prompt switch to that thread.

use crate::conclusion::Inference;
use ntdbg_engine::Session;

/// The inference, when the context's stack pointer is outside the named thread's stack and
/// inside exactly one other thread's.
pub(super) fn context_thread(session: &Session) -> Option<Inference> {
    let owner = session.exception_context_owner()?;
    let index = owner.index;
    Some(Inference::new(
        "context_thread",
        format!(
            "the exception context belongs to thread {:#x} (~{index}), not to thread {:#x} that the dump names: its stack pointer lies in that thread's stack, so the crash's stack and registers are ~{index}'s (the dump writer named the wrong thread); .ecxr and the prompt switch to ~{index}",
            owner.thread_id, owner.named_thread_id
        ),
        format!(
            "context {} = {:#x} is inside thread {:#x}'s stack {:#x}..{:#x} ({}) and outside thread {:#x}'s {:#x}..{:#x} ({})",
            owner.register,
            owner.stack_pointer,
            owner.thread_id,
            owner.stack.low,
            owner.stack.high,
            owner.stack.source,
            owner.named_thread_id,
            owner.named_stack.low,
            owner.named_stack.high,
            owner.named_stack.source
        ),
    ))
}
