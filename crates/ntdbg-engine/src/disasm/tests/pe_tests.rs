//! Real code: the `.text` of the winelab `crashy.exe` builds (x64 and x86). The x64 build's
//! `.pdata` gives real function bounds for `uf` and instruction boundaries for checking `ub`.

use iced_x86::{Decoder, DecoderOptions};

use super::support::{pe_code, PeCode, TableNamer};
use crate::disasm::{
    disassemble_backward, disassemble_forward, disassemble_function, render, AddressNamer, Bitness,
};

fn x64() -> PeCode {
    pe_code(&ntdbg_testutil::testdata("winelab/x64/crashy.exe"))
}

fn x86() -> PeCode {
    pe_code(&ntdbg_testutil::testdata("winelab/x86/crashy.exe"))
}

/// Symbols of the x64 build: every `.pdata` function as `crashy+0xRVA`, with the ones the
/// winelab facts name (crash_null_write, mode_null, main) by name.
fn x64_namer(code: &PeCode) -> TableNamer {
    let mut namer = TableNamer::default();
    for &(start, end) in &code.functions {
        let name = match start - code.image_base {
            0x2130 => "crashy!crash_null_write".to_string(),
            0x1b50 => "crashy!mode_null".to_string(),
            0x1520 => "crashy!main".to_string(),
            rva => format!("crashy!fn_{rva:x}"),
        };
        namer.function(start, end, &name);
    }
    namer
        .exact
        .insert(code.image_base + 0x29268, "crashy!null_target".to_string());
    namer
}

#[test]
fn x64_u_at_the_null_write() {
    ntdbg_testutil::require_testdata!();
    let code = x64();
    assert_eq!(code.image_base, 0x1_4000_0000);
    let namer = x64_namer(&code);
    let lines = disassemble_forward(Bitness::Bits64, &code.memory(), &namer, 0x1_4000_2134, 5);
    let expected = "\
crashy!crash_null_write+0x4:
00000001`40002134 c70134120000    mov     dword ptr [rcx],1234h
00000001`4000213a 5d              pop     rbp
00000001`4000213b c3              ret
00000001`4000213c 0f1f4000        nop     dword ptr [rax]
crashy!fn_2140:
00000001`40002140 55              push    rbp
";
    assert_eq!(render(&lines), expected);
    assert_eq!(lines[0].bytes, "c70134120000");
    assert_eq!(lines[0].mnemonic, "mov");
    assert_eq!(lines[0].operands, "dword ptr [rcx],1234h");
}

#[test]
fn x64_uf_of_mode_null() {
    ntdbg_testutil::require_testdata!();
    let code = x64();
    let namer = x64_namer(&code);
    let lines =
        disassemble_function(Bitness::Bits64, &code.memory(), &namer, 0x1_4000_1b61).expect("uf");
    let expected = "\
crashy!mode_null:
00000001`40001b50 55              push    rbp
00000001`40001b51 4883ec20        sub     rsp,20h
00000001`40001b55 488d6c2420      lea     rbp,[rsp+20h]
00000001`40001b5a 488b0d07770200  mov     rcx,qword ptr [crashy!null_target (00000001`40029268)]
00000001`40001b61 e8ca050000      call    crashy!crash_null_write (00000001`40002130)
00000001`40001b66 90              nop
00000001`40001b67 4883c420        add     rsp,20h
00000001`40001b6b 5d              pop     rbp
00000001`40001b6c c3              ret
";
    assert_eq!(render(&lines), expected);
    assert_eq!(lines[4].branch_target, Some(0x1_4000_2130));
}

#[test]
fn x64_uf_of_main_follows_every_branch() {
    ntdbg_testutil::require_testdata!();
    let code = x64();
    let namer = x64_namer(&code);
    let (start, end) = (
        0x1_4000_1520,
        namer.function_range(0x1_4000_1520).expect("main").1,
    );
    let lines = disassemble_function(Bitness::Bits64, &code.memory(), &namer, 0x1_4000_18f8)
        .expect("uf main");
    assert_eq!(lines[0].address, start);
    assert_eq!(lines[0].label.as_deref(), Some("crashy!main"));
    assert!(lines.windows(2).all(|w| w[0].address < w[1].address));
    let addresses: std::collections::BTreeSet<u64> = lines.iter().map(|l| l.address).collect();
    for line in &lines {
        assert!((start..end).contains(&line.address), "{}", line.text);
        if let Some(target) = line.branch_target.filter(|t| (start..end).contains(t)) {
            if line.mnemonic != "call" {
                assert!(
                    addresses.contains(&target),
                    "target of {} not listed",
                    line.text
                );
                let labelled = lines.iter().find(|l| l.address == target).expect("target");
                assert!(
                    labelled.label.is_some(),
                    "no label at target of {}",
                    line.text
                );
                assert!(line.text.ends_with("  Branch"), "{}", line.text);
            }
        }
    }
    // Every label but the first names an offset into main.
    for line in lines.iter().skip(1).filter(|l| l.label.is_some()) {
        assert!(line
            .label
            .as_deref()
            .is_some_and(|l| l.starts_with("crashy!main+0x")));
    }
    assert!(lines.iter().any(|l| l.mnemonic == "ret"));
    assert!(lines.len() >= 50, "only {} instructions", lines.len());
    // The call whose return address is frame 2 of the null dump (main+0x3d9).
    let call = lines
        .iter()
        .find(|l| l.address == 0x1_4000_18f4)
        .expect("call mode_null");
    assert_eq!(call.operands, "crashy!mode_null (00000001`40001b50)");
}

#[test]
fn x64_ub_before_the_null_write() {
    ntdbg_testutil::require_testdata!();
    let code = x64();
    let namer = x64_namer(&code);
    let lines = disassemble_backward(Bitness::Bits64, &code.memory(), &namer, 0x1_4000_2134, 3);
    let expected = "\
crashy!fn_1f90+0x198:
00000001`40002128 0f1f840000000000 nop     dword ptr [rax+rax]
crashy!crash_null_write:
00000001`40002130 55              push    rbp
00000001`40002131 4889e5          mov     rbp,rsp
";
    assert_eq!(render(&lines), expected);
}

/// True instruction starts of every `.pdata` function, by linear decoding from its start.
fn boundaries(code: &PeCode) -> Vec<Vec<u64>> {
    code.functions
        .iter()
        .map(|&(start, end)| {
            let bytes = code.bytes_at(start, usize::try_from(end - start).expect("size"));
            let mut decoder = Decoder::with_ip(64, bytes, start, DecoderOptions::NONE);
            let mut starts = Vec::new();
            while decoder.can_decode() {
                let instr = decoder.decode();
                starts.push(instr.ip());
            }
            starts
        })
        .collect()
}

#[test]
fn x64_ub_recovers_real_instruction_boundaries() {
    ntdbg_testutil::require_testdata!();
    let code = x64();
    let memory = code.memory();
    let namer = TableNamer::default();
    let (mut total, mut correct) = (0usize, 0usize);
    for starts in boundaries(&code) {
        // Every 3rd boundary that has at least 8 instructions before it in its function.
        for i in (8..starts.len()).step_by(3) {
            let lines = disassemble_backward(Bitness::Bits64, &memory, &namer, starts[i], 8);
            let got: Vec<u64> = lines.iter().map(|l| l.address).collect();
            total += 1;
            if got == starts[i - 8..i] {
                correct += 1;
            }
        }
    }
    assert!(total > 1000, "only {total} samples");
    // ub is a heuristic; on real compiler output it should almost always be right.
    assert!(correct * 100 >= total * 97, "{correct} of {total} correct");
}

#[test]
fn x86_u_at_the_null_write() {
    ntdbg_testutil::require_testdata!();
    let code = x86();
    assert_eq!(code.image_base, 0x40_0000);
    let mut namer = TableNamer::default();
    namer.function(0x40_1ef0, 0x40_1efb, "crashy!crash_null_write");
    let lines = disassemble_forward(Bitness::Bits32, &code.memory(), &namer, 0x40_1ef3, 4);
    let expected = "\
crashy!crash_null_write+0x3:
00401ef3 c70134120000    mov     dword ptr [ecx],1234h
00401ef9 5d              pop     ebp
00401efa c3              ret
00401efb 90              nop
";
    assert_eq!(render(&lines), expected);
    let back = disassemble_backward(Bitness::Bits32, &code.memory(), &namer, 0x40_1ef3, 2);
    assert_eq!(
        back.iter().map(|l| l.text.as_str()).collect::<Vec<_>>(),
        [
            "00401ef0 55              push    ebp",
            "00401ef1 89e5            mov     ebp,esp"
        ]
    );
    assert_eq!(back[0].label.as_deref(), Some("crashy!crash_null_write"));
}

#[test]
fn x86_ub_recovers_linear_boundaries() {
    ntdbg_testutil::require_testdata!();
    let code = x86();
    let memory = code.memory();
    let namer = TableNamer::default();
    let mut decoder = Decoder::with_ip(32, &code.text, code.text_va, DecoderOptions::NONE);
    let mut starts = Vec::new();
    while decoder.can_decode() {
        starts.push(decoder.decode().ip());
    }
    let (mut total, mut correct) = (0usize, 0usize);
    for i in (64..starts.len()).step_by(7) {
        let lines = disassemble_backward(Bitness::Bits32, &memory, &namer, starts[i], 8);
        total += 1;
        if lines
            .iter()
            .map(|l| l.address)
            .eq(starts[i - 8..i].iter().copied())
        {
            correct += 1;
        }
    }
    assert!(total > 1000, "only {total} samples");
    assert!(correct * 100 >= total * 97, "{correct} of {total} correct");
}
