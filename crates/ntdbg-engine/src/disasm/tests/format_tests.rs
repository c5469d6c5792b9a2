//! WinDbg formatting details beyond the transcripts: address shapes, string instructions,
//! implicit accumulators, `moffs` operands, symbol placement, column overflow and labels.

use super::support::{hex, SparseMemory, TableNamer};
use crate::disasm::{disassemble_forward, render, AddressNamer, Bitness, NoSymbols};

/// The line for `bytes` at `addr`.
fn line(bitness: Bitness, addr: u64, bytes: &str, namer: &dyn AddressNamer) -> String {
    let mut memory = SparseMemory::default();
    memory.map(addr, &hex(bytes));
    disassemble_forward(bitness, &memory, namer, addr, 1)
        .pop()
        .map(|l| l.text)
        .unwrap_or_default()
}

/// The instruction part of the line (after address and bytes), single-spaced.
fn asm(bitness: Bitness, bytes: &str) -> String {
    let addr = match bitness {
        Bitness::Bits32 => 0x40_1000,
        Bitness::Bits64 => 0x1_4000_1000,
    };
    let text = line(bitness, addr, bytes, &NoSymbols);
    text.split_whitespace()
        .skip(2)
        .collect::<Vec<_>>()
        .join(" ")
}

#[test]
fn addresses() {
    assert_eq!(Bitness::Bits64.address(0x1_4000_2134), "00000001`40002134");
    assert_eq!(Bitness::Bits64.address(0), "00000000`00000000");
    assert_eq!(Bitness::Bits64.address(u64::MAX), "ffffffff`ffffffff");
    assert_eq!(Bitness::Bits32.address(0x40_1ef3), "00401ef3");
    assert_eq!(Bitness::Bits32.address(0x1_0040_1ef3), "00401ef3");
}

#[test]
fn string_instructions_show_their_operands() {
    use Bitness::{Bits32 as X86, Bits64 as X64};
    assert_eq!(
        asm(X86, "f3a5"),
        "rep movs dword ptr es:[edi],dword ptr [esi]"
    );
    assert_eq!(asm(X86, "f3ab"), "rep stos dword ptr es:[edi]");
    assert_eq!(asm(X86, "f2ae"), "repne scas byte ptr es:[edi]");
    assert_eq!(
        asm(X86, "f3a6"),
        "repe cmps byte ptr [esi],byte ptr es:[edi]"
    );
    assert_eq!(asm(X86, "ac"), "lods byte ptr [esi]");
    assert_eq!(asm(X86, "64a4"), "movs byte ptr es:[edi],byte ptr fs:[esi]");
    assert_eq!(asm(X86, "6c"), "ins byte ptr es:[edi],dx");
    assert_eq!(asm(X86, "6f"), "outs dx,dword ptr [esi]");
    assert_eq!(asm(X64, "f3a4"), "rep movs byte ptr [rdi],byte ptr [rsi]");
    assert_eq!(asm(X64, "f348ab"), "rep stos qword ptr [rdi]");
    assert_eq!(asm(X64, "f367aa"), "rep stos byte ptr [edi]");
}

#[test]
fn one_operand_multiply_and_divide_show_the_accumulator() {
    use Bitness::{Bits32 as X86, Bits64 as X64};
    assert_eq!(asm(X64, "f7f9"), "idiv eax,ecx");
    assert_eq!(asm(X64, "48f7f1"), "div rax,rcx");
    assert_eq!(asm(X86, "f6e1"), "mul al,cl");
    assert_eq!(asm(X86, "66f7e9"), "imul ax,cx");
    assert_eq!(asm(X86, "f76df4"), "imul eax,dword ptr [ebp-0Ch]");
    assert_eq!(asm(X86, "0fafc1"), "imul eax,ecx");
    assert_eq!(asm(X86, "6bc00c"), "imul eax,eax,0Ch");
}

#[test]
fn moffs_operands_print_full_width() {
    use Bitness::{Bits32 as X86, Bits64 as X64};
    assert_eq!(asm(X86, "64a118000000"), "mov eax,dword ptr fs:[00000018h]");
    assert_eq!(asm(X86, "a300000000"), "mov dword ptr ds:[00000000h],eax");
    assert_eq!(asm(X86, "a078563412"), "mov al,byte ptr ds:[12345678h]");
    assert_eq!(asm(X86, "a1000000c0"), "mov eax,dword ptr ds:[0C0000000h]");
    assert_eq!(
        asm(X64, "48a13000fe7f00000000"),
        "mov rax,qword ptr [000000007FFE0030h]"
    );
    let mut namer = TableNamer::default();
    namer.symbol(0x0042_c000, "crashy!g_value");
    assert_eq!(
        line(Bitness::Bits32, 0x40_1000, "a104c04200", &namer),
        "00401000 a104c04200      mov     eax,dword ptr [crashy!g_value+0x4 (0042c004)]"
    );
}

#[test]
fn absolute_and_rip_relative_operands() {
    use Bitness::{Bits32 as X86, Bits64 as X64};
    assert_eq!(
        asm(X86, "c705000000005c020000"),
        "mov dword ptr ds:[0],25Ch"
    );
    assert_eq!(asm(X86, "8b0d34120000"), "mov ecx,dword ptr ds:[1234h]");
    assert_eq!(asm(X86, "648b0d00000000"), "mov ecx,dword ptr fs:[0]");
    assert_eq!(asm(X64, "c70425000000005c020000"), "mov dword ptr [0],25Ch");
    assert_eq!(asm(X64, "65488b042530000000"), "mov rax,qword ptr gs:[30h]");
    // RIP-relative: the target address, never [rip+...].
    assert_eq!(
        asm(X64, "488b05f90f0000"),
        "mov rax,qword ptr [00000001`40002000]"
    );
    assert_eq!(
        asm(X64, "ff25fa0f0000"),
        "jmp qword ptr [00000001`40002000]"
    );
    let mut namer = TableNamer::default();
    namer.symbol(0x1_4000_2000, "crashy!__imp_ExitProcess");
    assert_eq!(
        line(Bitness::Bits64, 0x1_4000_1000, "ff15fa0f0000", &namer),
        "00000001`40001000 ff15fa0f0000    call    qword ptr [crashy!__imp_ExitProcess (00000001`40002000)]"
    );
    // A symbolic displacement with an index register goes before the brackets.
    namer.symbol(0x0042_6000, "crashy!table");
    assert_eq!(
        line(Bitness::Bits32, 0x40_1000, "ff248500604200", &namer),
        "00401000 ff248500604200  jmp     dword ptr crashy!table (00426000)[eax*4]"
    );
    // A displacement off a base register is never a symbol.
    assert_eq!(
        line(Bitness::Bits32, 0x40_1000, "8b8000604200", &namer),
        "00401000 8b8000604200    mov     eax,dword ptr [eax+426000h]"
    );
}

#[test]
fn branch_targets_and_immediates() {
    use Bitness::{Bits32 as X86, Bits64 as X64};
    assert_eq!(asm(X86, "e8fb0f0000"), "call 00402000");
    assert_eq!(asm(X86, "ebfe"), "jmp 00401000");
    assert_eq!(asm(X64, "0f84fa0f0000"), "je 00000001`40002000");
    assert_eq!(asm(X64, "e2fe"), "loop 00000001`40001000");
    assert_eq!(asm(X86, "6a03"), "push 3");
    assert_eq!(asm(X86, "6afe"), "push 0FFFFFFFEh");
    assert_eq!(asm(X64, "4883e4f0"), "and rsp,0FFFFFFFFFFFFFFF0h");
    assert_eq!(asm(X64, "48b8efcdab8967452301"), "mov rax,123456789ABCDEFh");
    assert_eq!(asm(X64, "cd29"), "int 29h");
    let mut namer = TableNamer::default();
    namer.symbol(0x0042_6000, "crashy!`string'");
    assert_eq!(
        line(Bitness::Bits32, 0x40_1000, "6800604200", &namer),
        "00401000 6800604200      push    offset crashy!`string' (00426000)"
    );
    assert_eq!(
        line(Bitness::Bits32, 0x40_1000, "b800604200", &namer),
        "00401000 b800604200      mov     eax,offset crashy!`string' (00426000)"
    );
}

#[test]
fn vector_and_prefixed_instructions() {
    use Bitness::Bits64 as X64;
    assert_eq!(asm(X64, "0f29742430"), "movaps xmmword ptr [rsp+30h],xmm6");
    assert_eq!(asm(X64, "f30f7f01"), "movdqu xmmword ptr [rcx],xmm0");
    assert_eq!(asm(X64, "f00fb10a"), "lock cmpxchg dword ptr [rdx],ecx");
    assert_eq!(asm(X64, "660f1f840000000000"), "nop word ptr [rax+rax]");
    assert_eq!(asm(X64, "0f0b"), "ud2");
    assert_eq!(asm(X64, "c5fd6f01"), "vmovdqa ymm0,ymmword ptr [rcx]");
}

#[test]
fn columns_overflow_like_windbg() {
    // A mnemonic reaching the operand column is followed by a single space.
    assert_eq!(
        line(Bitness::Bits64, 0x1_4000_1000, "f00fb10a", &NoSymbols),
        "00000001`40001000 f00fb10a        lock cmpxchg dword ptr [rdx],ecx"
    );
    assert_eq!(
        line(Bitness::Bits32, 0x40_1000, "f3ab", &NoSymbols),
        "00401000 f3ab            rep stos dword ptr es:[edi]"
    );
    // Bytes of 16+ characters push the mnemonic; operands still align to column 25.
    assert_eq!(
        line(
            Bitness::Bits64,
            0x1_4000_1000,
            "65488b142508620000",
            &NoSymbols
        ),
        "00000001`40001000 65488b142508620000 mov   rdx,qword ptr gs:[6208h]"
    );
    assert_eq!(
        line(
            Bitness::Bits64,
            0x1_4000_1000,
            "8189c862000040001000",
            &NoSymbols
        ),
        "00000001`40001000 8189c862000040001000 or  dword ptr [rcx+62C8h],100040h"
    );
}

#[test]
fn labels_start_symbols_and_carry_source_lines() {
    let mut memory = SparseMemory::default();
    memory.map(0x40_1000, &hex("5dc3cc558bec"));
    let mut namer = TableNamer::default();
    namer.symbol(0x40_0ff0, "crashy!first");
    namer.symbol(0x40_1003, "crashy!second");
    namer
        .lines
        .insert(0x40_1003, "c:\\src\\crashy.c @ 12".to_string());
    let lines = disassemble_forward(Bitness::Bits32, &memory, &namer, 0x40_1000, 5);
    let expected = "\
crashy!first+0x10:
00401000 5d              pop     ebp
00401001 c3              ret
00401002 cc              int     3
crashy!second [c:\\src\\crashy.c @ 12]:
00401003 55              push    ebp
00401004 8bec            mov     ebp,esp
";
    assert_eq!(render(&lines), expected);
    // Without any symbols there are no label lines at all.
    let bare = disassemble_forward(Bitness::Bits32, &memory, &NoSymbols, 0x40_1000, 2);
    assert!(bare.iter().all(|l| l.label.is_none()));
}
