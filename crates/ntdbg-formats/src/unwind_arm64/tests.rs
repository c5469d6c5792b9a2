//! ARM64 unwinding on synthetic functions with hand-built stacks, and over every function of a
//! real ARM64 image.

use std::collections::HashMap;

use super::*;
use crate::pe::pdata::read_runtime_functions_arm64;
use crate::pe::{map_file_image, Machine, PeInfo, PeLayout};

/// A stack: address → value.
fn stack(values: &[(u64, u64)]) -> HashMap<u64, u64> {
    values.iter().copied().collect()
}

fn regs(sp: u64, fp: u64, lr: u64) -> Arm64Regs {
    let mut r = Arm64Regs {
        sp,
        pc: 0x1000,
        ..Arm64Regs::default()
    };
    r.x[29] = Some(fp);
    r.x[30] = Some(lr);
    r.x[19] = Some(0x1919);
    r.x[20] = Some(0x2020);
    r
}

fn run(
    entry: &RuntimeFunctionArm64,
    xdata: Option<&[u8]>,
    offset: u32,
    r: &mut Arm64Regs,
    mem: &HashMap<u64, u64>,
) {
    let mut read = |a: u64| mem.get(&a).copied();
    unwind(entry, xdata, offset, r, &mut read).unwrap();
}

/// Packed: RegI=2 (x19, x20), CR=3 (chained fp/lr), 32 bytes of locals, 20 instructions.
/// Prologue: `stp x19,x20,[sp,#-16]!; stp x29,lr,[sp,#-32]!; mov x29,sp`.
fn packed_entry() -> RuntimeFunctionArm64 {
    let frame_size = 3u32; // 48 bytes
    let word = 1 | (20 << 2) | (2 << 16) | (3 << 21) | (frame_size << 23);
    RuntimeFunctionArm64 {
        begin: 0x1000,
        unwind_data: word,
    }
}

#[test]
fn packed_body_prologue_and_epilogue() {
    let entry = packed_entry();
    assert_eq!(function_length(&entry, None).unwrap(), 80);
    let s = 0x7000u64; // sp and fp in the body
    let mem = stack(&[(s, 0xf00d), (s + 8, 0xcafe), (s + 32, 0x19), (s + 40, 0x20)]);

    // Body: everything undone.
    let mut r = regs(s, s, 0x5555);
    run(&entry, None, 4 * 5, &mut r, &mem);
    assert_eq!(
        (r.sp, r.pc, r.x[29], r.x[19], r.x[20]),
        (s + 48, 0xcafe, Some(0xf00d), Some(0x19), Some(0x20))
    );

    // First instruction: nothing to undo.
    let mut r = regs(s + 48, 0x1111, 0x5555);
    run(&entry, None, 0, &mut r, &mem);
    assert_eq!((r.sp, r.pc, r.x[19]), (s + 48, 0x5555, Some(0x1919)));

    // After the first store (sp moved down 16): only x19/x20 restored.
    let mut r = regs(s + 32, 0x1111, 0x5555);
    run(&entry, None, 4, &mut r, &mem);
    assert_eq!(
        (r.sp, r.pc, r.x[19], r.x[29]),
        (s + 48, 0x5555, Some(0x19), Some(0x1111))
    );

    // After `stp x29,lr,[sp,#-32]!` but before `mov x29,sp`.
    let mut r = regs(s, 0x1111, 0x5555);
    run(&entry, None, 8, &mut r, &mem);
    assert_eq!((r.sp, r.pc, r.x[29]), (s + 48, 0xcafe, Some(0xf00d)));

    // Epilogue is 4 instructions at 16..20; at the `ret` everything is already undone.
    let mut r = regs(s + 48, 0x1111, 0x7777);
    run(&entry, None, 4 * 19, &mut r, &mem);
    assert_eq!((r.sp, r.pc), (s + 48, 0x7777));
    // At the first epilogue instruction nothing is undone yet.
    let mut r = regs(s, s, 0x5555);
    run(&entry, None, 4 * 16, &mut r, &mem);
    assert_eq!((r.sp, r.pc), (s + 48, 0xcafe));
}

/// `.xdata` with a single epilogue sharing the prologue codes:
/// prologue `stp x19,x20,[sp,#-32]!; stp x29,lr,[sp,#-16]!; mov x29,sp`,
/// codes `set_fp; save_fplr_x 16; save_r19r20_x 32; end`.
fn xdata_record() -> Vec<u8> {
    let words = 10u32;
    let header = words | (1 << 21) | (1 << 27);
    let mut x = header.to_le_bytes().to_vec();
    x.extend_from_slice(&[0xe1, 0x81, 0x24, 0xe4]);
    x
}

#[test]
fn xdata_body_prologue_and_epilogue() {
    let x = xdata_record();
    let h = XdataHeader::parse(&x).unwrap();
    assert_eq!((h.function_length, h.code_words, h.len()), (40, 1, 8));
    let entry = RuntimeFunctionArm64 {
        begin: 0x2000,
        unwind_data: 0x3000,
    };
    let s = 0x9000u64;
    let mem = stack(&[(s, 0xf00d), (s + 8, 0xcafe), (s + 16, 0x19), (s + 24, 0x20)]);
    let mut r = regs(s, s, 0x5555);
    run(&entry, Some(&x), 4 * 4, &mut r, &mem);
    assert_eq!(
        (r.sp, r.pc, r.x[29], r.x[19], r.x[20]),
        (s + 48, 0xcafe, Some(0xf00d), Some(0x19), Some(0x20))
    );
    // Instruction 0: nothing executed.
    let mut r = regs(s + 48, 1, 0x5555);
    run(&entry, Some(&x), 0, &mut r, &mem);
    assert_eq!((r.sp, r.pc), (s + 48, 0x5555));
    // Instruction 1: only x19/x20 stored.
    let mut r = regs(s + 16, 1, 0x5555);
    run(&entry, Some(&x), 4, &mut r, &mem);
    assert_eq!((r.sp, r.pc, r.x[19]), (s + 48, 0x5555, Some(0x19)));
    // The `ret` at instruction 9: the epilogue undid everything already.
    let mut r = regs(s + 48, 1, 0x6666);
    run(&entry, Some(&x), 4 * 9, &mut r, &mem);
    assert_eq!((r.sp, r.pc), (s + 48, 0x6666));
}

#[test]
fn missing_stack_memory_and_bad_codes_are_errors() {
    let entry = packed_entry();
    let mut r = regs(0x7000, 0x7000, 0x5555);
    let mut nothing = |_: u64| None;
    let err = unwind(&entry, None, 20, &mut r, &mut nothing).unwrap_err();
    assert_eq!(err.code(), "needs_data");
    // alloc_z (SVE) is not supported.
    let mut x = (10u32 | (1 << 27)).to_le_bytes().to_vec();
    x.extend_from_slice(&[0xdf, 0x01, 0xe4, 0xe3]);
    let entry = RuntimeFunctionArm64 {
        begin: 0,
        unwind_data: 0x10,
    };
    let mut r = regs(0x7000, 0x7000, 0x5555);
    let mut read = |_: u64| Some(0);
    assert_eq!(
        unwind(&entry, Some(&x), 8, &mut r, &mut read)
            .unwrap_err()
            .code(),
        "unsupported"
    );
    assert_eq!(XdataHeader::parse(&[1, 2]).unwrap_err().code(), "truncated");
    assert_eq!(strip_pac(0x002a_0000_1234_5678), 0x0000_0000_1234_5678);
    assert_eq!(strip_pac(0xffaa_8000_0000_1000), 0xffff_8000_0000_1000);
}

#[test]
fn every_function_of_a_real_arm64_image() {
    ntdbg_testutil::require_testdata!();
    let path = ntdbg_testutil::testdata(
        "getsentry-symbolic/symbolic-testutils/fixtures/windows/arm64/test.exe",
    );
    let file = std::fs::read(path).unwrap();
    let pe = PeInfo::parse(&file, PeLayout::File).unwrap();
    assert_eq!(pe.machine, Machine::Arm64);
    let image = map_file_image(&file, &pe).unwrap();
    let dir = pe.exception_directory.unwrap();
    let pdata = &image[dir.rva as usize..(dir.rva + dir.size) as usize];
    let entries = read_runtime_functions_arm64(pdata, pe.size_of_image);
    assert!(entries.len() > 10, "{}", entries.len());
    let (mut packed, mut full) = (0, 0);
    for e in &entries {
        let xdata = (e.flag() == 0).then(|| &image[e.unwind_data as usize..]);
        if e.flag() == 0 {
            full += 1;
        } else {
            packed += 1;
        }
        let len = function_length(e, xdata).unwrap();
        assert!(len > 0);
        // At the entry point nothing has run: the frame is unchanged and pc = lr.
        let mut r = regs(0x10_0000, 0x10_0100, 0x4242);
        let mut read = |a: u64| Some(a ^ 0x5a5a);
        unwind(e, xdata, 0, &mut r, &mut read).unwrap();
        assert_eq!((r.sp, r.pc), (0x10_0000, 0x4242), "entry at {:#x}", e.begin);
        // Anywhere in the function the frame unwinds without error.
        for offset in (4..len).step_by(4) {
            let mut r = regs(0x10_0000, 0x10_0000, 0x4242);
            let mut read = |a: u64| Some(a ^ 0x5a5a);
            unwind(e, xdata, offset, &mut r, &mut read)
                .unwrap_or_else(|err| panic!("{:#x}+{offset:#x}: {err}", e.begin));
            assert_ne!(r.pc, 0);
        }
    }
    assert!(packed > 0 && full > 0, "packed {packed}, full {full}");
}
