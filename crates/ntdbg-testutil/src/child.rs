//! Running one test alone in a child process: this same test binary, re-run on that test.
//!
//! A crate's integration tests share one binary (and so one process); a test that must change
//! what the process holds for everyone (its environment variables) does its work in a child,
//! where no other test runs.

use std::process::Command;

/// Set in the child's environment.
const CHILD_ENV: &str = "NTDBG_TEST_CHILD";

/// The name libtest gives the test function `function` of the module whose `module_path!()`
/// is `module_path`: that path without the crate's name, then `::function`.
pub fn libtest_name(module_path: &str, function: &str) -> String {
    match module_path.split_once("::") {
        Some((_crate, module)) => format!("{module}::{function}"),
        None => function.to_string(),
    }
}

/// Whether this process is the child that [`run_alone`] started.
pub fn in_child() -> bool {
    std::env::var_os(CHILD_ENV).is_some()
}

/// Re-runs the test `function` of the module at `module_path` (pass `module_path!()`) alone, in
/// a child process whose [`in_child`] is true; the test does its work there.
///
/// # Panics
/// When the child cannot start, runs no test, or fails (with its output).
pub fn run_alone(module_path: &str, function: &str) {
    let exe = std::env::current_exe().expect("the test binary's path");
    let name = libtest_name(module_path, function);
    let out = Command::new(exe)
        .args([name.as_str(), "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_ENV, "1")
        .output()
        .expect("the test binary runs again");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{name} failed in its child:\n{text}");
    assert!(
        text.contains("1 passed"),
        "{name} did not run in its child:\n{text}"
    );
}
