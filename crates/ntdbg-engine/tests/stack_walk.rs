//! The stack walker on dumps built with exactly the stacks and code a test chose
//! (`ntdbg_testutil::minidump_builder`): call-site validation of scanned and frame-pointer
//! return addresses, the ARM64 frame-record chain, the end of a chain, frame-pointer chains
//! through code outside every module, the leaf rule from the code's bytes; on the shared
//! corpus: leaf functions, unwind data leading outside code, every frame's trust; and on the
//! repository's `testdata/unwind` dumps: JIT code, a leaf without its image, DWARF CFI.

use ntdbg_engine::stack::{FoundBy, Stack, Trust};
use ntdbg_engine::Session;
use ntdbg_testutil::corrupt::TempDir;
use ntdbg_testutil::minidump_builder::{
    Arm64Context, Context, Cpu, Exception, MemoryInfo, MinidumpBuilder, Module, Thread, X64Context,
    MEM_COMMIT, MEM_PRIVATE, PAGE_EXECUTE_READ, PAGE_READWRITE,
};

const APP: u64 = 0x7ff6_0000_0000;
const CODE: u64 = APP + 0x1000;
const STACK: u64 = 0x0000_00c4_5670_0000;

/// Opens `dump` (written into a fresh folder, so no symbols are found) and walks thread 0.
fn walk(dump: &MinidumpBuilder, tag: &str) -> Stack {
    let dir = TempDir::new(tag);
    let path = dir.path().join("walk.dmp");
    dump.write(&path);
    let session = Session::open_dump(&path, Some(dir.path().to_str().unwrap())).unwrap();
    session.thread_stack(0).unwrap()
}

fn words(values: &[u64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn summary(stack: &Stack) -> Vec<(u64, FoundBy, Trust)> {
    stack
        .frames
        .iter()
        .map(|f| (f.instruction, f.found_by, f.trust))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// x64: stack scanning keeps only return addresses that follow a call.

/// 0x100 bytes of x64 code at `CODE`: `nop`s, a `call rel32` ending at +0x25 and a
/// `call [rip+disp32]` ending at +0x46.
fn x64_code() -> Vec<u8> {
    let mut code = vec![0x90u8; 0x100];
    code[0x20..0x25].copy_from_slice(&[0xE8, 0x10, 0x20, 0x00, 0x00]);
    code[0x40..0x46].copy_from_slice(&[0xFF, 0x15, 0x00, 0x10, 0x00, 0x00]);
    code
}

#[test]
fn x64_scan_keeps_only_return_addresses_after_a_call() {
    let after_nops = CODE + 0x60;
    let after_call = CODE + 0x25;
    let not_in_dump = APP + 0x5000;
    let after_indirect_call = CODE + 0x46;
    let sp = STACK + 0x20;
    let mut stack = vec![0u8; 0x20];
    stack.extend(words(&[
        after_nops,          // [rsp]: in code, but after nops: rejected
        after_call,          // frame 1
        0x1234,              // not code
        not_in_dump,         // frame 2: code not captured, unverified
        after_indirect_call, // frame 3
        0,
        0,
    ]));
    let mut dump = MinidumpBuilder::new(Cpu::X64);
    dump.module(Module::new("C:\\app\\app.exe", APP, 0x10000))
        .memory(CODE, x64_code())
        .thread(Thread {
            id: 1,
            context: Some(Context::X64(X64Context {
                rip: CODE + 0xa0,
                rsp: sp,
                ..X64Context::default()
            })),
            stack_base: STACK,
            stack,
            ..Thread::default()
        });
    let walked = walk(&dump, "walk-x64-scan");
    assert_eq!(
        summary(&walked),
        [
            (CODE + 0xa0, FoundBy::Context, Trust::Context),
            (after_call, FoundBy::Scan, Trust::CallSite),
            (not_in_dump, FoundBy::Scan, Trust::Unverified),
            (after_indirect_call, FoundBy::Scan, Trust::CallSite),
        ]
    );
    let trusted: Vec<bool> = walked.frames.iter().map(|f| f.is_trusted()).collect();
    assert_eq!(trusted, [true, true, false, true]);
    assert_eq!(walked.frames[1].stack_pointer, sp + 16);
}

// ---------------------------------------------------------------------------------------------
// ARM64: the frame-record chain (fp → [fp], [fp+8]) with every lr after a BL.

const BL: u32 = 0x9400_0010;
const BLR_X8: u32 = 0xD63F_0100;
const NOP: u32 = 0xD503_201F;

/// 0x100 bytes of ARM64 code at `CODE`: `nop`s, `bl` at +0x10 and +0x40, `blr x8` at +0x60.
fn arm64_code() -> Vec<u8> {
    let mut code: Vec<u32> = vec![NOP; 0x40];
    code[0x10 / 4] = BL;
    code[0x40 / 4] = BL;
    code[0x60 / 4] = BLR_X8;
    code.iter().flat_map(|w| w.to_le_bytes()).collect()
}

/// A thread whose frame records at `STACK + 0x40`, `0x80`, `0xc0`, `0x100` chain to a zero
/// record; `returns` are the lr values saved in the first three.
fn arm64_dump(returns: [u64; 3]) -> MinidumpBuilder {
    let mut stack = vec![0u64; 0x48];
    let record = |i: usize| STACK + 0x40 * (i as u64 + 1);
    for (i, ra) in returns.iter().enumerate() {
        let at = (record(i) - STACK) as usize / 8;
        stack[at] = record(i + 1);
        stack[at + 1] = *ra;
    }
    let mut x = [0u64; 31];
    x[29] = record(0);
    x[30] = CODE + 0x14; // lr of the innermost frame: not used, it has a frame record
    let mut dump = MinidumpBuilder::new(Cpu::Arm64);
    dump.module(Module::new("C:\\app\\app.exe", APP, 0x10000))
        .memory(CODE, arm64_code())
        .thread(Thread {
            id: 1,
            context: Some(Context::Arm64(Arm64Context {
                x,
                sp: STACK + 0x20,
                pc: CODE + 0xa0,
                ..Arm64Context::default()
            })),
            stack_base: STACK,
            stack: words(&stack),
            ..Thread::default()
        });
    dump
}

#[test]
fn arm64_frame_records_chain_to_the_end() {
    // The first lr carries pointer-authentication bits, stripped.
    let signed = 0x0023_0000_0000_0000 | (CODE + 0x14);
    let dump = arm64_dump([signed, CODE + 0x44, CODE + 0x64]);
    let walked = walk(&dump, "walk-arm64-chain");
    assert_eq!(
        summary(&walked),
        [
            (CODE + 0xa0, FoundBy::Context, Trust::Context),
            (CODE + 0x14, FoundBy::FramePointer, Trust::CallSite),
            (CODE + 0x44, FoundBy::FramePointer, Trust::CallSite),
            (CODE + 0x64, FoundBy::FramePointer, Trust::CallSite),
        ],
        "{walked:#?}"
    );
    // Each caller's fp is the next record; the zero record ends the walk (no scan after).
    let fps: Vec<Option<u64>> = walked.frames.iter().map(|f| f.frame_pointer).collect();
    assert_eq!(
        fps,
        [
            Some(STACK + 0x40),
            Some(STACK + 0x80),
            Some(STACK + 0xc0),
            Some(STACK + 0x100)
        ]
    );
    assert_eq!(walked.note, None);
}

#[test]
fn arm64_record_whose_lr_follows_no_call_is_not_taken() {
    let dump = arm64_dump([CODE + 0x14, CODE + 0x84, CODE + 0x64]);
    let walked = walk(&dump, "walk-arm64-broken");
    // Frame 2's record points after a nop: refused; scanning finds the next lr after a call.
    assert_eq!(
        summary(&walked),
        [
            (CODE + 0xa0, FoundBy::Context, Trust::Context),
            (CODE + 0x14, FoundBy::FramePointer, Trust::CallSite),
            (CODE + 0x64, FoundBy::Scan, Trust::CallSite),
        ],
        "{walked:#?}"
    );
    let mut first_only = walked.clone();
    first_only.truncate(1);
    assert_eq!(
        first_only.note, None,
        "k 1 keeps no note about later frames"
    );
    let note = walked.note.unwrap_or_default();
    assert!(
        note.contains(&format!("{:#x} does not follow a call", CODE + 0x84)),
        "{note}"
    );
}

#[test]
fn arm64_leaf_outside_every_module_returns_through_lr() {
    // A call through a bad pointer: pc in no module, lr after the BLR that made it.
    let mut dump = arm64_dump([CODE + 0x14, CODE + 0x44, CODE + 0x64]);
    let mut x = [0u64; 31];
    x[29] = STACK + 0x40;
    x[30] = CODE + 0x64;
    dump.thread(Thread {
        id: 2,
        context: Some(Context::Arm64(Arm64Context {
            x,
            sp: STACK + 0x20,
            pc: 0x10,
            ..Arm64Context::default()
        })),
        ..Thread::default()
    });
    let dir = TempDir::new("walk-arm64-leaf");
    let path = dir.path().join("walk.dmp");
    dump.write(&path);
    let session = Session::open_dump(&path, Some(dir.path().to_str().unwrap())).unwrap();
    let context = session.target().threads()[1].context.clone().unwrap();
    let walked = ntdbg_engine::stack::walk(session.target(), session.symbols(), 2, &context);
    assert_eq!(
        summary(&walked)[..2],
        [
            (0x10, FoundBy::Context, Trust::Context),
            (CODE + 0x64, FoundBy::Leaf, Trust::CallSite),
        ],
        "{walked:#?}"
    );
}

// ---------------------------------------------------------------------------------------------
// x64: frame-pointer chains through code outside every module (JIT code).

/// Where the JIT code of these tests lies: in no module.
const JIT: u64 = 0x0000_0200_0000_0000;

/// How the JIT region shows in the dump.
#[derive(Clone, Copy, PartialEq, Eq)]
enum JitRegion {
    /// Its code bytes are in the dump, and no memory info list says what it is.
    CodeInDump,
    /// Neither its code nor a memory info list are in the dump.
    Unknown,
    /// The memory info list marks it with this protection; its code is not in the dump.
    Protected(u32),
}

/// Frame 0 in JIT code at `JIT + 0xa0`, its frame-pointer chain through the records at
/// `STACK + 0x40`, `+ 0x60`, `+ 0x80` with the return addresses `returns`; the app module's
/// code (`x64_code`) is in the dump.
fn jit_dump(region: JitRegion, returns: [u64; 3]) -> MinidumpBuilder {
    let mut stack = vec![0u8; 0x40];
    stack.extend(words(&[STACK + 0x60, returns[0]]));
    stack.extend(vec![0u8; 0x10]);
    stack.extend(words(&[STACK + 0x80, returns[1]]));
    stack.extend(vec![0u8; 0x10]);
    stack.extend(words(&[0, returns[2], 0, 0, 0, 0]));
    let mut dump = MinidumpBuilder::new(Cpu::X64);
    dump.module(Module::new("C:\\app\\app.exe", APP, 0x10000))
        .memory(CODE, x64_code())
        .thread(Thread {
            id: 1,
            context: Some(Context::X64(X64Context {
                rip: JIT + 0xa0,
                rsp: STACK + 0x20,
                rbp: STACK + 0x40,
                ..X64Context::default()
            })),
            stack_base: STACK,
            stack,
            ..Thread::default()
        });
    match region {
        JitRegion::CodeInDump => {
            dump.memory(JIT, x64_code());
        }
        JitRegion::Unknown => {}
        JitRegion::Protected(protect) => {
            dump.memory_info(MemoryInfo {
                base: JIT,
                allocation_base: JIT,
                allocation_protect: PAGE_READWRITE,
                region_size: 0x1000,
                state: MEM_COMMIT,
                protect,
                kind: MEM_PRIVATE,
            });
        }
    }
    dump
}

#[test]
fn jit_frame_pointer_chain_reaching_module_code_is_followed() {
    let returns = [JIT + 0x25, JIT + 0x46, CODE + 0x25];
    // The JIT code is in the dump: every return address follows a call.
    let walked = walk(&jit_dump(JitRegion::CodeInDump, returns), "walk-jit-code");
    assert_eq!(
        summary(&walked),
        [
            (JIT + 0xa0, FoundBy::Context, Trust::Context),
            (JIT + 0x25, FoundBy::FramePointer, Trust::CallSite),
            (JIT + 0x46, FoundBy::FramePointer, Trust::CallSite),
            (CODE + 0x25, FoundBy::FramePointer, Trust::CallSite),
        ],
        "{walked:#?}"
    );
    assert!(walked.frames[1].module.is_none());
    assert_eq!(walked.frames[1].call_site(), format!("{:#x}", JIT + 0x25));
    // Neither the code nor a memory info list: the chain reaching module code is the check.
    // So it is with a list marking the region executable.
    for region in [JitRegion::Unknown, JitRegion::Protected(PAGE_EXECUTE_READ)] {
        let walked = walk(&jit_dump(region, returns), "walk-jit-unknown");
        assert_eq!(
            summary(&walked),
            [
                (JIT + 0xa0, FoundBy::Context, Trust::Context),
                (JIT + 0x25, FoundBy::FramePointer, Trust::FrameChain),
                (JIT + 0x46, FoundBy::FramePointer, Trust::FrameChain),
                (CODE + 0x25, FoundBy::FramePointer, Trust::CallSite),
            ],
            "{walked:#?}"
        );
        assert!(walked.frames.iter().all(|f| f.is_trusted()));
    }
}

#[test]
fn jit_chains_that_do_not_reach_module_code_are_not_followed() {
    let cases = [
        // The last record's return address is in no code.
        (JitRegion::Unknown, [JIT + 0x25, JIT + 0x46, 0x1234_5678]),
        // A return address in the dump's JIT code that follows no call.
        (JitRegion::CodeInDump, [JIT + 0x60, JIT + 0x46, CODE + 0x25]),
        // Memory the memory info list says is not executable.
        (
            JitRegion::Protected(PAGE_READWRITE),
            [JIT + 0x25, JIT + 0x46, CODE + 0x25],
        ),
    ];
    for (region, returns) in cases {
        let walked = walk(&jit_dump(region, returns), "walk-jit-broken");
        assert!(
            walked.frames.iter().all(
                |f| f.found_by != FoundBy::FramePointer && f.module.is_some()
                    || f.found_by == FoundBy::Context
            ),
            "{returns:x?}: {walked:#?}"
        );
    }
}

#[test]
fn jit_frames_named_by_a_unity_crash_log_that_matches_the_dump() {
    let mut dump = jit_dump(JitRegion::Unknown, [JIT + 0x25, JIT + 0x46, CODE + 0x25]);
    dump.exception(Exception::new(1, 0xC000_0005, JIT + 0xa0));
    let log = |thread: u32, native: u64| {
        format!(
            "Stack Trace of Crashed Thread {thread}:\r\n\
             {:#018X} (Assembly-CSharp) Game.Crash()\r\n\
             {:#018X} (Assembly-CSharp) Game.Update()\r\n\
             {:#018X} (mscorlib) System.Object.runtime_invoke_void__this__()\r\n\
             {native:#018X} (app) app_main\r\n\r\nStacks for Running Threads:\r\n",
            JIT + 0xa0,
            JIT + 0x25,
            JIT + 0x46,
        )
    };
    let named = |thread: u32, native: u64| {
        let dir = TempDir::new("walk-jit-names");
        let path = dir.path().join("crash.dmp");
        dump.write(&path);
        std::fs::write(dir.path().join("error.log"), log(thread, native)).unwrap();
        let session = Session::open_dump(&path, Some(dir.path().to_str().unwrap())).unwrap();
        session.thread_stack(0).unwrap()
    };
    let stack = named(1, CODE + 0x25);
    let sites: Vec<String> = stack.frames.iter().map(|f| f.call_site()).collect();
    assert_eq!(
        sites[..4],
        [
            "Assembly-CSharp!Game.Crash",
            "Assembly-CSharp!Game.Update",
            "mscorlib!System.Object.runtime_invoke_void__this__",
            "app+0x1025",
        ]
    );
    assert_eq!(stack.frames[1].module_base, None);
    let note = stack.note.unwrap_or_default();
    assert!(
        note.contains("3 frame(s) outside every module named by Unity's crash log"),
        "{note}"
    );
    // Another thread's log, or one whose native frame is not where the dump has its module:
    // not this dump's, and no name is taken from it.
    for (thread, native) in [(2, CODE + 0x25), (1, 0x1234)] {
        let stack = named(thread, native);
        assert!(stack.frames[1].function.is_none(), "{:?}", stack.frames[1]);
        assert_eq!(stack.frames[1].call_site(), format!("{:#x}", JIT + 0x25));
    }
}

// ---------------------------------------------------------------------------------------------
// x64: the leaf rule from the bytes around the fault, without the module's image.

/// A module without image or symbols; its code (`x64_code` with `body` at +0x80) is in the
/// dump; frame 0 at +0x80 with the return address after the call at +0x25 at `[rsp]`.
fn leaf_dump(body: &[u8]) -> MinidumpBuilder {
    let mut code = x64_code();
    code[0x80..0x80 + body.len()].copy_from_slice(body);
    let mut stack = vec![0u8; 0x20];
    stack.extend(words(&[CODE + 0x25, 0, 0, 0]));
    let mut dump = MinidumpBuilder::new(Cpu::X64);
    dump.module(Module::new("C:\\app\\app.exe", APP, 0x10000))
        .memory(CODE, code)
        .thread(Thread {
            id: 1,
            context: Some(Context::X64(X64Context {
                rip: CODE + 0x80,
                rsp: STACK + 0x20,
                ..X64Context::default()
            })),
            stack_base: STACK,
            stack,
            ..Thread::default()
        });
    dump
}

#[test]
fn leaf_decided_from_the_code_without_an_image() {
    // mov byte ptr [0],1; ret (after the nops before it: no stack adjustment).
    let leaf = [0xC6, 0x04, 0x25, 0, 0, 0, 0, 0x01, 0xC3];
    let walked = walk(&leaf_dump(&leaf), "walk-leaf-code");
    assert_eq!(
        summary(&walked)[1],
        (CODE + 0x25, FoundBy::Leaf, Trust::CallSite),
        "{walked:#?}"
    );
    // With `pop rbx` before the ret the word at [rsp] is not the return address: the same
    // return address is only found by scanning.
    let not_leaf = [0xC6, 0x04, 0x25, 0, 0, 0, 0, 0x01, 0x5B, 0xC3];
    let walked = walk(&leaf_dump(&not_leaf), "walk-not-leaf");
    assert_eq!(
        summary(&walked)[1],
        (CODE + 0x25, FoundBy::Scan, Trust::CallSite),
        "{walked:#?}"
    );
}

// ---------------------------------------------------------------------------------------------
// The repository's testdata/unwind dumps (tools/crashgen/generate-unwind.sh).

/// The crashing thread's frames of `testdata/unwind/<name>.dmp`, symbols from `symbols`
/// (the dump's own folder when `None`).
fn unwind_sample(name: &str, symbols: Option<&str>) -> Stack {
    let path = ntdbg_testutil::sample(&format!("unwind/{name}.dmp"));
    let session = Session::open_dump(&path, symbols).unwrap();
    session.event_stack().unwrap()
}

/// `(call site, found_by, trust)` of the first `n` frames.
fn first_frames(stack: &Stack, n: usize) -> Vec<(String, FoundBy, Trust)> {
    stack
        .frames
        .iter()
        .take(n)
        .map(|f| (f.call_site(), f.found_by, f.trust))
        .collect()
}

#[test]
fn jit_code_calling_back_into_the_program() {
    // write_null <- callback_from_jit <- three JIT functions in VirtualAlloc memory (frame
    // pointers, no unwind data, code not in the dump, no memory info list under Wine) <-
    // run_jit <- mode_jit_callback: the first JIT frame through callback_from_jit's unwind
    // data, the others through the chain that reaches run_jit again.
    let stack = unwind_sample("jit_callback", None);
    let jit = |f: &ntdbg_engine::stack::Frame| f.call_site();
    let frames = first_frames(&stack, 7);
    assert_eq!(frames[0].0, "unwind!write_null");
    assert_eq!(frames[1].0, "unwind!callback_from_jit+0x9");
    for (i, (found_by, trust)) in [
        (FoundBy::Cfi, Trust::UnwindData),
        (FoundBy::FramePointer, Trust::FrameChain),
        (FoundBy::FramePointer, Trust::FrameChain),
    ]
    .into_iter()
    .enumerate()
    {
        let f = &stack.frames[2 + i];
        assert!(f.module.is_none(), "{f:?}");
        assert!(jit(f).starts_with("0x"), "{f:?}");
        assert_eq!((f.found_by, f.trust), (found_by, trust), "{f:?}");
    }
    // The JIT functions are 32 bytes apart: innermost (highest) first.
    let addresses: Vec<u64> = stack.frames[2..5].iter().map(|f| f.instruction).collect();
    assert_eq!(addresses[0] - addresses[1], 0x20);
    assert_eq!(addresses[1] - addresses[2], 0x20);
    assert_eq!(
        frames[5..],
        [
            (
                "unwind!run_jit+0x6".to_string(),
                FoundBy::FramePointer,
                Trust::CallSite
            ),
            (
                "unwind!mode_jit_callback+0x2a".to_string(),
                FoundBy::Cfi,
                Trust::UnwindData
            ),
        ]
    );
    assert!(stack.note.is_none(), "{:?}", stack.note);
}

#[test]
fn fault_in_jit_code() {
    // A JIT leaf (mov byte ptr [0],1; ret) called by the JIT functions: frame 0 outside
    // every module, its caller by the leaf rule from the dump's bytes around the fault (which
    // also hold the JIT functions' calls), then the frame-pointer chain to run_jit.
    let stack = unwind_sample("jit_fault", None);
    let frames = first_frames(&stack, 6);
    let kinds: Vec<(FoundBy, Trust)> = frames.iter().map(|f| (f.1, f.2)).collect();
    assert_eq!(
        kinds[..5],
        [
            (FoundBy::Context, Trust::Context),
            (FoundBy::Leaf, Trust::CallSite),
            (FoundBy::FramePointer, Trust::CallSite),
            (FoundBy::FramePointer, Trust::CallSite),
            (FoundBy::FramePointer, Trust::CallSite),
        ]
    );
    assert!(
        frames[..4].iter().all(|f| f.0.starts_with("0x")),
        "{frames:?}"
    );
    assert_eq!(frames[4].0, "unwind!run_jit+0x6");
    assert_eq!(frames[5].0, "unwind!mode_jit_fault+0x25");
}

#[test]
fn leaf_without_its_image() {
    // mov byte ptr [0],1; ret in unwind.exe, opened with neither the exe nor its PDB: only
    // the dump's bytes around the fault say the function is a leaf; its caller's call lies
    // in them too.
    let dir = TempDir::new("walk-leaf-no-image");
    let path = dir.path().join("leaf_no_image.dmp");
    std::fs::copy(ntdbg_testutil::sample("unwind/leaf_no_image.dmp"), &path).unwrap();
    let session = Session::open_dump(&path, Some(dir.path().to_str().unwrap())).unwrap();
    let without = session.event_stack().unwrap();
    let with = unwind_sample("leaf_no_image", None);
    assert_eq!(with.frames[1].call_site(), "unwind!call_leaf+0x9");
    let f = &without.frames[1];
    assert_eq!(
        (f.instruction, f.found_by, f.trust),
        (with.frames[1].instruction, FoundBy::Leaf, Trust::CallSite),
        "{without:#?}"
    );
    assert_eq!(f.stack_pointer, without.frames[0].stack_pointer + 8);
}

#[test]
fn x86_mingw_throw_unwound_by_dwarf_cfi() {
    // i686 MinGW g++: an exception leaves a noexcept function, so __gxx_personality_v0 calls
    // std::terminate from inside _Unwind_RaiseException. libstdc++'s and libgcc's frames have
    // only .eh_frame; the stack reaches the thrower and main through it.
    let stack = unwind_sample("throw_noexcept", None);
    let names: Vec<String> = stack.frames.iter().map(|f| f.call_site()).collect();
    let at = |name: &str| {
        names
            .iter()
            .position(|n| n.starts_with(name))
            .unwrap_or_else(|| panic!("no {name} in {names:#?}"))
    };
    let order = [
        "unwind_throw!__cxa_call_terminate",
        "unwind_throw!_Unwind_RaiseException",
        "unwind_throw!__cxa_throw",
        "unwind_throw!load_config",
        "unwind_throw!start_server",
        "unwind_throw!main",
    ];
    let found: Vec<usize> = order.iter().map(|n| at(n)).collect();
    assert!(found.windows(2).all(|w| w[0] < w[1]), "{names:#?}");
    for i in at(order[0])..=at("unwind_throw!main") {
        let f = &stack.frames[i];
        assert_eq!(
            (f.found_by, f.trust),
            (FoundBy::Cfi, Trust::UnwindData),
            "{f:?}"
        );
    }
    assert!(names
        .iter()
        .any(|n| n.starts_with("unwind_throw!__gxx_personality_v0")));
}

// ---------------------------------------------------------------------------------------------
// The shared corpus.

/// Every thread's stack of a corpus dump, opened with the dump's own folder as symbol path.
fn corpus_stacks(rel: &str) -> Vec<Stack> {
    let path = ntdbg_testutil::testdata(rel);
    let session = Session::open_dump(&path, None).unwrap();
    (0..session.target().threads().len())
        .map(|i| session.thread_stack(i).unwrap())
        .collect()
}

#[test]
fn x64_leaf_function_returns_through_rsp() {
    ntdbg_testutil::require_testdata!();
    let xz = std::fs::read(ntdbg_testutil::testdata(
        "winelab/x64/null.inproc-full.dmp.xz",
    ))
    .unwrap();
    let mut bytes = Vec::new();
    std::io::Read::read_to_end(&mut liblzma::read::XzDecoder::new(&xz[..]), &mut bytes).unwrap();
    let dir = TempDir::new("walk-leaf");
    let path = dir.path().join("null.inproc-full.dmp");
    std::fs::write(&path, bytes).unwrap();
    let session = Session::open_dump(&path, Some(dir.path().to_str().unwrap())).unwrap();
    // Thread 1 waits in a system-call stub that has no unwind entry: a leaf, whose return
    // address at [rsp] follows a call in the dump's code.
    let walked = session.thread_stack(1).unwrap();
    let f = &walked.frames[1];
    assert_eq!(
        (f.instruction, f.found_by, f.trust),
        (0x7b07_5550, FoundBy::Leaf, Trust::CallSite)
    );
    assert_eq!(f.stack_pointer, walked.frames[0].stack_pointer + 8);
    assert_eq!(walked.frames[2].found_by, FoundBy::Cfi);
}

#[test]
fn unwind_data_leading_outside_code_is_not_a_frame() {
    ntdbg_testutil::require_testdata!();
    // Firefox x64: stack, heap and free addresses reached through unwind data used to be
    // shown as `cfi` frames; none is now (no return address there lies in memory the memory
    // info list marks executable), and every frame says how far it was checked.
    let stacks =
        corpus_stacks("mozilla-minidump-stackwalk-pgo/pgo_data/minidumps/windows-x86_64.dmp");
    let frames: Vec<_> = stacks.iter().flat_map(|s| &s.frames).collect();
    assert!(frames.len() > 1000);
    for f in &frames {
        let trusted_kind = matches!(f.found_by, FoundBy::Cfi) == (f.trust == Trust::UnwindData);
        assert!(trusted_kind, "{f:?}");
        if f.found_by == FoundBy::Cfi {
            assert!(f.module.is_some(), "{:#x} has no module", f.instruction);
        }
    }
}

#[test]
fn x86_stacks_match_minidump_stackwalk_to_the_last_caller() {
    ntdbg_testutil::require_testdata!();
    // Wine x86: crashy's frames through the PDB's frame data, its MinGW startup code (no
    // PDB record) through the DWARF CFI of crashy.exe (the stack realignment of
    // __tmainCRTStartup, whose ebp record holds a copy of the return address one slot below
    // the real one), then kernel32 and ntdll through the ebp chain, which ends at the record
    // whose return address is in the null page (no scanned leftovers after it), as
    // minidump-stackwalk shows.
    let path = ntdbg_testutil::testdata("winelab/x86/null.inproc.dmp");
    let session = Session::open_dump(&path, None).unwrap();
    let walked = session.event_stack().unwrap();
    let got: Vec<(u64, FoundBy)> = walked
        .frames
        .iter()
        .map(|f| (f.instruction, f.found_by))
        .collect();
    assert_eq!(
        got,
        [
            (0x0040_1ef3, FoundBy::Context),
            (0x0040_1a5e, FoundBy::Cfi),
            (0x0040_185d, FoundBy::Cfi),
            (0x0040_138e, FoundBy::Cfi),
            (0x7b62_93e0, FoundBy::Cfi),
            (0x7bc5_ca07, FoundBy::FramePointer),
            (0x7bc5_d228, FoundBy::FramePointer),
        ]
    );
}

#[test]
fn arm64_kernel_frame_records_chain_on() {
    use ntdbg_testutil::kernel_synth::{KernelSynth, Layout, Machine, CONTEXT_OFFSET};
    const NT: u64 = 0xffff_f800_1000_0000;
    const KSTACK: u64 = 0xffff_a000_0000_0000;
    let code = NT + 0x1000;
    let mut s = KernelSynth::for_machine(Layout::Full, Machine::Arm64);
    s.add_module_list(
        0xffff_f800_0100_0000,
        &[("ntoskrnl.exe", NT, 0x10_0000, 0x1234_5678)],
    );
    s.write_virtual(code, &arm64_code());
    // Kernel return addresses signed with pointer authentication: bit 55 set, the PAC in
    // the bits above the 48-bit address.
    let signed = |ra: u64| (ra & ((1 << 48) - 1)) | 0x0080_0000_0000_0000 | 0x0012_0000_0000_0000;
    s.write_virtual(KSTACK + 0x40, &words(&[KSTACK + 0x80, signed(code + 0x14)]));
    s.write_virtual(KSTACK + 0x80, &words(&[KSTACK + 0xc0, code + 0x44]));
    s.write_virtual(KSTACK + 0xc0, &words(&[0, 0]));
    s.rip = code + 0xa0;
    s.rsp = KSTACK + 0x20;
    let mut bytes = s.build();
    // CONTEXT (ARM64): Fp at 0xf0, Lr at 0xf8.
    bytes[CONTEXT_OFFSET + 0xf0..CONTEXT_OFFSET + 0xf8]
        .copy_from_slice(&(KSTACK + 0x40).to_le_bytes());
    bytes[CONTEXT_OFFSET + 0xf8..CONTEXT_OFFSET + 0x100]
        .copy_from_slice(&(code + 0x64).to_le_bytes());
    let dir = TempDir::new("walk-arm64-kernel");
    let path = dir.path().join("MEMORY.DMP");
    std::fs::write(&path, bytes).unwrap();
    let session = Session::open_dump(&path, Some(dir.path().to_str().unwrap())).unwrap();
    let walked = session.thread_stack(0).unwrap();
    assert_eq!(
        summary(&walked),
        [
            (code + 0xa0, FoundBy::Context, Trust::Context),
            (code + 0x14, FoundBy::FramePointer, Trust::CallSite),
            (code + 0x44, FoundBy::FramePointer, Trust::CallSite),
        ],
        "{walked:#?}"
    );
}

#[test]
fn x86_caller_after_a_stdcall_without_symbols_is_found() {
    // The repository's x86 sample: do_raise (no frame pointer) calls RaiseException in
    // kernelbase (no symbols), which pops its four arguments. The frame-pointer frame for
    // do_raise cannot know that, so do_raise's frame data read an argument (3) as its return
    // address and the walk used to stop there, losing mode_raise and main. A scan for a
    // return address after a call finds them.
    let path = ntdbg_testutil::sample("x86/crashy-x86-raise.dmp");
    let session = Session::open_dump(&path, None).unwrap();
    let walked = session.event_stack().unwrap();
    let names: Vec<String> = walked.frames.iter().map(|f| f.call_site()).collect();
    assert_eq!(
        names[..4],
        [
            "kernelbase+0x12866",
            "crashy!do_raise+0x2f",
            "crashy!mode_raise+0x5",
            "crashy!main+0x29a"
        ]
    );
    let f = &walked.frames[2];
    assert_eq!((f.found_by, f.trust), (FoundBy::Scan, Trust::CallSite));
    let note = walked.note.unwrap_or_default();
    assert!(note.contains("return address 0x3"), "{note}");
}
