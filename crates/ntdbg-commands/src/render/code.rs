//! The session as the disassembler sees it (code bytes and names), and the current-instruction
//! line that the register display and a stop end with.

use crate::error::{CommandError, ErrorCode};
use ntdbg_engine::disasm::{self, AddressNamer, CodeMemory, Isa};
use ntdbg_engine::Session;

/// The session's memory and symbols, as the disassembler reads them.
pub(crate) struct SessionCode<'a>(pub(crate) &'a Session);

impl CodeMemory for SessionCode<'_> {
    fn read(&self, addr: u64, buf: &mut [u8]) -> usize {
        match self.0.read_code(addr, buf.len()) {
            Some(chunk) => {
                buf[..chunk.len()].copy_from_slice(&chunk);
                chunk.len()
            }
            None => 0,
        }
    }
}

impl AddressNamer for SessionCode<'_> {
    fn name(&self, addr: u64) -> Option<String> {
        let s = self.0.symbolize(addr);
        s.module.as_ref()?;
        Some(s.display())
    }
    fn function_range(&self, addr: u64) -> Option<(u64, u64)> {
        let module = self.0.module_at(addr)?;
        let base = module.raw.base_of_image;
        let (start, size) = self.0.module_symbols(module).function_range(addr - base)?;
        Some((base + start, base + start + size))
    }
}

/// The instruction set of the session's architecture; an error for those not disassembled.
pub(crate) fn isa(session: &Session) -> Result<Isa, CommandError> {
    let arch = session.arch();
    Isa::of_arch(arch).ok_or_else(|| {
        CommandError::new(
            ErrorCode::UnsupportedArch,
            format!("Disassembly of {} code is not supported yet", arch.name()),
        )
    })
}

/// The symbol line and the instruction at `ip`, as `r` shows them under the registers.
pub(crate) fn current_instruction(session: &Session, ip: u64) -> String {
    let Ok(code_isa) = isa(session) else {
        return format!("{}\n", session.symbolize(ip).display());
    };
    let code = SessionCode(session);
    let lines = disasm::disassemble_forward(code_isa, &code, &code, ip, 1);
    let mut text = disasm::render(&lines);
    if !text.ends_with('\n') {
        text.push('\n');
    }
    text
}
