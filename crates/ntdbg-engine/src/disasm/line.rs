//! Decoding one instruction from target memory into one WinDbg line (x86 here, ARM64 in
//! `arm64.rs`), including the three failure
//! shapes: unreadable memory (`??              ???`, one byte), an invalid opcode (its first byte
//! and `???`) and an instruction cut off by the end of readable memory (the readable bytes and
//! `???`).

use iced_x86::{Code, Decoder, DecoderError, DecoderOptions, FlowControl, OpKind};

use super::format::format_instruction;
use super::text::{hex_bytes, layout_line};
use super::types::{AddressNamer, Bitness, CodeMemory, Decoded, Flow, Instruction, Isa};
use crate::text::UNREADABLE;

/// The longest x86 instruction.
pub(crate) const MAX_INSTRUCTION_LEN: usize = 15;

/// Decodes the instruction at `addr`.
pub(crate) fn decode_at(
    isa: Isa,
    memory: &dyn CodeMemory,
    namer: &dyn AddressNamer,
    addr: u64,
) -> Decoded {
    match isa {
        Isa::X86(bitness) => decode_x86(bitness, memory, namer, addr),
        Isa::Arm64 => super::arm64::decode_at(memory, namer, addr),
    }
}

fn decode_x86(
    bitness: Bitness,
    memory: &dyn CodeMemory,
    namer: &dyn AddressNamer,
    addr: u64,
) -> Decoded {
    let addr = bitness.mask(addr);
    let mut buf = [0u8; MAX_INSTRUCTION_LEN];
    let available = memory.read(addr, &mut buf).min(buf.len());
    if available == 0 {
        return failed(bitness, addr, &[], false);
    }
    let bytes = &buf[..available];
    let mut decoder = Decoder::with_ip(bitness.bits(), bytes, addr, DecoderOptions::NONE);
    let instr = decoder.decode();
    if instr.is_invalid() {
        return match decoder.last_error() {
            DecoderError::NoMoreBytes => failed(bitness, addr, bytes, true),
            _ => failed(bitness, addr, &bytes[..1], true),
        };
    }
    let len = instr.len().clamp(1, available);
    let formatted = format_instruction(bitness, &instr, namer);
    let bytes = hex_bytes(&bytes[..len]);
    let text = layout_line(
        &bitness.address(addr),
        &bytes,
        &formatted.mnemonic,
        &formatted.operands,
    );
    let branch_target = is_direct_branch(&instr).then(|| bitness.mask(instr.near_branch_target()));
    Decoded {
        line: Instruction {
            address: addr,
            bytes,
            mnemonic: formatted.mnemonic,
            operands: formatted.operands,
            text,
            label: None,
            branch_target,
            readable: true,
        },
        len: len as u64,
        flow: flow_of(&instr, branch_target),
    }
}

/// A `???` line: unreadable (`bytes` empty, printed as `??`), invalid or truncated.
fn failed(bitness: Bitness, addr: u64, bytes: &[u8], readable: bool) -> Decoded {
    let hex = if readable {
        hex_bytes(bytes)
    } else {
        String::new()
    };
    let shown = if readable { hex.as_str() } else { UNREADABLE };
    let text = layout_line(&bitness.address(addr), shown, "???", "");
    Decoded {
        line: Instruction {
            address: addr,
            bytes: hex,
            mnemonic: "???".to_string(),
            operands: String::new(),
            text,
            label: None,
            branch_target: None,
            readable,
        },
        len: bytes.len().max(1) as u64,
        flow: Flow::Stop,
    }
}

fn is_direct_branch(instr: &iced_x86::Instruction) -> bool {
    (0..instr.op_count()).any(|op| {
        matches!(
            instr.op_kind(op),
            OpKind::NearBranch16 | OpKind::NearBranch32 | OpKind::NearBranch64
        )
    })
}

fn flow_of(instr: &iced_x86::Instruction, target: Option<u64>) -> Flow {
    match (instr.flow_control(), target) {
        (FlowControl::ConditionalBranch, Some(target)) => Flow::Conditional(target),
        (FlowControl::UnconditionalBranch, Some(target)) => Flow::Jump(target),
        (
            FlowControl::Next
            | FlowControl::Call
            | FlowControl::IndirectCall
            | FlowControl::XbeginXabortXend,
            _,
        ) => Flow::Next,
        (FlowControl::Interrupt, _) => match instr.code() {
            Code::Int3 => Flow::Breakpoint,
            // int 29h is __fastfail: it never returns.
            Code::Int_imm8 if instr.immediate8() == 0x29 => Flow::Stop,
            _ => Flow::Next,
        },
        _ => Flow::Stop,
    }
}
