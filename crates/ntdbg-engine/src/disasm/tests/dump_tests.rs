//! Code bytes from a real minidump: lldb's `sigsegv.dmp` holds the code around the faulting
//! `mov dword ptr [0],0` at 0x7ff7a13110d9 (lldb's own `dis` output is in its EXPECTED.json).

use minidump::{Minidump, UnifiedMemory};

use super::support::SparseMemory;
use crate::disasm::{disassemble_backward, disassemble_forward, render, Bitness, NoSymbols};

const DUMP: &str = "llvm-lldb/test/Shell/Minidump/Windows/Sigsegv/Inputs/sigsegv.dmp";
const FAULT: u64 = 0x7ff7_a131_10d9;

/// All memory ranges of the dump.
fn dump_memory() -> SparseMemory {
    let dump = Minidump::read_path(ntdbg_testutil::testdata(DUMP)).expect("dump");
    let list = dump.get_memory().expect("memory list");
    let mut memory = SparseMemory::default();
    for region in list.iter() {
        let base = match &region {
            UnifiedMemory::Memory(m) => m.base_address,
            UnifiedMemory::Memory64(m) => m.base_address,
        };
        if base.abs_diff(FAULT) < 0x1_0000 {
            memory.map(base, region.bytes());
        }
    }
    memory
}

#[test]
fn u_at_the_faulting_instruction() {
    ntdbg_testutil::require_testdata!();
    let memory = dump_memory();
    let lines = disassemble_forward(Bitness::Bits64, &memory, &NoSymbols, FAULT, 6);
    let expected = "\
00007ff7`a13110d9 c704250000000000000000 mov dword ptr [0],0
00007ff7`a13110e4 488d0d451f0000  lea     rcx,[00007ff7`a1313030]
00007ff7`a13110eb e829ffffff      call    00007ff7`a1311019
00007ff7`a13110f0 4883c428        add     rsp,28h
00007ff7`a13110f4 c3              ret
00007ff7`a13110f5 cc              int     3
";
    assert_eq!(render(&lines), expected);
    assert_eq!(lines[2].branch_target, Some(0x7ff7_a131_1019));
}

#[test]
fn ub_ends_exactly_at_the_faulting_instruction() {
    ntdbg_testutil::require_testdata!();
    let memory = dump_memory();
    let lines = disassemble_backward(Bitness::Bits64, &memory, &NoSymbols, FAULT, 8);
    assert!(!lines.is_empty());
    let last = lines.last().expect("line");
    let end = last.address + last.bytes.len() as u64 / 2;
    assert_eq!(end, FAULT);
    assert!(lines.iter().all(|l| l.readable && l.mnemonic != "???"));
}
