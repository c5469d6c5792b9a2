//! `??`, `dx` and `dt VAR` on the repository's sample dumps: golden text (insta snapshots in
//! `tests/snapshots/`) and values checked against what the dump holds.

use ntdbg_commands::{run_command, TypedResult};
use ntdbg_engine::Session;

/// Opens a sample with its own folder as the symbol path, in the exception's context.
fn open(sample: &str) -> Session {
    let mut session = ntdbg_testutil::open_sample(sample);
    run_command(&mut session, ".ecxr").expect(".ecxr");
    session
}

fn run(session: &mut Session, command: &str) -> String {
    match run_command(session, command) {
        Ok(out) => out.text,
        Err(e) => match e.hint {
            Some(h) => format!("ERROR {}: {}\nhint: {h}\n", e.code, e.message),
            None => format!("ERROR {}: {}\n", e.code, e.message),
        },
    }
}

/// The `value` field of a typed result.
fn value_of(session: &mut Session, command: &str) -> String {
    match run_command(session, command).expect(command).typed {
        Some(TypedResult::TypedValue { value, .. }) => value,
        other => panic!("{command}: {other:?}"),
    }
}

#[test]
fn cpp_expressions_golden() {
    let mut session = open("crashy-x64-null.dmp");
    for (name, command) in [
        ("arithmetic", "?? 1 + 2 * 3"),
        ("signed_division", "?? -7 / 2"),
        ("unsigned_wrap", "?? 0xffffffff + 1"),
        ("int64_literal", "?? 0x100000000"),
        ("usual_conversions", "?? -1 < 0u"),
        ("comparison", "?? 3 >= 2 && 1"),
        ("sizeof_type", "?? sizeof(crashy!_CONTEXT)"),
        ("sizeof_expr", "?? sizeof(int) * 2"),
        ("register", "?? @rsp"),
        ("cast_char", "?? (char)65"),
        ("cast_register", "?? (crashy!_M128A*)@rsp"),
        ("arrow", "?? ((crashy!_M128A*)@rsp)->Low"),
        ("index", "?? ((crashy!_M128A*)@rsp)[1]"),
        ("pointer_arithmetic", "?? (crashy!_M128A*)@rsp + 2"),
        ("pointer_difference", "?? (int*)@rsp - (int*)(@rsp - 8)"),
        ("offsetof", "?? &((crashy!_CONTEXT*)0)->Rip"),
        ("deref_struct", "?? *(crashy!_EXCEPTION_RECORD*)@rsp"),
        ("global_missing_memory", "?? g_sink"),
        ("global_address", "?? &crashy!g_sink"),
        ("char_pointer_missing", "?? g_dump_path"),
        ("struct_global", "?? g_fault_record"),
        ("masm_inside", "?? @@masm(poi(@rsp)) + 1"),
        ("cpp_inside_masm", "? @@c++(sizeof(crashy!_CONTEXT)) + 1"),
        (
            "cpp_member_inside_masm",
            "? @@c++(((crashy!_M128A*)@rsp)->High)",
        ),
        ("unresolved", "?? nosuch + 1"),
        ("unknown_member", "?? ((crashy!_M128A*)@rsp)->Nope"),
        ("unknown_type", "?? (crashy!NoSuchType*)0"),
        ("syntax", "?? 1 +"),
        ("divide_by_zero", "?? 1 / (2 - 2)"),
        ("null_deref", "?? *(int*)0"),
        ("member_of_int", "?? (1).x"),
        ("empty", "??"),
    ] {
        let text = run(&mut session, command);
        insta::assert_snapshot!(format!("typed_x64_null__{name}"), text, command);
    }
}

#[test]
fn dx_and_dt_golden() {
    let mut session = open("crashy-x64-null.dmp");
    for (name, command) in [
        ("dx_pointer", "dx (crashy!_EXCEPTION_RECORD*)@rsp"),
        ("dx_r0", "dx -r0 (crashy!_EXCEPTION_RECORD*)@rsp"),
        ("dx_r2_arrays", "dx -r2 *(crashy!_EXCEPTION_RECORD*)@rsp"),
        ("dx_scalar", "dx ((crashy!_M128A*)@rsp)->High"),
        ("dx_missing_memory", "dx g_fault_record"),
        ("dx_bad_option", "dx -g g_sink"),
        ("dt_var_missing_memory", "dt g_fault_record"),
        ("dt_expression", "dt (crashy!_M128A*)@rsp"),
        ("dt_scalar_var", "dt g_sink"),
        (
            "dt_type_at_cpp_address",
            "dt crashy!_M128A (crashy!_M128A*)@rsp+1",
        ),
        ("dt_unknown_still", "dt nosuch"),
    ] {
        let text = run(&mut session, command);
        insta::assert_snapshot!(format!("typed_x64_null__{name}"), text, command);
    }
}

#[test]
fn values_match_the_dump() {
    let mut session = open("crashy-x64-null.dmp");
    let rsp = session.register("rsp").unwrap();
    let read = |s: &Session, a: u64| s.target().read_uint(a, 8).unwrap();
    let low = read(&session, rsp);
    let high = read(&session, rsp + 8);
    let next_low = read(&session, rsp + 16);
    assert_eq!(
        value_of(&mut session, "?? ((crashy!_M128A*)@rsp)->Low"),
        format!("0x{:08x}`{:08x}", low >> 32, low & 0xffff_ffff)
    );
    assert_eq!(
        value_of(&mut session, "?? ((crashy!_M128A*)@rsp)->High"),
        format!("0n{}", high as i64)
    );
    assert_eq!(
        value_of(&mut session, "?? ((crashy!_M128A*)@rsp)[1].Low"),
        format!("0x{:08x}`{:08x}", next_low >> 32, next_low & 0xffff_ffff)
    );
    // `dx` prints the same bits in its own shape.
    assert_eq!(
        value_of(&mut session, "dx ((crashy!_M128A*)@rsp)->Low"),
        format!("{low:#x}")
    );
    // sizeof agrees with `dt -v`'s size and the member offsets with `dt`.
    assert_eq!(
        value_of(&mut session, "?? sizeof(crashy!_CONTEXT)"),
        "0x00000000`000004d0"
    );
    let dt = run(&mut session, "dt -v crashy!_CONTEXT");
    assert!(dt.contains("0x4d0 bytes"), "{dt}");
    assert!(dt.contains("+0x0f8 Rip"), "{dt}");
    assert_eq!(
        value_of(&mut session, "?? &((crashy!_CONTEXT*)0)->Rip"),
        "0x00000000`000000f8"
    );
    // MASM sees the C++ value as a number.
    assert_eq!(
        session
            .evaluate("@@c++(((crashy!_M128A*)@rsp)->Low)")
            .unwrap(),
        low
    );
    // The typed result of `??` on a pointer to a structure lists the members.
    match run_command(&mut session, "?? (crashy!_M128A*)@rsp")
        .unwrap()
        .typed
    {
        Some(TypedResult::TypedValue {
            type_name, members, ..
        }) => {
            assert_eq!(type_name, "struct _M128A *");
            let names: Vec<_> = members.iter().map(|m| m.name.as_str()).collect();
            assert_eq!(names, ["Low", "High"]);
            assert_eq!(members[1].offset.as_deref(), Some("0x8"));
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn x86_sample_uses_four_byte_pointers() {
    let mut session = open("x86/crashy-x86-null.dmp");
    let esp = session.register("esp").unwrap();
    let text = run(&mut session, "?? (int*)@esp");
    assert_eq!(text, format!("int * 0x{esp:08x}\n"));
    assert_eq!(
        run(&mut session, "?? sizeof(void*)"),
        "unsigned int 4\n".replace('4', "0x4")
    );
    let value = session.target().read_uint(esp, 4).unwrap() as u32 as i32;
    assert_eq!(
        value_of(&mut session, "?? *(int*)@esp"),
        format!("0n{value}")
    );
}

/// Opens one of the locals samples (`tools/crashgen/locals.c`), in the exception's context.
fn open_locals(build: &str) -> Session {
    let dir = ntdbg_testutil::repo_root()
        .join("testdata/locals")
        .join(build);
    let mut session = Session::open_dump(&dir.join("locals.dmp"), Some(&dir.display().to_string()))
        .expect("sample opens");
    run_command(&mut session, ".ecxr").expect(".ecxr");
    session
}

#[test]
fn locals_in_expressions_golden() {
    let mut session = open_locals("x64-O0");
    for (name, command) in [
        ("pointer_param", "?? p"),
        ("member_through_param", "?? p->tag"),
        ("param_arithmetic", "?? index * scale + 1"),
        ("frame_1", ".frame 1"),
        ("element", "?? pts[2]"),
        ("element_address", "?? &pts[1]"),
        ("pointer_plus_one", "?? pts + 1"),
        ("dx_element", "dx pts[3]"),
        ("dt_pointer_var", "dt pts"),
        ("dt_var_field", "dt pts tag"),
        ("frame_2", ".frame 2"),
        ("struct_local", "?? origin"),
        ("dx_struct_local", "dx origin"),
        ("array_local", "?? points"),
        ("dx_array_local", "dx -r2 points"),
        ("element_count", "?? sizeof(points) / sizeof(points[0])"),
        ("bit_ops_on_int64", "?? (origin.tag >> 4) & 0xff"),
        ("heap_missing", "?? argv[0]"),
        ("global_beside_locals", "?? &g_sink"),
        ("masm_sees_locals", "? @@c++(origin.y) + 0n1"),
    ] {
        let text = run(&mut session, command);
        insta::assert_snapshot!(format!("typed_locals_x64_O0__{name}"), text, command);
    }
}

#[test]
fn locals_values_match_the_source() {
    // locals.c: origin = {0x11, 0x22, 0x1234567890}; points[i] = {1,2,0x1111}, {10,20,0x2222},
    // {100,200,0x3333}, {7,8,0x4444}; the crash is at i == 2 with total = 1 + 10 + 100.
    for build in ["x64-O0", "x64-O2"] {
        let mut session = open_locals(build);
        assert_eq!(value_of(&mut session, "?? p->x"), "0n100", "{build}");
        assert_eq!(value_of(&mut session, "?? p->y"), "0n200", "{build}");
        assert_eq!(
            value_of(&mut session, "?? p->tag == 0x3333"),
            "true",
            "{build}"
        );
        assert_eq!(value_of(&mut session, "?? index"), "0n2", "{build}");
        assert_eq!(value_of(&mut session, "?? product"), "0n11102", "{build}");
        run_command(&mut session, ".frame 2").unwrap();
        assert_eq!(value_of(&mut session, "?? origin.x"), "0n17", "{build}");
        assert_eq!(
            value_of(&mut session, "?? origin.tag"),
            "0n78187493520",
            "{build}"
        );
        assert_eq!(
            value_of(&mut session, "?? points[3].tag"),
            "0n17476",
            "{build}"
        );
        assert_eq!(value_of(&mut session, "dx points[1].y"), "20", "{build}");
        assert_eq!(
            value_of(&mut session, "?? &points[1] - &points[0]"),
            "0n1",
            "{build}"
        );
    }
    // At -O2 `scale` lives in a register that is not valid at the crash: an error, never a guess.
    let mut session = open_locals("x64-O2");
    let err = run_command(&mut session, "?? scale * 2").unwrap_err();
    assert_eq!(err.code, "value_unavailable");
}

/// Opens a dump of the shared corpus with its folder as the symbol path, in the exception's
/// context.
fn open_corpus(rel: &str) -> Session {
    let mut session = ntdbg_testutil::open_corpus(rel);
    run_command(&mut session, ".ecxr").expect(".ecxr");
    session
}

#[test]
fn msvc_pdbs_golden() {
    ntdbg_testutil::require_testdata!();
    // lldb's sigsegv.dmp (MSVC x64, S_REGREL32): `crash(bool crash_self)`.
    let mut session =
        open_corpus("llvm-lldb/test/Shell/Minidump/Windows/Sigsegv/Inputs/sigsegv.dmp");
    for (name, command) in [
        ("bool_param", "?? crash_self"),
        ("bool_not", "?? !crash_self"),
        ("bool_dx", "dx crash_self"),
        ("bool_address", "?? &crash_self"),
        ("frame_1", ".frame 1"),
        ("untrusted_frame_param", "?? x"),
        ("const_char_type", "?? sizeof(msg)"),
    ] {
        let text = run(&mut session, command);
        insta::assert_snapshot!(format!("typed_msvc_sigsegv__{name}"), text, command);
    }
    // symbolic's mini.dmp (MSVC x86, S_LOCAL/S_BPREL32 on ebp).
    let mut session =
        open_corpus("getsentry-symbolic/symbolic-testutils/fixtures/windows/mini.dmp");
    for (name, command) in [
        ("frame_2", ".frame 2"),
        ("int_local", "?? argc"),
        ("heap_pointer", "?? argv"),
        ("class_pointer", "dx -r0 eh"),
        ("pointer_size", "?? sizeof(argv)"),
        ("enum_global", "?? __scrt_current_native_startup_state"),
        ("enum_cast", "?? (__scrt_native_startup_state)2"),
        ("enum_cast_dx", "dx (__scrt_native_startup_state)1"),
    ] {
        let text = run(&mut session, command);
        insta::assert_snapshot!(format!("typed_msvc_mini__{name}"), text, command);
    }
}
