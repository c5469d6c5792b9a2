//! Which registers an instruction uses, for crash analysis ("the faulting instruction uses
//! rax=0").

use iced_x86::{Decoder, DecoderOptions, InstructionInfoFactory, OpKind, Register};

use super::format::{format_instruction, register_name};
use super::types::{Bitness, MemoryOperand, NoSymbols};

/// Decodes the instruction in `bytes` (located at `addr`) and returns its text
/// (`mov dword ptr [rdx],2Ah`, no symbols), the registers it reads or writes — explicitly or
/// implicitly, as full registers of the mode (`rdx` for `edx` on x64, `edx` for `dl` on x86),
/// lower-case, each once, segment registers left out — and its first memory operand.
///
/// `None` when `bytes` does not start with a valid instruction.
pub fn instruction_registers(
    bitness: Bitness,
    bytes: &[u8],
    addr: u64,
) -> Option<(String, Vec<String>, Option<MemoryOperand>)> {
    let (instr, text) = decode_with_text(bitness, bytes, addr)?;

    let mut factory = InstructionInfoFactory::new();
    let mut registers: Vec<String> = Vec::new();
    for used in factory.info(&instr).used_registers() {
        let register = used.register();
        if register.is_segment_register() || register == Register::None {
            continue;
        }
        let name = register_name(full_register(bitness, register));
        if !registers.contains(&name) {
            registers.push(name);
        }
    }
    Some((text, registers, memory_operand(bitness, &instr)))
}

/// The instruction at the start of `bytes` (located at `addr`) and its text without symbols
/// (`mov dword ptr [rdx],2Ah`); `None` when the bytes do not start with a valid instruction.
pub(super) fn decode_with_text(
    bitness: Bitness,
    bytes: &[u8],
    addr: u64,
) -> Option<(iced_x86::Instruction, String)> {
    let addr = bitness.mask(addr);
    let mut decoder = Decoder::with_ip(bitness.bits(), bytes, addr, DecoderOptions::NONE);
    let instr = decoder.decode();
    if instr.is_invalid() {
        return None;
    }
    let formatted = format_instruction(bitness, &instr, &NoSymbols);
    let text = if formatted.operands.is_empty() {
        formatted.mnemonic
    } else {
        format!("{} {}", formatted.mnemonic, formatted.operands)
    };
    Some((instr, text))
}

pub(super) fn full_register(bitness: Bitness, register: Register) -> Register {
    match bitness {
        Bitness::Bits64 => register.full_register(),
        Bitness::Bits32 => register.full_register32(),
    }
}

pub(super) fn memory_operand(
    bitness: Bitness,
    instr: &iced_x86::Instruction,
) -> Option<MemoryOperand> {
    let size = instr.memory_size().size();
    let explicit_segment = match instr.segment_prefix() {
        seg @ (Register::FS | Register::GS) => Some(register_name(seg)),
        _ => None,
    };
    let string_base = |name: &str| MemoryOperand {
        base: Some(name.to_string()),
        index: None,
        scale: 1,
        displacement: 0,
        segment: None,
        size,
    };
    for op in 0..instr.op_count() {
        match instr.op_kind(op) {
            OpKind::Memory => {
                let (base, displacement) = if instr.is_ip_rel_memory_operand() {
                    (None, bitness.mask(instr.ip_rel_memory_address()) as i64)
                } else {
                    let base = instr.memory_base();
                    let displacement = match bitness {
                        Bitness::Bits32 => i64::from(instr.memory_displacement32() as i32),
                        Bitness::Bits64 => instr.memory_displacement64() as i64,
                    };
                    (
                        (base != Register::None).then(|| register_name(base)),
                        displacement,
                    )
                };
                let index = instr.memory_index();
                return Some(MemoryOperand {
                    base,
                    index: (index != Register::None).then(|| register_name(index)),
                    scale: instr.memory_index_scale(),
                    displacement,
                    segment: explicit_segment,
                    size,
                });
            }
            OpKind::MemorySegSI => return Some(string_base("si")),
            OpKind::MemorySegESI => return Some(string_base("esi")),
            OpKind::MemorySegRSI => return Some(string_base("rsi")),
            OpKind::MemoryESDI => return Some(string_base("di")),
            OpKind::MemoryESEDI => return Some(string_base("edi")),
            OpKind::MemoryESRDI => return Some(string_base("rdi")),
            _ => {}
        }
    }
    None
}
