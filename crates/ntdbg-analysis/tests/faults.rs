//! Fault inferences: every mode of the repository's `faults.exe` sample (testdata/faults/) named
//! with its evidence, and each detector on synthetic dumps whose every value the test chose.

use ntdbg_analysis::{analyze, Inference};
use ntdbg_engine::Session;
use ntdbg_testutil::corrupt::TempDir;
use ntdbg_testutil::minidump_builder::{
    Context, Cpu, Exception, MemoryInfo, MinidumpBuilder, Module, Thread, X64Context,
};

fn open_sample(mode: &str) -> Session {
    ntdbg_testutil::open_sample(&format!("faults/{mode}.dmp"))
}

/// The inferences of a sample, also checked to serialize with their `kind`.
fn inferences(mode: &str) -> Vec<Inference> {
    let report = analyze(&open_sample(mode));
    let json = serde_json::to_value(&report).expect("json");
    for (i, inference) in report.inferences.iter().enumerate() {
        assert_eq!(json["inferences"][i]["kind"], inference.kind.as_str());
    }
    report.inferences
}

/// The first inference of `kind`, or a failure listing what there was.
fn of_kind<'a>(all: &'a [Inference], kind: &str) -> &'a Inference {
    all.iter()
        .find(|i| i.kind == kind)
        .unwrap_or_else(|| panic!("no {kind} inference in {all:#?}"))
}

fn has(text: &str, parts: &[&str]) {
    for p in parts {
        assert!(text.contains(p), "{p:?} missing from {text:?}");
    }
}

#[test]
fn heap_use_after_free_faults_inside_the_heap_manager() {
    let all = inferences("heap_uaf");
    let i = of_kind(&all, "heap_corruption");
    assert_eq!(
        all[0].kind, "heap_corruption",
        "the heap comes first: {all:#?}"
    );
    // Wine's ntdll has no symbols: the program's call names the heap function, through the
    // import table of faults.exe.
    has(
        &i.text,
        &[
            "heap corruption: the access violation happened inside the heap manager",
            "faults!mode_heap_uaf",
            "KERNEL32.dll!HeapAlloc",
        ],
    );
    has(
        &i.basis,
        &[
            "system code without symbols",
            "called KERNEL32.dll!HeapAlloc (through the register r14, loaded from the pointer at",
            "mov qword ptr [rdx+8],rax with rdx=4141414141414141",
            "hypothesis:",
            "rdx holds \"AAAAAAAA\"",
        ],
    );
}

#[test]
fn heap_overflow_faults_inside_the_heap_manager() {
    let all = inferences("heap_overflow");
    let i = of_kind(&all, "heap_corruption");
    has(
        &i.text,
        &[
            "inside the heap manager",
            "faults!mode_heap_overflow",
            "KERNEL32.dll!HeapFree",
        ],
    );
    has(&i.basis, &["r8 holds \"AAAAAAAA\"", "heap buffer overflow"]);
}

#[test]
fn freed_fill_pattern_pointer() {
    let all = inferences("freed_pointer");
    let i = of_kind(&all, "fill_pattern");
    has(
        &i.text,
        &["0xfeeefeee", "freed memory", "hypothesis: a use after free"],
    );
    has(
        &i.basis,
        &[
            "rax holds 0xfeeefeee",
            "general-protection fault",
            "computes to 0xfeeefeeefeeefef6",
            "faults!read_next_value",
        ],
    );
}

#[test]
fn fail_fast_code_by_name() {
    let all = inferences("fastfail_cookie");
    let i = of_kind(&all, "fail_fast");
    has(
        &i.text,
        &[
            "FAST_FAIL_STACK_COOKIE_CHECK_FAILURE",
            "stack buffer overrun",
        ],
    );
    has(
        &i.basis,
        &[
            "0xC0000409",
            "fast-fail code 2 (FAST_FAIL_STACK_COOKIE_CHECK_FAILURE)",
        ],
    );
}

#[test]
fn constant_address_read() {
    let all = inferences("constant_address");
    let i = of_kind(&all, "constant_address");
    assert!(!all.iter().any(|i| i.text.contains("dangling")), "{all:#?}");
    has(
        &i.text,
        &[
            "constant address 0x3e3c9a10",
            "hard-coded",
            "not a freed or overwritten one",
        ],
    );
    has(
        &i.basis,
        &[
            "rax <- `mov eax,3E3C9A10h`",
            "decoded from the function's start",
            "faults!read_constant_address",
        ],
    );
}

#[test]
fn leaf_function_null_write_is_a_constant_address() {
    let all = inferences("leaf_null_write");
    let i = of_kind(&all, "constant_address");
    has(
        &i.text,
        &["write of the constant address 0x0", "deliberate crash"],
    );
    has(
        &i.basis,
        &["`mov byte ptr [0],1` encodes the address itself"],
    );
}

#[test]
fn assertion_message_in_a_register() {
    let all = inferences("assertion");
    assert_eq!(all[0].kind, "assertion", "{all:#?}");
    assert!(!all.iter().any(|i| i.kind == "breakpoint"), "{all:#?}");
    has(
        &all[0].text,
        &["Assertion failed: x > 0 [File: faults.c] [Line: "],
    );
    has(
        &all[0].basis,
        &[
            "rcx = 0x",
            "points to this text (in the dump's memory)",
            "0x80000003",
        ],
    );
}

#[test]
fn deliberate_trap_after_a_reason_code() {
    let all = inferences("deliberate_trap");
    let i = of_kind(&all, "deliberate");
    has(
        &i.text,
        &["reason code 0xdead0001", "faults!g_crash_reason", "`ud2`"],
    );
    has(&i.basis, &["0xc000001d", "mov dword ptr [", "0DEAD0001h"]);
}

#[test]
fn stack_overflow_through_a_two_function_cycle() {
    let all = inferences("stack_cycle");
    let i = of_kind(&all, "stack_overflow");
    has(
        &i.text,
        &[
            "cycle of 2 functions",
            "faults!ping",
            "faults!pong",
            // Walked past the default 1,024 frames to where the cycle began.
            "entered from faults!stack_cycle_thread",
        ],
    );
    assert!(!i.text.contains("the walk ended inside"), "{}", i.text);
    has(
        &i.basis,
        &["each repetition uses 0x", "bytes of the thread's stack"],
    );
}

#[test]
fn context_on_another_thread() {
    let all = inferences("context_thread");
    let i = of_kind(&all, "context_thread");
    has(
        &i.text,
        &[
            "the exception context belongs to thread",
            "(~1)",
            "that the dump names",
        ],
    );
    has(
        &i.basis,
        &["context rsp = 0x", "the stack memory the dump captured"],
    );
    // The crash itself is still named.
    assert_eq!(all[0].kind, "null_deref", "{all:#?}");
}

#[test]
fn bit_flipped_stack_pointer() {
    let all = inferences("bit_flip");
    let i = of_kind(&all, "bit_flip");
    has(
        &i.text,
        &[
            "0x100011fce4 is one bit away from 0x11fce4",
            "the stack of thread",
            "hypothesis",
        ],
    );
    has(
        &i.basis,
        &["bit 36 -> 0x11fce4", "rax = 0x11fce4 lies within 4 KiB"],
    );
}

#[test]
fn text_report_lists_the_inferences_with_their_kind_free_wording() {
    let report = analyze(&open_sample("deliberate_trap"));
    let text = ntdbg_analysis::render::render_report(&report);
    let section = text
        .split("INFERENCES:\n")
        .nth(1)
        .and_then(|s| s.split("\n\n").next())
        .expect("an INFERENCES section");
    assert_eq!(
        section,
        "  - a deliberate crash: the code stored the reason code 0xdead0001 to faults!g_crash_reason and then executed `ud2`\n    basis: exception code 0xc000001d at faults!fatal_error+0xa; the instruction before the trap is `mov dword ptr [00000001`4000d130],0DEAD0001h` (a store of an immediate to a global of the image)"
    );
}

// ---------------------------------------------------------------------------------------------
// Synthetic dumps: one detector each, with every value chosen here.

const APP: u64 = 0x1_4000_0000;
const CODE: u64 = APP + 0x1000;
const STACK: u64 = 0x0011_0000;
const STACK2: u64 = 0x0021_0000;

/// An x64 dump of `app.exe` whose code at [`CODE`] is `code` and whose thread 0x24 faults at
/// `CODE + fault_offset` with `context` (rip and rsp are set here).
fn synthetic(
    code: &[u8],
    fault_offset: u64,
    mut context: X64Context,
    parameters: Vec<u64>,
) -> MinidumpBuilder {
    context.rip = CODE + fault_offset;
    context.rsp = STACK + 0x800;
    let mut dump = MinidumpBuilder::new(Cpu::X64);
    dump.thread(Thread {
        id: 0x24,
        context: Some(Context::X64(context.clone())),
        stack_base: STACK,
        stack: vec![0; 0x1000],
        ..Thread::default()
    })
    .module(Module::new(r"C:\app\app.exe", APP, 0x1_0000))
    .memory(CODE, code.to_vec())
    .exception(Exception {
        parameters,
        context: Some(Context::X64(context)),
        ..Exception::new(0x24, 0xC000_0005, CODE + fault_offset)
    });
    dump
}

fn analyze_built(dump: &MinidumpBuilder) -> Vec<Inference> {
    let dir = TempDir::new("faults");
    let path = dir.path().join("built.dmp");
    dump.write(&path);
    let symbols = dir.path().display().to_string();
    let session = Session::open_dump(&path, Some(&symbols)).expect("the built dump opens");
    session.symbols().set_offline(true);
    analyze(&session).inferences
}

#[test]
fn constant_address_decoded_backwards_without_symbols() {
    // mov eax,4E3C9h ; mov ebx,[rax] ; ret
    let code = [0xb8, 0xc9, 0xe3, 0x04, 0x00, 0x8b, 0x18, 0xc3];
    let ctx = X64Context {
        rax: 0x4e3c9,
        ..X64Context::default()
    };
    let all = analyze_built(&synthetic(&code, 5, ctx, vec![0, 0x4e3c9]));
    let i = of_kind(&all, "constant_address");
    has(
        &i.text,
        &["read of the constant address 0x4e3c9, which the code itself supplies"],
    );
    has(&i.basis, &["`mov eax,4E3C9h`", "decoded backwards"]);
}

#[test]
fn a_loaded_pointer_is_not_a_constant() {
    // mov eax,4E3C9h ; mov rax,[rcx] ; mov ebx,[rax]: rax last came from memory.
    let code = [
        0xb8, 0xc9, 0xe3, 0x04, 0x00, 0x48, 0x8b, 0x01, 0x8b, 0x18, 0xc3,
    ];
    let ctx = X64Context {
        rax: 0x4e3c9,
        rcx: STACK + 0x900,
        ..X64Context::default()
    };
    let all = analyze_built(&synthetic(&code, 8, ctx, vec![0, 0x4e3c9]));
    assert!(
        !all.iter().any(|i| i.kind == "constant_address"),
        "{all:#?}"
    );
    assert_eq!(all[0].kind, "access_violation");
}

#[test]
fn fill_pattern_in_the_base_register() {
    // mov eax,[rax+10h] with rax = 0xbaadf00d (HeapAlloc's uninitialised fill).
    let code = [0x8b, 0x40, 0x10, 0xc3];
    let ctx = X64Context {
        rax: 0xbaad_f00d,
        ..X64Context::default()
    };
    let all = analyze_built(&synthetic(&code, 0, ctx, vec![0, 0xbaad_f01d]));
    let i = of_kind(&all, "fill_pattern");
    has(
        &i.text,
        &["0xbaadf00d", "never initialised", "uninitialised pointer"],
    );
    has(&i.basis, &["rax holds 0xbaadf00d"]);
}

/// A dump with a committed heap region in its MemoryInfoList.
fn with_heap(mut dump: MinidumpBuilder) -> MinidumpBuilder {
    dump.memory_info(MemoryInfo {
        base: 0x013a_0000,
        allocation_base: 0x013a_0000,
        allocation_protect: 0x04,
        region_size: 0x1_0000,
        state: 0x1000,
        protect: 0x04,
        kind: 0x2_0000,
    });
    dump
}

#[test]
fn bit_flips_land_in_a_module_a_stack_or_the_heap() {
    // mov eax,[rcx]
    let code = [0x8b, 0x01, 0xc3];
    for (good, what) in [
        (
            0x013a_0330u64,
            "committed memory 0x13a0000..0x13b0000 (MemoryInfoList)",
        ),
        (STACK + 0x840, "the stack of thread 0x24"),
        (APP + 0x2000, "the image of app.exe"),
    ] {
        let bad = good ^ (1 << 35);
        let ctx = X64Context {
            rcx: bad,
            ..X64Context::default()
        };
        let all = analyze_built(&with_heap(synthetic(&code, 0, ctx, vec![0, bad])));
        let i = of_kind(&all, "bit_flip");
        has(
            &i.text,
            &[&format!("{bad:#x} is one bit away from {good:#x} ({what})")],
        );
        has(&i.basis, &["bit 35 ->"]);
    }
}

#[test]
fn two_bits_away_is_not_a_bit_flip() {
    let code = [0x8b, 0x01, 0xc3];
    let bad = 0x013a_0330u64 ^ (3 << 35);
    let ctx = X64Context {
        rcx: bad,
        ..X64Context::default()
    };
    let all = analyze_built(&with_heap(synthetic(&code, 0, ctx, vec![0, bad])));
    assert!(!all.iter().any(|i| i.kind == "bit_flip"), "{all:#?}");
}

#[test]
fn context_stack_pointer_in_another_threads_stack() {
    let code = [0x89, 0x01, 0xc3]; // mov [rcx],eax
    let mut dump = synthetic(&code, 0, X64Context::default(), vec![1, 0]);
    // Thread 0x30 owns STACK2; the exception names 0x24 but its context runs on STACK2.
    dump.thread(Thread {
        id: 0x30,
        context: Some(Context::X64(X64Context {
            rsp: STACK2 + 0x100,
            ..X64Context::default()
        })),
        stack_base: STACK2,
        stack: vec![0; 0x1000],
        ..Thread::default()
    });
    let context = X64Context {
        rip: CODE,
        rsp: STACK2 + 0x800,
        ..X64Context::default()
    };
    dump.exception(Exception {
        parameters: vec![1, 0],
        context: Some(Context::X64(context)),
        ..Exception::new(0x24, 0xC000_0005, CODE)
    });
    let all = analyze_built(&dump);
    let i = of_kind(&all, "context_thread");
    has(
        &i.text,
        &["belongs to thread 0x30 (~1), not to thread 0x24"],
    );
    has(
        &i.basis,
        &["context rsp = 0x210800 is inside thread 0x30's stack 0x210000..0x211000"],
    );
}

#[test]
fn without_function_bounds_only_the_adjacent_instruction_proves_a_constant() {
    // mov eax,4E3C9h ; nop ; mov ebx,[rax]: decoded backwards, the nop could be a jump target.
    let code = [0xb8, 0xc9, 0xe3, 0x04, 0x00, 0x90, 0x8b, 0x18, 0xc3];
    let ctx = X64Context {
        rax: 0x4e3c9,
        ..X64Context::default()
    };
    let all = analyze_built(&synthetic(&code, 6, ctx, vec![0, 0x4e3c9]));
    assert!(
        !all.iter().any(|i| i.kind == "constant_address"),
        "{all:#?}"
    );
}

#[test]
fn heap_manager_named_by_its_symbols() {
    use ntdbg_testutil::minidump_builder::{CodeView, Guid};
    const NTDLL: u64 = 0x7ffa_0000_0000;
    let guid = Guid {
        data1: 0x1234_5678,
        data2: 0x9abc,
        data3: 0xdef0,
        data4: [1, 2, 3, 4, 5, 6, 7, 8],
    };
    let identifier = "123456789ABCDEF00102030405060708".to_string() + "1";
    // mov qword ptr [rdx+8],rax inside RtlpFreeHeap, rdx and rax overwritten with 'A's.
    let fault = NTDLL + 0x1010;
    let ctx = X64Context {
        rip: fault,
        rsp: STACK + 0x800,
        rax: 0x4141_4141_4141_4141,
        rdx: 0x4141_4141_4141_4141,
        ..X64Context::default()
    };
    let mut dump = MinidumpBuilder::new(Cpu::X64);
    dump.thread(Thread {
        id: 0x24,
        context: Some(Context::X64(ctx.clone())),
        stack_base: STACK,
        stack: vec![0; 0x1000],
        ..Thread::default()
    })
    .module(Module {
        codeview: Some(CodeView::Pdb70 {
            guid,
            age: 1,
            pdb: "ntdll.pdb".into(),
        }),
        ..Module::new(r"C:\Windows\System32\ntdll.dll", NTDLL, 0x20_0000)
    })
    .memory(fault, vec![0x48, 0x89, 0x42, 0x08, 0xc3])
    .exception(Exception {
        parameters: vec![0, u64::MAX],
        context: Some(Context::X64(ctx)),
        ..Exception::new(0x24, 0xC000_0005, fault)
    });
    let dir = TempDir::new("faults-heap");
    let sym_dir = dir.path().join("ntdll.pdb").join(&identifier);
    std::fs::create_dir_all(&sym_dir).expect("symbol folder");
    std::fs::write(
        sym_dir.join("ntdll.sym"),
        format!("MODULE windows x86_64 {identifier} ntdll.pdb\nFUNC 1000 200 0 RtlpFreeHeap\nFUNC 1200 100 0 RtlFreeHeap\n"),
    )
    .expect("sym file");
    let path = dir.path().join("heap.dmp");
    dump.write(&path);
    let symbols = dir.path().display().to_string();
    let session = Session::open_dump(&path, Some(&symbols)).expect("the built dump opens");
    session.symbols().set_offline(true);
    let all = analyze(&session).inferences;
    let i = of_kind(&all, "heap_corruption");
    has(
        &i.text,
        &[
            "inside the heap manager (ntdll!RtlpFreeHeap+0x10)",
            "the bug is earlier than this stack",
        ],
    );
    has(
        &i.basis,
        &[
            "frame 0 ntdll!RtlpFreeHeap+0x10 is a heap function",
            "rdx=4141414141414141",
            "hypothesis: a heap buffer overflow",
        ],
    );
}

#[test]
fn trap_after_storing_a_register_to_a_global() {
    // nop x40 ; mov dword ptr [rip+0x0fd2],ecx (a global of app.exe) ; int 3
    let mut code = vec![0x90; 40];
    code.extend([0x89, 0x0d, 0xd2, 0x0f, 0x00, 0x00, 0xcc]);
    let ctx = X64Context {
        rcx: 0x1234_0000_0bad_0002,
        ..X64Context::default()
    };
    let mut dump = synthetic(&code, 46, ctx.clone(), Vec::new());
    let mut context = ctx;
    context.rip = CODE + 46;
    context.rsp = STACK + 0x800;
    dump.exception(Exception {
        context: Some(Context::X64(context)),
        ..Exception::new(0x24, 0x8000_0003, CODE + 46)
    });
    let all = analyze_built(&dump);
    let i = of_kind(&all, "deliberate");
    has(
        &i.text,
        &["reason code 0xbad0002", "0x140002000 (in app)", "`int 3`"],
    );
    has(
        &i.basis,
        &["a store of rcx to a global of the image; rcx still holds it at the trap"],
    );
}

#[test]
fn jit_code_is_said_to_be_outside_every_module() {
    // The repository's unwind sample: three JIT functions between the program's frames, with no
    // runtime loaded that compiles code: whose code it is stays unknown, and the report says so.
    let path = ntdbg_testutil::sample("unwind/jit_callback.dmp");
    let session = Session::open_dump(&path, None).expect("sample opens");
    let report = analyze(&session);
    let jit = of_kind(&report.inferences, "code_outside_modules");
    has(
        &jit.text,
        &[
            "3 frames between 02 and 04 are code outside every module",
            "no runtime known to compile code at run time is loaded",
        ],
    );
    has(
        &jit.basis,
        &[
            "cfi 1, frame_pointer 2",
            "no known runtime module is loaded",
        ],
    );
}
