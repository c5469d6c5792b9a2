//! `!process`, `!thread`, `.process`, `.thread` and `.trap` on a synthetic x64 full dump
//! (`ntdbg_testutil::kernel_synth`): processes, threads and switch frames laid out at offsets
//! the test chooses, fed to the commands as the layout (where a real dump's come from the
//! kernel's PDB). The list walking, context switching and formatting are the real code.

use ntdbg_analysis::kernel_objects::{
    KernelLayout, ProcessLayout, SwitchFrameLayout, ThreadLayout,
};
use ntdbg_commands::{run_command, KernelLayoutOverride};
use ntdbg_engine::Session;
use ntdbg_testutil::kernel_synth::{
    KernelSynth, Layout, ObjectAddresses, ObjectOffsets, SynthProcess, SynthThread,
};

const KVA: u64 = 0xffff_f804_7ba0_0000;
const HEAD: u64 = 0xffff_f804_7c61_e200;
const OBJECTS: u64 = 0xffff_c60c_8b00_0000;
const USER: u64 = 0x7ff6_1234_0000;
const TRAP: u64 = 0xffff_8504_2989_1000;

/// The analysis layout for the generator's offsets (what the kernel's PDB would give).
fn layout_of(o: &ObjectOffsets) -> KernelLayout {
    KernelLayout {
        pointer_size: 8,
        process: ProcessLayout {
            directory_table_base: o.process_directory_table_base,
            active_process_links: o.process_links,
            unique_process_id: o.process_id,
            parent_process_id: Some(o.process_parent_id),
            peb: Some(o.process_peb),
            image_file_name: o.process_image,
            thread_list_head: o.process_thread_list,
        },
        thread: ThreadLayout {
            thread_list_entry: o.thread_list_entry,
            cid: o.thread_cid,
            teb: Some(o.thread_teb),
            win32_start_address: Some(o.thread_start_address),
            state: Some(o.thread_state),
            wait_reason: Some(o.thread_wait_reason),
            initial_stack: Some(o.thread_initial_stack),
            stack_base: Some(o.thread_stack_base),
            stack_limit: Some(o.thread_stack_limit),
            kernel_stack: Some(o.thread_kernel_stack),
            process: Some(o.thread_process),
        },
        switch_frame: Some(SwitchFrameLayout {
            rbp: o.switch_rbp,
            return_address: o.switch_return,
            size: o.switch_size,
        }),
    }
}

struct Fixture {
    session: Session,
    layout: KernelLayout,
    objects: ObjectAddresses,
    dir: std::path::PathBuf,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn thread(tid: u64, state: u8, stack: u64, resume_at: u64) -> SynthThread {
    SynthThread {
        tid,
        state,
        wait_reason: 0,
        start_address: KVA + 0x3000,
        kernel_stack: stack,
        resume_at,
        rbp: stack + 0x100,
    }
}

/// System (pid 4, three threads: one waiting, one running on the processor whose context the
/// dump holds, one running elsewhere) and synth.exe (pid 0x1234, its own address space with
/// a user page), a module list naming ntoskrnl, and a KTRAP_FRAME.
fn fixture(tag: &str) -> Fixture {
    fixture_with(tag, false, None)
}

/// The fixture; `looping`: System's last thread links back to its first, not to the head;
/// `corrupt`: a seed for overwriting bytes of the dump's memory (the header stays valid).
fn fixture_with(tag: &str, looping: bool, corrupt: Option<u64>) -> Fixture {
    let mut s = KernelSynth::new(Layout::Full);
    // Code in the kernel image: the waiting thread resumes at KVA+0x2010.
    s.write_virtual(KVA + 0x2000, &[0x90; 0x40]);
    s.write_virtual(KVA + 0x3000, &[0xc3; 0x10]);
    // Map the kernel areas used below before forking the user address space, so both
    // roots share them (as every Windows process shares kernel space).
    for va in [OBJECTS, OBJECTS + 0x10_0000, 0xffff_8504_2980_0000] {
        s.write_virtual(va, &[0]);
    }
    let user_root = s.fork_root();
    s.with_root(user_root, |s| s.write_virtual(USER, b"user bytes"));
    let offsets = ObjectOffsets::x64_sample();
    let processes = [
        SynthProcess {
            pid: 4,
            parent_pid: 0,
            image: "System".into(),
            directory_table_base: s.dtb(),
            peb: 0,
            threads: vec![
                thread(8, 5, 0xffff_8504_2980_0e00, KVA + 0x2010),
                thread(0xc, 2, 0xffff_8504_2984_0e00, KVA + 0x2020),
                thread(0x10, 2, 0xffff_8504_2986_0e00, KVA + 0x2028),
            ],
        },
        SynthProcess {
            pid: 0x1234,
            parent_pid: 4,
            image: "a_long_image_name_cut.exe".into(),
            directory_table_base: (user_root * 0x1000) | 2,
            peb: 0x7ff6_0000_0000,
            threads: vec![thread(0x1238, 5, 0xffff_8504_2988_0e00, KVA + 0x2030)],
        },
    ];
    let objects = s.add_processes(HEAD, OBJECTS, &offsets, &processes);
    if looping {
        let [first, last] = [objects.threads[0][0], objects.threads[0][1]];
        let entry = offsets.thread_list_entry;
        s.write_virtual(last + entry, &(first + entry).to_le_bytes());
    }
    // A KTRAP_FRAME: rax, rcx, rbp, rip, cs, eflags, rsp at their x64 offsets.
    let mut frame = vec![0u8; 0x190];
    for (off, v) in [
        (0x30usize, 0x1111u64),
        (0x38, 0x2222),
        (0x158, 0xffff_8504_2989_2000),
        (0x168, KVA + 0x2008),
        (0x170, 0x10),
        (0x178, 0x10246),
        (0x180, 0xffff_8504_2989_1f00),
    ] {
        frame[off..off + 8].copy_from_slice(&v.to_le_bytes());
    }
    s.write_virtual(TRAP, &frame);
    s.write_virtual(0xffff_8504_2989_1f00, &[0; 0x100]);
    // The dump's processor context: on the stack of System's thread 0xc.
    s.rip = KVA + 0x2000;
    s.rsp = 0xffff_8504_2984_0f00;
    s.add_module_list(
        0xffff_f804_7c62_a000,
        &[(
            r"\SystemRoot\system32\ntoskrnl.exe",
            KVA,
            0x10_0000,
            0x1234_5678,
        )],
    );
    let dir = std::env::temp_dir().join(format!("ntdbg-kobj-{tag}-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let path = dir.join("synthetic-processes.dmp");
    let mut bytes = s.build();
    if let Some(seed) = corrupt {
        smash(&mut bytes[0x2000..], seed);
    }
    if let Err(e) = std::fs::write(&path, &bytes) {
        panic!("{e}");
    }
    let session = Session::open_dump(&path, Some(&dir.display().to_string()))
        .unwrap_or_else(|e| panic!("{e}"));
    Fixture {
        session,
        layout: layout_of(&offsets),
        objects,
        dir,
    }
}

impl Fixture {
    /// Runs `line` with the fixture's layout kept with the session (it stays set).
    fn with_layout(&mut self, line: &str) -> String {
        self.session
            .set_extension(KernelLayoutOverride(self.layout.clone()));
        self.run(line)
    }

    fn run(&mut self, line: &str) -> String {
        match run_command(&mut self.session, line) {
            Ok(out) => out.text,
            Err(e) => format!("ERROR {}: {}", e.code, e.message),
        }
    }
}

/// `Pcb.DirectoryTableBase` of process `index`, as laid out.
fn dirbase_of(f: &Fixture, index: usize) -> u64 {
    let at = f.objects.processes[index] + ObjectOffsets::x64_sample().process_directory_table_base;
    f.session.target().read_uint(at, 8).unwrap_or(0)
}

#[test]
fn process_list_from_ps_active_process_head() {
    let mut f = fixture("list");
    let text = f.with_layout("!process 0 0");
    let [system, user] = [f.objects.processes[0], f.objects.processes[1]];
    let want = format!(
        "**** NT ACTIVE PROCESS DUMP ****\n\
         PROCESS {system:016x}\n    Cid: 0004    Peb: 00000000  ParentCid: 0000\n    DirBase: {:08x}\n    Image: System\n\n\
         PROCESS {user:016x}\n    Cid: 1234    Peb: 7ff600000000  ParentCid: 0004\n    DirBase: {:08x}\n    Image: a_long_image_na\n\n",
        dirbase_of(&f, 0),
        dirbase_of(&f, 1),
    );
    assert_eq!(text, want);
    // Filtered by image name.
    let only = f.with_layout("!process 0 0 system");
    assert!(
        only.contains("Image: System") && !only.contains("a_long"),
        "{only}"
    );
    // No address: the process whose page tables are in use (the header's: System).
    let current = f.with_layout("!process");
    assert!(
        current.starts_with(&format!("PROCESS {system:016x}")),
        "{current}"
    );
}

#[test]
fn process_with_threads_and_stacks() {
    let mut f = fixture("threads");
    let system = f.objects.processes[0];
    let [waiting, running, elsewhere] = [
        f.objects.threads[0][0],
        f.objects.threads[0][1],
        f.objects.threads[0][2],
    ];
    let text = f.with_layout(&format!("!process {system:x} 7"));
    for want in [
        format!("PROCESS {system:016x}"),
        format!(
            "        THREAD {waiting:016x}  Cid 0004.0008  Teb: 0000000000000000 WAIT: (Executive)"
        ),
        format!("        THREAD {running:016x}  Cid 0004.000c  Teb: 0000000000000000 RUNNING"),
        format!(
            "            Win32 Start Address ntoskrnl+0x3000 (0x{:016x})",
            KVA + 0x3000
        ),
        "            Stack Init ffff850429800fd0 Current ffff850429800e00".to_string(),
        "            Base ffff850429801000 Limit ffff850429800000".to_string(),
        "            Child-SP          RetAddr               Call Site".to_string(),
        // The waiting thread resumes at its switch frame's return address.
        "            ffff8504`29800e40 ".to_string(),
        "ntoskrnl+0x2010".to_string(),
        format!("        THREAD {running:016x}  Cid 0004.000c"),
        // The running thread's stack starts from the dump's processor context.
        "            ffff8504`29840f00 ".to_string(),
        "ntoskrnl+0x2000".to_string(),
        format!("            Unable to get the stack: thread {elsewhere:#x} was running on a processor whose registers the dump does not hold"),
    ] {
        assert!(text.contains(&want), "{want} missing from\n{text}");
    }
    // The typed result: processes with threads, stacks, or why there is none.
    let typed = run_command(&mut f.session, &format!("!process {system:x} 7"))
        .ok()
        .and_then(|o| o.typed)
        .map(|t| serde_json::to_value(&t).unwrap_or_default())
        .unwrap_or_default();
    assert_eq!(typed["kind"], "processes");
    let p = &typed["processes"][0];
    assert_eq!(
        (p["pid"].as_str(), p["image"].as_str()),
        (Some("0x4"), Some("System"))
    );
    let t = &p["threads"];
    assert_eq!(t[0]["state"], "Waiting");
    assert_eq!(t[0]["wait_reason"], "Executive");
    assert_eq!(
        t[0]["stack"]["frames"][0]["instruction"],
        format!("{:#x}", KVA + 0x2010).as_str()
    );
    assert_eq!(t[1]["state"], "Running");
    assert_eq!(
        t[1]["stack"]["frames"][0]["instruction"],
        format!("{:#x}", KVA + 0x2000).as_str()
    );
    assert!(t[2]["stack"].is_null());
    assert!(t[2]["stack_unavailable"]
        .as_str()
        .is_some_and(|w| w.contains("running")));
    // !thread: the same block, with the owning process.
    let t = f.with_layout(&format!("!thread {waiting:x}"));
    assert!(
        t.starts_with(&format!("THREAD {waiting:016x}  Cid 0004.0008")),
        "{t}"
    );
    assert!(
        t.contains(&format!(
            "    Owning Process            {system:016x}       Image:         System"
        )),
        "{t}"
    );
    assert!(t.contains("ntoskrnl+0x2010"), "{t}");
}

#[test]
fn dot_thread_sets_the_saved_context_and_dot_process_the_page_tables() {
    let mut f = fixture("scope");
    let waiting = f.objects.threads[0][0];
    let out = f.with_layout(&format!(".thread {waiting:x}"));
    assert!(
        out.starts_with("Implicit thread is now ffffc60c`8b1"),
        "{out}"
    );
    assert!(out.contains("only rip, rsp and rbp"), "{out}");
    let r = f.run("r");
    for want in [
        format!("rip={:016x}", KVA + 0x2010),
        "rsp=ffff850429800e40".to_string(),
        "rbp=ffff850429800f00".to_string(),
    ] {
        assert!(r.contains(&want), "{want} missing from\n{r}");
    }
    let k = f.run("k 1");
    assert!(k.contains("ntoskrnl+0x2010"), "{k}");
    let u = f.run("u @rip L1");
    assert!(u.contains("nop"), "{u}");
    assert_eq!(f.with_layout(".thread"), "Resetting default scope\n");
    assert!(f.run("r").contains(&format!("rip={:016x}", KVA + 0x2000)));
    // A running thread: its processor's context, when the dump holds it.
    let running = f.objects.threads[0][1];
    let out = f.with_layout(&format!(".thread {running:x}"));
    assert!(
        out.contains("its registers are its processor's context"),
        "{out}"
    );
    let r = f.run("r");
    assert!(r.contains("rsp=ffff850429840f00"), "{r}");
    f.with_layout(".thread");
    // Running on a processor whose context the dump lacks: said, and nothing changes.
    let running = f.objects.threads[0][2];
    let err = f.with_layout(&format!(".thread {running:x}"));
    assert!(
        err.starts_with("ERROR no_saved_context: thread") && err.contains("running"),
        "{err}"
    );

    // .process: the user page appears through the process's page tables.
    let user = f.objects.processes[1];
    assert!(f
        .run(&format!("db {USER:x} L4"))
        .starts_with("Memory access error at"));
    let out = f.with_layout(&format!(".process {user:x}"));
    assert_eq!(out, format!("Implicit process is now ffffc60c`8b001000\n"));
    let db = f.run(&format!("db {USER:x} La"));
    assert!(db.contains("75 73 65 72 20 62 79 74-65 73"), "{db}");
    let current = f.with_layout("!process");
    assert!(current.contains("Image: a_long_image_na"), "{current}");
    assert!(f
        .run(".process")
        .starts_with("Implicit process is now the dump's default"));
    assert!(f
        .run(&format!("db {USER:x} L4"))
        .starts_with("Memory access error at"));
}

#[test]
fn trap_frame_becomes_the_register_context() {
    let mut f = fixture("trap");
    let out = f.run(&format!(".trap {TRAP:x}"));
    for want in [
        "NOTE: The trap frame does not contain all registers.",
        "rax=0000000000001111",
        "rcx=0000000000002222",
        "rbx=0000000000000000",
        &format!("rip={:016x}", KVA + 0x2008),
        "rsp=ffff850429891f00",
        "rbp=ffff850429892000",
        "efl=00010246",
        "ntoskrnl+0x2008:",
    ] {
        assert!(out.contains(want), "{want} missing from\n{out}");
    }
    assert!(f.run("k 1").contains("ntoskrnl+0x2008"));
    assert_eq!(f.run(".trap"), "Resetting default scope\n");
    assert!(f.run("r").contains(&format!("rip={:016x}", KVA + 0x2000)));
    let hole = f.run(".trap 1000");
    assert!(
        hole.starts_with(
            "ERROR memory_unavailable: Unable to read trap frame at 00000000`00001000"
        ),
        "{hole}"
    );
}

#[test]
fn corrupt_lists_are_errors_not_hangs() {
    let mut f = fixture("corrupt");
    // Without the kernel's PDB the commands say what they need.
    let err = f.run("!process 0 0");
    assert!(
        err.starts_with("ERROR kernel_symbols_missing: !process needs the kernel's PDB"),
        "{err}"
    );
    let mut looping = fixture_with("loop", true, None);
    let system = looping.objects.processes[0];
    let err = looping.with_layout(&format!("!process {system:x} 2"));
    assert!(
        err.starts_with(
            "ERROR memory_unavailable: the thread list loops or does not return to its head"
        ),
        "{err}"
    );
    let wild = f.with_layout("!thread 1000");
    assert!(
        wild.starts_with("ERROR memory_unavailable: _ETHREAD.Cid at 0x1478 is not in the dump"),
        "{wild}"
    );
    let syntax = f.with_layout("!process 0 0 a b");
    assert!(syntax.starts_with("ERROR syntax_error"), "{syntax}");
}

/// Overwrites about one byte in 64 of `bytes` with pseudo-random values (fixed seed).
fn smash(bytes: &mut [u8], seed: u64) {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for _ in 0..bytes.len() / 64 {
        let at = (next() % bytes.len() as u64) as usize;
        bytes[at] = next() as u8;
    }
}

/// Corrupt memory under the process and thread commands: each answers or fails with a
/// message; none panics or hangs.
#[test]
fn corrupt_memory_never_panics() {
    let mut errors = 0;
    for seed in 1..=24 {
        let mut f = fixture_with(&format!("smash{seed}"), false, Some(seed));
        let system = f.objects.processes[0];
        let thread = f.objects.threads[0][0];
        for line in [
            "!process 0 7".to_string(),
            "!process".to_string(),
            format!("!process {system:x} 7"),
            format!("!thread {thread:x}"),
            format!(".thread {thread:x}"),
            format!(".process {:x}", f.objects.processes[1]),
        ] {
            errors += usize::from(f.with_layout(&line).starts_with("ERROR"));
        }
        for line in [
            "r",
            "k",
            "db @rsp L10",
            &format!(".trap {TRAP:x}"),
            "k",
            ".trap",
        ] {
            let _ = f.run(line);
        }
    }
    // The corruption reaches the structures: some answers are errors (and none a panic).
    assert!(errors > 0);
}
