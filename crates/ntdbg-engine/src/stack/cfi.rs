//! The [`FrameWalker`] that unwind data (Breakpad `STACK CFI`/`STACK WIN`, PE unwind tables)
//! is evaluated against: the callee's registers in, the caller's out.

use breakpad_symbols::FrameWalker;

use super::memory::StackMemory;
use super::regs::{strip_pac, Regs};

/// One step of unwinding through unwind data.
pub(crate) struct UnwindStep<'a> {
    /// The address unwind data is looked up at: the exact pc for the innermost frame, inside
    /// the call instruction for callers.
    pub(crate) instruction: u64,
    /// Whether the callee has a callee of its own (it is not the innermost frame).
    pub(crate) has_grand_callee: bool,
    /// Bytes of stack parameters the callee's callee took (x86 `STACK WIN`).
    pub(crate) grand_callee_parameter_size: u32,
    pub(crate) callee: &'a Regs,
    pub(crate) stack: &'a StackMemory<'a>,
    /// Whether return addresses carry pointer-authentication bits to strip (ARM64).
    pub(crate) strip_pac: bool,
    /// The caller's registers: callee-saved ones forwarded until the unwind data says
    /// otherwise.
    pub(crate) caller: Regs,
}

impl<'a> UnwindStep<'a> {
    /// A step from `callee`, forwarding its callee-saved registers.
    pub(crate) fn new(
        instruction: u64,
        grand_callee_parameter_size: Option<u32>,
        callee: &'a Regs,
        stack: &'a StackMemory<'a>,
        strip_pac: bool,
    ) -> UnwindStep<'a> {
        let mut caller = callee.caller();
        caller.keep_callee_saved(callee);
        UnwindStep {
            instruction,
            has_grand_callee: grand_callee_parameter_size.is_some(),
            grand_callee_parameter_size: grand_callee_parameter_size.unwrap_or(0),
            callee,
            stack,
            strip_pac,
            caller,
        }
    }

    /// The caller's registers when the unwind data gave both its pc and stack pointer.
    pub(crate) fn finish(self) -> Option<Regs> {
        let layout = self.caller.layout();
        (self.caller.has(layout.ip) && self.caller.has(layout.sp)).then_some(self.caller)
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
        self.callee.get_named(name)
    }
    fn set_caller_register(&mut self, name: &str, val: u64) -> Option<()> {
        self.caller.set_named(name, val)
    }
    fn clear_caller_register(&mut self, name: &str) {
        self.caller.clear_named(name);
    }
    fn set_cfa(&mut self, val: u64) -> Option<()> {
        self.caller.set(self.caller.layout().sp, val)
    }
    fn set_ra(&mut self, val: u64) -> Option<()> {
        let ra = if self.strip_pac { strip_pac(val) } else { val };
        self.caller.set(self.caller.layout().ip, ra)
    }
}
