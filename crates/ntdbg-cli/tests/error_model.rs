//! How the command line fails and what it promises around that: a query never creates a
//! database, a symbol folder that does not exist is named, a closed pipe ends ntdbg quietly,
//! the HTML report's links work from its own folder, 64-bit values and ids are hex strings in
//! JSON, and piped REPL input reads like a terminal session.

use std::io::{Read, Write};
use std::process::{Command, Output, Stdio};

fn ntdbg(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ntdbg"))
        .args(args)
        .env_remove("_NT_SYMBOL_PATH")
        .env("NTDBG_OFFLINE", "1")
        .output()
        .expect("ntdbg runs")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn sample(name: &str) -> String {
    ntdbg_testutil::sample(name).display().to_string()
}

#[test]
fn a_query_on_a_mistyped_database_creates_nothing() {
    let dir = ntdbg_testutil::fresh_dir("typo-db");
    let typo = dir.join("typo.db");
    let o = ntdbg(&["crashes", "--db", &typo.display().to_string()]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert!(text(&o.stderr).contains("no crash database at"), "{o:?}");
    assert!(!typo.exists(), "crashes created {}", typo.display());
}

#[test]
fn a_symbol_folder_that_does_not_exist_is_named() {
    let missing = ntdbg_testutil::fresh_dir("symbols").join("not-there");
    let o = ntdbg(&[
        "analyze",
        &sample("crashy-x64-null.dmp"),
        "--symbols",
        &missing.display().to_string(),
    ]);
    assert!(o.status.success(), "{o:?}");
    assert!(
        text(&o.stderr).contains(&format!(
            "warning: symbol path folder {} does not exist",
            missing.display()
        )),
        "{}",
        text(&o.stderr)
    );
    let here = ntdbg_testutil::sample("crashy.pdb");
    let folder = here
        .parent()
        .expect("the samples folder")
        .display()
        .to_string();
    let o = ntdbg(&[
        "analyze",
        &sample("crashy-x64-null.dmp"),
        "--symbols",
        &folder,
    ]);
    assert!(!text(&o.stderr).contains("warning: symbol path"), "{o:?}");
}

#[test]
fn a_closed_pipe_ends_ntdbg_quietly() {
    let dir = ntdbg_testutil::fresh_dir("pipe");
    for name in ["crashy-x64-null.dmp", "crashy-x64-divzero.dmp"] {
        std::fs::copy(sample(name), dir.join(name)).expect("a copy");
    }
    let mut child = Command::new(env!("CARGO_BIN_EXE_ntdbg"))
        .args(["triage", &dir.display().to_string(), "--json"])
        .env("NTDBG_OFFLINE", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ntdbg starts");
    // `| head -c 10`: ten bytes read, then the pipe closed.
    let mut head = [0u8; 10];
    let mut stdout = child.stdout.take().expect("stdout");
    stdout.read_exact(&mut head).expect("ten bytes");
    drop(stdout);
    let out = child.wait_with_output().expect("ntdbg ends");
    let stderr = text(&out.stderr);
    assert!(!stderr.contains("Broken pipe"), "{stderr}");
    assert!(!stderr.contains("error"), "{stderr}");
}

#[test]
fn html_report_links_work_from_its_own_folder() {
    let dir = ntdbg_testutil::fresh_dir("html");
    std::fs::create_dir_all(dir.join("crashes")).expect("a folder");
    std::fs::create_dir_all(dir.join("reports")).expect("a folder");
    std::fs::copy(
        sample("crashy-x64-null.dmp"),
        dir.join("crashes").join("a.dmp"),
    )
    .expect("a copy");
    let o = Command::new(env!("CARGO_BIN_EXE_ntdbg"))
        .args(["triage", "crashes", "--html", "reports/report.html"])
        .current_dir(&dir)
        .env("NTDBG_OFFLINE", "1")
        .output()
        .expect("ntdbg runs");
    assert!(o.status.success(), "{o:?}");
    let page = std::fs::read_to_string(dir.join("reports/report.html")).expect("the report");
    let canonical = dir.canonicalize().expect("the folder");
    let link = format!(
        "file://{}",
        canonical.join("crashes").join("a.dmp").display()
    );
    let link = link.replace(' ', "%20");
    assert!(
        page.contains(&format!("href=\"{link}\"")) || {
            let plain = format!("file://{}", dir.join("crashes").join("a.dmp").display());
            page.contains(&format!("href=\"{}\"", plain.replace(' ', "%20")))
        },
        "no link to {link} in the report"
    );
}

#[test]
fn run_json_gives_the_thread_id_of_a_stack_as_hex() {
    let o = ntdbg(&["run", &sample("crashy-x64-null.dmp"), "-c", "k", "--json"]);
    assert!(o.status.success(), "{o:?}");
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON");
    assert_eq!(json[0]["result"]["thread_id"], "0x24", "{json}");
}

#[test]
fn piped_repl_input_is_echoed_and_help_names_the_prompts_own_commands() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ntdbg"))
        .args(["repl", &sample("crashy-x64-null.dmp"), "--offline"])
        .env_remove("_NT_SYMBOL_PATH")
        .env(
            "NTDBG_HISTORY",
            ntdbg_testutil::fresh_dir("repl").join("history"),
        )
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("ntdbg starts");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(b"? 1+1\nhelp\nq\n")
        .expect("the script");
    let out = child.wait_with_output().expect("ntdbg ends");
    let shown = text(&out.stdout);
    assert!(shown.starts_with("0:000> ? 1+1\n"), "{shown}");
    assert!(shown.contains("0:000> help\n"), "{shown}");
    for command in [".logopen", ".logappend", ".logclose", "q, quit"] {
        assert!(
            shown.contains(command),
            "help does not name {command}:\n{shown}"
        );
    }
    assert!(shown.ends_with("0:000> q\n"), "{shown}");
}

/// A file too short for a dump's directory gets one error from `list` and `triage`; a dump cut
/// after its directory is read by both as far as it goes, and both say the same of its lost
/// exception record.
#[test]
fn list_and_triage_agree_on_a_truncated_file() {
    let dir = ntdbg_testutil::fresh_dir("truncated");
    let whole = std::fs::read(sample("crashy-x64-null.dmp")).expect("the sample");
    std::fs::write(dir.join("cut.dmp"), &whole[..3000]).expect("a cut copy");
    std::fs::write(dir.join("short.dmp"), &whole[..100]).expect("a cut copy");
    let folder = dir.display().to_string();
    let listed: serde_json::Value =
        serde_json::from_slice(&ntdbg(&["list", &folder, "--json"]).stdout).expect("list JSON");
    let triaged: serde_json::Value =
        serde_json::from_slice(&ntdbg(&["triage", &folder, "--json"]).stdout).expect("triage JSON");
    let entry = |name: &str| {
        listed["dumps"]
            .as_array()
            .and_then(|d| {
                d.iter()
                    .find(|d| d["path"].as_str().is_some_and(|p| p.ends_with(name)))
            })
            .cloned()
            .unwrap_or_else(|| panic!("list does not show {name}: {listed}"))
    };
    let short = entry("short.dmp");
    let error = short["error"]["message"]
        .as_str()
        .unwrap_or_else(|| panic!("list gives short.dmp no error: {short}"));
    let failed = triaged["failed"].to_string();
    assert!(
        failed.contains(error),
        "triage's error for short.dmp is not list's ({error}): {failed}"
    );

    let cut = entry("cut.dmp");
    assert!(cut["error"].is_null(), "list refuses cut.dmp: {cut}");
    let said = cut["event"]["description"].as_str().unwrap_or_default();
    assert!(said.contains("the file is cut short"), "{cut}");
    let triage = triaged.to_string();
    assert!(
        triage.contains(said),
        "triage does not say what list says of cut.dmp ({said}): {triage}"
    );
}

/// `run --timeout` stops a long memory search as a cancelled MCP call stops: the command still
/// running is reported timed out with how to finish it, the later ones are not run, and the
/// exit status says it failed. (Forty searches of the largest corpus dump take well over the
/// one-second limit in any build: each reads every captured byte.)
#[test]
fn a_run_past_its_timeout_stops_the_running_command() {
    ntdbg_testutil::require_testdata!();
    let dump = ntdbg_testutil::testdata(
        "mozilla-minidump-stackwalk-pgo/pgo_data/minidumps/windows-aarch64.dmp",
    );
    let search = "s -a 0 L?7fffffffffffffff \"no such text anywhere\"";
    let batch = vec![search; 40].join("; ");
    let o = ntdbg(&[
        "run",
        &dump.display().to_string(),
        "--timeout",
        "1",
        "--json",
        "-c",
        &batch,
    ]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let results: serde_json::Value = serde_json::from_slice(&o.stdout).expect("JSON results");
    let statuses: Vec<&str> = results
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    let stopped = statuses
        .iter()
        .position(|s| *s == "timed_out")
        .unwrap_or_else(|| panic!("no command timed out: {statuses:?}"));
    assert!(
        statuses[..stopped].iter().all(|s| *s == "succeeded"),
        "{statuses:?}"
    );
    assert!(
        statuses[stopped + 1..].iter().all(|s| *s == "not_executed"),
        "{statuses:?}"
    );
    let error = &results[stopped]["error"];
    assert_eq!(error["code"], "timed_out", "{error}");
    assert!(
        error["message"].as_str().unwrap().contains("--timeout"),
        "{error}"
    );
    let o = ntdbg(&[
        "run",
        &dump.display().to_string(),
        "--timeout",
        "0",
        "-c",
        "k",
    ]);
    assert_eq!(o.status.code(), Some(2), "a zero limit is refused: {o:?}");
}
