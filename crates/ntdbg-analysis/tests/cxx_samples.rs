//! Uncaught C++ exceptions on the repository's own samples (`testdata/cxx/`, made by
//! `tools/crashgen/samples.sh cxx`): the MSVC modes throw through Wine's `_CxxThrowException`
//! with hand-made ThrowInfo structures, the Itanium modes are real libstdc++ throws that end in
//! `std::terminate` → `abort()`. The report names "uncaught C++ exception TYPE: MESSAGE" with
//! its basis, in JSON and in text.

use ntdbg_analysis::{analyze, render::render_report, Report};
use ntdbg_engine::Session;

fn report(mode: &str) -> Report {
    let session = ntdbg_testutil::open_sample(&format!("cxx/{mode}.dmp"));
    session.symbols().set_offline(true);
    analyze(&session)
}

/// The first inference, from the JSON form of the report: (text, basis).
fn first_inference(report: &Report) -> (String, String) {
    let json = serde_json::to_value(report).expect("report serializes");
    let first = &json["inferences"][0];
    (
        first["text"].as_str().expect("text").to_string(),
        first["basis"].as_str().expect("basis").to_string(),
    )
}

#[test]
fn msvc_runtime_error_names_type_message_and_site() {
    let r = report("msvc_runtime_error");
    let (text, basis) = first_inference(&r);
    assert_eq!(
        text,
        "uncaught C++ exception std::runtime_error: settings.ini: no [server] section, thrown at cxx!load_settings_msvc+0x2e"
    );
    for fact in [
        "exception code 0xE06D7363",
        "CatchableTypeArray of 2 (std::runtime_error, std::exception)",
        "TypeDescriptor .?AVruntime_error@std@@",
        "std::exception data of the object at 0x11fca0",
        "targets _CxxThrowException",
    ] {
        assert!(basis.contains(fact), "{fact} missing from {basis}");
    }
    let text_report = render_report(&r);
    assert!(
        text_report.contains("uncaught C++ exception std::runtime_error: settings.ini"),
        "{text_report}"
    );
}

#[test]
fn msvc_terminate_finds_the_record_on_the_stack() {
    let r = report("msvc_terminate");
    assert!(r.signature.starts_with("ABORT"), "{}", r.signature);
    let (text, basis) = first_inference(&r);
    assert!(
        text.starts_with(
            "uncaught C++ exception std::runtime_error: settings.ini: no [server] section"
        ),
        "{text}"
    );
    for fact in [
        "exception code 0x40000015",
        "the 0xE06D7363 exception record at 0x11fb70, on the event thread's stack",
        "thrown object at 0x11fca0 higher on the same stack",
        "TypeDescriptor .?AVruntime_error@std@@",
        "follows a call to _CxxThrowException",
    ] {
        assert!(basis.contains(fact), "{fact} missing from {basis}");
    }
    assert!(
        text.ends_with(", thrown at cxx!load_settings_msvc+0x2e"),
        "{text}"
    );
    assert!(r.inferences.iter().any(|i| i.text.contains("abort()")));
}

#[test]
fn msvc_int_names_the_value() {
    let (text, basis) = first_inference(&report("msvc_int"));
    assert_eq!(
        text,
        "uncaught C++ exception int (value 42), thrown at cxx!parse_port_msvc+0x1e"
    );
    assert!(basis.contains("TypeDescriptor .H"), "{basis}");
}

#[test]
fn itanium_terminate_names_the_type_from_the_throw_site() {
    let r = report("itanium_runtime_error");
    assert!(r.signature.starts_with("ABORT"), "{}", r.signature);
    let (text, basis) = first_inference(&r);
    // The heap object (and its message) is not in a normal dump: said, not guessed.
    assert_eq!(
        text,
        "uncaught C++ exception std::runtime_error: <message unavailable>, thrown at cxx!load_settings+0x38"
    );
    for fact in [
        "is __cxa_throw",
        "called std::terminate",
        "type_info argument of __cxa_throw, named St13runtime_error",
        "libstdc++ keeps it on the heap",
    ] {
        assert!(basis.contains(fact), "{fact} missing from {basis}");
    }
    // The abort itself is still reported.
    assert!(r.inferences.iter().any(|i| i.text.contains("abort()")));
    assert!(render_report(&r).contains("uncaught C++ exception std::runtime_error"));
}

#[test]
fn itanium_custom_class_has_no_message() {
    let (text, basis) = first_inference(&report("itanium_custom"));
    assert_eq!(
        text,
        "uncaught C++ exception app::config_error, thrown at cxx!parse_config+0x2d"
    );
    assert!(basis.contains("named N3app12config_errorE"), "{basis}");
}

/// The corpus's Wine `abort()` dumps (a plain C `abort()`, no C++ throw) must not gain a C++
/// claim; skipped without the shared corpus.
#[test]
fn plain_aborts_claim_no_cxx_exception() {
    let Some(dir) = ntdbg_testutil::testdata_dir() else {
        return;
    };
    for name in ["abort.aedebug", "abort.dbgrun", "abort.inproc"] {
        let path = dir.join(format!("winelab/x64/{name}.dmp"));
        if !path.exists() {
            continue;
        }
        let symbols = dir.join("winelab/x64").display().to_string();
        let session = Session::open_dump(&path, Some(&symbols)).expect("corpus dump opens");
        session.symbols().set_offline(true);
        let r = analyze(&session);
        assert!(r.signature.starts_with("ABORT"), "{name}: {}", r.signature);
        assert!(
            r.inferences.iter().all(|i| !i.text.contains("C++")),
            "{name}: {:?}",
            r.inferences
        );
    }
}

/// The x86 MinGW g++ throw through a `noexcept` frame (`testdata/unwind/throw_noexcept.dmp`,
/// `tools/crashgen/generate-unwind.sh`): the walk reaches the throw site through DWARF CFI, and
/// the type comes from `__cxa_throw`'s cdecl arguments above its return address.
#[test]
fn x86_mingw_throw_names_the_type_from_the_arguments() {
    let session = ntdbg_testutil::open_sample("unwind/throw_noexcept.dmp");
    session.symbols().set_offline(true);
    let r = analyze(&session);
    let (text, basis) = first_inference(&r);
    assert_eq!(
        text,
        "uncaught C++ exception std::runtime_error: <message unavailable>, thrown at unwind_throw!load_config+0x3f"
    );
    for fact in [
        "frame 07 is __cxa_throw",
        "type from __cxa_throw's arguments on the stack (cdecl)",
        "named St13runtime_error",
    ] {
        assert!(basis.contains(fact), "{fact} missing from {basis}");
    }
}
