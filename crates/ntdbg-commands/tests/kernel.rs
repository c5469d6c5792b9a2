//! Kernel small dump `triage_x64.dmp` (real Windows 10, bugcheck 0x1000007E in amdppm.sys)
//! through the command layer, checked against rizin's `test/db/formats/dmp/dmp` test
//! "Triage Dump Debug x64" and `EXPECTED.json`, with amdppm.sys/amdppm.pdb/Wdf01000.sys from
//! `rizin-test-pdb-repository` (ntkrnlmp.pdb and Wdf01000.pdb are not in the corpus).

use ntdbg_engine::Session;

fn open() -> Session {
    let dump = ntdbg_testutil::testdata("rizin-testbins/dmp/triage_x64.dmp");
    let symbols = ntdbg_testutil::testdata("rizin-test-pdb-repository");
    match Session::open_dump(&dump, Some(&symbols.display().to_string())) {
        Ok(s) => s,
        Err(e) => panic!("open: {e}"),
    }
}

fn run(session: &mut Session, command: &str) -> String {
    match ntdbg_commands::run_command(session, command) {
        Ok(out) => out.text,
        Err(e) => format!("ERROR {}: {}", e.code, e.message),
    }
}

#[test]
fn bugcheck_command() {
    ntdbg_testutil::require_testdata!();
    let mut s = open();
    assert_eq!(
        run(&mut s, ".bugcheck"),
        "Bugcheck code 1000007E\nArguments ffffffff`c0000005 fffff804`8b58334c ffff8504`29891ee8 ffff8504`29891720\n"
    );
}

#[test]
fn registers_and_disassembly_match_rizin() {
    ntdbg_testutil::require_testdata!();
    let mut s = open();
    let r = run(&mut s, "r");
    for want in [
        "rax=ffff850429891720",
        "rbx=fffff8047ba82b68",
        "rcx=000000000000007e",
        "rdx=ffffffffc0000005",
        "rsi=0000000000000000",
        "rdi=0000000000000000",
        "rip=fffff8047bdf5a80",
        "rsp=ffff850429890ee8",
        "rbp=ffff850429892c10",
        "r8=fffff8048b58334c",
        "r9=ffff850429891ee8",
        "r10=ffff850429891ee8",
        "r11=ffff8afd53400000",
        "r12=ffff850429892c10",
        "r13=ffff850429891ee8",
        "r14=ffff850429891560",
        "r15=fffff8047ba00000",
        "efl=00040286",
    ] {
        assert!(r.contains(want), "{want} missing from\n{r}");
    }
    // rizin `pi 4` at rip: mov qword [rsp + 8], rcx; … [rsp + 0x10], rdx; … r8; … r9.
    let u = run(&mut s, "u @rip L4");
    for want in [
        "fffff804`7bdf5a80 48894c2408      mov     qword ptr [rsp+8],rcx",
        "mov     qword ptr [rsp+10h],rdx",
        "mov     qword ptr [rsp+18h],r8",
        "mov     qword ptr [rsp+20h],r9",
    ] {
        assert!(u.contains(want), "{want} missing from\n{u}");
    }
    // The faulting instruction in amdppm (from the image on the symbol path).
    let u = run(&mut s, "u fffff8048b58334c L1");
    assert!(
        u.contains("amdppm!WriteIoMemRawEx+0x70:") && u.contains("mov     dword ptr [r9+r8],edx"),
        "{u}"
    );
}

/// rizin's frames 8–35 (from amdppm!WriteIoMemRawEx+112 down to KiStartSystemThread+40).
const RIZIN_FRAMES: &[(u64, &str)] = &[
    (0xfffff8048b58334c, "amdppm!WriteIoMemRawEx+0x70"),
    (0xfffff8048b58313f, "amdppm!WriteGenAddrEx+0x6b"),
    (0xfffff8048b583234, "amdppm!WriteGenAddrMaybeHiddenEx+0x18"),
    (0xfffff8048b5a0e8f, "amdppm!InitAcpiCpc+0x317"),
    (0xfffff8048b5a83f6, "amdppm!ProcLibDeviceStart+0x886"),
    (0xfffff8048b59f852, "amdppm!EvtDevicePrepareHardware+0xd2"),
    (0xfffff804799cc027, ""),
    (0xfffff80479966f81, ""),
    (0xfffff804799cb227, ""),
    (0xfffff804799c9e21, ""),
    (0xfffff804799c99da, ""),
    (0xfffff804799cb6b1, ""),
    (0xfffff804799cb47a, ""),
    (0xfffff804799d299e, ""),
    (0xfffff8047995cc5f, ""),
    (0xfffff8047995a866, ""),
    (0xfffff8047bc52f55, ""),
    (0xfffff8047c1548a6, ""),
    (0xfffff8047bce0d1e, ""),
    (0xfffff8047bd6ab7c, ""),
    (0xfffff8047c123760, ""),
    (0xfffff8047c12362f, ""),
    (0xfffff8047c126bdd, ""),
    (0xfffff8047c1bdf0c, ""),
    (0xfffff8047bd6c2ec, ""),
    (0xfffff8047bc25975, ""),
    (0xfffff8047bd17e25, ""),
    (0xfffff8047bdfd0d8, ""),
];

#[test]
fn exception_stack_matches_rizin() {
    ntdbg_testutil::require_testdata!();
    let s = open();
    let stack = match s.event_stack() {
        Ok(st) => st,
        Err(e) => panic!("{e}"),
    };
    // The amdppm and Wdf01000 frames and the first kernel frame are found exactly (unwind
    // data from the images on the symbol path), in rizin's order with rizin's offsets.
    for (i, (addr, site)) in RIZIN_FRAMES.iter().take(17).enumerate() {
        let f = &stack.frames[i];
        assert_eq!(f.instruction, *addr, "frame {i}");
        if !site.is_empty() {
            assert_eq!(f.call_site(), *site, "frame {i}");
        }
    }
    // Without ntoskrnl's image the kernel frames are found by scanning: rizin's frames are a
    // subsequence of ours (scan adds stale return addresses between them).
    let ours: Vec<u64> = stack.frames.iter().map(|f| f.instruction).collect();
    let mut at = 0;
    for (addr, _) in RIZIN_FRAMES {
        match ours[at..].iter().position(|a| a == addr) {
            Some(p) => at += p + 1,
            None => panic!("rizin frame {addr:#x} missing after index {at}: {ours:x?}"),
        }
    }
}

#[test]
fn kernel_commands_work() {
    ntdbg_testutil::require_testdata!();
    let mut s = open();
    let v = run(&mut s, "vertarget");
    assert!(v.contains("19041") && v.contains("16 procs"), "{v}");
    let lm = run(&mut s, "lm m amdppm");
    assert!(
        lm.contains("fffff804`8b580000 fffff804`8b5bb000   amdppm"),
        "{lm}"
    );
    let k = run(&mut s, "kn 2");
    assert!(k.contains("ffff8504`29890ee8 fffff804`7be0f4e1"), "{k}");
    let db = run(&mut s, "dq ffff850429890ee8 L1");
    assert!(db.contains("fffff804`7be0f4e1"), "{db}");
    let hole = run(&mut s, "db 1000 L4");
    assert!(hole.starts_with("Memory access error at"), "{hole}");
    let a = run(&mut s, "!analyze -v");
    for want in [
        "Bugcheck Analysis",
        "SYSTEM_THREAD_EXCEPTION_NOT_HANDLED_M (1000007e)",
        "Arg1: ffffffffc0000005, the exception code that was not handled",
        "Arg2: fffff8048b58334c, the address where the exception occurred",
        "FAULTING_MODULE: amdppm.sys base 0xfffff8048b580000 size 0x3b000",
        "SIGNATURE:      BUGCHECK_0x1000007E amdppm!WriteIoMemRawEx / amdppm!WriteGenAddrEx",
    ] {
        assert!(a.contains(want), "{want} missing from\n{a}");
    }
}

/// A synthetic full dump (generator in `ntdbg_testutil::kernel_synth`) through the commands.
#[test]
fn synthetic_full_dump_commands() {
    use ntdbg_testutil::kernel_synth::{KernelSynth, Layout};
    let kva = 0xffff_f804_7ba0_0000u64;
    let mut synth = KernelSynth::new(Layout::Full);
    // `int3; ret` at the context's rip, a stack holding a return address into the same page.
    synth.write_virtual(kva + 0x1000, &[0xcc, 0xc3, 0x90, 0x90]);
    let mut stack = vec![0u8; 0x2000];
    stack[0xee8..0xef0].copy_from_slice(&(kva + 0x1002).to_le_bytes());
    synth.write_virtual(0xffff_8504_2989_0000, &stack);
    synth.rip = kva + 0x1000;
    synth.rsp = 0xffff_8504_2989_0ee8;
    synth.bugcheck_code = 0xE2;
    synth.add_module_list(
        0xffff_f804_7c62_a000,
        &[(
            r"\SystemRoot\system32\ntoskrnl.exe",
            kva,
            0x10_0000,
            0x1234_5678,
        )],
    );
    let dir = ntdbg_testutil::fresh_dir("kcmd");
    let path = dir.join("synthetic-full.dmp");
    if let Err(e) = synth.write(&path) {
        panic!("{e}");
    }
    let mut s = match Session::open_dump(&path, Some(&dir.display().to_string())) {
        Ok(s) => s,
        Err(e) => panic!("{e}"),
    };
    assert_eq!(s.target().kind().name(), "kernel-full");
    assert_eq!(
        run(&mut s, ".bugcheck"),
        "Bugcheck code 000000E2\nArguments 00000000`00000000 00000000`00000000 00000000`00000000 00000000`00000000\n"
    );
    let u = run(&mut s, "u @rip L2");
    assert!(u.contains("int     3") && u.contains("ret"), "{u}");
    let db = run(&mut s, &format!("db {:x} L4", kva + 0x1000));
    assert!(db.contains("cc c3 90 90"), "{db}");
    let hole = run(&mut s, &format!("db {:x} L4", kva + 0x5000));
    assert!(hole.starts_with("Memory access error at"), "{hole}");
    let lm = run(&mut s, "lm");
    assert!(lm.contains("ntoskrnl"), "{lm}");
    let k = run(&mut s, "kn");
    assert!(k.contains("ntoskrnl+0x1000"), "{k}");
    let a = run(&mut s, "!analyze -v");
    assert!(a.contains("MANUALLY_INITIATED_CRASH (e2)"), "{a}");
    let _ = std::fs::remove_file(&path);
}

/// Issue 5: the process commands on a small dump without ntkrnlmp.pdb say exactly what they
/// need (the PDB by GUID and age, and the memory the dump lacks), never a guessed structure.
#[test]
fn process_commands_name_what_a_small_dump_lacks() {
    ntdbg_testutil::require_testdata!();
    let mut s = open();
    for command in [
        "!process 0 0",
        "!thread ffff850429891720",
        ".thread ffff850429891720",
        ".process ffff850429891720",
    ] {
        let err = run(&mut s, command);
        let name = command.split(' ').next().unwrap_or_default();
        assert!(
            err.starts_with(&format!("ERROR kernel_symbols_missing: {name} needs the kernel's PDB (ntkrnlmp.pdb) on the symbol path; it was not found")),
            "{err}"
        );
        assert!(
            err.contains("and the process and thread lists from PsActiveProcessHead (0xfffff8047c61e200), which a small dump does not hold"),
            "{err}"
        );
    }
}

/// Issue 5: `.cxr` with the bugcheck's context record works on a kernel dump: `r`, `k` and `u`
/// follow it; `.trap` on memory the dump lacks says so.
#[test]
fn cxr_and_trap_on_the_small_dump() {
    ntdbg_testutil::require_testdata!();
    let mut s = open();
    let cxr = run(&mut s, ".cxr ffff850429891720");
    assert!(cxr.contains("rip=fffff8048b58334c"), "{cxr}");
    assert!(cxr.contains("amdppm!WriteIoMemRawEx+0x70:"), "{cxr}");
    let k = run(&mut s, "kn 3");
    assert!(
        k.contains("amdppm!WriteIoMemRawEx+0x70") && k.contains("amdppm!WriteGenAddrEx+0x6b"),
        "{k}"
    );
    assert_eq!(run(&mut s, ".cxr"), "Resetting default scope\n");
    let trap = run(&mut s, ".trap 1000");
    assert!(
        trap.starts_with("ERROR memory_unavailable: Unable to read trap frame"),
        "{trap}"
    );
    let a = run(&mut s, "!analyze -v");
    for want in [
        "CONTEXT:  ffff850429891720 -- (.cxr 0xffff850429891720)",
        "EXCEPTION_RECORD:  ffff850429891ee8 -- (.exr 0xffff850429891ee8)",
    ] {
        assert!(a.contains(want), "{want} missing from\n{a}");
    }
}
