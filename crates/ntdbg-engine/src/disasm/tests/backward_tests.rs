//! `ub` edge cases: padding before a function, little or no readable memory, address 0,
//! count 0, and ends that are not instruction boundaries of any decode.

use super::support::{hex, SparseMemory, TableNamer};
use crate::disasm::{disassemble_backward, render, Bitness, NoSymbols, DEFAULT_COUNT};

fn memory(addr: u64, bytes: &str) -> SparseMemory {
    let mut memory = SparseMemory::default();
    memory.map(addr, &hex(bytes));
    memory
}

fn addresses(lines: &[crate::disasm::Instruction]) -> Vec<u64> {
    lines.iter().map(|l| l.address).collect()
}

#[test]
fn finds_the_function_start_after_padding() {
    // ret ; int 3 x4 ; push ebp ; mov ebp,esp ; mov dword ptr [ecx],1234h | pop ebp
    let mem = memory(0x40_1000, "c3cccccccc5589e5c701341200005d");
    let mut namer = TableNamer::default();
    namer.symbol(0x40_1005, "crashy!crash_null_write");
    let lines = disassemble_backward(Bitness::Bits32, &mem, &namer, 0x40_100e, 3);
    let expected = "\
crashy!crash_null_write:
00401005 55              push    ebp
00401006 89e5            mov     ebp,esp
00401008 c70134120000    mov     dword ptr [ecx],1234h
";
    assert_eq!(render(&lines), expected);
    let lines = disassemble_backward(Bitness::Bits32, &mem, &NoSymbols, 0x40_100e, DEFAULT_COUNT);
    assert_eq!(
        addresses(&lines),
        [0x40_1000, 0x40_1001, 0x40_1002, 0x40_1003, 0x40_1004, 0x40_1005, 0x40_1006, 0x40_1008]
    );
}

#[test]
fn fewer_lines_when_little_memory_is_readable() {
    let mem = memory(0x1_4000_1000, "4889e5c3");
    let lines = disassemble_backward(Bitness::Bits64, &mem, &NoSymbols, 0x1_4000_1004, 8);
    assert_eq!(addresses(&lines), [0x1_4000_1000, 0x1_4000_1003]);
}

#[test]
fn unreadable_bytes_before_the_address_print_as_question_marks() {
    let mem = memory(0x1_4000_1000, "c3");
    let lines = disassemble_backward(Bitness::Bits64, &mem, &NoSymbols, 0x1_4000_1000, 3);
    let expected = "\
00000001`40000ffd ??              ???
00000001`40000ffe ??              ???
00000001`40000fff ??              ???
";
    assert_eq!(render(&lines), expected);
    assert!(lines.iter().all(|l| !l.readable && l.bytes.is_empty()));
}

#[test]
fn count_zero_and_address_zero() {
    let mem = memory(0, "909090");
    assert!(disassemble_backward(Bitness::Bits64, &mem, &NoSymbols, 3, 0).is_empty());
    let lines = disassemble_backward(Bitness::Bits64, &mem, &NoSymbols, 3, 8);
    assert_eq!(addresses(&lines), [0, 1, 2]);
    let lines = disassemble_backward(Bitness::Bits32, &mem, &NoSymbols, 0, 8);
    assert!(lines.is_empty());
}

#[test]
fn only_invalid_bytes_before_the_address() {
    // 0x06 (push es) is invalid in 64-bit mode: no decode lands on the end.
    let mem = memory(0x1_4000_1000, "0606060606");
    let lines = disassemble_backward(Bitness::Bits64, &mem, &NoSymbols, 0x1_4000_1005, 3);
    assert_eq!(lines.len(), 3);
    assert!(lines.iter().all(|l| l.mnemonic == "???"));
    assert_eq!(
        addresses(&lines),
        [0x1_4000_1002, 0x1_4000_1003, 0x1_4000_1004]
    );
}

#[test]
fn x86_addresses_wrap_at_4_gib() {
    let mem = memory(0x40_1000, "5589e5");
    let lines = disassemble_backward(Bitness::Bits32, &mem, &NoSymbols, 0x1_0040_1003, 2);
    assert_eq!(addresses(&lines), [0x40_1000, 0x40_1001]);
}
