//! Replays every fuzz corpus file through its entry point on stable Rust.
//!
//! `fuzz/corpus/<target>/` holds the seeds and every input a fuzzing run found worth keeping
//! (including the ones that once crashed). Each must go through the entry point without a
//! panic — not even one the code catches itself, which libFuzzer would report as a crash —
//! and in bounded time.

use std::path::PathBuf;
use std::sync::{Mutex, Once};
use std::time::{Duration, Instant};

/// Slower than this for one input (debug build) is a failure.
const SLOW: Duration = Duration::from_secs(20);

static PANICS: Mutex<Vec<String>> = Mutex::new(Vec::new());

/// Records every panic, caught or not, so that a caught one still fails the test.
fn record_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            PANICS.lock().unwrap().push(info.to_string());
            previous(info);
        }));
    });
}

fn corpus_dir(target: &str) -> PathBuf {
    ntdbg_testutil::repo_root()
        .join("fuzz")
        .join("corpus")
        .join(target)
}

fn replay(target: &str) {
    record_panics();
    let entry = ntdbg_fuzz::TARGETS
        .iter()
        .find(|(name, _)| *name == target)
        .map(|(_, entry)| *entry)
        .expect("a known target");
    let dir = corpus_dir(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|entry| entry.expect("list the corpus").path())
        .collect();
    files.sort();
    assert!(!files.is_empty(), "{} has no seeds", dir.display());
    let started = Instant::now();
    let mut failures = Vec::new();
    for file in &files {
        let data = std::fs::read(file).expect("read a corpus file");
        let one = Instant::now();
        let outcome = std::panic::catch_unwind(|| entry(&data));
        let elapsed = one.elapsed();
        let panics = std::mem::take(&mut *PANICS.lock().unwrap());
        if outcome.is_err() || !panics.is_empty() {
            failures.push(format!(
                "{}: panicked: {}",
                file.display(),
                panics.join("; ")
            ));
        }
        if elapsed > SLOW {
            failures.push(format!("{}: took {elapsed:?}", file.display()));
        }
    }
    eprintln!(
        "{target}: {} corpus files replayed in {:?}",
        files.len(),
        started.elapsed()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_target_has_a_corpus() {
    for (name, _) in ntdbg_fuzz::TARGETS {
        assert!(corpus_dir(name).is_dir(), "no corpus for {name}");
    }
}

#[test]
fn minidump_corpus() {
    replay("minidump");
}

#[test]
fn kernel_dump_corpus() {
    replay("kernel_dump");
}

#[test]
fn pdb_corpus() {
    replay("pdb");
}

#[test]
fn command_line_corpus() {
    replay("command_line");
}

#[test]
fn expression_corpus() {
    replay("expression");
}

#[test]
fn gdb_packet_corpus() {
    replay("gdb_packet");
}
