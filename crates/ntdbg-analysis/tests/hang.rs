//! Hangs and deadlocks on the repository's `hang` samples (tools/crashgen/samples/hang.c):
//! dumps written by a watchdog thread, without an exception. With Wine's own DLLs on the symbol
//! path (their export tables name ntdll's and kernelbase's frames, their unwind data recovers
//! the registers that hold the critical sections) every wait is read; without them the report
//! says what it cannot know.

use ntdbg_analysis::{analyze, render::render_report, Report};
use ntdbg_engine::Session;
use std::path::Path;

/// Wine's PE DLLs (Debian's wine64 package), the images the samples ran with.
const WINE_DLLS: &str = "/usr/lib/x86_64-linux-gnu/wine/x86_64-windows";

fn wine_dlls() -> Option<&'static str> {
    let found = Path::new(WINE_DLLS).join("ntdll.dll").exists();
    if !found {
        eprintln!("skipped: Wine's DLLs are not in {WINE_DLLS}");
    }
    found.then_some(WINE_DLLS)
}

fn report(rel: &str, extra: Option<&str>) -> Report {
    let session = ntdbg_testutil::open_beside(&ntdbg_testutil::sample(rel), extra.as_slice());
    session.symbols().set_offline(true);
    analyze(&session)
}

#[test]
fn deadlock_reports_the_cycle_with_both_threads_and_both_locks() {
    let Some(wine) = wine_dlls() else { return };
    let r = report("hang/deadlock.dmp", Some(wine));
    assert_eq!(r.event.kind, "none");
    // A proven deadlock buckets apart from other dumps without an exception.
    assert_eq!(
        r.signature,
        "DEADLOCK hang!run_ring / hang!deadlock / hang!crashgen_main"
    );
    let deadlock = &r.inferences[0];
    assert_eq!(
        deadlock.text,
        "deadlock: thread 0xec holds critical section 0x11fbe8 and waits for critical section 0x11fc10 held by thread 0xf0, which waits for critical section 0x11fbe8 held by thread 0xec"
    );
    for fact in [
        "thread 0xec: frame 3 is ntdll!RtlEnterCriticalSection+0x91",
        "rbp recovered by unwinding in frame 2 = 0x11fc10",
        "OwningThread 0xf0",
        "thread 0xf0: frame 3 is ntdll!RtlEnterCriticalSection+0x91",
        "OwningThread 0xec",
    ] {
        assert!(
            deadlock.basis.contains(fact),
            "{fact} not in {}",
            deadlock.basis
        );
    }
    let json = serde_json::to_value(&r).expect("serialises");
    let waits = json["waits"].as_array().expect("waits");
    let shape: Vec<(&str, &str, &str, &str)> = waits
        .iter()
        .map(|w| {
            (
                w["thread_id"].as_str().unwrap_or("-"),
                w["waits_on"].as_str().unwrap_or("-"),
                w["object"].as_str().unwrap_or("-"),
                w["owner_thread_id"].as_str().unwrap_or("-"),
            )
        })
        .collect();
    assert_eq!(
        shape,
        [
            ("0x24", "objects", "-", "-"),
            ("0xec", "critical_section", "0x11fc10", "0xf0"),
            ("0xf0", "critical_section", "0x11fbe8", "0xec"),
        ]
    );
    assert_eq!(waits[1]["caller"], "hang!lock_worker+0x85");
    assert!(json["next_commands"]
        .as_array()
        .is_some_and(|c| c.iter().any(|c| c == "!locks")));
    let text = render_report(&r);
    assert!(text.contains("\nWAIT_CHAINS:\n  - thread 0x24 (~0) waits on several kernel objects in hang!run_ring+0x10e\n"), "{text}");
    assert!(text.contains("  - thread 0xec (~1) waits to enter critical section 0x11fc10 owned by thread 0xf0 in hang!lock_worker+0x85\n"), "{text}");
    assert!(text.contains(&format!("  - {}\n", deadlock.text)), "{text}");
}

#[test]
fn three_threads_deadlock_in_one_cycle() {
    let Some(wine) = wine_dlls() else { return };
    let r = report("hang/deadlock3.dmp", Some(wine));
    let deadlocks: Vec<&str> = r
        .inferences
        .iter()
        .map(|i| i.text.as_str())
        .filter(|t| t.starts_with("deadlock"))
        .collect();
    assert_eq!(
        deadlocks,
        ["deadlock: thread 0x104 holds critical section 0x11fbe8 and waits for critical section 0x11fc10 held by thread 0x108, which waits for critical section 0x11fc38 held by thread 0x10c, which waits for critical section 0x11fbe8 held by thread 0x104"]
    );
}

#[test]
fn hang_reports_each_threads_wait() {
    let Some(wine) = wine_dlls() else { return };
    let r = report("hang/hang.dmp", Some(wine));
    assert_eq!(
        r.signature,
        "HANG hang!hang / hang!crashgen_main / hang!main"
    );
    let waits: Vec<(Option<&str>, Option<&str>)> = r
        .waits
        .iter()
        .map(|w| (w.waits_on, w.caller.as_deref()))
        .collect();
    assert_eq!(
        waits,
        [
            (Some("object"), Some("hang!hang+0x97")),
            (Some("object"), Some("hang!wait_forever_on_event+0x17")),
            (Some("sleep"), Some("hang!sleep_forever+0x17")),
        ]
    );
    // The handles are not in the registers Wine keeps at a system call: said, not guessed.
    assert!(r.waits[1]
        .basis
        .contains("the handles waited on are not recovered"));
    assert!(r.waits.iter().all(|w| w.object.is_none()));
    assert_eq!(r.inferences.len(), 1);
    assert!(r.inferences[0]
        .text
        .starts_with("hang: 3 of 3 threads are blocked waiting and no deadlock cycle was found"));
}

#[test]
fn without_system_dlls_the_waits_are_unknown_and_no_deadlock_is_claimed() {
    let r = report("hang/deadlock.dmp", None);
    assert!(r
        .waits
        .iter()
        .all(|w| w.waits_on.is_none() && w.object.is_none()));
    assert!(!r.inferences.iter().any(|i| i.text.starts_with("deadlock")));
    // The held sections are still found on main's stack, with their owners.
    let texts: Vec<&str> = r.inferences.iter().map(|i| i.text.as_str()).collect();
    assert_eq!(
        texts,
        [
            "contention: critical section 0x11fbe8 is held by thread 0xec and 1 thread waits for it (the waiters are not identified)",
            "contention: critical section 0x11fc10 is held by thread 0xf0 and 1 thread waits for it (the waiters are not identified)",
        ]
    );
    assert!(r
        .limitations
        .iter()
        .any(|l| l.starts_with("what the threads wait on is unknown")));
}

#[test]
fn srw_lock_waits_are_told_without_an_owner() {
    let Some(wine) = wine_dlls() else { return };
    let r = report("hang/srw.dmp", Some(wine));
    let waits: Vec<(Option<&str>, Option<&str>)> = r
        .waits
        .iter()
        .map(|w| (w.waits_on, w.caller.as_deref()))
        .collect();
    assert_eq!(
        waits,
        [
            (Some("objects"), Some("hang!srw+0xf4")),
            (Some("srw_lock"), Some("hang!srw_worker+0x63")),
            (Some("srw_lock"), Some("hang!srw_worker+0x63")),
        ]
    );
    assert!(r.waits[1]
        .basis
        .contains("an SRW lock does not record its owner"));
    assert!(r.waits.iter().all(|w| w.owner_thread_id.is_none()));
    assert!(!r.inferences.iter().any(|i| i.text.starts_with("deadlock")));
}

#[test]
fn dumps_with_an_exception_have_no_wait_section() {
    let r = report("crashy-x64-null.dmp", None);
    assert!(r.waits.is_empty());
    let json = serde_json::to_value(&r).expect("serialises");
    assert!(json.get("waits").is_none());
}

#[test]
fn firefox_threads_are_classified_by_their_wait_functions() {
    if !ntdbg_testutil::testdata_available() {
        eprintln!("skipped: shared test corpus not found");
        return;
    }
    let root = "mozilla-minidump-stackwalk-pgo/pgo_data";
    let dump = ntdbg_testutil::testdata(&format!("{root}/minidumps/windows-x86_64.dmp"));
    let symbols = ntdbg_testutil::testdata(&format!("{root}/symbols"));
    let session =
        Session::open_dump(&dump, Some(&symbols.display().to_string())).expect("dump opens");
    session.symbols().set_offline(true);
    let waits = ntdbg_analysis::hang::wait_chain::thread_waits(&session);
    let count = |kind: Option<&str>| {
        waits
            .iter()
            .filter(|w| w.kind.map(|k| k.name()) == kind)
            .count()
    };
    assert_eq!(waits.len(), 103);
    assert_eq!(count(Some("condition_variable")), 82);
    assert_eq!(count(Some("thread_pool")), 4);
    assert_eq!(count(Some("io_completion")), 5);
    // The crash reporter's thread (NtGetContextThread) and a vblank wait are no known wait.
    assert_eq!(count(None), 2);
    assert!(waits.iter().all(|w| w.section.is_none()));
}
