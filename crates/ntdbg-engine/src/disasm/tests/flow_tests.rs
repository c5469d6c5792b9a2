//! `uf` on small hand-assembled functions: block splitting, labels, `Branch` marks, tail calls,
//! padding, and the error cases.

use super::support::{hex, SparseMemory, TableNamer};
use crate::disasm::{
    disassemble_function, render, Bitness, DisasmError, NoSymbols, MAX_FLOW_INSTRUCTIONS,
};

const BASE: u64 = 0x1_4000_1000;
const BASE32: u64 = 0x40_1000;

fn memory(bytes: &str) -> SparseMemory {
    memory_at(BASE, bytes)
}

fn memory_at(addr: u64, bytes: &str) -> SparseMemory {
    let mut memory = SparseMemory::default();
    memory.map(addr, &hex(bytes));
    memory
}

#[test]
fn blocks_are_labelled_in_address_order() {
    // f: test ecx,ecx ; je f+0xa ; mov eax,1 ; ret ; (f+0xa) xor eax,eax ; jmp f+2
    let code = "85c97406b801000000c331c0ebf4";
    let mut namer = TableNamer::default();
    namer.function(BASE, BASE + 14, "t!f");
    let lines = disassemble_function(Bitness::Bits64, &memory(code), &namer, BASE + 9).expect("uf");
    let expected = "\
t!f:
00000001`40001000 85c9            test    ecx,ecx
t!f+0x2:
00000001`40001002 7406            je      t!f+0xa (00000001`4000100a)  Branch
t!f+0x4:
00000001`40001004 b801000000      mov     eax,1
00000001`40001009 c3              ret
t!f+0xa:
00000001`4000100a 31c0            xor     eax,eax
00000001`4000100c ebf4            jmp     t!f+0x2 (00000001`40001002)  Branch
";
    assert_eq!(render(&lines), expected);
}

#[test]
fn tail_calls_to_other_symbols_are_not_followed() {
    // f: xor edx,edx ; jmp g      g: ret
    let code = "33d2e900000000c3";
    let mut namer = TableNamer::default();
    namer.function(BASE, BASE + 7, "t!f");
    namer.function(BASE + 7, BASE + 8, "t!g");
    let lines = disassemble_function(Bitness::Bits64, &memory(code), &namer, BASE).expect("uf");
    assert_eq!(lines.len(), 2);
    assert_eq!(
        lines[1].text,
        "00000001`40001002 e900000000      jmp     t!g (00000001`40001007)  Branch"
    );
}

#[test]
fn split_chunks_of_the_same_function_are_followed() {
    // f: test ecx,ecx ; jne cold ; ret ... cold (f+0x100): mov eax,1 ; ret
    let mut mem = memory("85c90f85f8000000c3");
    mem.map(BASE + 0x100, &hex("b801000000c3"));
    let mut namer = TableNamer::default();
    namer.function(BASE, BASE + 9, "t!f");
    let lines = disassemble_function(Bitness::Bits64, &mem, &namer, BASE).expect("uf");
    let labels: Vec<_> = lines.iter().filter_map(|l| l.label.as_deref()).collect();
    assert_eq!(labels, ["t!f", "t!f+0x8", "t!f+0x100"]);
    assert_eq!(lines.len(), 5);
}

#[test]
fn int3_padding_ends_a_block_but_an_inline_breakpoint_does_not() {
    // MOZ_CRASH shape: int 3 followed by code, then ret and padding, then another function.
    let code = "cc6a03c3cccccc55";
    let mut namer = TableNamer::default();
    namer.function(BASE32, BASE32 + 7, "t!f");
    let mem = memory_at(BASE32, code);
    let lines = disassemble_function(Bitness::Bits32, &mem, &namer, BASE32).expect("uf");
    let mnemonics: Vec<_> = lines.iter().map(|l| l.mnemonic.as_str()).collect();
    assert_eq!(mnemonics, ["int", "push", "ret"]);
    // Without a range, int 3 followed by int 3 stops the flow.
    let mem = memory_at(BASE32, "90cccc90");
    let lines = disassemble_function(Bitness::Bits32, &mem, &NoSymbols, BASE32).expect("uf");
    assert_eq!(lines.len(), 2);
}

#[test]
fn without_symbols_labels_are_addresses() {
    let code = "740290c3c3";
    let lines = disassemble_function(Bitness::Bits64, &memory(code), &NoSymbols, BASE).expect("uf");
    let labels: Vec<_> = lines.iter().filter_map(|l| l.label.as_deref()).collect();
    assert_eq!(
        labels,
        [
            "00000001`40001000",
            "00000001`40001002",
            "00000001`40001004"
        ]
    );
}

#[test]
fn self_loops_and_fastfail_terminate() {
    let lines =
        disassemble_function(Bitness::Bits64, &memory("ebfe"), &NoSymbols, BASE).expect("uf");
    assert_eq!(lines.len(), 1);
    let lines = disassemble_function(
        Bitness::Bits64,
        &memory("b907000000cd2990"),
        &NoSymbols,
        BASE,
    )
    .expect("uf");
    assert_eq!(lines.len(), 2);
    let lines =
        disassemble_function(Bitness::Bits64, &memory("0f0b90"), &NoSymbols, BASE).expect("uf");
    assert_eq!(lines.len(), 1);
}

#[test]
fn branch_into_unreadable_memory_shows_one_unreadable_line() {
    // jne far away (unreadable), then ret.
    let lines = disassemble_function(Bitness::Bits64, &memory("0f8500100000c3"), &NoSymbols, BASE)
        .expect("uf");
    assert_eq!(lines.len(), 3);
    let last = lines.last().expect("line");
    assert!(!last.readable);
    assert_eq!(last.text, "00000001`40002006 ??              ???");
}

#[test]
fn errors() {
    let empty = SparseMemory::default();
    assert_eq!(
        disassemble_function(Bitness::Bits64, &empty, &NoSymbols, BASE),
        Err(DisasmError::NoCode(BASE))
    );
    assert_eq!(
        disassemble_function(Bitness::Bits64, &memory("0606"), &NoSymbols, BASE),
        Err(DisasmError::NoCode(BASE))
    );
    let nops = "90".repeat(MAX_FLOW_INSTRUCTIONS + 10);
    let err = disassemble_function(Bitness::Bits64, &memory(&nops), &NoSymbols, BASE)
        .expect_err("too long");
    assert_eq!(err, DisasmError::NoFunctionBounds(BASE));
    assert_eq!(
        err.to_string(),
        "No function bounds known for 0x140001000; use u"
    );
    assert_eq!(
        DisasmError::NoCode(BASE).to_string(),
        "No code found, aborting"
    );
    // With a known range the flow stops at its end.
    let mut namer = TableNamer::default();
    namer.function(BASE, BASE + 2005, "t!big");
    let lines = disassemble_function(Bitness::Bits64, &memory(&nops), &namer, BASE).expect("uf");
    assert_eq!(lines.len(), 2005);
}
