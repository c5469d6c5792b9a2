//! ARM64 decoding for `u`, `ub` and `uf`: yaxpeax-arm decodes, and the text is rewritten into
//! the syntax of Microsoft's disassembler, which WinDbg prints:
//!
//! ```text
//! 00007ffe`d46446c0 a9be7bfd stp         fp,lr,[sp,#-0x20]!
//! 00007ffe`d46446c4 910003fd mov         fp,sp
//! 00007ffe`d46446c8 94000004 bl          xul!foo (00007ffe`d46446d8)
//! 00007ffe`d46446cc 54000061 bne         xul!bar+0x18 (00007ffe`d46446d8)
//! ```
//!
//! - the instruction word as 8 hex digits, the mnemonic in a 12-column field, operands with no
//!   space after commas;
//! - `x29`/`x30` as `fp`/`lr`; conditional branches without the dot (`bne`, not `b.ne`);
//! - immediates below 10 in decimal (`#8`), larger ones in hex with upper-case digits
//!   (`#0x4D0`); shift amounts in decimal (`lsl #12`);
//! - an extend or shift of a memory operand's index separated by a space (`[x9,w8 uxtw #2]`);
//! - PC-relative targets (branches, `adr`, `adrp`) as `module!symbol+0x10 (address)`.

use yaxpeax_arch::{Decoder, U8Reader};
use yaxpeax_arm::armv8::a64::{InstDecoder, Instruction as ArmInstruction, Opcode, Operand};

use super::text::hex_bytes;
use super::types::{AddressNamer, Bitness, CodeMemory, Decoded, Flow, Instruction};

/// Every ARM64 instruction is 4 bytes.
pub(crate) const INSTRUCTION_LEN: u64 = 4;
/// Width of the mnemonic field.
const MNEMONIC_WIDTH: usize = 12;

/// Decodes the instruction at `addr`: unreadable or cut-off words give a `???` line that
/// advances 4 bytes, words that are no instruction their word and `???`.
pub(crate) fn decode_at(memory: &dyn CodeMemory, namer: &dyn AddressNamer, addr: u64) -> Decoded {
    let mut buf = [0u8; INSTRUCTION_LEN as usize];
    let available = memory.read(addr, &mut buf).min(buf.len());
    if available < buf.len() {
        return failed(addr, &buf[..available], available > 0);
    }
    let word = u32::from_le_bytes(buf);
    let decoder = InstDecoder::default();
    let Ok(instr) = decoder.decode(&mut U8Reader::new(&buf)) else {
        return failed(addr, &buf, true);
    };
    let target = pc_relative_target(&instr, addr);
    let (mnemonic, operands) = microsoft_syntax(&instr, target, namer);
    let text = layout(addr, &format!("{word:08x}"), &mnemonic, &operands);
    let branch_target = target.filter(|_| is_branch(instr.opcode));
    Decoded {
        line: Instruction {
            address: addr,
            bytes: hex_bytes(&buf),
            mnemonic,
            operands,
            text,
            label: None,
            branch_target,
            readable: true,
        },
        len: INSTRUCTION_LEN,
        flow: flow_of(instr.opcode, branch_target),
    }
}

/// The address a PC-relative operand names: `adrp` counts from the instruction's 4 KiB page.
fn pc_relative_target(instr: &ArmInstruction, addr: u64) -> Option<u64> {
    let offset = instr.operands.iter().find_map(|op| match op {
        Operand::PCOffset(offset) => Some(*offset),
        _ => None,
    })?;
    let base = if instr.opcode == Opcode::ADRP {
        addr & !0xfff
    } else {
        addr
    };
    Some(base.wrapping_add(offset as u64))
}

/// Direct branches, whose target `uf` may follow (not `adr`/`adrp`, which only name data).
fn is_branch(opcode: Opcode) -> bool {
    matches!(
        opcode,
        Opcode::B
            | Opcode::BL
            | Opcode::Bcc(_)
            | Opcode::CBZ
            | Opcode::CBNZ
            | Opcode::TBZ
            | Opcode::TBNZ
    )
}

fn flow_of(opcode: Opcode, target: Option<u64>) -> Flow {
    match (opcode, target) {
        (Opcode::B, Some(t)) => Flow::Jump(t),
        (Opcode::Bcc(_) | Opcode::CBZ | Opcode::CBNZ | Opcode::TBZ | Opcode::TBNZ, Some(t)) => {
            Flow::Conditional(t)
        }
        (
            Opcode::RET
            | Opcode::RETAA
            | Opcode::RETAB
            | Opcode::BR
            | Opcode::BRAA
            | Opcode::BRAAZ
            | Opcode::BRAB
            | Opcode::BRABZ
            | Opcode::ERET
            | Opcode::BRK
            | Opcode::HLT
            | Opcode::UDF
            | Opcode::Invalid,
            _,
        ) => Flow::Stop,
        _ => Flow::Next,
    }
}

/// A `???` line for a word that cannot be read in full (`????????` when nothing is readable)
/// or that is no instruction.
fn failed(addr: u64, bytes: &[u8], readable: bool) -> Decoded {
    let shown = match bytes.try_into() {
        Ok(word) => format!("{:08x}", u32::from_le_bytes(word)),
        Err(_) if readable => hex_bytes(bytes),
        Err(_) => "????????".to_string(),
    };
    Decoded {
        line: Instruction {
            address: addr,
            bytes: if readable {
                hex_bytes(bytes)
            } else {
                String::new()
            },
            mnemonic: "???".to_string(),
            operands: String::new(),
            text: layout(addr, &shown, "???", ""),
            label: None,
            branch_target: None,
            readable,
        },
        len: INSTRUCTION_LEN,
        flow: Flow::Stop,
    }
}

/// `address word mnemonic(12 columns)operands`, without trailing spaces.
fn layout(addr: u64, word: &str, mnemonic: &str, operands: &str) -> String {
    let mut line = format!("{} {word} {mnemonic}", Bitness::Bits64.address(addr));
    if !operands.is_empty() {
        let pad = MNEMONIC_WIDTH.saturating_sub(mnemonic.len()).max(1);
        line.extend(std::iter::repeat_n(' ', pad));
        line.push_str(operands);
    }
    line
}

/// Mnemonic and operands in Microsoft's syntax, from yaxpeax-arm's text.
fn microsoft_syntax(
    instr: &ArmInstruction,
    target: Option<u64>,
    namer: &dyn AddressNamer,
) -> (String, String) {
    let text = instr.to_string();
    let (mnemonic, operands) = text.split_once(' ').unwrap_or((&text, ""));
    let mnemonic = match mnemonic.strip_prefix("b.") {
        Some(condition) => format!("b{condition}"),
        None => mnemonic.to_string(),
    };
    let target_text = target.map(|t| symbolized_target(namer, t));
    (mnemonic, rewrite_operands(operands, target_text.as_deref()))
}

/// `module!symbol+0x10 (00007ffe`d46446d8)`, or the bare address when nothing names it.
fn symbolized_target(namer: &dyn AddressNamer, target: u64) -> String {
    let address = Bitness::Bits64.address(target);
    match namer.name(target) {
        Some(name) => format!("{name} ({address})"),
        None => address,
    }
}

/// Shift and extend keywords that follow a register.
const MODIFIERS: &[&str] = &[
    "lsl", "lsr", "asr", "ror", "msl", "uxtb", "uxth", "uxtw", "uxtx", "sxtb", "sxth", "sxtw",
    "sxtx",
];

/// Rewrites yaxpeax-arm's operand text (`x29, x30, [sp, #-0x20]!`) token by token.
fn rewrite_operands(operands: &str, target: Option<&str>) -> String {
    let mut out = String::with_capacity(operands.len() + 24);
    let mut depth = 0usize;
    let mut rest = operands;
    while let Some(c) = rest.chars().next() {
        match c {
            '[' => {
                depth += 1;
                out.push(c);
                rest = &rest[1..];
            }
            ']' => {
                depth = depth.saturating_sub(1);
                out.push(c);
                rest = &rest[1..];
            }
            ',' => {
                let after = rest[1..].trim_start();
                let modifier = MODIFIERS.iter().any(|m| starts_with_word(after, m));
                // Inside a memory operand an index's shift or extend follows after a space.
                out.push(if depth > 0 && modifier { ' ' } else { ',' });
                rest = after;
            }
            '$' => {
                let end = rest.find([',', ']']).unwrap_or(rest.len());
                match target {
                    Some(t) => out.push_str(t),
                    None => out.push_str(&rest[..end]),
                }
                rest = &rest[end..];
            }
            '#' => {
                let end = rest[1..]
                    .find([',', ']', ' ', '!'])
                    .map_or(rest.len(), |i| i + 1);
                let after_modifier = MODIFIERS.iter().any(|m| out.ends_with(&format!("{m} ")));
                out.push('#');
                out.push_str(&immediate(&rest[1..end], after_modifier));
                rest = &rest[end..];
            }
            c if c.is_ascii_alphanumeric() => {
                let end = rest
                    .find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '.' || ch == '_'))
                    .unwrap_or(rest.len());
                out.push_str(match &rest[..end] {
                    "x29" => "fp",
                    "x30" => "lr",
                    word => word,
                });
                rest = &rest[end..];
            }
            _ => {
                out.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    out
}

fn starts_with_word(text: &str, word: &str) -> bool {
    text.strip_prefix(word)
        .is_some_and(|rest| !rest.starts_with(|c: char| c.is_ascii_alphanumeric()))
}

/// An immediate (without `#`) in Microsoft's form: shift amounts and values below 10 in
/// decimal, larger values as `0x` with upper-case digits; anything else (floats) unchanged.
fn immediate(text: &str, shift_amount: bool) -> String {
    let (negative, digits) = match text.strip_prefix('-') {
        Some(d) => (true, d),
        None => (false, text),
    };
    let value = match digits.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => digits.parse::<u64>().ok(),
    };
    let Some(value) = value else {
        return text.to_string();
    };
    let sign = if negative { "-" } else { "" };
    if shift_amount || value < 10 {
        format!("{sign}{value}")
    } else {
        format!("{sign}0x{value:X}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::disasm::{NoSymbols, SliceMemory};

    fn line(word: u32, addr: u64) -> String {
        let bytes = word.to_le_bytes();
        let memory = SliceMemory {
            base: addr,
            bytes: &bytes,
        };
        decode_at(&memory, &NoSymbols, addr).line.text
    }

    #[test]
    fn prologue_and_epilogue_in_microsoft_syntax() {
        let at = 0x7ffe_d464_46c0;
        assert_eq!(
            line(0xa9be7bfd, at),
            "00007ffe`d46446c0 a9be7bfd stp         fp,lr,[sp,#-0x20]!"
        );
        assert_eq!(
            line(0x910003fd, at),
            "00007ffe`d46446c0 910003fd mov         fp,sp"
        );
        assert_eq!(
            line(0xf9000bf3, at),
            "00007ffe`d46446c0 f9000bf3 str         x19,[sp,#0x10]"
        );
        assert_eq!(
            line(0xa8c27bfd, at),
            "00007ffe`d46446c0 a8c27bfd ldp         fp,lr,[sp],#0x20"
        );
        assert_eq!(line(0xd65f03c0, at), "00007ffe`d46446c0 d65f03c0 ret");
        assert_eq!(line(0xd503237f, at), "00007ffe`d46446c0 d503237f pacibsp");
        assert_eq!(
            line(0x52800024, at),
            "00007ffe`d46446c0 52800024 mov         w4,#1"
        );
        assert_eq!(
            line(0xd10103ff, at),
            "00007ffe`d46446c0 d10103ff sub         sp,sp,#0x40"
        );
    }

    #[test]
    fn pc_relative_targets_are_absolute() {
        let at = 0x1_4000_1000;
        assert_eq!(
            line(0x94000004, at),
            "00000001`40001000 94000004 bl          00000001`40001010"
        );
        assert_eq!(
            line(0x54000061, at),
            "00000001`40001000 54000061 bne         00000001`4000100c"
        );
        assert_eq!(
            line(0x340001a0, at),
            "00000001`40001000 340001a0 cbz         w0,00000001`40001034"
        );
        assert_eq!(
            line(0x90000008, at),
            "00000001`40001000 90000008 adrp        x8,00000001`40001000"
        );
    }

    #[test]
    fn memory_index_extends_follow_a_space() {
        assert_eq!(
            line(0xb8a87928, 0x1000),
            "00000000`00001000 b8a87928 ldrsw       x8,[x9,x8 lsl #2]"
        );
    }

    #[test]
    fn unreadable_and_invalid_words() {
        let memory = SliceMemory {
            base: 0,
            bytes: &[],
        };
        let d = decode_at(&memory, &NoSymbols, 0x1000);
        assert_eq!(d.line.text, "00000000`00001000 ???????? ???");
        assert_eq!(d.len, 4);
        assert!(!d.line.readable);
        // MSVC pads between functions with 0xcccccccc, which is no instruction.
        assert_eq!(line(0xcccc_cccc, 0x1000), "00000000`00001000 cccccccc ???");
        assert_eq!(line(0, 0x1000), "00000000`00001000 00000000 udf         #0");
    }
}
