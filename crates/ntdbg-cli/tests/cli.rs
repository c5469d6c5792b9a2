//! The `ntdbg` binary as a user runs it: output, JSON shape and exit codes (0/1/2).

use std::path::PathBuf;
use std::process::{Command, Output};

fn ntdbg(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ntdbg"))
        .args(args)
        .env_remove("_NT_SYMBOL_PATH")
        .output()
        .expect("ntdbg runs")
}

fn sample(name: &str) -> String {
    ntdbg_testutil::sample(name).display().to_string()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn temp_file(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = ntdbg_testutil::fresh_dir("cli-test");
    let path = dir.join(name);
    std::fs::write(&path, bytes).expect("temp file");
    path
}

#[test]
fn analyze_the_readme_sample_is_symbolized() {
    let o = ntdbg(&["analyze", &sample("crashy-x64-null.dmp")]);
    assert!(o.status.success(), "stderr: {}", stderr(&o));
    let text = stdout(&o);
    for needle in [
        "EXCEPTION_ACCESS_VIOLATION",
        "write to 0x0000000000000000",
        "crashy!write_null+0x7",
        "crashy.c:206",
        "SIGNATURE:      AV_WRITE_NULL crashy!write_null / crashy!mode_null / crashy!main",
        "null pointer dereference",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
}

#[test]
fn analyze_json_has_the_design_keys() {
    let o = ntdbg(&["analyze", &sample("crashy-x64-null.dmp"), "--json"]);
    assert!(o.status.success(), "stderr: {}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("valid JSON");
    for key in [
        "dump",
        "event",
        "faulting_module",
        "stack",
        "signature",
        "inferences",
        "limitations",
        "next_commands",
    ] {
        assert!(v.get(key).is_some(), "missing key {key}");
    }
    assert_eq!(v["version"], 2, "64-bit values are hex strings");
    assert_eq!(v["event"]["code"], "0xc0000005");
    assert_eq!(v["event"]["type"], "exception");
    assert_eq!(v["dump"]["arch"], "x64");
    assert_eq!(v["faulting_module"]["name"], "crashy.exe");
    assert_eq!(v["stack"][0]["function"], "write_null(int)");
    assert_eq!(v["stack"][0]["found_by"], "context");
    // write_null is a leaf (no unwind entry): its caller comes from [rsp], after a call.
    assert_eq!(v["stack"][1]["found_by"], "leaf");
    assert_eq!(
        v["signature"],
        "AV_WRITE_NULL crashy!write_null / crashy!mode_null / crashy!main"
    );
}

#[test]
fn run_prints_each_command_under_a_prompt() {
    let o = ntdbg(&[
        "run",
        &sample("crashy-x64-null.dmp"),
        "-c",
        ".lastevent; .ecxr; r; kn; lm",
    ]);
    assert!(o.status.success(), "stderr: {}", stderr(&o));
    let text = stdout(&o);
    for needle in [
        "0:000> .lastevent",
        "0:000> kn",
        " # Child-SP",
        "crashy     (pdb symbols)",
        "rip=0000000140001517",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
}

#[test]
fn run_json_gives_typed_results() {
    let o = ntdbg(&[
        "run",
        &sample("crashy-x64-null.dmp"),
        "-c",
        ".ecxr; kn",
        "--json",
    ]);
    assert!(o.status.success(), "stderr: {}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("valid JSON");
    assert_eq!(v[1]["status"], "succeeded");
    assert_eq!(v[1]["result"]["kind"], "stack");
    assert_eq!(v[1]["result"]["frames"][0]["found_by"], "context");
    // Addresses are `0x` hex strings, as in the text.
    assert_eq!(v[1]["result"]["frames"][0]["instruction"], "0x140001517");
}

#[test]
fn keep_going_runs_the_commands_after_a_failure_and_still_exits_1() {
    let o = ntdbg(&[
        "run",
        &sample("crashy-x64-null.dmp"),
        "--keep-going",
        "-c",
        "kn 1; frobnicate; lm; zzzunknown; r rip",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let (out, err) = (String::from_utf8_lossy(&o.stdout), stderr(&o));
    assert!(out.contains("0:000> lm\n"), "{out}");
    assert!(out.contains("crashy"), "{out}");
    assert!(out.contains("0:000> r rip\nrip="), "{out}");
    assert!(err.contains("Unknown command 'frobnicate'"), "{err}");
    assert!(err.contains("Unknown command 'zzzunknown'"), "{err}");
    assert!(!err.contains("not executed"), "{err}");
}

#[test]
fn a_failing_command_exits_1_and_stops_the_batch() {
    let o = ntdbg(&[
        "run",
        &sample("crashy-x64-null.dmp"),
        "-c",
        "kn 1; frobnicate; lm",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(err.contains("Unknown command 'frobnicate'"), "{err}");
    assert!(
        err.contains("not executed (an earlier command failed): lm"),
        "{err}"
    );
}

#[test]
fn a_missing_file_exits_1_with_one_clear_line() {
    let o = ntdbg(&["analyze", "/nonexistent/crash.dmp"]);
    assert_eq!(o.status.code(), Some(1));
    let err = stderr(&o);
    assert!(
        err.starts_with("error: cannot open /nonexistent/crash.dmp"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn a_file_that_is_not_a_dump_exits_1() {
    let path = temp_file("not-a-dump.dmp", b"hello, this is text\n");
    let o = ntdbg(&["analyze", &path.display().to_string()]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("is not a Windows dump file"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn a_truncated_dump_exits_1_without_panicking() {
    let bytes = std::fs::read(ntdbg_testutil::sample("crashy-x64-null.dmp")).expect("sample");
    let path = temp_file("truncated.dmp", &bytes[..100]);
    let o = ntdbg(&["analyze", &path.display().to_string()]);
    assert_eq!(o.status.code(), Some(1), "stdout: {}", stdout(&o));
    let err = stderr(&o);
    assert!(err.contains("corrupt or truncated"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// Cut after its system info: what lies whole is read, and the loss is said (`analyze`: a
/// limitation; `run`: a warning).
#[test]
fn a_dump_cut_short_is_read_as_far_as_it_goes() {
    let bytes = std::fs::read(ntdbg_testutil::sample("crashy-x64-null.dmp")).expect("sample");
    let path = temp_file("cut-short.dmp", &bytes[..bytes.len() / 3]);
    let path = path.display().to_string();
    let o = ntdbg(&["analyze", &path, "--json"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let report: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let limitations = report["limitations"].to_string();
    assert!(
        limitations.contains("the dump is cut short"),
        "{limitations}"
    );
    let o = ntdbg(&["run", &path, "-c", "~"]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(
        stderr(&o).starts_with("warning: the dump is cut short"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn usage_errors_exit_2() {
    assert_eq!(ntdbg(&[]).status.code(), Some(2));
    assert_eq!(ntdbg(&["analyze"]).status.code(), Some(2));
    assert_eq!(ntdbg(&["run", "x.dmp"]).status.code(), Some(2));
    assert_eq!(ntdbg(&["frobnicate"]).status.code(), Some(2));
}

#[test]
fn explicit_symbols_path_is_used() {
    let dir = ntdbg_testutil::sample("crashy.pdb")
        .parent()
        .expect("dir")
        .display()
        .to_string();
    let o = ntdbg(&[
        "run",
        &sample("x86/crashy-x86-null.dmp"),
        "--symbols",
        &format!("{dir}/x86"),
        "-c",
        ".ecxr; k 1",
    ]);
    assert!(o.status.success(), "stderr: {}", stderr(&o));
    assert!(
        stdout(&o).contains("crashy!write_null+0xa"),
        "{}",
        stdout(&o)
    );
}

#[test]
fn list_and_triage_a_folder() {
    let dir = ntdbg_testutil::fresh_dir("cli-batch");
    std::fs::create_dir_all(dir.join("sub")).expect("temp dir");
    for (name, to) in [
        ("crashy-x64-null.dmp", "a.dmp"),
        ("crashy-x64-divzero.dmp", "sub/b.dmp"),
    ] {
        std::fs::copy(sample(name), dir.join(to)).expect("copy");
    }
    std::fs::write(dir.join("broken.dmp"), b"MDMP\x93\xa7").expect("broken");
    std::fs::write(dir.join("notes.txt"), b"not a dump").expect("notes");
    let d = dir.display().to_string();

    let o = ntdbg(&["list", &d, "--json"]);
    assert!(o.status.success(), "stderr: {}", stderr(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("valid JSON");
    let rows = v["dumps"].as_array().expect("array");
    assert_eq!(rows.len(), 2, "{v:#}");
    assert!(rows.iter().any(|r| r["error"]["message"].is_string()));
    assert!(rows
        .iter()
        .any(|r| r["event"]["code"] == "0xc0000005" && r["process"] == "crashy.exe"));
    let o = ntdbg(&["list", &d, "--recursive"]);
    assert!(stdout(&o).contains("sub"), "{}", stdout(&o));
    assert!(stdout(&o).contains("unreadable"), "{}", stdout(&o));

    let html = dir.join("report.html");
    let o = ntdbg(&[
        "triage",
        &d,
        "--json",
        "--jobs",
        "2",
        "--offline",
        "--html",
        &html.display().to_string(),
    ]);
    assert!(o.status.success(), "stderr: {}", stderr(&o));
    assert!(
        stderr(&o).is_empty(),
        "no progress bar when piped: {}",
        stderr(&o)
    );
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("valid JSON");
    assert_eq!(v["dumps"], 3);
    assert_eq!(v["buckets"].as_array().map(Vec::len), Some(2));
    assert_eq!(v["failed"].as_array().map(Vec::len), Some(1));
    let page = std::fs::read_to_string(&html).expect("html written");
    assert!(page.contains("AV_WRITE_NULL crashy"), "{page}");
    let o = ntdbg(&["triage", &d]);
    assert!(
        stdout(&o).contains("2 bucket(s), 1 failed"),
        "{}",
        stdout(&o)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn triage_takes_a_symbol_path_and_signature_rules() {
    let dir = ntdbg_testutil::fresh_dir("cli-triage-sym");
    std::fs::create_dir_all(&dir).expect("temp dir");
    std::fs::copy(sample("x86/crashy-x86-null.dmp"), dir.join("a.dmp")).expect("copy");
    let d = dir.display().to_string();
    let symbols = ntdbg_testutil::sample("x86/crashy.pdb")
        .parent()
        .expect("dir")
        .display()
        .to_string();
    let signatures = |o: &Output| -> Vec<String> {
        let v: serde_json::Value = serde_json::from_slice(&o.stdout).expect("valid JSON");
        v["buckets"]
            .as_array()
            .expect("buckets")
            .iter()
            .map(|b| b["signature"].as_str().unwrap_or_default().to_string())
            .collect()
    };
    let bare = ntdbg(&["triage", &d, "--json", "--offline"]);
    assert!(bare.status.success(), "stderr: {}", stderr(&bare));
    assert_eq!(signatures(&bare), ["AV_WRITE_NULL crashy+0x14ea"]);
    let o = ntdbg(&["triage", &d, "--json", "--offline", "--symbols", &symbols]);
    assert!(o.status.success(), "stderr: {}", stderr(&o));
    assert_eq!(
        signatures(&o),
        ["AV_WRITE_NULL crashy!write_null / crashy!mode_null / crashy!main"]
    );
    let rules = temp_file("rules.txt", b"# one frame\nframes 1\n");
    let r = rules.display().to_string();
    let o = ntdbg(&[
        "triage",
        &d,
        "--json",
        "--offline",
        "-s",
        &symbols,
        "--signature-rules",
        &r,
    ]);
    assert_eq!(signatures(&o), ["AV_WRITE_NULL crashy!write_null"]);
    let o = ntdbg(&[
        "analyze",
        &sample("crashy-x64-null.dmp"),
        "--signature-rules",
        &r,
    ]);
    assert!(
        stdout(&o).contains("SIGNATURE:      AV_WRITE_NULL crashy!write_null\nSIGNATURE_FRAMES:\n  00 crashy!write_null  named (context, context)"),
        "{}",
        stdout(&o)
    );
    let bad = temp_file("bad-rules.txt", b"frames 2\nirrelevant-modul x\n");
    let o = ntdbg(&[
        "analyze",
        &sample("crashy-x64-null.dmp"),
        "--signature-rules",
        &bad.display().to_string(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains(&format!(
            "signature rules {}, line 2: unknown directive `irrelevant-modul`",
            bad.display()
        )),
        "{}",
        stderr(&o)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn kernel_sessions_prompt_kd() {
    ntdbg_testutil::require_testdata!();
    let dump = ntdbg_testutil::testdata("rizin-testbins/dmp/triage_x64.dmp");
    let o = ntdbg(&[
        "run",
        &dump.display().to_string(),
        "--offline",
        "-c",
        "vertarget",
    ]);
    assert!(
        stdout(&o).starts_with("0: kd> vertarget\n"),
        "{}",
        stdout(&o)
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_ntdbg"))
        .args(["repl", &dump.display().to_string(), "--offline"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("repl");
    if let Some(mut stdin) = child.stdin.take() {
        use std::io::Write as _;
        let _ = stdin.write_all(b"q\n");
    }
    let out = child.wait_with_output().expect("repl ends");
    assert_eq!(stdout(&out), "0: kd> q\n");
    let o = ntdbg(&["run", &sample("crashy-x64-null.dmp"), "-c", "vertarget"]);
    assert!(
        stdout(&o).starts_with("0:000> vertarget\n"),
        "{}",
        stdout(&o)
    );
}

/// `ntdbg ARGS`, killed if it has not ended within a minute (a command blocked on a FIFO
/// would wait forever): `None` then.
#[cfg(unix)]
fn ntdbg_within_a_minute(args: &[&str]) -> Option<Output> {
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_ntdbg"))
        .args(args)
        .env_remove("_NT_SYMBOL_PATH")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ntdbg runs");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while child.try_wait().expect("wait").is_none() {
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    Some(child.wait_with_output().expect("output"))
}

/// A FIFO named like a dump (or a database) in a folder blocks no command: opened as a dump
/// it is one clear error, and a listing reports it beside the real dumps.
#[cfg(unix)]
#[test]
fn a_fifo_named_like_a_dump_blocks_no_command() {
    let dir = ntdbg_testutil::corrupt::TempDir::new("cli-fifo");
    std::fs::copy(
        ntdbg_testutil::sample("crashy-x64-null.dmp"),
        dir.path().join("good.dmp"),
    )
    .unwrap();
    let mkfifo = |name: &str| {
        let path = dir.path().join(name);
        let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        path.display().to_string()
    };
    let fifo = mkfifo("blocked.dmp");
    let fifo_db = mkfifo("fifo.db");
    let folder = dir.path().display().to_string();
    let db = dir.path().join("store.db").display().to_string();
    let refusal = "blocked.dmp is a named pipe (FIFO), not a regular file";
    let run = |args: &[&str]| {
        ntdbg_within_a_minute(args).unwrap_or_else(|| panic!("`ntdbg {}` blocked", args.join(" ")))
    };

    for args in [
        vec!["analyze", fifo.as_str()],
        vec!["run", fifo.as_str(), "-c", "k"],
        vec!["repl", fifo.as_str()],
    ] {
        let o = run(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(refusal), "{args:?}: {}", stderr(&o));
    }
    let listed = run(&["list", &folder, "--json"]);
    assert_eq!(listed.status.code(), Some(0), "{}", stderr(&listed));
    let listing: serde_json::Value = serde_json::from_slice(&listed.stdout).unwrap();
    let errors: Vec<&str> = listing["dumps"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|d| d["error"]["message"].as_str())
        .collect();
    assert!(
        errors.len() == 1 && errors[0].contains(refusal),
        "{listing}"
    );
    let triaged = run(&["triage", &folder, "--json", "--offline"]);
    let triage: serde_json::Value = serde_json::from_slice(&triaged.stdout).unwrap();
    assert_eq!(triage["dumps"], 2, "{triage}");
    assert!(
        triage["failed"][0]["error"]
            .as_str()
            .is_some_and(|e| e.contains(refusal)),
        "{triage}"
    );
    let ingested = run(&["ingest", &folder, "--db", &db, "--offline"]);
    assert!(stderr(&ingested).contains(refusal), "{}", stderr(&ingested));
    let into_fifo = run(&["ingest", &folder, "--db", &fifo_db, "--offline"]);
    assert_eq!(into_fifo.status.code(), Some(1));
    assert!(
        stderr(&into_fifo).contains("fifo.db is a named pipe (FIFO), not a regular file"),
        "{}",
        stderr(&into_fifo)
    );
}
