//! `ntdbg collect` on one machine (SQLite, a local object store): symbols uploaded first, the
//! sample dumps sent by the Crashpad-protocol client (`tools/crashpad_upload.py`: gzip
//! multipart, chunked), analysed by the collector's own worker with the store's symbols, and
//! shown on its crash-stats page; every malformed or unauthorised upload gets a clear refusal.

use crate::store_common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use store_common::collector::{get, upload, Running};
use store_common::{ok, SAMPLES};

fn scratch(name: &str) -> ntdbg_testutil::corrupt::TempDir {
    ntdbg_testutil::corrupt::TempDir::new(&format!("collect-{name}"))
}

fn samples() -> Vec<PathBuf> {
    SAMPLES.iter().map(|s| ntdbg_testutil::sample(s)).collect()
}

fn text(p: &Path) -> String {
    p.display().to_string()
}

/// `ntdbg symbols upload` of the samples' PDB and image into `store`.
fn upload_symbols(store: &Path) {
    let out = ok(Command::new(env!("CARGO_BIN_EXE_ntdbg"))
        .args(["symbols", "upload"])
        .arg(ntdbg_testutil::sample("crashy.pdb"))
        .arg(ntdbg_testutil::sample("crashy.exe"))
        .arg("--store")
        .arg(store)
        .output()
        .expect("ntdbg runs"));
    assert!(out.contains("2 file(s) uploaded"), "{out}");
    assert!(out.contains("symbols/crashy.pdb/"), "{out}");
}

/// Waits until the page says `n` crashes were analysed.
fn wait_analysed(server: &Running, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let (_, page) = get(server.addr, "/?days=1");
        if page.contains(&format!("<b>{n}</b><span>crashes analysed")) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "not analysed in time:\n{}",
            server.log()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn reports_are_accepted_analysed_with_uploaded_symbols_and_shown() {
    let dir = scratch("page");
    let store = dir.path().join("store");
    upload_symbols(&store);
    let tokens = dir.write("tokens.txt", b"# product token\ncrashy t0ken\n");
    let args: Vec<String> = [
        "collect",
        "--listen",
        "127.0.0.1:0",
        "--db",
        &text(&dir.path().join("crashes.db")),
        "--store",
        &text(&store),
        "--tokens",
        &text(&tokens),
        "--pages",
        "--offline",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let mut server = Running::start(&args, &[]);
    let url = server.submit_url(Some("t0ken"));
    let sent = upload(
        &url,
        &samples(),
        1,
        &["--product", "crashy", "--version", "1.0"],
    );
    assert_eq!(sent.len(), SAMPLES.len());
    for s in &sent {
        assert_eq!(s.status, 200, "{s:?}");
        assert_eq!(s.answer.len(), 64, "the crash id: {s:?}");
    }
    // The same dump again: the same crash id, stored and analysed once.
    let again = upload(&url, &samples()[..1], 1, &["--product", "crashy"]);
    let first = sent
        .iter()
        .find(|s| s.file == again[0].file)
        .expect("the first upload of the same file");
    assert_eq!(again[0].answer, first.answer);
    wait_analysed(&server, SAMPLES.len());

    let (status, top) = get(server.addr, "/?days=1&product=crashy");
    assert_eq!(status, 200);
    assert!(
        top.contains("crashy!write_null"),
        "named with the uploaded PDB:\n{top}"
    );
    let (status, crash) = get(server.addr, &format!("/crash/{}", first.answer));
    assert_eq!(status, 200);
    assert!(crash.contains("id=\"cause\""), "{crash}");
    assert!(crash.contains("write_null"), "{crash}");
    assert!(
        crash.contains("<th>Product</th><td class=\"mono\">crashy</td>"),
        "{crash}"
    );
    let (status, _) = get(server.addr, &format!("/crash/{}", "0".repeat(64)));
    assert_eq!(status, 404);
    server.kill();
}

#[test]
fn bad_uploads_are_refused_with_the_reason() {
    let dir = scratch("refused");
    let tokens = dir.write("tokens.txt", b"crashy good\n");
    let not_a_dump = dir.write("notes.dmp", b"these are not the bytes of a minidump at all");
    let args: Vec<String> = [
        "collect",
        "--listen",
        "127.0.0.1:0",
        "--db",
        &text(&dir.path().join("crashes.db")),
        "--store",
        &text(&dir.path().join("store")),
        "--tokens",
        &text(&tokens),
        "--max-upload",
        "1",
        "--workers",
        "0",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let server = Running::start(&args, &[]);
    let small = vec![ntdbg_testutil::sample(SAMPLES[0])];
    let refused = |url: &str, files: &[PathBuf], extra: &[&str]| {
        let sent = upload(url, files, 1, extra);
        assert_eq!(sent.len(), 1);
        (sent[0].status, sent[0].answer.clone())
    };
    let (status, why) = refused(&server.submit_url(None), &small, &["--product", "crashy"]);
    assert_eq!(status, 401, "{why}");
    assert!(why.contains("token"), "{why}");
    let (status, why) = refused(
        &server.submit_url(Some("bad")),
        &small,
        &["--product", "crashy"],
    );
    assert_eq!(status, 403, "{why}");
    let (status, why) = refused(
        &server.submit_url(Some("good")),
        &small,
        &["--product", "other"],
    );
    assert_eq!(status, 403, "{why}");
    assert!(why.contains("not this product's"), "{why}");
    let (status, why) = refused(
        &server.submit_url(Some("good")),
        &[not_a_dump],
        &["--product", "crashy"],
    );
    assert_eq!(status, 400, "{why}");
    assert!(why.contains("not a minidump"), "{why}");
    let big = vec![ntdbg_testutil::sample("crashy-x64-stack.dmp")];
    let (status, why) = refused(
        &server.submit_url(Some("good")),
        &big,
        &["--product", "crashy", "--no-gzip"],
    );
    assert_eq!(status, 413, "{why}");
    let (status, body) = get(server.addr, "/submit");
    assert_eq!(status, 405, "{body}");
    let (status, body) = get(server.addr, "/");
    assert_eq!(status, 404);
    assert!(body.contains("POST crash reports to /submit"), "{body}");
}

#[test]
fn a_public_address_needs_tokens() {
    let out = Command::new(env!("CARGO_BIN_EXE_ntdbg"))
        .args(["collect", "--listen", "0.0.0.0:0", "--db", "unused.db"])
        .output()
        .expect("ntdbg runs");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not a loopback address"), "{err}");
    let out = Command::new(env!("CARGO_BIN_EXE_ntdbg"))
        .args(["collect", "--listen", "0.0.0.0:0", "--unsafe-http"])
        .output()
        .expect("ntdbg runs");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--tokens"));
    assert!(!Path::new("unused.db").exists());
}
