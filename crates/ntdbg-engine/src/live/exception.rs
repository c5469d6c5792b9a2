//! The exception of a live stop as the record a dump would hold, so that `.exr -1`,
//! `.ecxr`, `!analyze` and `analyze_crash` read the current stop like a dump's event.
//!
//! ntdbg's Win32 stub sends the record's address and parameters; a GDB stub reports a
//! signal only. For an access violation the parameters are then recovered from the
//! faulting instruction: the memory it accesses, its address computed from the thread's
//! registers, read or write from the instruction (an unreadable pc is an execute fault).
//! When the instruction does not say (several places, an unknown register), the record has
//! no parameters rather than guessed ones.

use ntdbg_targets::ExceptionEvent;

use super::control::Halt;
use super::stop_text::StopCause;
use crate::disasm::{memory_access, Bitness};
use crate::registers;
use crate::Session;

/// `STATUS_ACCESS_VIOLATION`.
const ACCESS_VIOLATION: u32 = 0xC000_0005;
/// The access kind of an execute fault in an access violation's first parameter.
const EXECUTE_ACCESS: u64 = 8;

impl Session {
    /// The exception of the stop `h` as a record (`None` for a stop that is no exception:
    /// a breakpoint, a step, a break-in, a module load…). The thread's context is the
    /// record's context.
    pub(crate) fn live_exception(&self, h: &Halt) -> Option<ExceptionEvent> {
        let StopCause::Exception { code, .. } = h.cause else {
            return None;
        };
        let tid = h.thread.and_then(|t| t.tid())?;
        let thread = self
            .target()
            .threads()
            .iter()
            .find(|t| u64::from(t.id) == tid)?;
        let windows = h.event.as_deref();
        let address = windows.and_then(|w| w.address).or(h.pc)?;
        let parameters = match windows {
            Some(w) if !w.parameters.is_empty() => w.parameters.clone(),
            Some(_) => Vec::new(),
            None if code == ACCESS_VIOLATION => self.access_parameters(thread, address),
            None => Vec::new(),
        };
        Some(ExceptionEvent {
            thread_id: thread.id,
            code,
            flags: 0,
            address,
            parameters,
            nested_record: 0,
            context: thread.context.clone(),
        })
    }

    /// `[access, address]` of an access violation at `pc` on `thread`, from its instruction;
    /// empty when the instruction does not say.
    fn access_parameters(&self, thread: &ntdbg_targets::ThreadInfo, pc: u64) -> Vec<u64> {
        let Some(bits) = Bitness::of_arch(self.arch()) else {
            return Vec::new();
        };
        let Some(code) = self.target().read_chunk(pc, 16) else {
            return vec![EXECUTE_ACCESS, pc];
        };
        let Some(context) = thread.context.as_ref() else {
            return Vec::new();
        };
        let register = |name: &str| match name {
            "gs_base" if bits == Bitness::Bits64 => Some(thread.teb).filter(|&t| t != 0),
            "fs_base" if bits == Bitness::Bits32 => Some(thread.teb).filter(|&t| t != 0),
            _ => registers::register(context, name),
        };
        match memory_access(bits, &code, pc, &register) {
            Some(access) => vec![u64::from(access.write), access.address],
            None => Vec::new(),
        }
    }
}
