//! `u`: linear disassembly forward from an address, with WinDbg's label lines.

use super::line::decode_at;
use super::types::{AddressNamer, CodeMemory, Instruction, Isa};
use crate::text::has_offset;

/// Instructions WinDbg's `u` and `ub` show when no length is given (x86 and x64 alike).
pub const DEFAULT_COUNT: usize = 8;

/// `u start L<count>`: `count` instructions from `start`.
///
/// Unreadable bytes produce one `??              ???` line per byte, invalid opcodes one `???`
/// line per byte (per 4-byte word on ARM64), so the listing always has `count` lines. The first line gets the label of its
/// address (`crashy!main+0x10`) and every later line that starts a symbol gets that symbol's
/// label, as in WinDbg.
pub fn disassemble_forward(
    isa: impl Into<Isa>,
    memory: &dyn CodeMemory,
    namer: &dyn AddressNamer,
    start: u64,
    count: usize,
) -> Vec<Instruction> {
    let isa = isa.into();
    let mut lines = Vec::with_capacity(count.min(4096));
    let mut addr = isa.mask(start);
    for _ in 0..count {
        let decoded = decode_at(isa, memory, namer, addr);
        addr = isa.mask(addr.wrapping_add(decoded.len));
        lines.push(decoded.line);
    }
    assign_labels(&mut lines, namer);
    lines
}

/// WinDbg's label rule for `u`/`ub`: the first line is labelled with its name, later lines only
/// where a symbol starts (a name without `+0x` offset).
pub(crate) fn assign_labels(lines: &mut [Instruction], namer: &dyn AddressNamer) {
    for (i, line) in lines.iter_mut().enumerate() {
        line.label = namer
            .name(line.address)
            .filter(|name| i == 0 || !has_offset(name))
            .map(|name| with_source_line(namer, line.address, name));
    }
}

/// `name`, followed by ` [file @ line]` when the namer knows the source position of `addr`.
pub(crate) fn with_source_line(namer: &dyn AddressNamer, addr: u64, name: String) -> String {
    match namer.source_line(addr) {
        Some(source) => format!("{name} [{source}]"),
        None => name,
    }
}
