//! The [`FrameWalker`] that unwind data (Breakpad `STACK CFI`/`STACK WIN`, PE unwind tables)
//! is evaluated against: the callee's registers in, the caller's out.

use breakpad_symbols::FrameWalker;
use minidump::MinidumpContext;

use super::memory::StackMemory;
use super::regs::{known, strip_pac, CallerContext, Names};

/// One step of unwinding through unwind data.
pub(crate) struct UnwindStep<'a> {
    /// The address unwind data is looked up at: the exact pc for the innermost frame, inside
    /// the call instruction for callers.
    pub(crate) instruction: u64,
    /// Whether the callee has a callee of its own (it is not the innermost frame).
    pub(crate) has_grand_callee: bool,
    /// Bytes of stack parameters the callee's callee took (x86 `STACK WIN`).
    pub(crate) grand_callee_parameter_size: u32,
    pub(crate) callee: &'a MinidumpContext,
    pub(crate) stack: &'a StackMemory<'a>,
    pub(crate) names: Names,
    /// Whether return addresses carry pointer-authentication bits to strip (ARM64).
    pub(crate) strip_pac: bool,
    /// The caller's registers: callee-saved ones forwarded until the unwind data says
    /// otherwise.
    pub(crate) caller: CallerContext,
}

impl<'a> UnwindStep<'a> {
    /// A step from `callee`, forwarding its callee-saved registers.
    pub(crate) fn new(
        instruction: u64,
        grand_callee_parameter_size: Option<u32>,
        callee: &'a MinidumpContext,
        stack: &'a StackMemory<'a>,
        names: Names,
        strip_pac: bool,
    ) -> UnwindStep<'a> {
        let mut caller = CallerContext::like(callee);
        caller.keep(callee, names.callee_saved);
        UnwindStep {
            instruction,
            has_grand_callee: grand_callee_parameter_size.is_some(),
            grand_callee_parameter_size: grand_callee_parameter_size.unwrap_or(0),
            callee,
            stack,
            names,
            strip_pac,
            caller,
        }
    }

    /// The caller's context when the unwind data gave both its pc and stack pointer.
    pub(crate) fn finish(self) -> Option<MinidumpContext> {
        (self.caller.has(self.names.ip) && self.caller.has(self.names.sp))
            .then(|| self.caller.finish())
    }
}

impl FrameWalker for UnwindStep<'_> {
    fn get_instruction(&self) -> u64 {
        self.instruction
    }
    fn has_grand_callee(&self) -> bool {
        self.has_grand_callee
    }
    fn get_grand_callee_parameter_size(&self) -> u32 {
        self.grand_callee_parameter_size
    }
    fn get_register_at_address(&self, address: u64) -> Option<u64> {
        self.stack.pointer_at(address)
    }
    fn get_callee_register(&self, name: &str) -> Option<u64> {
        known(self.callee, name)
    }
    fn set_caller_register(&mut self, name: &str, val: u64) -> Option<()> {
        self.caller.set(name, val)
    }
    fn clear_caller_register(&mut self, name: &str) {
        self.caller.clear(name);
    }
    fn set_cfa(&mut self, val: u64) -> Option<()> {
        self.caller.set(self.names.sp, val)
    }
    fn set_ra(&mut self, val: u64) -> Option<()> {
        let ra = if self.strip_pac { strip_pac(val) } else { val };
        self.caller.set(self.names.ip, ra)
    }
}
