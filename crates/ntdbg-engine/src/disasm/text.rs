//! The disassembler's own text helpers: MASM hex numbers, byte columns and the `u` line layout
//! (addresses and names come from [`crate::text`]).

use std::fmt::Write as _;

/// Column (relative to the start of the bytes) where the mnemonic starts when the bytes fit.
const MNEMONIC_COLUMN: usize = 16;
/// Column (relative to the start of the bytes) where the operands start when the bytes fit.
const OPERANDS_COLUMN: usize = 24;

/// MASM hex with a fixed number of digits: `00000018h`, `0C0000000h` (leading `0` when the
/// first digit is a letter).
pub(crate) fn masm_hex_fixed(value: u64, digits: usize) -> String {
    let hex = format!("{value:0digits$X}");
    if hex.starts_with(|c: char| c.is_ascii_alphabetic()) {
        format!("0{hex}h")
    } else {
        format!("{hex}h")
    }
}

/// Lower-case hex of `bytes` without separators.
pub(crate) fn hex_bytes(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// One WinDbg disassembly line, laid out as cdb does:
/// - the mnemonic starts 16 columns after the start of the bytes, or one space after bytes that
///   are 16 characters or longer;
/// - the operands start 24 columns after the start of the bytes (25 when the bytes overflowed
///   their column), or one space after a mnemonic that reaches that column.
///
/// ```text
/// 00000001`3f4975e0 83f801          cmp     eax,1
/// 00000001`3f4975f7 c744242053010000 mov     dword ptr [rsp+20h],153h
/// fffff803`a8b8d954 65488b142508620000 mov   rdx,qword ptr gs:[6208h]
/// 00000001`40144e63 c70425000000005c020000 mov dword ptr [0],25Ch
/// ```
pub(crate) fn layout_line(address: &str, bytes: &str, mnemonic: &str, operands: &str) -> String {
    let mut line = String::with_capacity(address.len() + 48 + operands.len());
    line.push_str(address);
    line.push(' ');
    let start = line.len();
    line.push_str(bytes);
    let overflowed = bytes.len() >= MNEMONIC_COLUMN;
    pad_to(&mut line, start + MNEMONIC_COLUMN);
    if overflowed {
        line.push(' ');
    }
    line.push_str(mnemonic);
    if !operands.is_empty() {
        let column = start + OPERANDS_COLUMN + usize::from(overflowed);
        if line.len() < column {
            pad_to(&mut line, column);
        } else {
            line.push(' ');
        }
        line.push_str(operands);
    }
    line
}

fn pad_to(line: &mut String, column: usize) {
    while line.len() < column {
        line.push(' ');
    }
}
