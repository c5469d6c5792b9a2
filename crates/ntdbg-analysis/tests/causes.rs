//! Causes named from evidence any dump of the kind carries, on the repository's own samples
//! (`testdata/causes/`, made by `tools/crashgen/samples.sh causes`): a second line of evidence
//! beside the real-world dumps of `../shared/testdata/realworld` (tests/realworld.rs), each
//! mode checked for its inference `kind`, the facts its text states and the evidence its basis
//! names, and for the statements it must not make.

use ntdbg_analysis::{analyze, Inference, Report};
use ntdbg_engine::Session;

fn report(mode: &str) -> Report {
    let path = ntdbg_testutil::sample(&format!("causes/{mode}.dmp"));
    let dir = path.parent().expect("sample dir").display().to_string();
    let session = Session::open_dump(&path, Some(&dir)).expect("sample opens");
    session.symbols().set_offline(true);
    analyze(&session)
}

/// The report's first inference, which must be of `kind`.
fn first<'r>(r: &'r Report, kind: &str) -> &'r Inference {
    let i = r.inferences.first().expect("an inference");
    assert_eq!(i.kind, kind, "{:#?}", r.inferences);
    i
}

fn has(text: &str, parts: &[&str]) {
    for p in parts {
        assert!(text.contains(p), "{p:?} missing from {text:?}");
    }
}

/// Statements no report may make without evidence the dumps here do not have.
fn no_unsupported_claims(r: &Report) {
    for i in &r.inferences {
        assert!(!i.basis.is_empty(), "{i:?}");
        for claim in ["exploitable", "no debugger attached", "is likely"] {
            assert!(!i.text.contains(claim), "{claim:?} in {i:?}");
        }
    }
}

#[test]
fn copy_loop_off_the_end_of_a_page() {
    let r = report("page_overrun");
    let i = first(&r, "buffer_overrun");
    has(
        &i.text,
        &[
            "write at 0x",
            "past the end of accessible memory at a page boundary",
        ],
    );
    has(
        &i.basis,
        &[
            "is committed memory (MemoryInfoList)",
            "lies in reserved (never committed) private memory",
            "causes!add_into",
            "add dword ptr [rcx+r9],eax",
        ],
    );
    assert!(
        !r.inferences.iter().any(|i| i.kind == "bit_flip"),
        "{:#?}",
        r.inferences
    );
    no_unsupported_claims(&r);
}

#[test]
fn write_to_reserved_memory_at_the_commit_limit_is_out_of_memory() {
    let r = report("commit_exhaustion");
    let i = first(&r, "out_of_memory");
    has(
        &i.text,
        &[
            "reserved memory that was never committed",
            "64 MiB committed against its job's 64 MiB limit (ProcessVmCounters stream)",
        ],
    );
    has(&i.basis, &["causes!append_record", "system commit "]);
    no_unsupported_claims(&r);
}

#[test]
fn poison_constant_write_through_a_general_protection_fault() {
    let r = report("poison_constant");
    // The record says read of 0xffffffffffffffff; the instruction writes.
    assert!(r.signature.starts_with("AV_WRITE "), "{}", r.signature);
    // The event (and the headline made of it) does not repeat the record's read.
    has(
        &r.event.description,
        &[
            "write that raised a general-protection fault",
            "the faulting instruction writes",
        ],
    );
    let i = first(&r, "constant_address");
    has(
        &i.text,
        &[
            "write of the constant address 0xfefefefefefefefe",
            "not a freed or overwritten one",
        ],
    );
    has(
        &i.basis,
        &[
            "rcx <- `mov rcx,0FEFEFEFEFEFEFEFEh`",
            "the instruction writes to its memory operand",
            "mov qword ptr [rax+rcx],41414141h",
        ],
    );
    no_unsupported_claims(&r);
}

#[test]
fn printable_address_loaded_as_an_immediate_is_a_constant_not_text() {
    let r = report("ascii_constant");
    let i = first(&r, "constant_address");
    has(&i.text, &["write of the constant address 0x41414141"]);
    has(
        &i.basis,
        &[
            "rax <- `mov eax,41414141h`",
            "decoded from the function's start",
        ],
    );
    assert!(
        !r.inferences.iter().any(|i| i.kind == "fill_pattern"),
        "{:#?}",
        r.inferences
    );
    no_unsupported_claims(&r);
}

#[test]
fn fault_inside_heap_alloc_called_through_the_import_table() {
    let r = report("heap_header");
    let i = first(&r, "heap_corruption");
    has(
        &i.text,
        &[
            "inside the heap manager",
            "causes!mode_heap_header",
            "KERNEL32.dll!HeapAlloc",
        ],
    );
    // Wine's ntdll has no symbols here: the import table of causes.exe names the call, made
    // through a register loaded from the import slot.
    has(
        &i.basis,
        &[
            "system code without symbols",
            "through the register",
            "loaded from the pointer at",
        ],
    );
    no_unsupported_claims(&r);
}

#[test]
fn assertion_message_in_a_register() {
    let r = report("assert_message");
    let i = first(&r, "assertion");
    has(
        &i.text,
        &["\"Assertion failed: players > 0 [File:Source/Game/Lobby.cpp] [Line: 212]\""],
    );
    has(
        &i.basis,
        &["rsi = 0x", "points to this text (in the dump's memory)"],
    );
    let shown = r
        .pointed_to
        .iter()
        .find(|p| p.place == "rsi")
        .expect("rsi in pointed_to");
    assert_eq!(shown.kind, "text");
    assert!(
        shown.target.starts_with("\"Assertion failed: players > 0"),
        "{shown:?}"
    );
    no_unsupported_claims(&r);
}

#[test]
fn debug_break_named_by_the_call_not_by_a_guess_about_debuggers() {
    let r = report("debugbreak");
    let i = first(&r, "breakpoint");
    has(
        &i.text,
        &[
            "a deliberate breakpoint: causes!stop_here",
            "called KERNEL32.dll!DebugBreak",
        ],
    );
    no_unsupported_claims(&r);
}

#[test]
fn stack_protector_names_the_function_whose_canary_broke() {
    let r = report("stack_protector");
    let i = first(&r, "runtime_check");
    has(
        &i.text,
        &[
            "the stack protector",
            "a stack buffer overrun in causes!copy_name",
        ],
    );
    has(&i.basis, &["causes!__stack_chk_fail"]);
    assert!(
        r.pointed_to
            .iter()
            .any(|p| p.target.contains("stack smashing detected")),
        "{:#?}",
        r.pointed_to
    );
    assert!(
        !r.inferences.iter().any(|i| i.kind == "deliberate"),
        "{:#?}",
        r.inferences
    );
    no_unsupported_claims(&r);
}
