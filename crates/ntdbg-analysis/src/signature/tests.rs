use super::*;
use minidump::format::CONTEXT_AMD64;
use minidump::{MinidumpContext, MinidumpRawContext};
use ntdbg_engine::stack::FoundBy;
use ntdbg_engine::stack::Trust;

/// A frame in `module` (based at 0x1000_0000) at `offset`, named `function` when given.
pub(crate) fn frame(
    index: usize,
    module: &str,
    function: Option<&str>,
    found_by: FoundBy,
) -> Frame {
    Frame {
        index,
        instruction: 0x1000_0000 + 0x100 * index as u64,
        stack_pointer: 0,
        frame_pointer: None,
        return_address: None,
        module: Some(module.to_string()),
        module_base: Some(0x1000_0000),
        function: function.map(str::to_string),
        function_offset: function.map(|_| 4),
        source_file: None,
        source_line: None,
        found_by,
        trust: match found_by {
            FoundBy::Context => Trust::Context,
            FoundBy::Cfi => Trust::UnwindData,
            _ => Trust::Unverified,
        },
        inline: false,
        args: Vec::new(),
        context: MinidumpContext::from_raw(MinidumpRawContext::Amd64(CONTEXT_AMD64::default()))
            .into(),
    }
}

fn roles(s: &Signature) -> Vec<(usize, SignatureRole)> {
    s.frames.iter().map(|f| (f.frame, f.role)).collect()
}

#[test]
fn system_modules() {
    assert!(is_system_module("ntdll"));
    assert!(is_system_module(r"C:\Windows\System32\KERNELBASE.dll"));
    assert!(is_system_module("api-ms-win-crt-runtime-l1-1-0.dll"));
    assert!(!is_system_module("crashy.exe"));
    let config = SignatureConfig::default();
    assert!(config.is_system("VCRUNTIME140_1.dll"));
    assert!(config.is_system("msvcp140"));
    assert!(config.is_system(r"\SystemRoot\system32\ntoskrnl.exe"));
    assert!(!config.is_system("crashy"));
}

#[test]
fn untrusted_frames_end_the_signature() {
    let frames = [
        frame(0, "kernelbase", None, FoundBy::Context),
        frame(1, "app", Some("main"), FoundBy::FramePointer),
        frame(2, "app", Some("start"), FoundBy::Cfi),
    ];
    let s = build_signature("ABORT", &frames, &SignatureConfig::default());
    // No trusted application frame: the context frame names the crash.
    assert_eq!(s.text, "ABORT kernelbase+0x0");
    assert_eq!(
        roles(&s),
        vec![(0, SignatureRole::Named), (1, SignatureRole::Stop)]
    );
    assert_eq!(s.frames[1].found_by, "frame_pointer");
    assert!(s.frames[1].reason.contains("the signature ends here"));
    let scanned = [
        frame(0, "app", Some("crash"), FoundBy::Context),
        frame(1, "app", Some("caller"), FoundBy::Scan),
    ];
    let s = build_signature("AV_READ", &scanned, &SignatureConfig::default());
    assert_eq!(s.text, "AV_READ app!crash");
    let s = build_signature("AV_READ", &scanned[1..], &SignatureConfig::default());
    assert_eq!(s.text, "AV_READ (no trusted frame)");
    assert_eq!(
        build_signature("X", &[], &SignatureConfig::default()).text,
        "X (no stack)"
    );
}

#[test]
fn delivery_system_prefix_and_application_frames() {
    let frames = [
        frame(0, "ntdll", Some("RtlpFreeHeapInternal"), FoundBy::Context),
        frame(1, "ntdll", Some("RtlFreeHeap"), FoundBy::Cfi),
        frame(2, "ucrtbase", Some("_free_base"), FoundBy::Cfi),
        frame(3, "kernel32", None, FoundBy::Cfi),
        frame(4, "app", Some("release(int)"), FoundBy::Cfi),
        frame(5, "app", Some("abort"), FoundBy::Cfi),
        frame(6, "app", Some("release(int)"), FoundBy::Cfi),
        frame(7, "app", Some("main"), FoundBy::Cfi),
        frame(8, "app", None, FoundBy::Cfi),
    ];
    let s = build_signature("HEAP_CORRUPTION", &frames, &SignatureConfig::default());
    assert_eq!(
        s.text,
        "HEAP_CORRUPTION ntdll!RtlpFreeHeapInternal / ntdll!RtlFreeHeap / ucrtbase!_free_base / app!release / app!main"
    );
    use SignatureRole::*;
    assert_eq!(
        roles(&s),
        vec![
            (0, Prefix),
            (1, Prefix),
            (2, Prefix),
            (3, Skipped),
            (4, Named),
            (5, Skipped),
            (6, Skipped),
            (7, Named),
            (8, Stop),
        ]
    );
    assert!(s.frames[3].reason.contains("system or runtime module"));
    assert!(s.frames[5].reason.contains("abort only delivers"));
    assert!(s.frames[6].reason.contains("recursion"));
    assert!(s.frames[8].reason.contains("no symbols"));
}

#[test]
fn unsymbolized_frames_by_module_offset_and_frame_count() {
    let frames = [
        frame(0, "app", None, FoundBy::Context),
        frame(1, "app", Some("b"), FoundBy::Cfi),
    ];
    let s = build_signature("AV_READ", &frames, &SignatureConfig::default());
    assert_eq!(s.text, "AV_READ app+0x0 / app!b");
    let one = SignatureConfig {
        frames: 1,
        ..SignatureConfig::default()
    };
    assert_eq!(
        build_signature("AV_READ", &frames, &one).text,
        "AV_READ app+0x0"
    );
    let rules = SignatureConfig::from_rules("irrelevant-module app").unwrap_or_default();
    // Every frame skipped: the innermost trusted one names the crash.
    assert_eq!(
        build_signature("AV_READ", &frames, &rules).text,
        "AV_READ app+0x0"
    );
}

#[test]
fn tags() {
    use crate::exception::Access;
    let av = ExceptionKind::AccessViolation {
        access: Some(Access::Write),
        address: Some(0x10),
        in_page: false,
    };
    assert_eq!(kind_tag(&av, 0xC000_0005), "AV_WRITE_NULL");
    assert_eq!(kind_tag(&ExceptionKind::Custom, 0xE000_1234), "0xE0001234");
    assert_eq!(
        kind_tag(&ExceptionKind::FastFail { code: Some(7) }, 0),
        "FAST_FAIL_7"
    );
}

#[test]
fn a_deep_recursion_is_one_explained_frame() {
    let mut frames = vec![frame(0, "app", Some("recurse"), FoundBy::Context)];
    frames.extend((1..=60).map(|i| frame(i, "app", Some("recurse"), FoundBy::Cfi)));
    frames.push(frame(61, "app", Some("main"), FoundBy::Cfi));
    let s = build_signature("STACK_OVERFLOW", &frames, &SignatureConfig::default());
    assert_eq!(s.text, "STACK_OVERFLOW app!recurse / app!main");
    use SignatureRole::*;
    assert_eq!(roles(&s), vec![(0, Named), (1, Skipped), (61, Named)]);
    assert_eq!(
        s.frames[1].reason,
        "repeats the frame before it (recursion), as do the frames after it, to frame 60"
    );
}
