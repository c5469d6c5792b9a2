//! The analysis report of the real Windows 10 small dump `triage_x64.dmp` (bugcheck
//! 0x1000007E in amdppm.sys; expected values from rizin's test db and `EXPECTED.json`).

use ntdbg_engine::Session;

#[test]
fn triage_x64_report() {
    ntdbg_testutil::require_testdata!();
    let dump = ntdbg_testutil::testdata("rizin-testbins/dmp/triage_x64.dmp");
    let symbols = ntdbg_testutil::testdata("rizin-test-pdb-repository");
    let session = match Session::open_dump(&dump, Some(&symbols.display().to_string())) {
        Ok(s) => s,
        Err(e) => panic!("open: {e}"),
    };
    let report = ntdbg_analysis::analyze(&session);
    let json = serde_json::to_value(&report).unwrap_or_default();
    assert_eq!(json["dump"]["kind"], "kernel-small");
    assert_eq!(json["dump"]["arch"], "x64");
    assert_eq!(json["dump"]["os_build"], "10.0.19041");
    assert_eq!(json["dump"]["modules"], 151);
    assert_eq!(json["event"]["type"], "bugcheck");
    assert_eq!(json["event"]["code"], "0x1000007e");
    assert_eq!(
        json["event"]["name"],
        "SYSTEM_THREAD_EXCEPTION_NOT_HANDLED_M"
    );
    assert_eq!(json["event"]["address"], "0xfffff8048b58334c");
    assert_eq!(json["event"]["thread_id"], "0x108");
    assert_eq!(
        json["event"]["parameters"],
        serde_json::json!([
            "0xffffffffc0000005",
            "0xfffff8048b58334c",
            "0xffff850429891ee8",
            "0xffff850429891720"
        ])
    );
    let desc = json["event"]["description"].as_str().unwrap_or_default();
    assert!(
        desc.contains("c0000005") && desc.contains("0xfffff8048b58334c"),
        "{desc}"
    );
    assert_eq!(json["faulting_module"]["name"], "amdppm.sys");
    assert_eq!(json["faulting_module"]["base"], "0xfffff8048b580000");
    assert_eq!(json["faulting_module"]["size"], "0x3b000");
    assert_eq!(json["faulting_module"]["timestamp"], "0xc9c03000");
    assert_eq!(
        json["signature"],
        "BUGCHECK_0x1000007E amdppm!WriteIoMemRawEx / amdppm!WriteGenAddrEx / amdppm!WriteGenAddrMaybeHiddenEx"
    );
    assert_eq!(json["stack"][0]["function"], "WriteIoMemRawEx");
    assert_eq!(json["stack"][0]["offset"], "0x70");
    assert_eq!(json["stack"][0]["found_by"], "context");
    assert_eq!(json["stack"][1]["found_by"], "cfi");
    let next: Vec<String> = report.next_commands.clone();
    assert!(
        next.contains(&".cxr 0xffff850429891720".to_string()),
        "{next:?}"
    );
    assert!(
        next.contains(&".exr 0xffff850429891ee8".to_string()),
        "{next:?}"
    );
}

/// Issue 5: a PDB without the kernel's structures gives a layout error naming the field,
/// never a guessed layout (amdppm.pdb knows `_EPROCESS` only as a forward reference).
#[test]
fn kernel_layout_needs_the_kernel_structures() {
    ntdbg_testutil::require_testdata!();
    let pdb = ntdbg_testutil::testdata(
        "rizin-test-pdb-repository/amdppm.pdb/1C19FDDB27BB3399D9B45973EFEAFCF31/amdppm.pdb",
    );
    let types = ntdbg_symbols::TypeDb::open(&pdb).unwrap_or_else(|e| panic!("{e}"));
    let err = ntdbg_analysis::kernel_objects::KernelLayout::from_types(&types);
    assert_eq!(
        err,
        Err("the kernel's PDB has no _EPROCESS.Pcb".to_string())
    );
}

/// Issue 5: bugchecks whose parameters point at a trap frame suggest `.trap` with it.
#[test]
fn trap_frame_parameters_are_suggested() {
    use ntdbg_analysis::bugcheck::decode_bugcheck;
    for code in [0x8E, 0x1000008E] {
        let d = decode_bugcheck(
            code,
            [0xc0000005, 0xffff_f804_1234_5678, 0xffff_8504_2989_1000, 0],
        );
        assert_eq!(d.trap_frame, Some(0xffff_8504_2989_1000), "{code:#x}");
        assert_eq!(d.arguments[2], "trap frame (.trap)");
    }
    let d = decode_bugcheck(0x1E, [0xc0000005, 0xffff_f804_1234_5678, 1, 0x10]);
    assert_eq!(d.trap_frame, None);
    assert!(d.description.contains("write of 0x10"), "{}", d.description);

    // Through the report of a synthetic full dump: the text and the next commands.
    use ntdbg_testutil::kernel_synth::{KernelSynth, Layout};
    let mut synth = KernelSynth::new(Layout::Full);
    synth.write_virtual(0xffff_f804_7ba0_0000, &[0xc3]);
    synth.rip = 0xffff_f804_7ba0_0000;
    synth.bugcheck_code = 0x1000008E;
    synth.bugcheck_parameters = [0xc0000005, 0xffff_f804_7ba0_0000, 0xffff_8504_2989_1000, 0];
    // The trap frame the parameters point at: the fault at +0x10, its stack mapped.
    let mut frame = vec![0u8; 0x190];
    frame[0x168..0x170].copy_from_slice(&0xffff_f804_7ba0_0010u64.to_le_bytes());
    frame[0x180..0x188].copy_from_slice(&0xffff_8504_2989_1800u64.to_le_bytes());
    synth.write_virtual(0xffff_8504_2989_1000, &frame);
    synth.write_virtual(0xffff_8504_2989_1800, &[0; 0x100]);
    let dir = std::env::temp_dir().join(format!("ntdbg-trap-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join("synthetic-8e.dmp");
    synth.write(&path).unwrap_or_else(|e| panic!("{e}"));
    let session = Session::open_dump(&path, Some(&dir.display().to_string()))
        .unwrap_or_else(|e| panic!("{e}"));
    let report = ntdbg_analysis::analyze(&session);
    assert!(report
        .next_commands
        .contains(&".trap 0xffff850429891000".to_string()));
    // The stack is the fault's, from the trap frame, not KeBugCheckEx's.
    assert_eq!(
        report.stack.first().map(|f| f.address.as_str()),
        Some("0xfffff8047ba00010")
    );
    let text = ntdbg_analysis::render::render_report(&report);
    assert!(
        text.contains("TRAP_FRAME:  ffff850429891000 -- (.trap 0xffff850429891000)"),
        "{text}"
    );
    assert!(
        text.contains("Arg3: ffff850429891000, trap frame (.trap)"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 17: a 32-bit ARM (ARMNT) small dump opens for its header, bugcheck and driver list,
/// with one limitation instead of an unknown architecture; its arguments print at 32 bits.
#[test]
fn armnt_small_dump_header_bugcheck_and_drivers() {
    use ntdbg_testutil::kernel_synth::{small_dump32, MACHINE_ARMNT};
    let bytes = small_dump32(
        MACHINE_ARMNT,
        0xD1,
        [0x10, 2, 0, 0x8c12_3456],
        &[
            (
                r"\SystemRoot\system32\ntoskrnl.exe",
                0x8100_0000,
                0x40_0000,
                0x5010_0000,
            ),
            (
                r"\SystemRoot\system32\drivers\mydriver.sys",
                0x8c12_0000,
                0x8000,
                0x5011_1111,
            ),
        ],
    );
    let dir = std::env::temp_dir().join(format!("ntdbg-armnt-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join("armnt.dmp");
    std::fs::write(&path, &bytes).unwrap_or_else(|e| panic!("{e}"));
    let session = Session::open_dump(&path, Some(&dir.display().to_string()))
        .unwrap_or_else(|e| panic!("{e}"));
    session.symbols().set_offline(true);
    let report = ntdbg_analysis::analyze(&session);
    assert_eq!(report.dump.arch, "arm");
    assert_eq!(report.dump.kind, "kernel-small");
    assert_eq!(report.dump.modules, 2);
    assert_eq!(
        report.event.name.as_deref(),
        Some("DRIVER_IRQL_NOT_LESS_OR_EQUAL")
    );
    assert_eq!(report.event.address.as_deref(), Some("0x8c123456"));
    assert_eq!(
        report.faulting_module.as_ref().map(|m| m.name.as_str()),
        Some("mydriver.sys")
    );
    assert!(report.stack.is_empty());
    let arm: Vec<_> = report
        .limitations
        .iter()
        .filter(|l| l.contains("ARMNT"))
        .collect();
    assert_eq!(arm.len(), 1, "{:?}", report.limitations);
    assert!(!report.limitations.iter().any(|l| l.contains("unknown")));
    let text = ntdbg_analysis::render::render_report(&report);
    assert!(
        text.contains(
            "DRIVER_IRQL_NOT_LESS_OR_EQUAL (d1)\nArguments:\nArg1: 00000010, memory referenced\n"
        ),
        "{text}"
    );
    assert!(
        text.contains("Arg4: 8c123456, address which referenced memory\n"),
        "{text}"
    );
    let listing = ntdbg_analysis::listing::summarize_dump(&path);
    assert_eq!(listing.arch.as_deref(), Some("arm"));
    let _ = std::fs::remove_dir_all(&dir);
}

/// Issue 17: arguments without a documented meaning print bare (no stray `, 0`), as WinDbg
/// prints those of MANUALLY_INITIATED_CRASH.
#[test]
fn manual_crash_arguments_print_bare() {
    use ntdbg_testutil::kernel_synth::{KernelSynth, Layout};
    let mut synth = KernelSynth::new(Layout::Full);
    synth.write_virtual(0xffff_f804_7ba0_0000, &[0xc3]);
    synth.rip = 0xffff_f804_7ba0_0000;
    synth.bugcheck_code = 0xE2;
    let dir = std::env::temp_dir().join(format!("ntdbg-e2-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join("manual.dmp");
    synth.write(&path).unwrap_or_else(|e| panic!("{e}"));
    let session = Session::open_dump(&path, Some(&dir.display().to_string()))
        .unwrap_or_else(|e| panic!("{e}"));
    let report = ntdbg_analysis::analyze(&session);
    let text = ntdbg_analysis::render::render_report(&report);
    assert!(
        text.contains("MANUALLY_INITIATED_CRASH (e2)\nArguments:\nArg1: 0000000000000000\nArg2: 0000000000000000\nArg3: 0000000000000000\nArg4: 0000000000000000\n"),
        "{text}"
    );
    assert!(report.event.description.contains("initiated manually"));
    let d = ntdbg_analysis::bugcheck::decode_bugcheck(
        0x3B,
        [0xc0000005, 0xfffff800_12345678, 0xffff8000_00001000, 0],
    );
    assert_eq!(d.arguments[3], "");
    let _ = std::fs::remove_dir_all(&dir);
}

/// A mapped x64 PE image of `size` bytes whose export table names `function` at RVA 0x1000
/// (16 bytes of code, `int3`s) and whose `.pdata` gives that function an empty prolog: its
/// return address is at `[rsp]`, so the walker unwinds it by unwind data.
fn tiny_image(function: &str, timestamp: u32) -> Vec<u8> {
    let mut img = vec![0u8; 0x4000];
    let mut put = |off: usize, bytes: &[u8]| img[off..off + bytes.len()].copy_from_slice(bytes);
    put(0, b"MZ");
    put(0x3c, &0x80u32.to_le_bytes());
    put(0x80, b"PE\0\0");
    // COFF header: AMD64, one section, the optional header's size, executable image.
    put(0x84, &0x8664u16.to_le_bytes());
    put(0x86, &1u16.to_le_bytes());
    put(0x88, &timestamp.to_le_bytes());
    put(0x94, &0xf0u16.to_le_bytes());
    put(0x96, &0x2022u16.to_le_bytes());
    // PE32+ optional header: alignments, SizeOfImage, SizeOfHeaders, 16 data directories.
    let opt = 0x98;
    put(opt, &0x20bu16.to_le_bytes());
    put(opt + 32, &0x1000u32.to_le_bytes());
    put(opt + 36, &0x200u32.to_le_bytes());
    put(opt + 56, &0x4000u32.to_le_bytes());
    put(opt + 60, &0x400u32.to_le_bytes());
    put(opt + 68, &1u16.to_le_bytes());
    put(opt + 108, &16u32.to_le_bytes());
    // Data directories: exports at 0x3000, exceptions (.pdata) at 0x2000.
    put(opt + 112, &0x3000u32.to_le_bytes());
    put(opt + 116, &0x100u32.to_le_bytes());
    put(opt + 112 + 3 * 8, &0x2000u32.to_le_bytes());
    put(opt + 116 + 3 * 8, &12u32.to_le_bytes());
    // One section covering code, unwind data and exports.
    let sec = opt + 0xf0;
    put(sec, b".text\0\0\0");
    put(sec + 8, &0x3000u32.to_le_bytes());
    put(sec + 12, &0x1000u32.to_le_bytes());
    put(sec + 16, &0x3000u32.to_le_bytes());
    put(sec + 20, &0x400u32.to_le_bytes());
    put(sec + 36, &0x6000_0020u32.to_le_bytes());
    put(0x1000, &[0xcc; 16]);
    // RUNTIME_FUNCTION and its UNWIND_INFO (version 1, no prolog, no codes).
    put(0x2000, &0x1000u32.to_le_bytes());
    put(0x2004, &0x1010u32.to_le_bytes());
    put(0x2008, &0x2100u32.to_le_bytes());
    put(0x2100, &[1, 0, 0, 0]);
    // IMAGE_EXPORT_DIRECTORY: one function, one name.
    put(0x300c, &0x3080u32.to_le_bytes());
    put(0x3010, &1u32.to_le_bytes());
    put(0x3014, &1u32.to_le_bytes());
    put(0x3018, &1u32.to_le_bytes());
    put(0x301c, &0x3040u32.to_le_bytes());
    put(0x3020, &0x3050u32.to_le_bytes());
    put(0x3024, &0x3058u32.to_le_bytes());
    put(0x3040, &0x1000u32.to_le_bytes());
    put(0x3050, &0x3060u32.to_le_bytes());
    put(0x3058, &0u16.to_le_bytes());
    put(0x3060, function.as_bytes());
    put(0x3080, b"ntoskrnl.exe");
    img
}

/// Issue 17: a manually initiated crash names the driver that called `KeBugCheckEx` (the nt
/// frame skipped), found through unwind data, as `!analyze` does.
#[test]
fn manual_crash_blames_the_caller_of_kebugcheckex() {
    use ntdbg_testutil::kernel_synth::{KernelSynth, Layout};
    let nt = 0xffff_f804_7b00_0000u64;
    let driver = 0xffff_f804_8c00_0000u64;
    let mut synth = KernelSynth::new(Layout::Full);
    synth.add_module_list(
        0xffff_f804_7c62_a000,
        &[
            (
                r"\SystemRoot\system32\ntoskrnl.exe",
                nt,
                0x4000,
                0x1234_5678,
            ),
            (
                r"\SystemRoot\system32\drivers\kbdcrash.sys",
                driver,
                0x4000,
                0x2345_6789,
            ),
        ],
    );
    synth.write_virtual(nt, &tiny_image("KeBugCheckEx", 0x1234_5678));
    synth.write_virtual(driver + 0x1000, &[0x90; 0x40]);
    let mut stack = vec![0u8; 0x1000];
    stack[0x800..0x808].copy_from_slice(&(driver + 0x1020).to_le_bytes());
    synth.write_virtual(0xffff_8504_2989_0000, &stack);
    synth.rip = nt + 0x1004;
    synth.rsp = 0xffff_8504_2989_0800;
    synth.bugcheck_code = 0xE2;
    let dir = std::env::temp_dir().join(format!("ntdbg-e2-caller-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join("manual.dmp");
    synth.write(&path).unwrap_or_else(|e| panic!("{e}"));
    let session = Session::open_dump(&path, Some(&dir.display().to_string()))
        .unwrap_or_else(|e| panic!("{e}"));
    session.symbols().set_offline(true);
    let report = ntdbg_analysis::analyze(&session);
    let frames: Vec<_> = report
        .stack
        .iter()
        .map(|f| (f.function.clone(), f.found_by.as_str()))
        .take(2)
        .collect();
    assert_eq!(
        frames,
        [(Some("KeBugCheckEx".to_string()), "context"), (None, "cfi")],
        "{:#?}",
        report.stack
    );
    assert_eq!(
        report.faulting_module.as_ref().map(|m| m.name.as_str()),
        Some("kbdcrash.sys")
    );
    let blame = &report.inferences[0];
    assert_eq!(blame.text, "kbdcrash.sys is the faulting module");
    assert!(
        blame.basis.starts_with("frame 01 (kbdcrash+0x1020), the caller of KeBugCheckEx (frame 00), lies in kbdcrash.sys"),
        "{}",
        blame.basis
    );
    assert_eq!(report.signature, "BUGCHECK_0xE2 kbdcrash+0x1020");
    let _ = std::fs::remove_dir_all(&dir);
}
