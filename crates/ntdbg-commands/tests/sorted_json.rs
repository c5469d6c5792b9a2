//! `TypedResult::sorted_json` writes the bytes a `serde_json::Value` of the result writes (keys
//! sorted): stacks streamed straight from their types, the other kinds through a `Value`.

use ntdbg_commands::{run_command, TypedResult};
use ntdbg_engine::Session;
use std::path::Path;

/// The typed results of `commands` on `dump`, with `symbols` as the symbol path.
fn typed_results(dump: &Path, symbols: &Path, commands: &[&str]) -> Vec<(String, TypedResult)> {
    let symbols = symbols.display().to_string();
    let mut session = match Session::open_dump(dump, Some(&symbols)) {
        Ok(s) => s,
        Err(e) => panic!("{}: {e}", dump.display()),
    };
    session.symbols().set_offline(true);
    commands
        .iter()
        .filter_map(|c| {
            let out = run_command(&mut session, c).unwrap_or_else(|e| panic!("{c}: {e:?}"));
            Some((c.to_string(), out.typed?))
        })
        .collect()
}

/// Asserts that each result's sorted JSON is its `Value`'s JSON, compact and pretty.
fn assert_same_as_value(results: &[(String, TypedResult)]) {
    for (command, typed) in results {
        let value = serde_json::to_value(typed).expect("value");
        let sorted = typed.sorted_json();
        assert_eq!(
            serde_json::to_string_pretty(&sorted).expect("pretty"),
            serde_json::to_string_pretty(&value).expect("pretty"),
            "{command}"
        );
        assert_eq!(
            serde_json::to_string(&sorted).expect("compact"),
            serde_json::to_string(&value).expect("compact"),
            "{command}"
        );
    }
}

#[test]
fn stacks_and_other_kinds_match_their_value_with_source_lines() {
    let samples = ntdbg_testutil::sample("crashy.pdb");
    let samples = samples.parent().expect("samples folder");
    let mut checked = 0;
    for dump in ["crashy-x64-null.dmp", "crashy-x64-thread.dmp"] {
        let results = typed_results(
            &samples.join(dump),
            samples,
            &["k", "kn", "kb", "~*k", "~0 k", "lm", "r", "~", "? 1+2"],
        );
        assert!(
            results
                .iter()
                .any(|(_, t)| matches!(t, TypedResult::Stacks { .. })),
            "{dump}: no ~*k result"
        );
        checked += results.len();
        assert_same_as_value(&results);
    }
    assert!(checked >= 16, "{checked} results");
}

#[test]
fn a_stack_with_a_note_matches_its_value() {
    // An x86 walk that rejects a return address and says so in the stack's note.
    let dump = ntdbg_testutil::sample("x86/crashy-x86-raise.dmp");
    let results = typed_results(&dump, dump.parent().expect("folder"), &["k", "~*k"]);
    let noted = results.iter().any(|(_, t)| match t {
        TypedResult::Stack(s) => s.note.is_some(),
        TypedResult::Stacks { stacks } => stacks.iter().any(|s| s.note.is_some()),
        _ => false,
    });
    assert!(noted, "no stack with a note");
    assert_same_as_value(&results);
}
