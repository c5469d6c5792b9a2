//! Errors that teach: an unknown command word is answered with the nearest commands of the
//! table (edit distance) and, for WinDbg commands ntdbg does not have, what to use instead.

use crate::error::{excerpt, CommandError, ErrorCode};
use crate::table;

/// Most near names one error lists.
const MAX_NEAR: usize = 4;

/// WinDbg commands (lower case) ntdbg does not have, each with what to use instead.
const INSTEAD: &[(&[&str], &str)] = &[
    (&["dyb", "dyd"], "db (bytes) or .formats VALUE (binary)"),
    (
        &["!heap"],
        "!address ADDR (heap regions); !analyze names heap corruption",
    ),
    (&["!vprot", "!vadump"], "!address ADDR"),
    (&["!stacks"], "~*k, or !uniqstack for the distinct stacks"),
    (
        &["!clrstack", "!dumpheap", "!dumpobj", "!pe", "!sos"],
        "k (managed frames are not decoded; ntdbg has no SOS)",
    ),
    (
        &[".load", ".loadby", ".chain", ".unload"],
        "the built-in commands (`help` lists them; extensions are not loaded)",
    ),
    (
        &["e", "ep", "f"],
        "eb, ew, ed, eq, ea, eu (memory writes on a live target)",
    ),
    (
        &["q", "qq", "qd"],
        "ending the session (`q` quits the REPL)",
    ),
    (&["!sym"], "lm (symbol status per module) and .reload /f"),
    (
        &["ls", "lsa", ".srcpath", ".lines"],
        "kp and ln (frames show file and line)",
    ),
    (
        &[
            ".if", ".else", ".for", ".foreach", ".while", ".printf", ".block",
        ],
        "one command per step (scripting is not supported)",
    ),
    (&["!exchain", "!exr"], ".exr -1 and kb"),
    (
        &[".shell", ".create", ".attach", ".kill"],
        "nothing: host commands are not run",
    ),
];

/// The error for a command word the table does not have: the nearest names, and what to
/// use instead when it is a WinDbg command ntdbg does not support.
pub(crate) fn unknown_command(name: &str) -> CommandError {
    let lower = name.to_ascii_lowercase();
    let shown = excerpt(name);
    if let Some(instead) = instead_of(&lower) {
        return CommandError::new(
            ErrorCode::UnknownCommand,
            format!("Unknown command '{shown}': WinDbg's {lower} is not supported"),
        )
        .with_hint(format!("use {instead}; `help` lists every command"));
    }
    let error = CommandError::new(
        ErrorCode::UnknownCommand,
        format!("Unknown command '{shown}'"),
    );
    match nearest(&lower)[..] {
        [] => error.with_hint("run `help` for the list of supported commands"),
        ref near => error.with_hint(format!(
            "nearest: {}; `help` lists every command",
            near.join(", ")
        )),
    }
}

fn instead_of(lower: &str) -> Option<&'static str> {
    INSTEAD
        .iter()
        .find(|(names, _)| names.contains(&lower))
        .map(|(_, instead)| *instead)
}

/// The table's names closest to `lower` (Damerau-Levenshtein distance at most a third of its
/// length, at least 1), closest first, at most [`MAX_NEAR`].
fn nearest(lower: &str) -> Vec<&'static str> {
    let bound = (lower.chars().count() / 3).max(1);
    let mut near: Vec<(usize, &'static str)> = table::all()
        .flat_map(|spec| spec.names.iter().copied())
        .filter_map(|n| {
            let d = strsim::damerau_levenshtein(lower, &n.to_ascii_lowercase());
            (d <= bound).then_some((d, n))
        })
        .collect();
    // Stable: equal distances keep the help order.
    near.sort_by_key(|(d, _)| *d);
    near.dedup_by_key(|(_, n)| n.to_ascii_lowercase());
    near.into_iter().take(MAX_NEAR).map(|(_, n)| n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hint(name: &str) -> String {
        unknown_command(name).hint.unwrap_or_default()
    }

    #[test]
    fn a_typo_names_the_nearest_commands() {
        assert!(
            hint("!analyse").starts_with("nearest: !analyze"),
            "{}",
            hint("!analyse")
        );
        assert!(hint("sympath").contains(".sympath"), "{}", hint("sympath"));
        assert!(hint("lmvv").contains("lmv"), "{}", hint("lmvv"));
        assert!(hint("kbb").contains("kb"), "{}", hint("kbb"));
    }

    #[test]
    fn help_for_a_typo_names_the_nearest_too() {
        let mut session = {
            let path = ntdbg_testutil::sample("crashy-x64-null.dmp");
            ntdbg_engine::Session::open_dump(&path, None).expect("sample opens")
        };
        let e = crate::run_command(&mut session, "help !analyse").expect_err("no such topic");
        assert!(
            e.message.starts_with("No help for '!analyse'"),
            "{}",
            e.message
        );
        assert!(e.hint.unwrap_or_default().contains("!analyze"));
    }

    #[test]
    fn nothing_near_sends_to_help() {
        assert_eq!(
            hint("frobnicate"),
            "run `help` for the list of supported commands"
        );
    }

    #[test]
    fn unsupported_windbg_commands_say_what_to_use() {
        let e = unknown_command("!HEAP");
        assert_eq!(e.code, ErrorCode::UnknownCommand);
        assert!(
            e.message.contains("WinDbg's !heap is not supported"),
            "{}",
            e.message
        );
        assert!(hint("!heap").contains("!address"), "{}", hint("!heap"));
    }

    #[test]
    fn the_instead_table_names_no_existing_command() {
        for (names, instead) in INSTEAD {
            assert!(!instead.is_empty());
            for n in *names {
                assert!(
                    table::lookup(n).is_none(),
                    "{n} exists: drop it from INSTEAD"
                );
            }
        }
    }
}
