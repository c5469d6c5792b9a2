//! `walk_frame` on real stacks: x64 through the image's `.pdata` (framehop), x86 through the
//! PDB's frame data (`STACK WIN`), ARM64 through `ntdbg_formats::unwind_arm64`; and the
//! refusal to answer when the unwind data is not really in the dump.

use crate::common;

use std::sync::Arc;

use common::*;
use minidump::{
    Minidump, MinidumpException, MinidumpMiscInfo, MinidumpModuleList, MinidumpSystemInfo,
};
use ntdbg_formats::pe::{map_file_image, PeInfo, PeLayout};
use ntdbg_symbols::{ImageSource, ModuleSymbols, SharedBytes, SymbolPath, SymbolStore};

/// The crashing thread's registers, the dump's memory, and the module holding `name`.
fn crash_state(rel: &str, word: u64) -> (TestWalker, minidump::MinidumpModule) {
    let dump = Minidump::read_path(testdata(rel)).unwrap();
    let sys = dump.get_stream::<MinidumpSystemInfo>().unwrap();
    let misc = dump.get_stream::<MinidumpMiscInfo>().ok();
    let exception = dump.get_stream::<MinidumpException>().unwrap();
    let ctx = exception.context(&sys, misc.as_ref()).unwrap();
    let regs: Vec<(&'static str, u64)> = ctx.valid_registers().collect();
    let ip = ctx.get_instruction_pointer();
    let mut walker = TestWalker::new(ip, &regs, word);
    walker.regions = dump_regions(&dump);
    let modules = dump.get_stream::<MinidumpModuleList>().unwrap();
    let module = modules.module_at_address(ip).unwrap().clone();
    (walker, module)
}

/// The next frame's walker: the caller's registers become the callee's.
fn caller_of(w: &TestWalker, ip_reg: &'static str, sp_reg: &'static str, back: u64) -> TestWalker {
    let mut callee = w.callee.clone();
    for (name, value) in &w.caller {
        if let Some((k, _)) = w.callee.get_key_value(name.as_str()) {
            callee.insert(k, *value);
        }
    }
    // Breakpad's STACK WIN evaluator sets $eip/$esp as registers; the others use set_ra/set_cfa.
    let ra = w.ra.or_else(|| w.caller.get(ip_reg).copied()).unwrap();
    let cfa = w.cfa.or_else(|| w.caller.get(sp_reg).copied()).unwrap();
    callee.insert(ip_reg, ra);
    callee.insert(sp_reg, cfa);
    TestWalker {
        instruction: ra - back,
        has_grand_callee: true,
        callee,
        stack: w.stack.clone(),
        regions: w.regions.clone(),
        any: w.any,
        word: w.word,
        caller: Default::default(),
        cfa: None,
        ra: None,
    }
}

fn symbols(dir: &str, module: &minidump::MinidumpModule) -> Arc<ModuleSymbols> {
    SymbolStore::new(SymbolPath::parse(dir).unwrap()).module(module, &no_memory)
}

#[test]
fn x64_frames_from_pdata_match_minidump_stackwalk() {
    ntdbg_testutil::require_testdata!();
    // winelab/facts/x64/null.inproc.json: frames at 0x...2134, then (return address − 1)
    // 0x...1b65 (mode_null), 0x...18f8 (main), 0x...13ad.
    let (mut w, module) = crash_state("winelab/x64/null.inproc.dmp", 8);
    assert_eq!(w.instruction, 0x1_4000_2134);
    let m = symbols(testdata("winelab/x64").to_str().unwrap(), &module);
    assert!(matches!(m.unwind_source(), Some(ImageSource::File(_))));
    let mut frames = vec![w.instruction];
    for _ in 0..3 {
        assert!(
            m.walk_frame(&module, &mut w).is_some(),
            "frame at {:#x}",
            w.instruction
        );
        let next = caller_of(&w, "rip", "rsp", 1);
        frames.push(next.instruction);
        w = next;
    }
    assert_eq!(
        frames,
        vec![0x1_4000_2134, 0x1_4000_1b65, 0x1_4000_18f8, 0x1_4000_13ad]
    );
}

#[test]
fn x86_frames_from_stack_win_match_minidump_stackwalk() {
    ntdbg_testutil::require_testdata!();
    // winelab/facts/x86/null.inproc.json: 0x401ef3, then 0x401a5d (mode_null), 0x40185c (main).
    let (mut w, module) = crash_state("winelab/x86/null.inproc.dmp", 4);
    assert_eq!(w.instruction, 0x401ef3);
    let m = symbols(testdata("winelab/x86").to_str().unwrap(), &module);
    // x86 images have no .pdata: all unwinding comes from the PDB.
    assert!(m.unwind_source().is_none());
    let mut frames = vec![w.instruction];
    for _ in 0..2 {
        assert!(
            m.walk_frame(&module, &mut w).is_some(),
            "frame at {:#x}",
            w.instruction
        );
        let next = caller_of(&w, "eip", "esp", 1);
        frames.push(next.instruction);
        w = next;
    }
    assert_eq!(frames, vec![0x401ef3, 0x401a5d, 0x40185c]);
}

/// Serves crashy.exe's mapped image at its base, except the byte ranges in `holes`.
fn memory_image(holes: Vec<std::ops::Range<u64>>) -> impl Fn(u64, usize) -> Option<SharedBytes> {
    let file = std::fs::read(testdata("winelab/x64/crashy.exe")).unwrap();
    let pe = PeInfo::parse(&file, PeLayout::File).unwrap();
    let image = map_file_image(&file, &pe).unwrap();
    move |addr: u64, len: usize| {
        let rva = addr.checked_sub(CRASHY_X64_BASE)?;
        let end = rva + len as u64;
        if holes.iter().any(|h| rva < h.end && end > h.start) {
            return None;
        }
        image
            .get(rva as usize..end as usize)
            .map(|b| SharedBytes::from(b.to_vec()))
    }
}

#[test]
fn x64_image_from_dump_memory_and_holes() {
    ntdbg_testutil::require_testdata!();
    let (w0, module) = crash_state("winelab/x64/null.inproc.dmp", 8);
    let empty = Scratch::new("mem");
    // First frame unwound once with the file, to get the state of frame 1 (mode_null).
    let with_file = symbols(testdata("winelab/x64").to_str().unwrap(), &module);
    let mut w = w0;
    with_file.walk_frame(&module, &mut w).unwrap();
    let frame1 = caller_of(&w, "rip", "rsp", 1);

    // The whole image in memory: same answer as from the file.
    let store = SymbolStore::new(SymbolPath::parse(&empty.path_text()).unwrap());
    let m = store.module(&module, &memory_image(vec![]));
    assert_eq!(m.unwind_source(), Some(&ImageSource::DumpMemory));
    assert!(
        m.tried()
            .iter()
            .any(|t| t.ends_with("image in dump memory: complete")),
        "{:?}",
        m.tried()
    );
    let mut a = caller_of(&w, "rip", "rsp", 1);
    m.walk_frame(&module, &mut a).unwrap();
    assert_eq!(caller_of(&a, "rip", "rsp", 1).instruction, 0x1_4000_18f8);

    // mode_null's UNWIND_INFO missing from the dump: no answer rather than a guess.
    let file = std::fs::read(testdata("winelab/x64/crashy.exe")).unwrap();
    let pe = PeInfo::parse(&file, PeLayout::File).unwrap();
    let dir = pe.exception_directory.unwrap();
    let pdata = pe
        .data_at_rva(&file, PeLayout::File, dir.rva, dir.size, "pdata")
        .unwrap();
    let entries = ntdbg_formats::pe::pdata::read_runtime_functions_x64(pdata, pe.size_of_image);
    let f = ntdbg_formats::pe::pdata::lookup_x64(&entries, 0x1b64).unwrap();
    let hole = u64::from(f.unwind_info)..u64::from(f.unwind_info) + 4;
    let store = SymbolStore::new(SymbolPath::parse(&empty.path_text()).unwrap());
    let m = store.module(&module, &memory_image(vec![hole]));
    assert_eq!(m.unwind_source(), Some(&ImageSource::DumpMemory));
    assert!(
        m.tried()
            .iter()
            .any(|t| t.contains("image in dump memory: partial")),
        "{:?}",
        m.tried()
    );
    let mut b = frame1;
    assert!(m.walk_frame(&module, &mut b).is_none());
}

#[test]
fn x64_leaf_without_pdata_entry() {
    ntdbg_testutil::require_testdata!();
    // An address no RUNTIME_FUNCTION covers (here: the headers) is a leaf function's, which
    // the stack walker unwinds itself (checking that [rsp] follows a call): the unwind tables
    // give no answer there, only the fact that no entry covers it.
    let module = crashy_x64_wine_module();
    let m = symbols(testdata("winelab/x64").to_str().unwrap(), &module);
    let sp = 0x7_0000u64;
    for has_grand_callee in [false, true] {
        let mut w = TestWalker::new(
            CRASHY_X64_BASE + 0x10,
            &[("rip", CRASHY_X64_BASE + 0x10), ("rsp", sp)],
            8,
        );
        w.has_grand_callee = has_grand_callee;
        w.stack.insert(sp, 0x1234_5678);
        assert!(m.walk_frame(&module, &mut w).is_none());
    }
    assert_eq!(m.unwind_entry_covers(0x10), Some(false));
    // The crash site (crash_null_write) has its entry.
    assert_eq!(m.unwind_entry_covers(0x2134), Some(true));
    assert_eq!(m.is_code(0x2134), Some(true));
    assert_eq!(m.is_code(0x10), Some(false));
}

/// Damaged copies of crashy.exe on the symbol path (random flips, cuts, `.pdata` entries
/// and directories pointing outside the file): loading, unwinding and reading code give
/// answers or none, never a panic.
#[test]
fn damaged_image_files_never_panic() {
    ntdbg_testutil::require_testdata!();
    use ntdbg_testutil::corrupt::{random_flips, Edit, Variant};
    let (w0, module) = crash_state("winelab/x64/null.inproc.dmp", 8);
    let file = std::fs::read(testdata("winelab/x64/crashy.exe")).unwrap();
    let pe = PeInfo::parse(&file, PeLayout::File).unwrap();
    let dir = pe.exception_directory.unwrap();
    let pdata = pe.rva_to_offset(dir.rva, dir.size, PeLayout::File).unwrap();
    let mut variants = random_flips(&file, 20, 48);
    for cut in [
        0x100,
        0x400,
        pdata,
        pdata + dir.size as usize / 2,
        file.len() - 1,
    ] {
        variants.push(Variant {
            label: format!("cut{cut}"),
            edit: Edit::Truncate(cut),
        });
    }
    let smashes = [
        (pdata + 4, u32::MAX),
        (pdata + 8, 0xffff_fff0),
        (pdata + 8, pe.size_of_image - 2),
        (pdata + 12 * 5 + 8, 0),
    ];
    for (at, value) in smashes {
        variants.push(Variant {
            label: format!("put{at}"),
            edit: Edit::PutU32(vec![(at, value)]),
        });
    }
    for v in variants {
        let scratch = Scratch::new("damaged-image");
        scratch.write("crashy.exe", &v.apply(&file));
        let m = symbols(&scratch.path_text(), &module);
        let mut w = caller_of_state(&w0);
        for _ in 0..4 {
            if m.walk_frame(&module, &mut w).is_none() || w.ra.is_none() || w.cfa.is_none() {
                break;
            }
            w = caller_of(&w, "rip", "rsp", 1);
        }
        for rva in [0, 0x1000, 0x2134, u64::from(pe.size_of_image) - 1, u64::MAX] {
            let _ = m.image_bytes(rva, 64);
            let _ = m.image_file_bytes(rva, 64);
        }
        let _ = m.unwind_entry_covers(0x2134);
    }
}

#[test]
fn arm64_glue_matches_the_formats_unwinder() {
    ntdbg_testutil::require_testdata!();
    use ntdbg_formats::pe::pdata::read_runtime_functions_arm64;
    use ntdbg_formats::unwind_arm64::{function_length, unwind, Arm64Regs};

    let path = &testdata("getsentry-symbolic/symbolic-testutils/fixtures/windows/arm64/test.exe");
    let file = std::fs::read(path).unwrap();
    let pe = PeInfo::parse(&file, PeLayout::File).unwrap();
    let image = map_file_image(&file, &pe).unwrap();
    let base = 0x7ff6_0000_0000u64;
    let served = image.clone();
    let read = move |addr: u64, len: usize| -> Option<SharedBytes> {
        let rva = usize::try_from(addr.checked_sub(base)?).ok()?;
        served.get(rva..rva + len).map(|b| b.to_vec().into())
    };
    let module = minidump::MinidumpModule::new(base, pe.size_of_image, r"C:\test.exe");
    let empty = Scratch::new("arm64");
    let store = SymbolStore::new(SymbolPath::parse(&empty.path_text()).unwrap());
    let from_memory = store.module(&module, &read);
    assert_eq!(from_memory.unwind_source(), Some(&ImageSource::DumpMemory));
    // The same file on the symbol path, read on demand.
    let beside = Scratch::new("arm64-file");
    beside.put(path, "test.exe");
    let from_file = symbols(&beside.path_text(), &module);
    assert!(matches!(
        from_file.unwind_source(),
        Some(ImageSource::File(_))
    ));

    let dir = pe.exception_directory.unwrap();
    let pdata = &image[dir.rva as usize..(dir.rva + dir.size) as usize];
    let entries = read_runtime_functions_arm64(pdata, pe.size_of_image);
    fn value(a: u64) -> u64 {
        a.wrapping_mul(3) ^ 0x55
    }
    let stack = |a: u64| Some(value(a));
    let mut checked = 0;
    for e in entries.iter().take(40) {
        let xdata = (e.flag() == 0).then(|| &image[e.unwind_data as usize..]);
        let len = function_length(e, xdata).unwrap();
        let offset = (len / 2) & !3;
        let (sp, fp, lr) = (0x10_0000u64, 0x10_0040u64, base + 0x1234);
        let mut expected = Arm64Regs {
            sp,
            pc: base + u64::from(e.begin + offset),
            ..Default::default()
        };
        expected.x[29] = Some(fp);
        expected.x[30] = Some(lr);
        let mut read_stack = stack;
        if unwind(e, xdata, offset, &mut expected, &mut read_stack).is_err() {
            continue;
        }
        for m in [&from_memory, &from_file] {
            let mut w = TestWalker::new(
                base + u64::from(e.begin + offset),
                &[
                    ("sp", sp),
                    ("fp", fp),
                    ("lr", lr),
                    ("pc", base + u64::from(e.begin + offset)),
                ],
                8,
            );
            w.any = Some(value);
            m.walk_frame(&module, &mut w).unwrap();
            assert_eq!(
                (w.cfa, w.ra),
                (Some(expected.sp), Some(expected.pc)),
                "{:#x}",
                e.begin
            );
            assert_eq!(w.caller.get("fp").copied(), expected.x[29]);
        }
        checked += 1;
    }
    assert!(checked > 10, "{checked}");
}

#[test]
fn x86_msvc_frame_data_from_pdb_and_from_sym_agree() {
    ntdbg_testutil::require_testdata!();
    // symbolic's mini.dmp: main → __scrt_common_main_seh at crash.exe+0x2d96 (return − 1).
    let (w0, module) = crash_state(
        "getsentry-symbolic/symbolic-testutils/fixtures/windows/mini.dmp",
        4,
    );
    let base = module.raw.base_of_image;
    assert_eq!(w0.instruction - base, 0x2a3d);
    let dir = testdata("getsentry-symbolic/symbolic-testutils/fixtures/windows");
    let pdb_only = Scratch::new("mini-unwind");
    pdb_only.put(&dir.join("crash.pdb"), "crash.pdb");
    for path in [dir.to_str().unwrap().to_string(), pdb_only.path_text()] {
        let m = symbols(&path, &module);
        let mut w = caller_of_state(&w0);
        assert!(m.walk_frame(&module, &mut w).is_some(), "{path}");
        let next = caller_of(&w, "eip", "esp", 1);
        assert_eq!(next.instruction - base, 0x2d96, "{path}");
    }
}

/// A fresh copy of a walker's starting state.
fn caller_of_state(w: &TestWalker) -> TestWalker {
    TestWalker {
        instruction: w.instruction,
        has_grand_callee: w.has_grand_callee,
        callee: w.callee.clone(),
        stack: w.stack.clone(),
        regions: w.regions.clone(),
        any: w.any,
        word: w.word,
        caller: Default::default(),
        cfa: None,
        ra: None,
    }
}
