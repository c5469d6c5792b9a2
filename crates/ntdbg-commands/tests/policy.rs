//! Front-end policy: commands that act on the host are refused (with arguments) where the front
//! end asks, by their spec metadata.

use ntdbg_commands::{run_command, run_command_with, Policy};
use ntdbg_engine::Session;

fn session() -> Session {
    let path = ntdbg_testutil::sample("crashy-x64-null.dmp");
    let dir = path.parent().expect("folder").display().to_string();
    Session::open_dump(&path, Some(&dir)).expect("sample opens")
}

#[test]
fn setting_the_symbol_path_is_refused_under_a_host_policy() {
    let mut s = session();
    let strict = Policy {
        refuse_host_effects: true,
    };
    for cmd in [
        ".sympath /etc",
        ".sympath+ /etc",
        "~0 .sympath /etc",
        ".SYMPATH /etc",
    ] {
        let err = run_command_with(&mut s, cmd, strict).expect_err(cmd);
        assert_eq!(err.code, "host_effect_refused", "{cmd}: {err}");
    }
    // Showing it stays allowed, and nothing changed.
    let shown = run_command_with(&mut s, ".sympath", strict).expect("show");
    assert!(!shown.text.contains("/etc"), "{}", shown.text);
    // Ordinary commands run as before.
    assert!(run_command_with(&mut s, "kn 1", strict).is_ok());
}

#[test]
fn without_a_policy_the_command_line_is_trusted() {
    let mut s = session();
    let out = run_command(&mut s, ".sympath /nonexistent-dir").expect("set");
    assert!(out.text.contains("/nonexistent-dir"), "{}", out.text);
    let out = run_command_with(&mut s, ".sympath+ /other", Policy::default()).expect("extend");
    assert!(out.text.contains("/other"), "{}", out.text);
}
