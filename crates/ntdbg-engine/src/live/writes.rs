//! Writing a halted live target: registers (`r REG=VALUE`) and memory (`eb`, `ed`, `ea`…).
//! Both are refused in a read-only session; a memory write under a software breakpoint
//! changes the byte the breakpoint restores, never the breakpoint.

use ntdbg_targets::Arch;

use super::control::{live, LiveControl};
use crate::registers::{full_register_name, subregister_bits};
use crate::{EngineError, ErrorCode, Session};

impl LiveControl {
    /// Sets register `name` (a full register, a sub-register such as `eax` or `ah`, or
    /// `efl`) of thread `tid` to `value`; a sub-register keeps the other bits of its full
    /// register.
    ///
    /// # Errors
    /// `read_only`, the run-state errors, `syntax_error` for a register the stub does not
    /// have, and the stub's refusal.
    pub fn write_register(
        &self,
        tid: u64,
        arch: Arch,
        name: &str,
        value: u64,
    ) -> Result<(), EngineError> {
        self.check_writable("changing a register")?;
        let mut client = self.lock_client();
        self.check_halted()?;
        let full = stub_register_name(arch, name);
        let reg = self
            .layout
            .by_name(&full)
            .ok_or_else(|| {
                EngineError::live(
                    ErrorCode::SyntaxError,
                    format!("Bad register error: the target has no register '{name}'"),
                )
            })?
            .clone();
        client
            .set_thread(self.thread_id_of_tid(tid))
            .map_err(live)?;
        let (shift, bits) = subregister_bits(arch, name);
        let new = if bits == 0 {
            value
        } else {
            let regs = client.read_registers().map_err(live)?;
            let old = self.layout.value_u64(&reg.name, &regs).ok_or_else(|| {
                EngineError::live(
                    ErrorCode::MemoryUnavailable,
                    format!("register {} is unavailable", reg.name),
                )
            })?;
            let mask = ((1u64 << bits) - 1) << shift;
            (old & !mask) | ((value << shift) & mask)
        };
        let size = (reg.bitsize as usize).div_ceil(8).min(8);
        self.write_register_bytes(
            &mut client,
            reg.regnum,
            reg.offset,
            &new.to_le_bytes()[..size],
        )
        .map_err(live)
    }

    /// Writes `data` at `addr`.
    ///
    /// # Errors
    /// `read_only`, the run-state errors, and the stub's refusal (memory it cannot write).
    pub fn write_memory(&self, addr: u64, data: &[u8]) -> Result<(), EngineError> {
        self.check_writable("writing memory")?;
        let mut client = self.lock_client();
        self.check_halted()?;
        client.write_program_memory(addr, data).map_err(live)
    }
}

/// The name a GDB stub gives the register that holds WinDbg's `name`.
fn stub_register_name(arch: Arch, name: &str) -> String {
    match full_register_name(arch, name).as_str() {
        "efl" | "rflags" => "eflags".into(),
        "fp" if arch == Arch::Arm64 => "x29".into(),
        "lr" if arch == Arch::Arm64 => "x30".into(),
        other => other.to_string(),
    }
}

impl Session {
    /// `r NAME=VALUE`: sets a register of the current thread of a live target.
    ///
    /// # Errors
    /// `read_only` on a dump or a read-only session, and [`LiveControl::write_register`]'s.
    pub fn set_register(&mut self, name: &str, value: u64) -> Result<(), EngineError> {
        let live = self
            .live()
            .cloned()
            .ok_or_else(|| dump_is_read_only("registers"))?;
        let tid = self
            .current_thread()
            .map(|t| u64::from(t.id))
            .ok_or_else(|| EngineError::NoSuchThread("current".into()))?;
        live.write_register(tid, self.arch(), name, value)?;
        self.reread_live_target()
    }

    /// `eb`, `ed`, `ea`…: writes bytes in a live target's memory.
    ///
    /// # Errors
    /// `read_only` on a dump or a read-only session, and [`LiveControl::write_memory`]'s.
    pub fn write_memory(&mut self, addr: u64, data: &[u8]) -> Result<(), EngineError> {
        let live = self
            .live()
            .cloned()
            .ok_or_else(|| dump_is_read_only("memory"))?;
        live.write_memory(addr, data)?;
        self.reread_live_target()
    }

    /// Re-reads threads, registers and memory after a write, on the same thread.
    fn reread_live_target(&mut self) -> Result<(), EngineError> {
        let current = self.current_thread_index();
        self.target_mut().refresh()?;
        if current < self.target().threads().len() {
            self.set_current_thread(current)?;
        }
        Ok(())
    }
}

fn dump_is_read_only(what: &str) -> EngineError {
    EngineError::live(
        ErrorCode::ReadOnly,
        format!("the {what} of a dump cannot be changed: writes need a live target"),
    )
}
