//! `!locks`, `!cs` and `!waits` on the repository's `hang` samples (tools/crashgen/samples/
//! hang.c): goldens of the text in WinDbg's shapes. With Wine's DLLs on the symbol path the
//! waits are read from the recovered registers; without them only the held sections in the
//! captured stacks are found, and the text says so.

use ntdbg_engine::Session;
use std::path::Path;

/// Wine's PE DLLs (Debian's wine64 package), the images the samples ran with.
const WINE_DLLS: &str = "/usr/lib/x86_64-linux-gnu/wine/x86_64-windows";

fn open(rel: &str, with_wine: bool) -> Option<Session> {
    if with_wine && !Path::new(WINE_DLLS).join("ntdll.dll").exists() {
        eprintln!("skipped: Wine's DLLs are not in {WINE_DLLS}");
        return None;
    }
    let more: &[&str] = if with_wine { &[WINE_DLLS] } else { &[] };
    let session = ntdbg_testutil::open_beside(&ntdbg_testutil::sample(rel), more);
    session.symbols().set_offline(true);
    Some(session)
}

fn run(session: &mut Session, command: &str) -> String {
    match ntdbg_commands::run_command(session, command) {
        Ok(out) => out.text,
        Err(e) => format!("ERROR {}: {}", e.code, e.message),
    }
}

#[test]
fn deadlock_sample_with_wine_dlls() {
    let Some(mut s) = open("hang/deadlock.dmp", true) else {
        return;
    };
    for (name, command) in [
        ("locks", "!locks"),
        ("cs", "!cs 0x11fc10"),
        ("waits", "!waits"),
    ] {
        let text = run(&mut s, command);
        insta::assert_snapshot!(format!("deadlock__{name}"), text, command);
    }
    let locks = run(&mut s, "!locks");
    assert!(locks.starts_with("CritSec +11fc10 at 000000000011fc10\nLockCount          1\nRecursionCount     1\nOwningThread       f0\n"), "{locks}");
    assert!(locks.contains("*** Locked"));
    let waits = ntdbg_commands::run_command(&mut s, "!waits").expect("runs");
    let json = serde_json::to_value(waits.typed.expect("typed")).expect("serialises");
    assert_eq!(json["kind"], "waits");
    assert_eq!(json["threads"][2]["owner_thread_id"], "0xec");
    assert_eq!(json["deadlocks"].as_array().map(Vec::len), Some(1));
}

#[test]
fn deadlock_sample_without_system_dlls() {
    let Some(mut s) = open("hang/deadlock.dmp", false) else {
        return;
    };
    let text = run(&mut s, "!locks");
    insta::assert_snapshot!("deadlock_no_system_dlls__locks", text, "!locks");
    assert!(text.contains(
        "Found              on the stack of thread 24 (found by scanning; its fields check out)"
    ));
}
