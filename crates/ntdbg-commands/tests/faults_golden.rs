//! Golden INFERENCES of `!analyze -v` on every mode of the repository's `faults.exe` sample
//! (testdata/faults/; insta snapshots in `tests/snapshots/`). Only that section is kept: the
//! stacks and signatures above it have goldens of their own. Regenerate with
//! `INSTA_UPDATE=always cargo test -p ntdbg-commands --test commands faults_golden::` after a deliberate
//! change, and review the diff.

use ntdbg_engine::Session;

const MODES: &[&str] = &[
    "heap_uaf",
    "heap_overflow",
    "freed_pointer",
    "fastfail_cookie",
    "constant_address",
    "leaf_null_write",
    "assertion",
    "deliberate_trap",
    "stack_cycle",
    "context_thread",
    "bit_flip",
];

fn open(sample: &str) -> Session {
    ntdbg_testutil::open_sample(sample)
}

/// The INFERENCES section of `!analyze -v`, up to the next blank line.
fn inferences_section(text: &str) -> String {
    let after = text
        .split_once("INFERENCES:\n")
        .map(|(_, rest)| rest)
        .unwrap_or("(no INFERENCES section)");
    after.split("\n\n").next().unwrap_or_default().to_string()
}

#[test]
fn fault_inferences() {
    for mode in MODES {
        let mut session = open(&format!("faults/{mode}.dmp"));
        let text = match ntdbg_commands::run_command(&mut session, "!analyze -v") {
            Ok(out) => out.text,
            Err(e) => format!("ERROR {}: {}", e.code, e.message),
        };
        insta::assert_snapshot!(
            format!("faults__{mode}"),
            inferences_section(&text),
            "!analyze -v"
        );
    }
}
