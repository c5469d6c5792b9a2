//! Front-end policy: commands that act on the host are refused (with arguments) where the front
//! end asks, by their spec metadata.

use ntdbg_commands::{run_command, Batch, CommandError, ErrorCode, Policy};
use ntdbg_engine::Session;
use std::ops::ControlFlow;
use std::sync::Arc;

fn session() -> Session {
    ntdbg_testutil::open_sample("crashy-x64-null.dmp")
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
    // Set all the same (the folder may appear later), with WinDbg's warning.
    assert!(
        out.text
            .contains("WARNING: Inaccessible path: '/nonexistent-dir'"),
        "{}",
        out.text
    );
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

#[test]
fn a_symbol_path_gate_admits_or_refuses_what_is_added() {
    let mut s = session();
    let gated = Policy {
        refuse_host_effects: true,
        symbol_path_gate: Some(Arc::new(|path: &ntdbg_symbols::SymbolPath| {
            match path.local_dirs().iter().all(|d| d.starts_with("/allowed")) {
                true => Ok(()),
                false => Err(CommandError::new(ErrorCode::PathNotAllowed, "outside")),
            }
        })),
        ..Policy::default()
    };
    let before = run_with(&mut s, ".sympath", gated.clone()).expect("show");
    // Only the added part is checked: the path already set (the dump's folder) stays.
    let added = run_with(&mut s, ".sympath+ /allowed/syms", gated.clone()).expect("extend");
    assert!(added.contains("/allowed/syms"), "{added}");
    assert!(
        added.contains(before.trim().trim_start_matches("Symbol search path is: ")),
        "{added}"
    );
    for refused in [
        ".sympath+ /etc",
        ".sympath \"/allowed/a;/etc\"",
        ".symfix /etc/cache",
    ] {
        let err = run_with(&mut s, refused, gated.clone()).expect_err(refused);
        assert_eq!(err.code, "path_not_allowed", "{refused}: {err}");
    }
    let fixed = run_with(&mut s, ".symfix+ /allowed/cache", gated).expect("symfix+");
    assert!(
        fixed.contains("srv*/allowed/cache*https://msdl.microsoft.com/download/symbols"),
        "{fixed}"
    );
    // Without a gate a host policy refuses .symfix even without arguments.
    let strict = Policy {
        refuse_host_effects: true,
        ..Policy::default()
    };
    let err = run_with(&mut s, ".symfix", strict).expect_err(".symfix");
    assert_eq!(err.code, "host_effect_refused", "{err}");
}

#[test]
fn an_unknown_command_in_a_batch_names_the_nearest_and_stops_the_rest() {
    let mut s = session();
    let batch = Batch::split("kn 1; lmvv; r rip; lm").expect("splits");
    let results = batch.run(&mut s, Policy::default(), |_| ControlFlow::Continue(()));
    let statuses: Vec<&str> = results.iter().map(|r| r.status.name()).collect();
    assert_eq!(
        statuses,
        ["succeeded", "failed", "not_executed", "not_executed"]
    );
    let error = results[1].error.clone().expect("error");
    assert_eq!(error.code, "unknown_command");
    assert!(
        error.hint.unwrap_or_default().contains("lmv"),
        "{}",
        results[1].output
    );
}
