//! Mnemonic and operand text of one decoded instruction, in WinDbg's dialect of MASM.
//!
//! iced-x86's MASM formatter does the heavy lifting; WinDbg differs from it in a few places that
//! are fixed up here:
//! - every memory operand carries its size (`mov edx,dword ptr [rcx]`), no `short` on branches;
//! - branch targets and RIP-relative operands always print as `module!symbol+0xNN (address)` or
//!   a bare WinDbg address (`00000001`40005000`), never as `140005000h`;
//! - absolute memory operands and 32/64-bit immediates that name a symbol print as
//!   `[sym (addr)]`, `sym (addr)[eax*8]` and `offset sym (addr)`;
//! - x86 `moffs` forms print a full-width displacement: `dword ptr fs:[00000018h]`;
//! - one-operand `mul`/`imul`/`div`/`idiv` show the accumulator: `idiv eax,dword ptr [ebp-0Ch]`,
//!   and three-operand `imul` keeps all three (`imul eax,eax,0Ch`);
//! - string instructions show their operands: `rep movs dword ptr es:[edi],dword ptr [esi]`.

use iced_x86::{
    Code, Formatter, FormatterOutput, FormatterTextKind, Instruction as IcedInstruction,
    MasmFormatter, MemorySizeOptions, Mnemonic, OpKind, Register, SymbolResolver, SymbolResult,
};

use super::text::masm_hex_fixed;
use super::types::{AddressNamer, Bitness};

/// The text parts of one formatted instruction.
pub(crate) struct Formatted {
    /// Mnemonic with prefixes.
    pub mnemonic: String,
    /// Comma-separated operands.
    pub operands: String,
}

/// Formats `instr` as WinDbg would, naming addresses with `namer`.
pub(crate) fn format_instruction(
    bitness: Bitness,
    instr: &IcedInstruction,
    namer: &dyn AddressNamer,
) -> Formatted {
    if instr.is_string_instruction() {
        if let Some(formatted) = format_string_instruction(bitness, instr) {
            return formatted;
        }
    }
    let symbols = operand_symbols(bitness, instr, namer);
    let brackets = symbols.brackets;
    let mut formatter = MasmFormatter::with_options(Some(Box::new(symbols)), None);
    let options = formatter.options_mut();
    options.set_memory_size_options(MemorySizeOptions::Always);
    options.set_show_branch_size(false);
    options.set_branch_leading_zeros(false);
    options.set_masm_symbol_displ_in_brackets(brackets);
    // `imul eax,eax,0Ch`, not iced's shortened `imul eax,0Ch`.
    options.set_use_pseudo_ops(false);

    let mut mnemonic = Text::default();
    formatter.format_mnemonic(instr, &mut mnemonic);
    let mut operands = Text::default();
    formatter.format_all_operands(instr, &mut operands);
    let mut operands = operands.0;
    if let Some(accumulator) = implicit_accumulator(instr) {
        operands = format!("{accumulator},{operands}");
    }
    Formatted {
        mnemonic: mnemonic.0,
        operands,
    }
}

/// A [`FormatterOutput`] collecting plain text.
#[derive(Default)]
struct Text(String);

impl FormatterOutput for Text {
    fn write(&mut self, text: &str, _kind: FormatterTextKind) {
        self.0.push_str(text);
    }
}

/// Symbol texts for the operands of one instruction, handed to iced as its resolver.
struct OperandSymbols {
    /// `(instruction operand index, text)`.
    texts: Vec<(u32, String)>,
    /// Whether a symbolic displacement goes inside the brackets (`[sym (addr)]`) or before them
    /// (`sym (addr)[eax*8]`).
    brackets: bool,
}

impl SymbolResolver for OperandSymbols {
    fn symbol(
        &mut self,
        _instruction: &IcedInstruction,
        _operand: u32,
        instruction_operand: Option<u32>,
        address: u64,
        _address_size: u32,
    ) -> Option<SymbolResult<'_>> {
        let operand = instruction_operand?;
        self.texts
            .iter()
            .find(|(op, _)| *op == operand)
            .map(|(_, text)| SymbolResult::with_str(address, text.as_str()))
    }
}

/// `name (address)` when `namer` knows `addr`.
fn named(bitness: Bitness, namer: &dyn AddressNamer, addr: u64) -> Option<String> {
    namer
        .name(addr)
        .map(|name| format!("{name} ({})", bitness.address(addr)))
}

/// `name (address)`, or the bare WinDbg address.
fn named_or_address(bitness: Bitness, namer: &dyn AddressNamer, addr: u64) -> String {
    named(bitness, namer, addr).unwrap_or_else(|| bitness.address(addr))
}

fn operand_symbols(
    bitness: Bitness,
    instr: &IcedInstruction,
    namer: &dyn AddressNamer,
) -> OperandSymbols {
    let mut symbols = OperandSymbols {
        texts: Vec::new(),
        brackets: true,
    };
    for op in 0..instr.op_count() {
        let text = match instr.op_kind(op) {
            OpKind::NearBranch16 | OpKind::NearBranch32 | OpKind::NearBranch64 => Some(
                named_or_address(bitness, namer, bitness.mask(instr.near_branch_target())),
            ),
            OpKind::Memory => memory_symbol(bitness, instr, namer, &mut symbols.brackets),
            OpKind::Immediate32 | OpKind::Immediate32to64 | OpKind::Immediate64 => {
                named(bitness, namer, instr.immediate(op))
            }
            _ => None,
        };
        if let Some(text) = text {
            symbols.texts.push((op, text));
        }
    }
    symbols
}

/// The symbol text for the displacement of the memory operand, if WinDbg shows one.
fn memory_symbol(
    bitness: Bitness,
    instr: &IcedInstruction,
    namer: &dyn AddressNamer,
    brackets: &mut bool,
) -> Option<String> {
    if instr.is_ip_rel_memory_operand() {
        let target = bitness.mask(instr.ip_rel_memory_address());
        return Some(named_or_address(bitness, namer, target));
    }
    if instr.memory_base() != Register::None {
        return None;
    }
    let displacement = match bitness {
        Bitness::Bits32 => u64::from(instr.memory_displacement32()),
        Bitness::Bits64 => instr.memory_displacement64(),
    };
    if let Some(text) = named(bitness, namer, displacement) {
        if instr.memory_index() != Register::None {
            *brackets = false;
        }
        return Some(text);
    }
    if !is_moffs(instr.code()) {
        return None;
    }
    let digits = match bitness {
        Bitness::Bits32 => 8,
        Bitness::Bits64 => 16,
    };
    let hex = masm_hex_fixed(displacement, digits);
    if bitness == Bitness::Bits32 && instr.segment_prefix() == Register::None {
        // iced drops the implied `ds:` once a symbol text is supplied; WinDbg keeps it.
        *brackets = false;
        Some(format!("ds:[{hex}]"))
    } else {
        Some(hex)
    }
}

fn is_moffs(code: Code) -> bool {
    matches!(
        code,
        Code::Mov_AL_moffs8
            | Code::Mov_AX_moffs16
            | Code::Mov_EAX_moffs32
            | Code::Mov_RAX_moffs64
            | Code::Mov_moffs8_AL
            | Code::Mov_moffs16_AX
            | Code::Mov_moffs32_EAX
            | Code::Mov_moffs64_RAX
    )
}

/// The accumulator WinDbg prints before the single operand of `mul`/`imul`/`div`/`idiv`.
fn implicit_accumulator(instr: &IcedInstruction) -> Option<&'static str> {
    if instr.op_count() != 1
        || !matches!(
            instr.mnemonic(),
            Mnemonic::Mul | Mnemonic::Imul | Mnemonic::Div | Mnemonic::Idiv
        )
    {
        return None;
    }
    let size = match instr.op0_kind() {
        OpKind::Register => instr.op0_register().size(),
        _ => instr.memory_size().size(),
    };
    match size {
        1 => Some("al"),
        2 => Some("ax"),
        4 => Some("eax"),
        8 => Some("rax"),
        _ => None,
    }
}

/// `movs`/`cmps`/`stos`/`lods`/`scas`/`ins`/`outs` with explicit operands, as WinDbg shows them.
fn format_string_instruction(bitness: Bitness, instr: &IcedInstruction) -> Option<Formatted> {
    let (base, size) = string_mnemonic(instr.mnemonic())?;
    let compares = matches!(base, "cmps" | "scas");
    let prefix = if instr.has_repne_prefix() {
        "repne "
    } else if instr.has_rep_prefix() {
        if compares {
            "repe "
        } else {
            "rep "
        }
    } else {
        ""
    };
    let mut parts = Vec::with_capacity(2);
    for op in 0..instr.op_count() {
        match instr.op_kind(op) {
            OpKind::Register if instr.op_register(op) == Register::DX => parts.push("dx".into()),
            OpKind::Register => {}
            kind => parts.push(string_memory_operand(bitness, instr, kind, size)?),
        }
    }
    Some(Formatted {
        mnemonic: format!("{prefix}{base}"),
        operands: parts.join(","),
    })
}

/// Base mnemonic and operand size keyword of a string instruction.
fn string_mnemonic(mnemonic: Mnemonic) -> Option<(&'static str, &'static str)> {
    use Mnemonic as M;
    Some(match mnemonic {
        M::Movsb => ("movs", "byte"),
        M::Movsw => ("movs", "word"),
        M::Movsd => ("movs", "dword"),
        M::Movsq => ("movs", "qword"),
        M::Cmpsb => ("cmps", "byte"),
        M::Cmpsw => ("cmps", "word"),
        M::Cmpsd => ("cmps", "dword"),
        M::Cmpsq => ("cmps", "qword"),
        M::Stosb => ("stos", "byte"),
        M::Stosw => ("stos", "word"),
        M::Stosd => ("stos", "dword"),
        M::Stosq => ("stos", "qword"),
        M::Lodsb => ("lods", "byte"),
        M::Lodsw => ("lods", "word"),
        M::Lodsd => ("lods", "dword"),
        M::Lodsq => ("lods", "qword"),
        M::Scasb => ("scas", "byte"),
        M::Scasw => ("scas", "word"),
        M::Scasd => ("scas", "dword"),
        M::Scasq => ("scas", "qword"),
        M::Insb => ("ins", "byte"),
        M::Insw => ("ins", "word"),
        M::Insd => ("ins", "dword"),
        M::Outsb => ("outs", "byte"),
        M::Outsw => ("outs", "word"),
        M::Outsd => ("outs", "dword"),
        _ => return None,
    })
}

fn string_memory_operand(
    bitness: Bitness,
    instr: &IcedInstruction,
    kind: OpKind,
    size: &str,
) -> Option<String> {
    let (register, destination) = match kind {
        OpKind::MemorySegSI => ("si", false),
        OpKind::MemorySegESI => ("esi", false),
        OpKind::MemorySegRSI => ("rsi", false),
        OpKind::MemoryESDI => ("di", true),
        OpKind::MemoryESEDI => ("edi", true),
        OpKind::MemoryESRDI => ("rdi", true),
        _ => return None,
    };
    let segment = if destination {
        match bitness {
            Bitness::Bits32 => "es:".to_string(),
            Bitness::Bits64 => String::new(),
        }
    } else {
        match instr.segment_prefix() {
            Register::None => String::new(),
            seg => format!("{}:", register_name(seg)),
        }
    };
    Some(format!("{size} ptr {segment}[{register}]"))
}

/// Lower-case register name (`rax`, `xmm0`, `fs`).
pub(crate) fn register_name(register: Register) -> String {
    format!("{register:?}").to_ascii_lowercase()
}
