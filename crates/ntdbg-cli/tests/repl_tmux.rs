//! `ntdbg repl` in a real terminal: runs `tests/repl/tmux_repl.sh`, which types keys into
//! tmux and reads the screen. Skips, saying so on stderr, when tmux is not installed.

use std::path::Path;
use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

/// The script bounds each of its waits; this bounds the whole run.
const SCRIPT_LIMIT: Duration = Duration::from_secs(600);

#[test]
fn repl_in_tmux_as_a_person_uses_it() {
    let tmux = Command::new("tmux").arg("-V").output();
    if !tmux.is_ok_and(|o| o.status.success()) {
        eprintln!("SKIPPED repl_in_tmux_as_a_person_uses_it: tmux is not installed");
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let script = root.join("tests/repl/tmux_repl.sh");
    let dump = ntdbg_testutil::sample("crashy-x64-null.dmp");
    let child = Command::new("bash")
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_ntdbg"))
        .arg(&dump)
        .env_remove("_NT_SYMBOL_PATH")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("bash runs the tmux script");
    let pid = child.id();
    // The output is read while the script runs (a full pipe would stall it).
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || done.send(child.wait_with_output()));
    let out = match finished.recv_timeout(SCRIPT_LIMIT) {
        Ok(out) => out.expect("the script's output"),
        Err(_) => {
            // SIGTERM: the script's EXIT trap ends its tmux server and removes its folder.
            let _ = Command::new("kill").arg(pid.to_string()).status();
            panic!("the tmux script ran over {SCRIPT_LIMIT:?}");
        }
    };
    let text = String::from_utf8_lossy(&out.stdout);
    eprintln!("{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        out.status.success(),
        "the REPL checks in tmux failed:\n{text}"
    );
    assert!(text.contains(" passed, 0 failed"), "{text}");
}
