//! Kernel dumps: the real Windows 10 small dump `triage_x64.dmp` (values from rizin's test
//! `test/db/formats/dmp/dmp` and `EXPECTED.json`), and synthetic full, kernel and bitmap dumps
//! made by `ntdbg_testutil::kernel_synth` (translation, holes, corrupt run tables).

use ntdbg_targets::kernel_dump::Paging;
use ntdbg_targets::{Arch, KernelDump, MemoryView, Target, TargetKind};
use ntdbg_testutil::corrupt::TempDir;
use ntdbg_testutil::kernel_synth::{KernelSynth, Layout, Machine, RUNS_OFFSET, RUN_COUNT_OFFSET};
use std::path::{Path, PathBuf};

fn triage() -> KernelDump {
    let path = ntdbg_testutil::testdata("rizin-testbins/dmp/triage_x64.dmp");
    match KernelDump::open(&path) {
        Ok(d) => d,
        Err(e) => panic!("open triage_x64.dmp: {e}"),
    }
}

#[test]
fn triage_x64_header_matches_rizin() {
    ntdbg_testutil::require_testdata!();
    let d = triage();
    let h = d.header();
    assert!(h.is64);
    assert_eq!(h.major_version, 0xf);
    assert_eq!(h.minor_version, 0x4a61);
    assert_eq!(h.directory_table_base, 0x1ad000);
    assert_eq!(h.pfn_database, 0xfffff8047c6fc500);
    assert_eq!(h.ps_loaded_module_list, 0xfffff8047c62a390);
    assert_eq!(h.ps_active_process_head, 0xfffff8047c61e200);
    assert_eq!(h.machine_image_type, 0x8664);
    assert_eq!(h.number_processors, 0x10);
    assert_eq!(h.bugcheck_code, 0x1000007e);
    assert_eq!(
        h.bugcheck_parameters,
        [
            0xffffffffc0000005,
            0xfffff8048b58334c,
            0xffff850429891ee8,
            0xffff850429891720
        ]
    );
    assert_eq!(h.kd_debugger_data_block, 0xfffff8047c600b20);
    assert_eq!(h.secondary_data_state, 0x45474150);
    assert_eq!(h.product_type, 1);
    assert_eq!(h.suite_mask, 0x110);
    assert_eq!(h.dump_type, 4);
    let e = h.exception.as_ref().map(|e| (e.code, e.address));
    assert_eq!(e, Some((0x80000003, 0xfffff8047bdf5a80)));

    let t = d.triage().cloned().unwrap_or_default();
    assert_eq!(t.service_pack_build, 0);
    assert_eq!(t.size_of_dump, 0x13a28c);
    assert_eq!(t.valid_offset, 0x13a288);
    assert_eq!(t.context_offset, 0x348);
    assert_eq!(t.exception_offset, 0xf00);
    assert_eq!(t.mm_offset, 0x2080);
    assert_eq!(t.unloaded_drivers_offset, 0x20d0);
    assert_eq!(t.prcb_offset, 0x21b8);
    assert_eq!(t.process_offset, 0xd0b8);
    assert_eq!(t.thread_offset, 0xdaf8);
    assert_eq!(t.call_stack_offset, 0xe390);
    assert_eq!(t.size_of_call_stack, 0x2118);
    assert_eq!(t.driver_list_offset, 0x10828);
    assert_eq!(t.driver_count, 0x97);
    assert_eq!(t.string_pool_offset, 0x15d18);
    assert_eq!(t.string_pool_size, 0x3720);
    assert_eq!(t.broken_driver_offset, 0);
    assert_eq!(t.triage_options, 0xffffffff);
    assert_eq!(t.top_of_stack, 0xffff850429890ee8);
    assert_eq!(t.bstore_offset, 0);
    assert_eq!(t.size_of_bstore, 0);
    assert_eq!(t.limit_of_bstore, 0);
    assert_eq!(t.data_page_address, 0);
    assert_eq!(t.data_page_offset, 0);
    assert_eq!(t.data_page_size, 0);
    assert_eq!(t.debugger_data_offset, 0x104a8);
    assert_eq!(t.debugger_data_size, 0x380);
    assert_eq!(t.data_blocks_offset, 0x19438);
    assert_eq!(t.data_blocks_count, 0x727);
}

#[test]
fn triage_x64_facts() {
    ntdbg_testutil::require_testdata!();
    let d = triage();
    assert_eq!(d.kind(), TargetKind::KernelSmall);
    assert_eq!(d.kind().name(), "kernel-small");
    assert_eq!(d.arch().name(), "x64");
    assert_eq!(d.system().os_version, "10.0.19041");
    assert_eq!(d.system().cpu_count, 16);
    assert_eq!(d.system().process_id, Some(4));
    assert_eq!(d.drivers().len(), 151);
    assert_eq!(d.modules().iter().count(), 151);
    let amdppm = d.modules().module_at_address(0xfffff8048b58334c);
    let facts = amdppm.map(|m| {
        (
            m.name.clone(),
            m.raw.base_of_image,
            m.raw.size_of_image,
            m.raw.time_date_stamp,
        )
    });
    assert_eq!(
        facts,
        Some((
            r"\SystemRoot\System32\drivers\amdppm.sys".to_string(),
            0xfffff8048b580000,
            0x3b000,
            0xc9c03000
        ))
    );
    let bc = d.bugcheck().cloned();
    assert_eq!(
        bc.as_ref().map(|b| (b.code, b.thread_id, b.processor)),
        Some((0x1000007e, 0x108, Some(0)))
    );

    // The thread's own context is KeBugCheckEx's (rizin `dr`).
    let threads = d.threads();
    assert_eq!(threads.len(), 1);
    assert_eq!(threads[0].id, 0x108);
    let ctx = threads[0].context.clone();
    let reg = |n: &str| ctx.as_ref().and_then(|c| c.get_register(n));
    for (name, want) in [
        ("rax", 0xffff850429891720u64),
        ("rcx", 0x7e),
        ("rdx", 0xffffffffc0000005),
        ("rbx", 0xfffff8047ba82b68),
        ("rsp", 0xffff850429890ee8),
        ("rbp", 0xffff850429892c10),
        ("rsi", 0),
        ("rdi", 0),
        ("r8", 0xfffff8048b58334c),
        ("r9", 0xffff850429891ee8),
        ("r10", 0xffff850429891ee8),
        ("r11", 0xffff8afd53400000),
        ("r12", 0xffff850429892c10),
        ("r13", 0xffff850429891ee8),
        ("r14", 0xffff850429891560),
        ("r15", 0xfffff8047ba00000),
        ("rip", 0xfffff8047bdf5a80),
    ] {
        assert_eq!(reg(name), Some(want), "{name}");
    }
    // The exception (`.ecxr`) context is the original fault in amdppm.
    let ecxr = d.event().and_then(|e| e.context.clone());
    assert_eq!(
        ecxr.map(|c| c.get_instruction_pointer()),
        Some(0xfffff8048b58334c)
    );

    // Memory: KeBugCheckEx's first instruction is in a data block (`mov [rsp+8], rcx`), the
    // stack is the triage call stack, everything else is a hole.
    assert_eq!(
        d.read_exact(0xfffff8047bdf5a80, 5),
        Some(vec![0x48, 0x89, 0x4c, 0x24, 0x08])
    );
    assert_eq!(d.read_uint(0xffff850429890ee8, 8), Some(0xfffff8047be0f4e1));
    assert!(d.read_exact(0x1000, 1).is_none());
    let v = d.read_virtual(0xffff850429890ee0, 16);
    assert!(v[..8].iter().all(Option::is_none) && v[8..].iter().all(Option::is_some));
}

/// A folder of the test's own (two tests never share one), removed when it is dropped.
fn temp_dir(tag: &str) -> TempDir {
    TempDir::new(&format!("kernel-{tag}"))
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> PathBuf {
    let path = dir.join(name);
    if let Err(e) = std::fs::write(&path, bytes) {
        panic!("write {}: {e}", path.display());
    }
    path
}

const KVA: u64 = 0xffff_f804_7ba0_0000;

/// A synthetic dump: known bytes across two 4 KiB pages, a 2 MiB and a 1 GiB page, a
/// transition PTE, an omitted page, a module list and a context.
fn synth(layout: Layout) -> KernelSynth {
    let mut s = KernelSynth::new(layout);
    let text: Vec<u8> = (0..0x1800u32).map(|i| (i * 7 % 251) as u8).collect();
    s.write_virtual(KVA + 0x800, &text); // spans pages KVA and KVA+0x1000
                                         // 2 MiB page at KVA+0x20_0000 -> physical 0x40_0000; write a marker inside.
    s.map_2m(KVA + 0x20_0000, 0x40_0000);
    s.write_physical(0x40_0000 + 0x1_2345, b"LARGE");
    // 1 GiB page.
    s.map_1g(0xffff_f880_0000_0000, 0x8000_0000);
    s.write_physical(0x8000_0000 + 0x123_4567, b"HUGE");
    // A transition PTE (present bit clear): unavailable.
    s.set_pte(KVA + 0x5000, 0x1234_5000 | 0x800);
    // A page mapped to a physical page the dump leaves out: a hole.
    let missing = s.alloc();
    s.map_4k(KVA + 0x6000, missing);
    s.omit(missing);
    // A stack and a context.
    s.write_virtual(0xffff_8504_2989_0000, &[0xaa; 0x3000]);
    s.rsp = 0xffff_8504_2989_0ee8;
    s.rip = KVA + 0x800;
    s.bugcheck_code = 0xD1;
    s.bugcheck_parameters = [0x10, 2, 0, KVA + 0x800];
    s.add_module_list(
        0xffff_f804_7c62_a000,
        &[
            (
                r"\SystemRoot\system32\ntoskrnl.exe",
                KVA,
                0x104_6000,
                0x0d83_33e6,
            ),
            (
                r"\SystemRoot\System32\drivers\synth.sys",
                0xffff_f804_8b58_0000,
                0x3b000,
                0x1234_5678,
            ),
        ],
    );
    s
}

fn check_synthetic(d: &KernelDump) {
    let text: Vec<u8> = (0..0x1800u32).map(|i| (i * 7 % 251) as u8).collect();
    assert_eq!(
        d.read_exact(KVA + 0x800, 0x1800).as_deref(),
        Some(&text[..])
    );
    // A chunk crossing the page boundary.
    assert_eq!(d.read_chunk(KVA + 0xff0, 0x20).map(|c| c.len()), Some(0x20));
    assert_eq!(
        d.read_exact(KVA + 0x20_0000 + 0x1_2345, 5).as_deref(),
        Some(&b"LARGE"[..])
    );
    assert_eq!(
        d.read_exact(0xffff_f880_0000_0000 + 0x123_4567, 4)
            .as_deref(),
        Some(&b"HUGE"[..])
    );
    assert_eq!(
        d.translate(0xffff_f880_0000_0000 + 0x123_4567),
        Some(0x8123_4567)
    );
    assert!(d.translate(KVA + 0x5000).is_none(), "transition PTE");
    assert!(d.read_exact(KVA + 0x5000, 1).is_none());
    assert!(d.translate(KVA + 0x6000).is_some());
    assert!(d.read_exact(KVA + 0x6000, 1).is_none(), "omitted page");
    assert!(d.read_exact(0x1000, 1).is_none(), "unmapped user address");
    // A read over a hole and then present data reports both exactly.
    let v = d.read_virtual(KVA + 0x5ff0, 0x20);
    assert!(v.iter().all(Option::is_none));
    let v = d.read_virtual(KVA - 0x10, 0x20);
    assert!(v[..0x10].iter().all(Option::is_none));
    assert!(v[0x10..].iter().all(Option::is_some));
    // Facts.
    assert_eq!(d.bugcheck().map(|b| b.code), Some(0xD1));
    let t = &d.threads()[0];
    assert_eq!(
        t.context.as_ref().map(|c| c.get_stack_pointer()),
        Some(0xffff_8504_2989_0ee8)
    );
    assert_eq!(t.stack.map(|s| s.base), Some(0xffff_8504_2989_0000));
    let mods: Vec<(String, u64, u32)> = d
        .modules()
        .iter()
        .map(|m| (m.name.clone(), m.raw.base_of_image, m.raw.time_date_stamp))
        .collect();
    assert_eq!(
        mods,
        vec![
            (
                r"\SystemRoot\system32\ntoskrnl.exe".to_string(),
                KVA,
                0x0d83_33e6
            ),
            (
                r"\SystemRoot\System32\drivers\synth.sys".to_string(),
                0xffff_f804_8b58_0000,
                0x1234_5678
            ),
        ]
    );
}

#[test]
fn synthetic_full_dump_translates() {
    let dir = temp_dir("full");
    let path = write(&dir, "full.dmp", &synth(Layout::Full).build());
    let d = KernelDump::open(&path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(d.kind().name(), "kernel-full");
    check_synthetic(&d);
    let boxed = ntdbg_targets::open(&path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(boxed.kind().name(), "kernel-full");
}

#[test]
fn synthetic_bitmap_kernel_and_rdmp_dumps_translate() {
    let dir = temp_dir("bitmap");
    for (layout, kind) in [
        (Layout::Bitmap, "kernel-bitmap"),
        (Layout::Kernel, "kernel"),
    ] {
        let path = write(&dir, &format!("{kind}.dmp"), &synth(layout).build());
        let d = KernelDump::open(&path).unwrap_or_else(|e| panic!("{kind}: {e}"));
        assert_eq!(d.kind().name(), kind);
        check_synthetic(&d);
    }
}

#[test]
fn synthetic_corrupt_run_tables_are_errors_or_holes() {
    let dir = temp_dir("corrupt");
    let good = synth(Layout::Full).build();
    let put = |bytes: &mut Vec<u8>, off: usize, v: u64| {
        bytes[off..off + 8].copy_from_slice(&v.to_le_bytes())
    };
    // Too many runs for the header.
    let mut many = good.clone();
    many[RUN_COUNT_OFFSET..RUN_COUNT_OFFSET + 4].copy_from_slice(&100_000u32.to_le_bytes());
    // A run whose page count overflows.
    let mut overflow = good.clone();
    put(&mut overflow, RUNS_OFFSET + 8, u64::MAX - 3);
    // Overlapping runs (run 1 starts where run 0 does).
    let mut unordered = good.clone();
    let run0 = u64::from_le_bytes(
        good[RUNS_OFFSET..RUNS_OFFSET + 8]
            .try_into()
            .unwrap_or_default(),
    );
    put(&mut unordered, RUNS_OFFSET + 16, run0);
    for (name, bytes) in [("many", many), ("overflow", overflow)] {
        let path = write(&dir, &format!("{name}.dmp"), &bytes);
        match KernelDump::open(&path) {
            Err(e) => assert_eq!(e.code(), "corrupt_dump", "{name}: {e}"),
            Ok(_) => panic!("{name}: a corrupt run table opened"),
        }
    }
    let path = write(&dir, "unordered.dmp", &unordered);
    assert!(KernelDump::open(&path).is_err());

    // A run that claims far more pages than the file holds: the missing pages are holes.
    let mut huge = good.clone();
    let runs = u32::from_le_bytes([
        good[RUN_COUNT_OFFSET],
        good[RUN_COUNT_OFFSET + 1],
        good[RUN_COUNT_OFFSET + 2],
        good[RUN_COUNT_OFFSET + 3],
    ]) as usize;
    assert!(runs > 1);
    put(&mut huge, RUNS_OFFSET + (runs - 1) * 16 + 8, 1 << 40);
    let path = write(&dir, "huge.dmp", &huge);
    let d = KernelDump::open(&path).unwrap_or_else(|e| panic!("{e}"));
    let _ = d.read_virtual(KVA, 0x100);

    // Truncations never panic: each gives an error or holes.
    for cut in [
        0,
        7,
        8,
        0x100,
        0x1fff,
        0x2000,
        0x2010,
        0x3000,
        good.len() / 2,
        good.len() - 1,
    ] {
        let path = write(&dir, "cut.dmp", &good[..cut]);
        if let Ok(d) = KernelDump::open(&path) {
            let _ = d.read_virtual(KVA + 0x800, 0x1800);
            let _ = d.modules().iter().count();
        }
    }
    // The bitmap claims more pages than the file holds.
    let mut bitmap = synth(Layout::Bitmap).build();
    put(&mut bitmap, 0x2030, 1 << 50);
    let path = write(&dir, "bitmap.dmp", &bitmap);
    assert!(KernelDump::open(&path).is_err());
}

#[test]
fn header_fuzz_never_panics() {
    ntdbg_testutil::require_testdata!();
    // Deterministic xorshift flips over the header and the first pages of synthetic dumps and
    // the real small dump's first 0x1a000 bytes.
    let dir = temp_dir("fuzz");
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let real = std::fs::read(ntdbg_testutil::testdata(
        "rizin-testbins/dmp/triage_x64.dmp",
    ))
    .unwrap_or_default();
    let bases = [
        synth(Layout::Full).build(),
        synth(Layout::Bitmap).build(),
        real,
    ];
    for (b, base) in bases.iter().enumerate() {
        let span = base.len().min(0x1a000);
        for i in 0..60 {
            let mut bytes = base.clone();
            for _ in 0..(1 + next() % 16) {
                let at = (next() as usize) % span;
                bytes[at] = next() as u8;
            }
            // Hit the interesting fields often.
            if i % 3 == 0 {
                for off in [0x88usize, 0x98, 0xa0, 0xf98, 0x2030, 0x2034, 0x2078, 0x207c] {
                    if off + 4 <= bytes.len() {
                        bytes[off..off + 4].copy_from_slice(&(next() as u32).to_le_bytes());
                    }
                }
            }
            let path = write(&dir, &format!("fuzz{b}.dmp"), &bytes);
            if let Ok(d) = ntdbg_targets::open(&path) {
                let _ = d.read_virtual(KVA, 0x40);
                let _ = d.modules().iter().count();
                for t in d.threads() {
                    if let Some(c) = &t.context {
                        let _ = d.read_virtual(c.get_stack_pointer(), 0x100);
                    }
                }
            }
        }
    }
}

#[test]
fn open_dispatches_by_signature() {
    ntdbg_testutil::require_testdata!();
    let user = ntdbg_testutil::sample("crashy-x64-null.dmp");
    let d = ntdbg_targets::open(&user).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(d.kind().name(), "user");
    assert!(d.bugcheck().is_none());
    let k = ntdbg_targets::open(&ntdbg_testutil::testdata(
        "rizin-testbins/dmp/triage_x64.dmp",
    ))
    .unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(k.kind().name(), "kernel-small");
    let dir = temp_dir("dispatch");
    let path = write(&dir, "text.dmp", b"not a dump at all");
    assert_eq!(
        ntdbg_targets::open(&path)
            .map(|_| ())
            .err()
            .map(|e| e.code().name()),
        Some("not_a_dump")
    );
    assert!(ntdbg_targets::open(&dir).is_err());
}

fn rss_kib(field: &str) -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .unwrap_or_default()
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap_or(0)
}

/// Benchmark, not a test: `cargo test -p ntdbg-targets --release --test targets --
/// --ignored --nocapture sparse_open_cost`. Prints open time and resident memory for a
/// 1 MiB and a 4 GiB sparse synthetic full dump.
#[test]
#[ignore]
fn sparse_open_cost() {
    let dir = temp_dir("sparse");
    for (name, layout, pages) in [
        ("full 1MiB", Layout::Full, 0x100u64),
        ("full 4GiB", Layout::Full, 0x10_0000),
        ("bitmap 1MiB", Layout::Bitmap, 0x100),
        ("bitmap 4GiB", Layout::Bitmap, 0x10_0000),
    ] {
        let mut s = synth(layout);
        // All of physical memory present (one run, or every bitmap bit set); the generator's
        // pages sit inside it.
        s.set_runs(vec![(0, pages)]);
        s.add_zero_pages(0, pages);
        let path = dir.join(format!("{}.dmp", name.replace(' ', "-")));
        if let Err(e) = s.write(&path) {
            panic!("{e}");
        }
        let size = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        let rss_before = rss_kib("VmRSS:");
        let started = std::time::Instant::now();
        let mut best = std::time::Duration::MAX;
        for _ in 0..20 {
            let t = std::time::Instant::now();
            let d = KernelDump::open(&path).unwrap_or_else(|e| panic!("{e}"));
            assert!(d.read_exact(KVA + 0x800, 16).is_some());
            best = best.min(t.elapsed());
        }
        let total = started.elapsed();
        let d = KernelDump::open(&path).unwrap_or_else(|e| panic!("{e}"));
        let rss_open = rss_kib("VmRSS:");
        let text: Vec<u8> = (0..0x1800u32).map(|i| (i * 7 % 251) as u8).collect();
        assert_eq!(
            d.read_exact(KVA + 0x800, 0x1800).as_deref(),
            Some(&text[..])
        );
        assert_eq!(d.modules().iter().count(), 2);
        println!(
            "{name}: file {size:#x} bytes ({} MiB), open+read best {:?} (20 opens {:?}), RSS {} KiB -> {} KiB (+{} KiB), VmHWM {} KiB, pages {}",
            size >> 20,
            best,
            total,
            rss_before,
            rss_open,
            rss_open.saturating_sub(rss_before),
            rss_kib("VmHWM:"),
            d.physical_pages(),
        );
        drop(d);
        let _ = std::fs::remove_file(&path);
    }
}

fn open_synth(s: &KernelSynth, name: &str) -> KernelDump {
    let dir = temp_dir(name);
    let path = write(&dir, &format!("{name}.dmp"), &s.build());
    KernelDump::open(&path).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn synthetic_arm64_dump_translates() {
    // Same shape as the x64 dumps: 4 KiB pages across a boundary, a 2 MiB and a 1 GiB block,
    // an invalid entry; descriptors in ARM64's format.
    for layout in [Layout::Full, Layout::Bitmap, Layout::KernelMemory] {
        let mut s = KernelSynth::for_machine(layout, Machine::Arm64);
        let text: Vec<u8> = (0..0x1800u32).map(|i| (i * 11 % 253) as u8).collect();
        s.write_virtual(KVA + 0x800, &text);
        s.map_2m(KVA + 0x20_0000, 0x40_0000);
        s.write_physical(0x40_0000 + 0x1_2345, b"BLOCK");
        s.map_1g(0xffff_f880_0000_0000, 0x8000_0000);
        s.write_physical(0x8000_0000 + 0x123_4567, b"HUGE");
        s.set_pte(KVA + 0x5000, 0x1234_5000 | 0x401); // bit 1 clear at level 3: invalid
        s.rip = KVA + 0x800;
        s.rsp = KVA + 0x1000;
        let d = open_synth(&s, "arm64");
        assert_eq!(d.arch(), Arch::Arm64);
        assert_eq!(d.paging(), Some(Paging::Arm64));
        assert_eq!(
            d.read_exact(KVA + 0x800, 0x1800).as_deref(),
            Some(&text[..]),
            "{layout:?}"
        );
        assert_eq!(
            d.read_exact(KVA + 0x20_0000 + 0x1_2345, 5).as_deref(),
            Some(&b"BLOCK"[..])
        );
        assert_eq!(
            d.read_exact(0xffff_f880_0000_0000 + 0x123_4567, 4)
                .as_deref(),
            Some(&b"HUGE"[..])
        );
        assert!(d.translate(KVA + 0x5000).is_none());
        let pc = d.threads()[0]
            .context
            .as_ref()
            .map(|c| c.get_instruction_pointer());
        assert_eq!(pc, Some(KVA + 0x800));
    }
}

#[test]
fn synthetic_32bit_full_dumps_translate_with_and_without_pae() {
    const VA: u64 = 0x8040_0000;
    for (machine, paging, large) in [
        (Machine::X86Pae, Paging::X86Pae, 0x20_0000u64),
        (Machine::X86, Paging::X86, 0x40_0000),
    ] {
        let mut s = KernelSynth::for_machine(Layout::Full, machine);
        let text: Vec<u8> = (0..0x1800u32).map(|i| (i * 13 % 241) as u8).collect();
        s.write_virtual(VA + 0x800, &text);
        // A large page (2 MiB with PAE, 4 MiB without) after the small ones.
        s.map_2m(VA + 0x40_0000, 0x80_0000);
        s.write_physical(0x80_0000 + large - 8, b"LASTPAGE");
        let missing = s.alloc();
        s.map_4k(VA + 0x6000, missing);
        s.omit(missing);
        s.rip = VA + 0x800;
        s.rsp = VA + 0x1000;
        s.add_module_list(
            0x8100_0000,
            &[
                (
                    r"\SystemRoot\system32\ntkrnlpa.exe",
                    0x8280_0000,
                    0x41_0000,
                    0x4ce7_951a,
                ),
                (
                    r"\SystemRoot\system32\hal.dll",
                    0x8320_0000,
                    0x3_7000,
                    0x4ce7_8a09,
                ),
            ],
        );
        let d = open_synth(&s, "x86");
        let modules: Vec<(String, u64, u32, u32)> = d
            .modules()
            .iter()
            .map(|m| {
                let r = &m.raw;
                (
                    m.name.clone(),
                    r.base_of_image,
                    r.size_of_image,
                    r.time_date_stamp,
                )
            })
            .collect();
        assert_eq!(
            modules,
            [
                (
                    r"\SystemRoot\system32\ntkrnlpa.exe".to_string(),
                    0x8280_0000,
                    0x41_0000,
                    0x4ce7_951a
                ),
                (
                    r"\SystemRoot\system32\hal.dll".to_string(),
                    0x8320_0000,
                    0x3_7000,
                    0x4ce7_8a09
                ),
            ],
            "{machine:?}"
        );
        assert!(!d.header().is64);
        assert_eq!(d.arch(), Arch::X86);
        assert_eq!(d.header().pae_enabled, machine == Machine::X86Pae);
        assert_eq!(d.paging(), Some(paging));
        assert_eq!(d.kind(), TargetKind::KernelFull);
        assert_eq!(
            d.read_exact(VA + 0x800, 0x1800).as_deref(),
            Some(&text[..]),
            "{machine:?}"
        );
        assert_eq!(
            d.read_exact(VA + 0x40_0000 + large - 8, 8).as_deref(),
            Some(&b"LASTPAGE"[..]),
            "{machine:?}"
        );
        assert!(d.read_exact(VA + 0x6000, 1).is_none(), "omitted page");
        assert!(d.read_exact(0x1000_0000, 1).is_none(), "unmapped");
        let ip = d.threads()[0]
            .context
            .as_ref()
            .map(|c| c.get_instruction_pointer());
        assert_eq!(ip, Some(VA + 0x800));
    }
}

#[test]
fn a_process_directory_selects_its_address_space() {
    const USER: u64 = 0x7ff6_1234_0000;
    let mut s = synth(Layout::Full);
    let root = s.fork_root();
    s.with_root(root, |s| s.write_virtual(USER, b"process two"));
    let d = open_synth(&s, "process");
    assert!(
        d.read_exact(USER, 11).is_none(),
        "not in the dump's own tables"
    );
    d.set_process_directory(Some(root * 0x1000));
    assert_eq!(d.process_directory(), root * 0x1000);
    assert_eq!(d.read_exact(USER, 11).as_deref(), Some(&b"process two"[..]));
    assert!(
        d.read_exact(KVA + 0x800, 16).is_some(),
        "kernel space is shared"
    );
    d.set_process_directory(None);
    assert_eq!(d.process_directory(), s.dtb());
    assert!(d.read_exact(USER, 11).is_none());
}

#[test]
fn synthetic_32bit_pagedump_header() {
    // A hand-built PAGEDUMP (32-bit) small dump: header, bugcheck and context only.
    let mut h = b"PAGE".repeat(0x400);
    h[..8].copy_from_slice(b"PAGEDUMP");
    let put =
        |h: &mut Vec<u8>, off: usize, v: u32| h[off..off + 4].copy_from_slice(&v.to_le_bytes());
    put(&mut h, 0x08, 0xf);
    put(&mut h, 0x0c, 7601);
    put(&mut h, 0x10, 0x0018_5000);
    put(&mut h, 0x20, 0x14c);
    put(&mut h, 0x24, 2);
    put(&mut h, 0x28, 0xD1);
    for (i, p) in [0x10u32, 2, 0, 0x8a12_3456].iter().enumerate() {
        put(&mut h, 0x2c + i * 4, *p);
    }
    h[0x320..0x320 + 0x2cc].fill(0);
    put(&mut h, 0x320, 0x0001_0007); // CONTEXT_i386 | control | integer | segments
    put(&mut h, 0x320 + 0xb8, 0x8a12_3456); // eip
    put(&mut h, 0x320 + 0xc4, 0x8078_9000); // esp
    put(&mut h, 0xf88, 4);
    let dir = temp_dir("x86");
    let path = write(&dir, "x86.dmp", &h);
    let d = ntdbg_targets::open(&path).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(d.kind().name(), "kernel-small");
    assert_eq!(d.arch().name(), "x86");
    assert_eq!(d.system().os_version, "6.1.7601");
    assert_eq!(d.system().cpu_count, 2);
    let bc = d.bugcheck().cloned();
    assert_eq!(
        bc.map(|b| (b.code, b.parameters)),
        Some((0xD1, [0x10, 2, 0, 0x8a12_3456]))
    );
    let ctx = d.threads().first().and_then(|t| t.context.clone());
    assert_eq!(
        ctx.as_ref().map(|c| c.get_instruction_pointer()),
        Some(0x8a12_3456)
    );
    assert_eq!(ctx.map(|c| c.get_stack_pointer()), Some(0x8078_9000));
    assert!(d.read_exact(0x8a12_3456, 1).is_none());
}
