//! Signatures that bucket: the same crash dumped three ways (in process, by the AeDebug
//! debugger, by `winedbg` running it) and at another load address gives the same signature,
//! and no signature anywhere names a frame the walker only guessed (a frame-pointer or scanned
//! frame whose return address does not follow a call).

use ntdbg_analysis::signature::{SignatureConfig, SignatureRole};
use ntdbg_analysis::{analyze, analyze_with, Report};
use ntdbg_engine::Session;
use ntdbg_testutil::{sample, testdata};
use std::path::Path;

fn report_with(path: &Path, symbols: Option<&Path>) -> Report {
    let symbols = symbols.map(|s| s.display().to_string());
    let session = Session::open_dump(path, symbols.as_deref())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    session.symbols().set_offline(true);
    analyze(&session)
}

/// Every name in the signature comes from a frame the walker vouches for.
fn assert_trusted(what: &str, r: &Report) {
    for f in &r.signature_frames {
        if matches!(f.role, SignatureRole::Named | SignatureRole::Prefix) {
            assert!(
                f.trust != "unverified",
                "{what}: {} named from an unverified {} frame",
                r.signature,
                f.found_by
            );
            assert!(r.signature.contains(&f.name), "{what}: {}", r.signature);
        }
    }
}

#[test]
fn three_ways_of_dumping_give_one_signature() {
    ntdbg_testutil::require_testdata!();
    let dir = testdata("winelab/x64");
    let expected = [
        (
            "null",
            "AV_WRITE_NULL crashy!crash_null_write / crashy!mode_null / crashy!main",
        ),
        (
            "divzero",
            "DIVIDE_BY_ZERO crashy!divide / crashy!mode_divzero / crashy!main",
        ),
        // Wine's kernelbase has no unwind data: the frame after RaiseException comes from
        // the frame-pointer chain, and counts because the instruction before its return
        // address is a call (read from crashy.exe beside the dumps).
        ("raise", "0xE0001234 crashy!main"),
        // abort: the caller of kernelbase is in msvcrt, whose code is not in the dump: an
        // unverified frame ends the signature at the context frame.
        ("abort", "ABORT kernelbase+0x13d7e"),
        // `__debugbreak` only delivers the crash (inlined in two dumps, not in the third).
        (
            "breakpoint",
            "BREAKPOINT crashy!mode_breakpoint / crashy!main",
        ),
    ];
    for (mode, signature) in expected {
        for way in ["inproc", "aedebug", "dbgrun"] {
            let path = dir.join(format!("{mode}.{way}.dmp"));
            let r = report_with(&path, Some(&dir));
            assert_eq!(r.signature, signature, "{mode}.{way}");
            assert_trusted(&format!("{mode}.{way}"), &r);
        }
    }
}

/// The repository's samples: named frames only, and the raise sample whose callers were only
/// found by scanning keeps them out of its signature.
#[test]
fn samples_name_only_trusted_frames() {
    let expected = [
        (
            "crashy-x64-null.dmp",
            "AV_WRITE_NULL crashy!write_null / crashy!mode_null / crashy!main",
        ),
        ("crashy-x64-raise.dmp", "0xE0001234 kernelbase+0x13d7e"),
        ("crashy-x64-stack.dmp", "STACK_OVERFLOW crashy!recurse"),
        (
            "x86/crashy-x86-raise.dmp",
            "0xE0001234 crashy!do_raise / crashy!mode_raise / crashy!main",
        ),
    ];
    for (file, signature) in expected {
        let r = report_with(&sample(file), None);
        assert_eq!(r.signature, signature, "{file}");
        assert_trusted(file, &r);
    }
    let mut all = 0;
    for folder in ["", "x86"] {
        let dir = ntdbg_testutil::repo_root().join("testdata").join(folder);
        for entry in std::fs::read_dir(&dir).expect("testdata").flatten() {
            let path = entry.path();
            if path.extension().is_some_and(|e| e == "dmp") {
                assert_trusted(&path.display().to_string(), &report_with(&path, None));
                all += 1;
            }
        }
    }
    assert!(all >= 11, "{all} samples");
    let r = report_with(&sample("crashy-x64-raise.dmp"), None);
    let stop = r.signature_frames.last().expect("frames");
    assert_eq!(
        (stop.role, stop.found_by.as_str()),
        (SignatureRole::Stop, "scan")
    );
    let text = ntdbg_analysis::render::render_report(&r);
    assert!(
        text.contains("SIGNATURE_FRAMES:\n  00 kernelbase+0x13d7e  named (context, context): "),
        "{text}"
    );
    assert!(text.contains("  01 kernelbase+"), "{text}");
}

#[test]
fn no_signature_in_the_corpus_names_a_guessed_frame() {
    ntdbg_testutil::require_testdata!();
    let found = ntdbg_targets::listing::find_dump_files(
        &testdata(""),
        &ntdbg_targets::listing::WalkLimits::SHELL,
    )
    .expect("corpus");
    let mut checked = 0;
    for path in &found.files {
        let Ok(session) = Session::open_dump(path, None) else {
            continue;
        };
        session.symbols().set_offline(true);
        let r = analyze(&session);
        assert_trusted(&path.display().to_string(), &r);
        checked += 1;
    }
    assert!(checked >= 35, "{checked} dumps analysed");
}

/// `testdata/crashy-x64-null.dmp` rebuilt with `crashy.exe` loaded elsewhere (its stack's
/// return addresses moved with it) gives the same signature.
#[test]
fn another_load_address_gives_the_same_signature() {
    use ntdbg_testutil::minidump_builder::{
        Context, Cpu, Exception, MinidumpBuilder, Module, Thread, X64Context,
    };
    let original = sample("crashy-x64-null.dmp");
    let symbols = original.parent().expect("testdata").to_path_buf();
    let before = report_with(&original, Some(&symbols));
    let session = Session::open_dump(&original, None).expect("open");
    let target = session.target();
    let event = target.event().expect("event");
    let crashy = session.module_by_name("crashy").expect("crashy");
    let (old_base, size) = (
        crashy.raw.base_of_image,
        u64::from(crashy.raw.size_of_image),
    );
    let new_base = 0x7ff6_1230_0000u64;
    let moved = |v: u64| {
        if (old_base..old_base + size).contains(&v) {
            v - old_base + new_base
        } else {
            v
        }
    };
    let Some(minidump::MinidumpRawContext::Amd64(raw)) =
        event.context.as_ref().map(|c| c.raw.clone())
    else {
        panic!("x64 exception context");
    };
    let context = Context::X64(X64Context {
        rax: moved(raw.rax),
        rcx: moved(raw.rcx),
        rdx: moved(raw.rdx),
        rbx: moved(raw.rbx),
        rsp: raw.rsp,
        rbp: moved(raw.rbp),
        rsi: moved(raw.rsi),
        rdi: moved(raw.rdi),
        r8: moved(raw.r8),
        r9: moved(raw.r9),
        r10: moved(raw.r10),
        r11: moved(raw.r11),
        r12: moved(raw.r12),
        r13: moved(raw.r13),
        r14: moved(raw.r14),
        r15: moved(raw.r15),
        rip: moved(raw.rip),
        ..X64Context::default()
    });
    let thread = target
        .threads()
        .iter()
        .find(|t| t.id == event.thread_id)
        .expect("event thread");
    let region = thread.stack.expect("stack");
    let bytes = target
        .read_exact(region.base, region.size as usize)
        .expect("stack bytes");
    let stack: Vec<u8> = bytes
        .chunks_exact(8)
        .flat_map(|w| {
            let v = u64::from_le_bytes(w.try_into().unwrap_or_default());
            moved(v).to_le_bytes()
        })
        .collect();
    let mut dump = MinidumpBuilder::new(Cpu::X64);
    dump.thread(Thread {
        id: thread.id,
        teb: thread.teb,
        context: Some(context.clone()),
        stack_base: region.base,
        stack,
        ..Thread::default()
    });
    for m in target.modules().iter() {
        let base = moved(m.raw.base_of_image);
        let mut module = Module::new(&m.name, base, m.raw.size_of_image);
        module.time_date_stamp = m.raw.time_date_stamp;
        module.checksum = m.raw.checksum;
        dump.module(module);
    }
    let mut exception = Exception::new(event.thread_id, event.code, moved(event.address));
    exception.parameters = event.parameters.clone();
    exception.context = Some(context);
    dump.exception(exception);
    let dir = std::env::temp_dir().join(format!("ntdbg-signature-aslr-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join("crashy-moved.dmp");
    dump.write(&path);
    let after = report_with(&path, Some(&symbols));
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(
        after.stack.first().map(|f| f.address.as_str()),
        Some(format!("{:#x}", moved(event.address)).as_str())
    );
    assert_eq!(after.signature, before.signature);
    assert_eq!(
        after.signature,
        "AV_WRITE_NULL crashy!write_null / crashy!mode_null / crashy!main"
    );
}

/// A rules file changes what is skipped; the default lists stay otherwise.
#[test]
fn rules_change_the_signature() {
    let rules =
        SignatureConfig::from_rules("irrelevant-function write_null\nframes 1\n").expect("rules");
    let session = Session::open_dump(&sample("crashy-x64-null.dmp"), None).expect("open");
    session.symbols().set_offline(true);
    let r = analyze_with(&session, &rules);
    assert_eq!(r.signature, "AV_WRITE_NULL crashy!mode_null");
    let skipped = &r.signature_frames[0];
    assert_eq!(skipped.role, SignatureRole::Skipped);
    assert!(
        skipped.reason.contains("write_null only delivers"),
        "{}",
        skipped.reason
    );
}
