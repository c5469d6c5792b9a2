//! Frame variables on the `locals` samples (tools/crashgen/locals.c): every parameter and local
//! the PDB declares for each frame's scope, with the values the source gives them, or
//! unavailable — never another value.

use ntdbg_engine::place::Place;
use ntdbg_engine::{FrameVariable, Session};

fn open(variant: &str) -> Session {
    let mut session = ntdbg_testutil::open_sample(&format!("locals/{variant}/locals.dmp"));
    session.select_exception_context().expect(".ecxr");
    session
}

/// The frame numbers of our functions, by name.
fn frame_of(session: &Session, function: &str) -> usize {
    let stack = session.stack().expect("stack");
    stack
        .frames
        .iter()
        .find(|f| {
            f.function
                .as_deref()
                .is_some_and(|n| ntdbg_symbols::strip_parameters(n) == function)
        })
        .unwrap_or_else(|| panic!("no frame for {function}"))
        .index
}

fn vars(session: &Session, function: &str) -> Vec<FrameVariable> {
    session
        .frame_variables(frame_of(session, function))
        .expect("frame variables")
}

fn var<'a>(vars: &'a [FrameVariable], name: &str) -> &'a FrameVariable {
    vars.iter()
        .find(|v| v.name == name)
        .unwrap_or_else(|| panic!("no variable {name}"))
}

fn names(vars: &[FrameVariable]) -> Vec<&str> {
    vars.iter().map(|v| v.name.as_str()).collect()
}

/// A little-endian integer of `size` bytes at `addr`.
fn read(session: &Session, addr: u64, size: usize) -> u64 {
    let bytes: Vec<u8> = session
        .read_virtual(addr, size)
        .into_iter()
        .map(|b| b.expect("memory in the dump"))
        .collect();
    bytes
        .iter()
        .rev()
        .fold(0u64, |acc, b| (acc << 8) | u64::from(*b))
}

/// The integer value of a variable of `size` bytes, or `None` when unavailable.
fn value(session: &Session, v: &FrameVariable, size: usize) -> Option<u64> {
    let mask = if size >= 8 {
        u64::MAX
    } else {
        (1u64 << (size * 8)) - 1
    };
    match &v.value.place {
        Place::Register { value, .. } => Some(value & mask),
        Place::Memory(addr) => Some(read(session, *addr, size)),
        Place::Unavailable { .. } => None,
    }
}

fn address(v: &FrameVariable) -> u64 {
    match v.value.place {
        Place::Memory(a) => a,
        ref other => panic!("{} is not in memory: {other:?}", v.name),
    }
}

/// `struct point { int x; int y; long long tag; }` at `addr`.
fn point(session: &Session, addr: u64) -> (u64, u64, u64) {
    (
        read(session, addr, 4),
        read(session, addr + 4, 4),
        read(session, addr + 8, 8),
    )
}

#[test]
fn optimized_build_values_or_unavailable() {
    let s = open("x64-O2");

    let crash = vars(&s, "crash_in_point");
    assert_eq!(names(&crash), ["p", "index", "scale", "product"]);
    let p = value(&s, var(&crash, "p"), 8).expect("p in rcx");
    assert_eq!(var(&crash, "p").location, "@rcx");
    assert_eq!(point(&s, p), (100, 200, 0x3333));
    assert_eq!(value(&s, var(&crash, "index"), 4), Some(2));
    // `scale` shared r8d with `product`: its range ended before the crash.
    assert_eq!(value(&s, var(&crash, "scale"), 4), None);
    assert_eq!(value(&s, var(&crash, "product"), 4), Some(11102));
    assert_eq!(var(&crash, "product").location, "@r8d");

    let walk = vars(&s, "walk_points");
    assert_eq!(names(&walk), ["pts", "count", "limit", "total", "i"]);
    // Callee-saved registers, recovered by unwinding crash_in_point.
    let pts = value(&s, var(&walk, "pts"), 8).expect("pts in rdi");
    assert_eq!(p, pts + 2 * 16, "p is &pts[2]");
    assert_eq!(value(&s, var(&walk, "limit"), 4), Some(2));
    assert_eq!(value(&s, var(&walk, "total"), 4), Some(111));
    // `count` lived in ebp only briefly; `i` was optimized away.
    assert_eq!(value(&s, var(&walk, "count"), 4), None);
    assert_eq!(value(&s, var(&walk, "i"), 4), None);

    let main = vars(&s, "main");
    assert_eq!(names(&main), ["argc", "argv", "origin", "points", "count"]);
    assert_eq!(value(&s, var(&main, "argc"), 4), Some(2));
    let origin = address(var(&main, "origin"));
    assert_eq!(var(&main, "origin").location, "@rbp-0x10");
    assert_eq!(point(&s, origin), (0x11, 0x22, 0x12_3456_7890));
    assert_eq!(
        address(var(&main, "points")),
        pts,
        "walk_points got main's array"
    );
    assert_eq!(value(&s, var(&main, "count"), 4), None);
}

#[test]
fn unoptimized_build_stack_slots() {
    let s = open("x64-O0");

    let crash = vars(&s, "crash_in_point");
    assert_eq!(names(&crash), ["p", "index", "scale", "product"]);
    let p = value(&s, var(&crash, "p"), 8).expect("p");
    assert!(var(&crash, "p").location.starts_with("@rsp+"));
    assert_eq!(point(&s, p), (100, 200, 0x3333));
    assert_eq!(value(&s, var(&crash, "index"), 4), Some(2));
    assert_eq!(value(&s, var(&crash, "scale"), 4), Some(111));
    assert_eq!(value(&s, var(&crash, "product"), 4), Some(11102));

    let walk = vars(&s, "walk_points");
    assert_eq!(names(&walk), ["pts", "count", "limit", "total", "i"]);
    assert_eq!(value(&s, var(&walk, "count"), 4), Some(4));
    assert_eq!(value(&s, var(&walk, "limit"), 4), Some(2));
    assert_eq!(value(&s, var(&walk, "total"), 4), Some(111));
    assert_eq!(value(&s, var(&walk, "i"), 4), Some(2));
    let pts = value(&s, var(&walk, "pts"), 8).expect("pts");
    assert_eq!(p, pts + 2 * 16);

    let main = vars(&s, "main");
    let origin = address(var(&main, "origin"));
    assert_eq!(point(&s, origin), (0x11, 0x22, 0x12_3456_7890));
    assert_eq!(value(&s, var(&main, "count"), 4), Some(4));
}

#[test]
fn frame_selection_resets_with_the_context() {
    let mut s = open("x64-O2");
    let walk = frame_of(&s, "walk_points");
    let frame = s.select_frame(walk).expect(".frame");
    assert_eq!(s.selected_frame(), walk);
    assert!(frame
        .function
        .as_deref()
        .unwrap_or("")
        .starts_with("walk_points"));
    // Volatile registers of a caller frame are unknown; callee-saved ones are recovered.
    assert_eq!(frame.register("rax"), None);
    assert!(frame.register("rbx").is_some());
    assert!(frame.register("rsp").is_some());
    assert!(s.select_frame(1000).is_err());
    assert_eq!(
        s.selected_frame(),
        walk,
        "a bad frame number keeps the selection"
    );
    s.select_exception_context().expect(".ecxr");
    assert_eq!(s.selected_frame(), 0);
    s.select_frame(walk).expect(".frame");
    s.set_current_thread(0).expect("~0s");
    assert_eq!(s.selected_frame(), 0);
    s.select_frame(1).expect(".frame 1");
    s.reset_scope();
    assert_eq!(s.selected_frame(), 0);
}

fn open_corpus(rel: &str) -> Session {
    let mut session = ntdbg_testutil::open_corpus(rel);
    session.select_exception_context().expect(".ecxr");
    session
}

#[test]
fn msvc_x64_regrel32_on_a_real_dump() {
    ntdbg_testutil::require_testdata!();
    // lldb's sigsegv.dmp: `crash(bool crash_self)` crashed because crash_self was true.
    let s = open_corpus("llvm-lldb/test/Shell/Minidump/Windows/Sigsegv/Inputs/sigsegv.dmp");
    let crash = s.frame_variables(0).expect("frame 0 variables");
    assert_eq!(names(&crash), ["crash_self"]);
    assert!(crash[0].is_parameter);
    assert_eq!(crash[0].location, "@rsp+0x30");
    assert_eq!(value(&s, &crash[0], 1), Some(1));
    // The caller was found by scanning: its stack slots are not trusted.
    let foo = s.frame_variables(1).expect("frame 1 variables");
    assert_eq!(names(&foo), ["x", "y", "msg", "flag"]);
    assert!(foo.iter().all(|v| value(&s, v, 4).is_none()));
}

#[test]
fn msvc_x86_locals_with_inline_frames_on_a_real_dump() {
    ntdbg_testutil::require_testdata!();
    // symbolic's mini.dmp (MSVC x86): `crash` and `start` are inlined into main; main's
    // variables are S_LOCAL + S_DEFRANGE_REGISTER_REL on ebp, repeated as S_BPREL32 (kept once).
    let s = open_corpus("getsentry-symbolic/symbolic-testutils/fixtures/windows/mini.dmp");
    let stack = s.stack().expect("stack");
    assert!(stack.frames[0].inline && stack.frames[1].inline);
    assert!(s.frame_variables(0).expect("inline frame").is_empty());
    let main = s.frame_variables(2).expect("main");
    assert_eq!(names(&main), ["argc", "argv", "eh"]);
    assert_eq!(var(&main, "argc").location, "@ebp+0xd4");
    assert_eq!(value(&s, var(&main, "argc"), 4), Some(1));
    // argv points to the heap, which a minidump does not hold.
    let argv = value(&s, var(&main, "argv"), 4).expect("argv");
    assert!(s.read_virtual(argv, 4).iter().all(Option::is_none));
    // A home on the stack before S_FRAMEPROC named the frame register (MSVC's order).
    let seh = s.frame_variables(4).expect("__scrt_common_main_seh");
    assert_eq!(var(&seh, "has_cctor").location, "@ebp-0x19");
}
