//! Replays every fuzz corpus file through its entry point on stable Rust.
//!
//! `fuzz/corpus/<target>/` holds the seeds and every input a fuzzing run found worth keeping
//! (including the ones that once crashed). Each must go through the entry point without a
//! panic — not even one the code catches itself, which libFuzzer would report as a crash —
//! and in bounded time.

use std::cell::RefCell;
use std::path::PathBuf;
use std::sync::Once;
use std::time::{Duration, Instant};

/// Slower than this for one input (debug build) is a failure.
const SLOW: Duration = Duration::from_secs(20);

thread_local! {
    /// The panics this thread raised: the replay's own, not those of the other tests that run
    /// beside it in the crate's test binary.
    static PANICS: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// Records every panic, caught or not, so that a caught one still fails the test.
fn record_panics() {
    static HOOK: Once = Once::new();
    HOOK.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let _ = PANICS.try_with(|p| p.borrow_mut().push(info.to_string()));
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

/// Replays one target's corpus; returns what went wrong.
fn replay(target: &str, entry: ntdbg_fuzz::Entry) -> Vec<String> {
    let dir = corpus_dir(target);
    let Ok(listing) = std::fs::read_dir(&dir) else {
        return vec![format!("{}: no corpus folder", dir.display())];
    };
    let mut files: Vec<PathBuf> = listing
        .map(|entry| entry.expect("list the corpus").path())
        .collect();
    files.sort();
    if files.is_empty() {
        return vec![format!("{} has no seeds", dir.display())];
    }
    let started = Instant::now();
    let mut failures = Vec::new();
    for file in &files {
        let data = std::fs::read(file).expect("read a corpus file");
        let one = Instant::now();
        let outcome = std::panic::catch_unwind(|| entry(&data));
        let elapsed = one.elapsed();
        let panics = PANICS.with(|p| std::mem::take(&mut *p.borrow_mut()));
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
    failures
}

/// Every target's corpus, one after another in one test, so that a panic is never recorded
/// against another target's input.
#[test]
fn every_corpus_replays_cleanly() {
    record_panics();
    let failures: Vec<String> = ntdbg_fuzz::TARGETS
        .iter()
        .flat_map(|(name, entry)| replay(name, *entry))
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
