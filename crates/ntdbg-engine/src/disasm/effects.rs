//! What one x86/x64 instruction does, for crash analysis: the registers it writes, a constant
//! it loads into a register, a store it makes (to which operand, of which value) and how it
//! passes control on. `uf`-style listings do not need this; the analysis of a faulting
//! instruction's operands does ("`eax` came from `mov eax,4E3C9h`").

use iced_x86::{FlowControl, InstructionInfoFactory, Mnemonic, OpAccess, OpKind, Register};

use super::format::register_name;
use super::registers::{decode_with_text, full_register, memory_operand};
use super::types::{Bitness, MemoryOperand};

/// How an instruction passes control on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ControlFlow {
    /// To the next instruction.
    Next,
    /// A call (direct when the target is known); execution continues after it.
    Call {
        /// The target of a direct call.
        target: Option<u64>,
    },
    /// A jump (direct when the target is known).
    Jump {
        /// The target of a direct jump.
        target: Option<u64>,
        /// Whether it may fall through to the next instruction.
        conditional: bool,
    },
    /// `ret`.
    Return,
    /// An instruction that raises an exception on purpose: `int 3`, `ud2`, `int 29h`
    /// (`__fastfail`), `int N`.
    Trap,
}

/// A write to memory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Store {
    /// Where it writes.
    pub operand: MemoryOperand,
    /// The value, when it is an immediate of the instruction.
    pub immediate: Option<u64>,
    /// The source register, when the value comes from one (full register name).
    pub register: Option<String>,
}

/// One operand of an instruction, as data-flow analysis needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Operand {
    /// A register (full register of the mode: `rax` for `eax` on x64).
    Register(String),
    /// A memory operand (for `lea`, the address it computes).
    Memory(MemoryOperand),
    /// An immediate, as the instruction uses it.
    Immediate(u64),
}

/// One decoded instruction and its effects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InstructionEffects {
    /// Its address.
    pub address: u64,
    /// Its length in bytes.
    pub len: usize,
    /// Its text (`mov eax,4E3C9h`), without symbols.
    pub text: String,
    /// The mnemonic alone, lower-case, without prefixes (`mov`, `lea`, `add`).
    pub mnemonic: String,
    /// Its explicit operands in order (branch targets and string-instruction operands are left
    /// out).
    pub operands: Vec<Operand>,
    /// Registers it writes, as full registers of the mode (`rax` for `eax` on x64).
    pub written: Vec<String>,
    /// `(register, value)` when it sets a register to a constant: `mov reg,imm` (value as the
    /// CPU extends it) or the zeroing idiom `xor reg,reg` / `sub reg,reg`.
    pub constant: Option<(String, u64)>,
    /// The write to memory it makes, if any.
    pub store: Option<Store>,
    /// How it passes control on.
    pub flow: ControlFlow,
}

/// Decodes the instruction at the start of `bytes` (located at `addr`); `None` when the bytes
/// do not start with a valid, complete instruction.
pub fn instruction_effects(
    bitness: Bitness,
    bytes: &[u8],
    addr: u64,
) -> Option<InstructionEffects> {
    let (instr, text) = decode_with_text(bitness, bytes, addr)?;
    let mut factory = InstructionInfoFactory::new();
    let info = factory.info(&instr);
    let mut written: Vec<String> = Vec::new();
    for used in info.used_registers() {
        let register = used.register();
        let writes = matches!(
            used.access(),
            OpAccess::Write | OpAccess::CondWrite | OpAccess::ReadWrite | OpAccess::ReadCondWrite
        );
        if !writes || register.is_segment_register() || register == Register::None {
            continue;
        }
        let name = register_name(full_register(bitness, register));
        if !written.contains(&name) {
            written.push(name);
        }
    }
    let writes_memory = info.used_memory().iter().any(|m| {
        matches!(
            m.access(),
            OpAccess::Write | OpAccess::CondWrite | OpAccess::ReadWrite | OpAccess::ReadCondWrite
        )
    });
    let store = if writes_memory && instr.op_count() >= 1 && instr.op0_kind() == OpKind::Memory {
        memory_operand(bitness, &instr).map(|operand| Store {
            operand,
            immediate: (instr.op_count() >= 2)
                .then(|| immediate(&instr, 1))
                .flatten(),
            register: (instr.op_count() >= 2 && instr.op1_kind() == OpKind::Register)
                .then(|| register_name(full_register(bitness, instr.op1_register()))),
        })
    } else {
        None
    };
    Some(InstructionEffects {
        address: addr,
        len: instr.len(),
        text,
        mnemonic: format!("{:?}", instr.mnemonic()).to_ascii_lowercase(),
        operands: operands(bitness, &instr),
        constant: register_constant(bitness, &instr),
        written,
        store,
        flow: control_flow(&instr),
    })
}

/// Decodes instructions one after another from `start` until the bytes end or stop decoding.
pub fn decode_run(bitness: Bitness, bytes: &[u8], start: u64) -> Vec<InstructionEffects> {
    let mut out = Vec::new();
    let mut offset = 0usize;
    while offset < bytes.len() {
        let Some(effects) =
            instruction_effects(bitness, &bytes[offset..], start.wrapping_add(offset as u64))
        else {
            break;
        };
        offset += effects.len.max(1);
        out.push(effects);
    }
    out
}

/// The explicit register, memory and immediate operands of `instr`.
fn operands(bitness: Bitness, instr: &iced_x86::Instruction) -> Vec<Operand> {
    (0..instr.op_count())
        .filter_map(|op| match instr.op_kind(op) {
            OpKind::Register => Some(Operand::Register(register_name(full_register(
                bitness,
                instr.op_register(op),
            )))),
            OpKind::Memory => memory_operand(bitness, instr).map(Operand::Memory),
            _ => immediate(instr, op).map(Operand::Immediate),
        })
        .collect()
}

/// The value of immediate operand `op`, as the instruction uses it.
fn immediate(instr: &iced_x86::Instruction, op: u32) -> Option<u64> {
    match instr.op_kind(op) {
        OpKind::Immediate8
        | OpKind::Immediate16
        | OpKind::Immediate32
        | OpKind::Immediate64
        | OpKind::Immediate8to16
        | OpKind::Immediate8to32
        | OpKind::Immediate8to64
        | OpKind::Immediate32to64 => Some(instr.immediate(op)),
        _ => None,
    }
}

/// `mov reg,imm` (a 32-bit destination on x64 zero-extends) and the zeroing idioms.
fn register_constant(bitness: Bitness, instr: &iced_x86::Instruction) -> Option<(String, u64)> {
    if instr.op_count() != 2 || instr.op0_kind() != OpKind::Register {
        return None;
    }
    let destination = instr.op0_register();
    let full = register_name(full_register(bitness, destination));
    match instr.mnemonic() {
        Mnemonic::Mov => {
            let value = immediate(instr, 1)?;
            // Only whole-register writes (32-bit ones zero-extend on x64) define the register.
            let size = destination.size();
            let whole = size == bitness.pointer_size() || (size == 4 && bitness == Bitness::Bits64);
            let value = if size == 4 {
                value & 0xffff_ffff
            } else {
                value
            };
            whole.then_some((full, value))
        }
        Mnemonic::Xor | Mnemonic::Sub
            if instr.op1_kind() == OpKind::Register
                && instr.op1_register() == destination
                && destination.size() >= 4 =>
        {
            Some((full, 0))
        }
        _ => None,
    }
}

fn control_flow(instr: &iced_x86::Instruction) -> ControlFlow {
    let target = || match instr.op0_kind() {
        OpKind::NearBranch16 | OpKind::NearBranch32 | OpKind::NearBranch64 => {
            Some(instr.near_branch_target())
        }
        _ => None,
    };
    match instr.flow_control() {
        FlowControl::Next | FlowControl::XbeginXabortXend => ControlFlow::Next,
        FlowControl::Call => ControlFlow::Call { target: target() },
        FlowControl::IndirectCall => ControlFlow::Call { target: None },
        FlowControl::UnconditionalBranch => ControlFlow::Jump {
            target: target(),
            conditional: false,
        },
        FlowControl::IndirectBranch => ControlFlow::Jump {
            target: None,
            conditional: false,
        },
        FlowControl::ConditionalBranch => ControlFlow::Jump {
            target: target(),
            conditional: true,
        },
        FlowControl::Return => ControlFlow::Return,
        FlowControl::Interrupt | FlowControl::Exception => ControlFlow::Trap,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_loads_and_stores() {
        // mov eax,4E3C9h ; mov ebx,[rax]
        let run = decode_run(
            Bitness::Bits64,
            &[0xb8, 0xc9, 0xe3, 0x04, 0x00, 0x8b, 0x18],
            0x1000,
        );
        assert_eq!(run.len(), 2);
        assert_eq!(run[0].constant, Some(("rax".to_string(), 0x4e3c9)));
        assert_eq!(run[0].written, ["rax"]);
        assert_eq!(run[1].written, ["rbx"]);
        assert_eq!(run[1].constant, None);
        // mov dword ptr [rip+0],0DEAD0001h ; ud2
        let bytes = [0xc7, 0x05, 0, 0, 0, 0, 0x01, 0x00, 0xad, 0xde, 0x0f, 0x0b];
        let run = decode_run(Bitness::Bits64, &bytes, 0x2000);
        let store = run[0].store.as_ref().expect("a store");
        assert_eq!(store.immediate, Some(0xdead_0001));
        assert_eq!(store.operand.base, None);
        assert_eq!(store.operand.displacement, 0x200a);
        assert_eq!(run[1].flow, ControlFlow::Trap);
        // xor ecx,ecx ; mov cl,5 (a partial write defines nothing)
        let run = decode_run(Bitness::Bits64, &[0x31, 0xc9, 0xb1, 0x05], 0);
        assert_eq!(run[0].constant, Some(("rcx".to_string(), 0)));
        assert_eq!(run[1].constant, None);
        assert_eq!(run[1].written, ["rcx"]);
        // jne +2 ; mov rax,-1 (sign-extended imm32)
        let run = decode_run(
            Bitness::Bits64,
            &[0x75, 0x02, 0x48, 0xc7, 0xc0, 0xff, 0xff, 0xff, 0xff],
            0x10,
        );
        assert_eq!(
            run[0].flow,
            ControlFlow::Jump {
                target: Some(0x14),
                conditional: true
            }
        );
        assert_eq!(run[1].constant, Some(("rax".to_string(), u64::MAX)));
    }

    #[test]
    fn mnemonics_and_operands() {
        // mov rax,qword ptr [rbx+10h] ; lea rcx,[rax+rdx*4] ; add eax,5
        let bytes = [
            0x48, 0x8b, 0x43, 0x10, 0x48, 0x8d, 0x0c, 0x90, 0x83, 0xc0, 0x05,
        ];
        let run = decode_run(Bitness::Bits64, &bytes, 0);
        assert_eq!(run[0].mnemonic, "mov");
        assert_eq!(run[0].operands[0], Operand::Register("rax".into()));
        let Operand::Memory(m) = &run[0].operands[1] else {
            panic!("a memory operand")
        };
        assert_eq!((m.base.as_deref(), m.displacement), (Some("rbx"), 0x10));
        assert_eq!(run[1].mnemonic, "lea");
        let Operand::Memory(m) = &run[1].operands[1] else {
            panic!("an address")
        };
        assert_eq!((m.index.as_deref(), m.scale), (Some("rdx"), 4));
        assert_eq!(run[2].mnemonic, "add");
        assert_eq!(run[2].operands[1], Operand::Immediate(5));
    }
}
