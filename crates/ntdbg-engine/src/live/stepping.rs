//! Resuming and stepping like WinDbg's `g`, `p`, `t`, `gu`, `pa`: each sends the resume,
//! then waits up to the command wait for the stop.

use iced_x86::{Decoder, DecoderOptions, FlowControl};

use super::breakpoints::{BreakKind, FrameOwner};
use super::control::{LiveControl, Resume};
use crate::disasm::Bitness;
use crate::{EngineError, ErrorCode, Session};
use std::sync::Arc;

impl Session {
    fn live_control(&self) -> Result<Arc<LiveControl>, EngineError> {
        self.live.clone().ok_or_else(|| {
            EngineError::live(
                ErrorCode::NotLive,
                "run control needs a live target (this session is a dump)",
            )
        })
    }

    /// Resumes and waits up to the command wait for a stop; `until` sets a temporary
    /// breakpoint first that stops any thread (`g ADDR`). A step executes one instruction
    /// of the current thread, the others held. `Ok(true)` when the target stopped.
    pub fn go(&mut self, how: Resume, until: Option<u64>) -> Result<bool, EngineError> {
        let live = self.live_control()?;
        if let Some(addr) = until {
            live.add_breakpoint(addr, BreakKind::Software, true)?;
        }
        self.resume_and_wait(&live, how)
    }

    /// Runs until the current thread reaches `addr` in the current frame or one above it
    /// (`p` over a call, `gu`, `pa`): other threads, and recursive calls deeper in the
    /// stack, go past it.
    pub fn go_to_in_frame(&mut self, addr: u64) -> Result<bool, EngineError> {
        let live = self.live_control()?;
        let owner = self
            .current_thread()
            .map(|t| u64::from(t.id))
            .zip(self.register("rsp").or_else(|| self.register("esp")))
            .map(|(thread, sp)| FrameOwner { thread, sp });
        match owner {
            Some(owner) => live.add_step_breakpoint(addr, owner)?,
            None => live.add_breakpoint(addr, BreakKind::Software, true)?,
        };
        self.resume_and_wait(&live, Resume::Go { pass_signal: false })
    }

    fn resume_and_wait(
        &mut self,
        live: &Arc<LiveControl>,
        how: Resume,
    ) -> Result<bool, EngineError> {
        let stops = live.stops();
        let thread = self.current_thread().map(|t| u64::from(t.id));
        live.resume_thread(how, thread)?;
        Ok(self.wait_for_stop_after(live, stops))
    }

    /// `t`: executes one instruction.
    pub fn step_into(&mut self) -> Result<bool, EngineError> {
        self.go(Resume::Step, None)
    }

    /// `p`: executes one instruction, running a call (or a `rep` string instruction) to its
    /// end through a temporary breakpoint after it.
    pub fn step_over(&mut self) -> Result<bool, EngineError> {
        let Some(pc) = self.instruction_pointer() else {
            return self.step_into();
        };
        let bits = Bitness::of_arch(self.arch())
            .unwrap_or(Bitness::Bits64)
            .bits();
        let bytes = self
            .read_code(pc, 16)
            .map(|b| b.into_owned())
            .unwrap_or_default();
        let mut decoder = Decoder::with_ip(bits, &bytes, pc, DecoderOptions::NONE);
        let insn = decoder.decode();
        let over = !insn.is_invalid()
            && (matches!(
                insn.flow_control(),
                FlowControl::Call | FlowControl::IndirectCall
            ) || insn.has_rep_prefix()
                || insn.has_repne_prefix());
        if over {
            self.go_to_in_frame(insn.next_ip())
        } else {
            self.step_into()
        }
    }

    /// `gu`: runs until the current function returns to its caller: the return address
    /// from the stack walk, else (no unwind data, no modules) the one above the frame
    /// pointer.
    pub fn step_out(&mut self) -> Result<bool, EngineError> {
        let stack = self.stack()?;
        let walked = stack
            .frames
            .iter()
            .find(|f| f.index == 0)
            .and_then(|f| f.return_address)
            .or_else(|| stack.frames.get(1).map(|f| f.instruction));
        let ret = walked
            .or_else(|| self.frame_pointer_return())
            .ok_or_else(|| {
                EngineError::live(
                    ErrorCode::NoReturnAddress,
                    "gu: the return address of the current function is unknown",
                )
            })?;
        self.go_to_in_frame(ret)
    }

    /// `[rbp+8]` when rbp points into the stack just above rsp.
    fn frame_pointer_return(&self) -> Option<u64> {
        let (sp, fp) = (self.register("rsp")?, self.register("rbp")?);
        if fp < sp || fp - sp > 0x10_0000 {
            return None;
        }
        self.target().read_uint(fp.checked_add(8)?, 8)
    }
}
