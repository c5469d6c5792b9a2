//! Disassembly for WinDbg's `u`, `ub` and `uf`, producing text shaped exactly like WinDbg/cdb:
//!
//! ```text
//! crashy!crash_null_write+0x4:
//! 00000001`40002134 c70134120000    mov     dword ptr [rcx],1234h
//! 00000001`4000213a 5d              pop     rbp
//! ```
//!
//! The engine supplies target memory ([`CodeMemory`]) and symbols ([`AddressNamer`]); this
//! module decodes x86/x64 with iced-x86 and formats in WinDbg's MASM dialect (see `format.rs`
//! for where that differs from iced's defaults), and ARM64 with yaxpeax-arm in the Microsoft
//! ARM64 syntax WinDbg prints (`arm64.rs`). [`Isa`] picks the instruction set. [`disassemble_forward`] is `u`, [`disassemble_backward`]
//! is `ub` (heuristic, see `backward.rs`), [`disassemble_function`] is `uf`, [`render`] prints
//! any of them. [`instruction_registers`] is shared with other commands and crash
//! analysis; addresses print through [`Bitness::address`] ([`crate::text`]).

mod access;
mod arm64;
mod backward;
mod effects;
mod flow;
mod format;
mod forward;
mod line;
mod registers;
mod render;
mod text;
mod types;

#[cfg(test)]
mod tests;

pub use access::{memory_access, MemoryAccess};
pub use backward::disassemble_backward;
pub use effects::{
    decode_run, instruction_effects, ControlFlow, InstructionEffects, Operand, Store,
};
pub use flow::{disassemble_function, MAX_FLOW_INSTRUCTIONS};
pub use forward::{disassemble_forward, DEFAULT_COUNT};
pub use registers::instruction_registers;
pub use render::render;
pub use types::{
    AddressNamer, Bitness, CodeMemory, DisasmError, Instruction, Isa, MemoryOperand, NoSymbols,
    SliceMemory,
};
