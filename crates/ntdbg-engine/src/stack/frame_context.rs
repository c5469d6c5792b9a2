//! A frame's registers as a `MinidumpContext`, built only when asked for: the walk keeps
//! callers' registers in fixed arrays ([`Regs`]), and most frames' contexts are never read
//! (`k` prints none; `.frame N; r`, locals and `stackwalk`'s register output read a few).

use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use minidump::MinidumpContext;
use ntdbg_targets::Arch;

use super::regs::Regs;

/// The registers of one frame: the thread's context for the context frame, else the
/// registers the walker recovered, which dereference to a `MinidumpContext` (built on first
/// use) with only those registers valid and the thread context's other state.
#[derive(Debug, Clone)]
pub struct FrameContext {
    /// The thread's context (the walk's frame 0).
    thread: Arc<MinidumpContext>,
    /// A caller's recovered registers; `None` for the context frame.
    walked: Option<Regs>,
    /// The caller's context, once built.
    built: OnceLock<Box<MinidumpContext>>,
}

impl FrameContext {
    /// The context frame's registers: the thread's context itself.
    pub(crate) fn thread(thread: Arc<MinidumpContext>) -> FrameContext {
        FrameContext {
            thread,
            walked: None,
            built: OnceLock::new(),
        }
    }

    /// A caller's registers, recovered by the walker from the thread context `thread`.
    pub(crate) fn walked(thread: Arc<MinidumpContext>, regs: Regs) -> FrameContext {
        FrameContext {
            thread,
            walked: Some(regs),
            built: OnceLock::new(),
        }
    }

    /// The stack pointer's value, known or not (as `MinidumpContext::get_stack_pointer`).
    pub fn stack_pointer(&self) -> u64 {
        match &self.walked {
            Some(regs) => regs.value(regs.layout().sp),
            None => self.thread.get_stack_pointer(),
        }
    }

    /// The frame pointer register (ebp/rbp/fp) of an `arch` frame, when known.
    pub fn frame_pointer(&self, arch: Arch) -> Option<u64> {
        match &self.walked {
            Some(regs) => regs.get(regs.layout().fp),
            None => match arch {
                Arch::X86 => self.thread.get_register("ebp"),
                Arch::X64 => self.thread.get_register("rbp"),
                Arch::Arm64 => self.thread.get_register("fp"),
                Arch::Other(_) => None,
            },
        }
    }
}

impl From<MinidumpContext> for FrameContext {
    /// A context frame whose registers are `context`.
    fn from(context: MinidumpContext) -> FrameContext {
        FrameContext::thread(Arc::new(context))
    }
}

impl Deref for FrameContext {
    type Target = MinidumpContext;

    fn deref(&self) -> &MinidumpContext {
        match &self.walked {
            Some(regs) => self
                .built
                .get_or_init(|| Box::new(regs.to_context(&self.thread))),
            None => &self.thread,
        }
    }
}
