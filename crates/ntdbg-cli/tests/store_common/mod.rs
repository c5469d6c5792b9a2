//! What the crash store's SQLite and PostgreSQL tests share: the samples, their copies, the
//! analysis flags, and `triage --json` with its bucket counts to compare against.

// Each test binary uses a part of it.
#[allow(dead_code)]
pub mod collector;

use serde_json::Value;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

/// The shipped sample dumps (their PDB is `testdata/crashy.pdb`).
pub const SAMPLES: &[&str] = &[
    "crashy-x64-null.dmp",
    "crashy-x64-divzero.dmp",
    "crashy-x64-breakpoint.dmp",
    "crashy-x64-raise.dmp",
    "crashy-x64-stack.dmp",
    "crashy-x64-thread.dmp",
];

/// The stdout of a command that must succeed (its output in the failure message otherwise).
pub fn ok(o: Output) -> String {
    assert!(
        o.status.success(),
        "exit {:?}\nstdout: {}\nstderr: {}",
        o.status,
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// The analysis flags every command gets, so they bucket alike.
pub fn analysis_flags() -> Vec<String> {
    let symbols = ntdbg_testutil::sample("crashy.pdb")
        .parent()
        .expect("testdata")
        .display()
        .to_string();
    vec!["--offline".into(), "--symbols".into(), symbols]
}

/// Copies every sample `copies` times into `dir` (created), each copy different in content
/// (bytes appended after the dump's last stream, which no reader looks at).
pub fn copy_samples(dir: &Path, copies: usize) -> usize {
    std::fs::create_dir_all(dir).expect("folder");
    for name in SAMPLES {
        let bytes = std::fs::read(ntdbg_testutil::sample(name)).expect("sample");
        for i in 0..copies {
            let mut copy = bytes.clone();
            copy.extend_from_slice(format!("copy {i}").as_bytes());
            std::fs::write(dir.join(format!("{i:05}-{name}")), copy).expect("copy");
        }
    }
    SAMPLES.len() * copies
}

/// `ntdbg triage DIR --json` with [`analysis_flags`].
pub fn triage_json(dir: &Path) -> Value {
    let output = Command::new(env!("CARGO_BIN_EXE_ntdbg"))
        .env_remove("_NT_SYMBOL_PATH")
        .arg("triage")
        .arg(dir)
        .arg("--json")
        .args(analysis_flags())
        .output()
        .expect("ntdbg runs");
    serde_json::from_str(&ok(output)).expect("triage --json is JSON")
}

/// A triage-shaped result's buckets: signature → count.
pub fn counts(result: &Value) -> BTreeMap<String, u64> {
    result["buckets"]
        .as_array()
        .expect("buckets")
        .iter()
        .map(|b| {
            (
                b["signature"].as_str().expect("signature").to_string(),
                b["count"].as_u64().expect("count"),
            )
        })
        .collect()
}
