//! The crash store on SQLite, through the `ntdbg` binary: `ingest` records each dump once,
//! concurrent `ingest` processes are safe, a corrupt dump is recorded as failed once, and
//! `crashes --json` buckets count what `triage --json` counts on the same files.

use crate::store_common;

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use store_common::{analysis_flags, copy_samples, counts, ok, triage_json, SAMPLES};

fn ntdbg(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ntdbg"))
        .args(args)
        .env_remove("_NT_SYMBOL_PATH")
        .output()
        .expect("ntdbg runs")
}

/// A fresh folder for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ntdbg-store-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch folder");
    dir
}

fn run_with(mut args: Vec<String>, extra: &[String]) -> Output {
    args.extend_from_slice(extra);
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    ntdbg(&refs)
}

fn ingest(dir: &Path, db: &Path) -> String {
    let args = vec![
        "ingest".to_string(),
        dir.display().to_string(),
        "--db".into(),
        db.display().to_string(),
    ];
    ok(run_with(args, &analysis_flags()))
}

fn crashes_json(db: &Path, extra: &[&str]) -> Value {
    let mut args = vec!["crashes", "--db", db.to_str().expect("utf-8"), "--json"];
    args.extend_from_slice(extra);
    serde_json::from_str(&ok(ntdbg(&args))).expect("crashes --json is JSON")
}

#[test]
fn ingesting_twice_counts_once_and_buckets_equal_triage() {
    let dir = scratch("twice");
    let dumps = dir.join("dumps");
    std::fs::create_dir_all(dumps.join("sub")).expect("folders");
    let n = copy_samples(&dumps, 1);
    // One more copy in a sub-folder: ingest descends, and the same content counts once.
    std::fs::copy(
        ntdbg_testutil::sample(SAMPLES[0]),
        dumps.join("sub").join("again.dmp"),
    )
    .expect("copy");
    std::fs::copy(ntdbg_testutil::sample(SAMPLES[0]), dir.join("plain.dmp")).expect("copy");
    let db = dir.join("crashes.db");
    let first = ingest(&dumps, &db);
    assert!(
        first.contains(&format!("{0} dump(s): {0} recorded", n + 1)),
        "{first}"
    );
    let again = ingest(&dumps, &db);
    assert!(
        again.contains(&format!(
            "0 recorded, 0 failed analysis (recorded as failed), {} already",
            n + 1
        )),
        "{again}"
    );
    // The same bytes under another name, given as a file: already there.
    let args = vec![
        "ingest".to_string(),
        dir.join("plain.dmp").display().to_string(),
        "--db".into(),
        db.display().to_string(),
    ];
    assert!(ok(run_with(args, &analysis_flags())).contains("0 recorded"));

    let stored = crashes_json(&db, &[]);
    assert_eq!(stored["dumps"], n + 1);
    let triaged = triage_json(&dumps);
    assert_eq!(triaged["dumps"], n + 1);
    assert_eq!(counts(&stored), counts(&triaged));
    assert_eq!(stored["failed"], triaged["failed"]);
    for (s, t) in stored["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .zip(triaged["buckets"].as_array().unwrap())
    {
        for key in [
            "signature",
            "kind",
            "first_seen",
            "last_seen",
            "modules",
            "dumps",
        ] {
            assert_eq!(s[key], t[key], "{key}");
        }
        assert_eq!(s["representative"], t["representative"]);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_daily_questions() {
    let dir = scratch("questions");
    let dumps = dir.join("dumps");
    std::fs::create_dir_all(&dumps).expect("folder");
    copy_samples(&dumps, 2);
    let db = dir.join("crashes.db");
    ingest(&dumps, &db);
    let db_arg = db.to_str().unwrap();

    let all = crashes_json(&db, &[]);
    let buckets = all["buckets"].as_array().expect("buckets").len();
    assert!(buckets >= 2, "{all}");
    // Top N, a period that holds everything, and one that holds nothing.
    assert_eq!(
        crashes_json(&db, &["--top", "1"])["buckets"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
    assert_eq!(
        counts(&crashes_json(&db, &["--since", "2000-01-01"])),
        counts(&all)
    );
    assert_eq!(crashes_json(&db, &["--since", "2999-01-01"])["dumps"], 0);
    // New since long ago: every bucket; since the future: none.
    assert_eq!(
        crashes_json(&db, &["--new-since", "2000-01-01"])["buckets"]
            .as_array()
            .unwrap()
            .len(),
        buckets
    );
    assert_eq!(
        crashes_json(&db, &["--new-since", "2999-01-01"])["dumps"],
        0
    );
    // One bucket by part of its signature: its dumps and its representative.
    let top = &all["buckets"][0];
    let signature = top["signature"].as_str().unwrap();
    let one = crashes_json(&db, &["--bucket", signature]);
    assert_eq!(one["buckets"].as_array().unwrap().len(), 1);
    assert_eq!(one["buckets"][0]["dumps"], top["dumps"]);
    assert_eq!(one["buckets"][0]["representative"], top["representative"]);
    let text = ok(ntdbg(&["crashes", "--db", db_arg, "--bucket", signature]));
    assert!(text.contains("representative: "), "{text}");
    // Counts by module version: every dump names crashy.exe.
    let module = crashes_json(&db, &["--module", "CRASHY.EXE"]);
    let versions = module["versions"].as_array().expect("versions");
    assert!(!versions.is_empty(), "{module}");
    // crashy.exe has no version resource (its versions are PE timestamps): no bucket is known
    // to be new since a version of it.
    assert!(versions[0]["version"].as_str().unwrap().starts_with("(0x"));
    let new = crashes_json(&db, &["--module", "crashy.exe", "--new-since", "1.0"]);
    assert_eq!(new["dumps"], 0, "{new}");
    let o = ntdbg(&["crashes", "--db", db_arg, "--new-since", "1.2"]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "a version without --module is an error"
    );
    // The HTML report of the buckets.
    let html = dir.join("crashes.html");
    ok(ntdbg(&[
        "crashes",
        "--db",
        db_arg,
        "--html",
        html.to_str().unwrap(),
    ]));
    let page = std::fs::read_to_string(&html).expect("html written");
    assert!(
        page.contains("Representative stack")
            && page.contains(signature.split(' ').next().unwrap())
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_corrupt_dump_is_recorded_as_failed_once() {
    let dir = scratch("corrupt");
    let whole = std::fs::read(ntdbg_testutil::sample(SAMPLES[0])).expect("sample");
    std::fs::write(dir.join("cut.dmp"), &whole[..whole.len() / 3]).expect("cut");
    std::fs::write(dir.join("notes.dmp"), b"MDMP but nothing more").expect("garbage");
    let db = dir.join("crashes.db");
    let first = ingest(&dir, &db);
    assert!(first.contains("failed analysis"), "{first}");
    ingest(&dir, &db);
    let stored = crashes_json(&db, &[]);
    let triaged = triage_json(&dir);
    assert_eq!(stored["dumps"], triaged["dumps"]);
    let failed = stored["failed"].as_array().expect("failed");
    assert_eq!(failed, triaged["failed"].as_array().unwrap());
    assert!(failed
        .iter()
        .any(|f| f["path"].as_str().unwrap().ends_with("notes.dmp")));
    for f in failed {
        assert!(!f["error"].as_str().unwrap().is_empty());
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn concurrent_ingest_processes_record_each_dump_once() {
    let dir = scratch("concurrent");
    let dumps = dir.join("dumps");
    std::fs::create_dir_all(&dumps).expect("folder");
    let n = copy_samples(&dumps, 4);
    let db = dir.join("crashes.db");
    let children: Vec<_> = (0..3)
        .map(|_| {
            let mut args = vec![
                "ingest".to_string(),
                dumps.display().to_string(),
                "--db".into(),
                db.display().to_string(),
                "--jobs".into(),
                "2".into(),
            ];
            args.extend(analysis_flags());
            Command::new(env!("CARGO_BIN_EXE_ntdbg"))
                .args(&args)
                .env_remove("_NT_SYMBOL_PATH")
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("ingest starts")
        })
        .collect();
    let mut recorded = 0;
    for child in children {
        let out = ok(child.wait_with_output().expect("ingest ends"));
        // "N dump(s): R recorded, …"
        recorded += out
            .split(": ")
            .nth(1)
            .and_then(|s| s.split(' ').next())
            .and_then(|r| r.parse::<usize>().ok())
            .expect("recorded count");
    }
    assert_eq!(recorded, n, "each dump recorded by exactly one process");
    let stored = crashes_json(&db, &[]);
    assert_eq!(stored["dumps"], n);
    assert_eq!(counts(&stored), counts(&triage_json(&dumps)));
    let _ = std::fs::remove_dir_all(&dir);
}
