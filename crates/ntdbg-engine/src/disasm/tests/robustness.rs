//! Unreadable memory, truncated and invalid instructions, the register helper, and
//! pseudo-random input that must never panic.

use super::support::{hex, SparseMemory, TableNamer};
use crate::disasm::{
    disassemble_backward, disassemble_forward, disassemble_function, instruction_registers, render,
    Bitness, CodeMemory, MemoryOperand, NoSymbols, SliceMemory,
};

#[test]
fn unreadable_memory_prints_question_marks_byte_by_byte() {
    let lines = disassemble_forward(Bitness::Bits64, &SparseMemory::default(), &NoSymbols, 0, 3);
    let expected = "\
00000000`00000000 ??              ???
00000000`00000001 ??              ???
00000000`00000002 ??              ???
";
    assert_eq!(render(&lines), expected);
    assert!(lines
        .iter()
        .all(|l| !l.readable && l.mnemonic == "???" && l.bytes.is_empty()));
}

#[test]
fn code_running_into_unreadable_memory() {
    let mut memory = SparseMemory::default();
    memory.map(0x40_2130, &hex("5589e5"));
    let lines = disassemble_forward(Bitness::Bits32, &memory, &NoSymbols, 0x40_2130, 4);
    let expected = "\
00402130 55              push    ebp
00402131 89e5            mov     ebp,esp
00402133 ??              ???
00402134 ??              ???
";
    assert_eq!(render(&lines), expected);
}

#[test]
fn truncated_instruction_at_the_end_of_readable_memory() {
    let mut memory = SparseMemory::default();
    memory.map(0x1_4000_2130, &hex("55c7042500"));
    let lines = disassemble_forward(Bitness::Bits64, &memory, &NoSymbols, 0x1_4000_2130, 3);
    let expected = "\
00000001`40002130 55              push    rbp
00000001`40002131 c7042500        ???
00000001`40002135 ??              ???
";
    assert_eq!(render(&lines), expected);
    assert!(lines[1].readable);
    assert_eq!(lines[1].bytes, "c7042500");
}

#[test]
fn invalid_opcodes_take_one_byte() {
    let mut memory = SparseMemory::default();
    // push es / pop es are invalid in 64-bit mode; then a valid nop.
    memory.map(0x1_4000_1000, &hex("060790"));
    let lines = disassemble_forward(Bitness::Bits64, &memory, &NoSymbols, 0x1_4000_1000, 3);
    let expected = "\
00000001`40001000 06              ???
00000001`40001001 07              ???
00000001`40001002 90              nop
";
    assert_eq!(render(&lines), expected);
    // The same bytes are valid x86.
    let mut memory = SparseMemory::default();
    memory.map(0x1000, &hex("060790"));
    let lines = disassemble_forward(Bitness::Bits32, &memory, &NoSymbols, 0x1000, 2);
    assert_eq!(lines[0].text, "00001000 06              push    es");
}

#[test]
fn slice_memory_reads_only_its_bytes() {
    let bytes = [0x90u8, 0xc3];
    let memory = SliceMemory {
        base: 0x1000,
        bytes: &bytes,
    };
    let mut buf = [0u8; 4];
    assert_eq!(memory.read(0x1000, &mut buf), 2);
    assert_eq!(memory.read(0x1001, &mut buf), 1);
    assert_eq!(memory.read(0x1002, &mut buf), 0);
    assert_eq!(memory.read(0xfff, &mut buf), 0);
    assert_eq!(memory.read(u64::MAX, &mut buf), 0);
}

#[test]
fn registers_of_the_faulting_instruction() {
    let (text, registers, memory) =
        instruction_registers(Bitness::Bits64, &hex("c70134120000"), 0x1_4000_2134).expect("valid");
    assert_eq!(text, "mov dword ptr [rcx],1234h");
    assert_eq!(registers, ["rcx"]);
    assert_eq!(
        memory,
        Some(MemoryOperand {
            base: Some("rcx".into()),
            index: None,
            scale: 1,
            displacement: 0,
            segment: None,
            size: 4,
        })
    );

    // x86, partial registers widen to the 32-bit register; implicit esp of push.
    let (text, mut registers, memory) =
        instruction_registers(Bitness::Bits32, &hex("8a04c5d0e7b701"), 0x0134_4591).expect("mov");
    assert_eq!(text, "mov al,byte ptr [eax*8+1B7E7D0h]");
    registers.sort();
    assert_eq!(registers, ["eax"]);
    let memory = memory.expect("memory operand");
    assert_eq!((memory.index.as_deref(), memory.scale), (Some("eax"), 8));
    assert_eq!(memory.displacement, 0x1b7_e7d0);
    let (_, mut registers, memory) =
        instruction_registers(Bitness::Bits32, &hex("55"), 0x40_1ef0).expect("push");
    registers.sort();
    assert_eq!(registers, ["ebp", "esp"]);
    // The stack access of push is implicit: no memory operand.
    assert!(memory.is_none());

    // Negative displacement, RIP-relative target, segment override, string instruction.
    let (_, _, memory) =
        instruction_registers(Bitness::Bits32, &hex("8b4dfc"), 0x00e9_a9a8).expect("mov");
    assert_eq!(memory.map(|m| m.displacement), Some(-4));
    let (text, registers, memory) =
        instruction_registers(Bitness::Bits64, &hex("488b05f90f0000"), 0x1_4000_1000).expect("rip");
    assert_eq!(text, "mov rax,qword ptr [00000001`40002000]");
    assert_eq!(registers, ["rax"]);
    let memory = memory.expect("memory operand");
    assert_eq!((memory.base, memory.displacement), (None, 0x1_4000_2000));
    let (_, _, memory) =
        instruction_registers(Bitness::Bits64, &hex("65488b042530000000"), 0).expect("gs");
    assert_eq!(memory.and_then(|m| m.segment).as_deref(), Some("gs"));
    let (_, mut registers, memory) =
        instruction_registers(Bitness::Bits64, &hex("f3a4"), 0).expect("movs");
    registers.sort();
    assert_eq!(registers, ["rcx", "rdi", "rsi"]);
    assert_eq!(memory.and_then(|m| m.base).as_deref(), Some("rdi"));

    assert!(instruction_registers(Bitness::Bits64, &hex("06"), 0).is_none());
    assert!(instruction_registers(Bitness::Bits64, &[], 0).is_none());
    assert!(instruction_registers(Bitness::Bits64, &hex("c70425"), 0).is_none());
}

/// A small deterministic generator (xorshift) for fuzz-style inputs.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next() as u8).collect()
    }
}

#[test]
fn random_bytes_never_panic() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for round in 0..200 {
        let bitness = if round % 2 == 0 {
            Bitness::Bits64
        } else {
            Bitness::Bits32
        };
        let base = match round % 4 {
            0 => 0x1_4000_1000,
            1 => 0x40_1000,
            2 => 0,
            _ => u64::MAX - 0x40,
        };
        let len = (rng.next() % 300) as usize + 1;
        let bytes = rng.bytes(len);
        let mut memory = SparseMemory::default();
        memory.map(base, &bytes[..len / 2]);
        // A hole, then the rest.
        if len > 8 {
            memory.map(base.wrapping_add(len as u64 / 2 + 3), &bytes[len / 2 + 3..]);
        }
        let mut namer = TableNamer::default();
        namer.function(base, base.saturating_add(len as u64), "fuzz!f");
        namer.symbol(base.saturating_add(len as u64 / 3), "fuzz!g");
        let start = base.wrapping_add(rng.next() % (len as u64 + 4));
        for namer in [&namer as &dyn crate::disasm::AddressNamer, &NoSymbols] {
            let forward = disassemble_forward(bitness, &memory, namer, start, 20);
            assert_eq!(forward.len(), 20);
            let _ = render(&forward);
            let _ = disassemble_backward(bitness, &memory, namer, start, 9);
            let _ = disassemble_function(bitness, &memory, namer, start);
        }
        for offset in 0..bytes.len().min(16) {
            let _ = instruction_registers(bitness, &bytes[offset..], base);
        }
    }
}

#[test]
fn extreme_addresses_never_panic() {
    let mut memory = SparseMemory::default();
    memory.map(u64::MAX - 2, &hex("909090"));
    memory.map(0, &hex("ebfe"));
    let lines = disassemble_forward(Bitness::Bits64, &memory, &NoSymbols, u64::MAX - 2, 5);
    assert_eq!(lines.len(), 5);
    assert_eq!(lines[3].address, 0);
    assert_eq!(
        lines[3].text,
        "00000000`00000000 ebfe            jmp     00000000`00000000"
    );
    let _ = disassemble_backward(Bitness::Bits64, &memory, &NoSymbols, u64::MAX, 8);
    let _ = disassemble_backward(Bitness::Bits32, &memory, &NoSymbols, u64::MAX, 8);
    let _ = disassemble_function(Bitness::Bits64, &memory, &NoSymbols, u64::MAX - 2);
    let _ = disassemble_backward(Bitness::Bits64, &memory, &NoSymbols, 2, usize::MAX);
    let unreadable = disassemble_backward(Bitness::Bits64, &memory, &NoSymbols, 0x1000, usize::MAX);
    // The readable `jmp` at 0, then one `??` line per byte up to 0x1000.
    assert_eq!(unreadable.len(), 1 + 0x1000 - 2);
    let mut namer = TableNamer::default();
    namer.ranges.push((0x1000, 0x10)); // an inverted range is ignored
    let _ = disassemble_function(Bitness::Bits64, &memory, &namer, 0);
}
