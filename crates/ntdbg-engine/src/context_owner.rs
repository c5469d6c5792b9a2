//! The thread an exception context really belongs to. A dump names the thread of its exception,
//! but a crash reporter that passes its own thread id with the crashing thread's exception
//! pointers (or a context copied between threads) makes it name the wrong one: the context's
//! stack pointer then lies in another thread's stack. The session follows that evidence —
//! `.ecxr` and the prompt switch to the owner — and the analysis says so.

use crate::Session;
use ntdbg_targets::ThreadInfo;

/// A thread's stack range and where it was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StackRange {
    /// The lowest address of the stack.
    pub low: u64,
    /// One past its highest address.
    pub high: u64,
    /// Where the range came from: `TEB StackLimit..StackBase` or `the stack memory the dump
    /// captured`.
    pub source: &'static str,
}

impl StackRange {
    /// Whether `address` lies in the range.
    pub fn contains(&self, address: u64) -> bool {
        self.low <= address && address < self.high
    }
}

/// The evidence that the exception context belongs to another thread than the one the event
/// names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextOwner {
    /// The `~` number of the thread whose stack holds the context's stack pointer.
    pub index: usize,
    /// Its OS thread id.
    pub thread_id: u32,
    /// Its stack range.
    pub stack: StackRange,
    /// The OS id of the thread the event names.
    pub named_thread_id: u32,
    /// The named thread's stack range, which does not hold the stack pointer.
    pub named_stack: StackRange,
    /// The stack pointer's register name (`rsp`, `esp`).
    pub register: &'static str,
    /// The context's stack pointer.
    pub stack_pointer: u64,
}

impl Session {
    /// A thread's stack range: the TEB's StackLimit..StackBase when the dump holds the TEB,
    /// else the memory the dump captured for its stack.
    pub fn thread_stack_range(&self, thread: &ThreadInfo) -> Option<StackRange> {
        let ptr = self.arch().pointer_size();
        if thread.teb != 0 {
            let read = |offset: u64| {
                self.target()
                    .read_uint(thread.teb.wrapping_add(offset), ptr)
            };
            if let (Some(base), Some(limit)) = (read(ptr as u64), read(2 * ptr as u64)) {
                if limit < base {
                    return Some(StackRange {
                        low: limit,
                        high: base,
                        source: "TEB StackLimit..StackBase",
                    });
                }
            }
        }
        thread.stack.as_ref().map(|s| StackRange {
            low: s.base,
            high: s.end(),
            source: "the stack memory the dump captured",
        })
    }

    /// The thread the exception context belongs to when that is not the thread the event
    /// names: its stack pointer lies outside the named thread's stack and inside exactly one
    /// other thread's. `None` when the context fits the named thread, or the evidence is
    /// missing or ambiguous.
    pub fn exception_context_owner(&self) -> Option<ContextOwner> {
        let event = self.target().event()?;
        let context = event.context.as_ref()?;
        let register = if self.arch().pointer_size() == 8 {
            "rsp"
        } else {
            "esp"
        };
        let stack_pointer = crate::registers::register(context, register)?;
        let threads = self.target().threads();
        let named = threads.iter().find(|t| t.id == event.thread_id)?;
        let named_stack = self.thread_stack_range(named)?;
        if named_stack.contains(stack_pointer) {
            return None;
        }
        let mut owners = threads
            .iter()
            .enumerate()
            .filter(|(_, t)| t.id != event.thread_id)
            .filter_map(|(index, t)| {
                let stack = self.thread_stack_range(t)?;
                stack
                    .contains(stack_pointer)
                    .then_some((index, t.id, stack))
            });
        let (index, thread_id, stack) = owners.next()?;
        if owners.next().is_some() {
            return None;
        }
        Some(ContextOwner {
            index,
            thread_id,
            stack,
            named_thread_id: event.thread_id,
            named_stack,
            register,
            stack_pointer,
        })
    }

    /// The `~` number of the thread the exception context belongs to: the owner the evidence
    /// shows ([`Session::exception_context_owner`]), else the thread the event names.
    pub fn exception_thread_index(&self) -> Option<usize> {
        self.exception_context_owner()
            .map(|owner| owner.index)
            .or_else(|| self.event_thread_index())
    }
}
