//! Front-end policy: commands that act on the host are refused (with arguments) where the front
//! end asks, by their spec metadata.

use ntdbg_commands::{run_command, Batch, CommandError, Policy};
use ntdbg_engine::Session;
use std::ops::ControlFlow;

fn session() -> Session {
    let path = ntdbg_testutil::sample("crashy-x64-null.dmp");
    let dir = path.parent().expect("folder").display().to_string();
    Session::open_dump(&path, Some(&dir)).expect("sample opens")
}

/// Runs one command line through the batch runner under `policy`: its output or its error.
fn run_with(s: &mut Session, line: &str, policy: Policy) -> Result<String, CommandError> {
    let batch = Batch::split(line).expect("splits");
    let mut results = batch.run(s, policy, |_| ControlFlow::Continue(()));
    let result = results.remove(0);
    match result.error {
        Some(e) => Err(e),
        None => Ok(result.output),
    }
}

#[test]
fn setting_the_symbol_path_is_refused_under_a_host_policy() {
    let mut s = session();
    let strict = Policy {
        refuse_host_effects: true,
        ..Policy::default()
    };
    for cmd in [
        ".sympath /etc",
        ".sympath+ /etc",
        "~0 .sympath /etc",
        ".SYMPATH /etc",
    ] {
        let err = run_with(&mut s, cmd, strict.clone()).expect_err(cmd);
        assert_eq!(err.code, "host_effect_refused", "{cmd}: {err}");
    }
    // Showing it stays allowed, and nothing changed.
    let shown = run_with(&mut s, ".sympath", strict.clone()).expect("show");
    assert!(!shown.contains("/etc"), "{shown}");
    // Ordinary commands run as before.
    assert!(run_with(&mut s, "kn 1", strict).is_ok());
}

#[test]
fn without_a_policy_the_command_line_is_trusted() {
    let mut s = session();
    let out = run_command(&mut s, ".sympath /nonexistent-dir").expect("set");
    assert!(out.text.contains("/nonexistent-dir"), "{}", out.text);
    let out = run_with(&mut s, ".sympath+ /other", Policy::default()).expect("extend");
    assert!(out.contains("/other"), "{out}");
}

#[test]
fn the_callback_stops_the_batch_and_the_rest_is_not_executed() {
    let mut s = session();
    let batch = Batch::split("r rip; kn 1; lm").expect("splits");
    let mut seen = Vec::new();
    let results = batch.run(&mut s, Policy::default(), |r| {
        seen.push(r.index);
        ControlFlow::Break(())
    });
    assert_eq!(seen, [0]);
    let statuses: Vec<&str> = results.iter().map(|r| r.status.name()).collect();
    assert_eq!(statuses, ["succeeded", "not_executed", "not_executed"]);
}
