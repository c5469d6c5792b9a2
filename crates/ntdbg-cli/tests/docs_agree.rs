//! The help, the man page, the README and the behaviour say the same: the README's Usage names
//! every subcommand, its exit statuses and environment variables are the man page's (which the
//! binary generates from one table), and the exit status is the one they give.

use std::path::Path;
use std::process::{Command, Output};

fn ntdbg(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ntdbg"))
        .args(args)
        .env_remove("_NT_SYMBOL_PATH")
        .env("NTDBG_OFFLINE", "1")
        .output()
        .expect("ntdbg runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn readme() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md");
    std::fs::read_to_string(&path).expect("README.md")
}

/// The term / definition pairs of a man page section, with roff's escapes undone.
fn man_section(page: &str, title: &str) -> Vec<(String, String)> {
    let unescape = |s: &str| {
        s.replace("\\fB", "")
            .replace("\\fR", "")
            .replace("\\-", "-")
            .replace("\\(aq", "'")
            .replace("\\\\", "\\")
            .replace("\\&", "")
    };
    let header = format!(".SH \"{title}\"");
    let plain_header = format!(".SH {title}");
    let mut lines = page
        .lines()
        .skip_while(|l| *l != header && *l != plain_header)
        .skip(1)
        .take_while(|l| !l.starts_with(".SH"));
    let mut pairs = Vec::new();
    while let Some(line) = lines.next() {
        if line == ".TP" {
            let term = unescape(lines.next().unwrap_or_default());
            let definition = unescape(lines.next().unwrap_or_default());
            pairs.push((term, definition));
        }
    }
    pairs
}

#[test]
fn ntdbg_help_says_what_ntdbg_is() {
    let help = stdout(&ntdbg(&["--help"]));
    let first = help.lines().next().unwrap_or_default();
    assert!(first.contains("Windows debugger"), "{first}");
}

#[test]
fn the_readme_usage_lists_every_subcommand() {
    let help = stdout(&ntdbg(&["--help"]));
    let readme = readme();
    let usage = readme
        .split("\n## ")
        .find(|s| s.starts_with("Usage"))
        .expect("a Usage section in README.md");
    let missing: Vec<String> = crate::help_examples::listed_subcommands(&help)
        .into_iter()
        .filter(|name| !usage.contains(&format!("ntdbg {name}")))
        .collect();
    assert!(
        missing.is_empty(),
        "README.md's Usage does not show: {missing:?}"
    );
}

#[test]
fn the_man_page_has_exit_status_and_environment_and_the_readme_agrees() {
    let page = stdout(&ntdbg(&["manpage"]));
    let statuses = man_section(&page, "EXIT STATUS");
    let environment = man_section(&page, "ENVIRONMENT");
    assert_eq!(
        statuses.iter().map(|(t, _)| t.as_str()).collect::<Vec<_>>(),
        ["0", "1", "2"],
        "{page}"
    );
    assert!(environment.len() >= 5, "{page}");
    let readme = readme();
    let sentence = statuses
        .iter()
        .map(|(code, meaning)| format!("{code} {meaning}"))
        .collect::<Vec<_>>()
        .join("; ");
    let readme_flat = readme.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        readme_flat.contains(&format!("Exit status: {sentence}.")),
        "README.md should say: Exit status: {sentence}."
    );
    for (variable, _) in &environment {
        assert!(
            readme.contains(variable.as_str()),
            "README.md does not name {variable}"
        );
    }
}

#[test]
fn memory_missing_from_the_dump_is_not_a_failed_command() {
    let dump = ntdbg_testutil::sample("crashy-x64-null.dmp");
    let o = ntdbg(&["run", &dump.display().to_string(), "-c", "db 0 L10"]);
    assert!(o.status.success(), "{o:?}");
    assert!(stdout(&o).contains("Memory access error"), "{}", stdout(&o));
    let o = ntdbg(&["run", &dump.display().to_string(), "-c", "db 11fc90 L20"]);
    assert!(o.status.success(), "{o:?}");
    assert!(stdout(&o).contains("?? ??"), "{}", stdout(&o));
    let o = ntdbg(&["run", &dump.display().to_string(), "-c", "nosuchcommand"]);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let o = ntdbg(&["run", "--no-such-option"]);
    assert_eq!(o.status.code(), Some(2), "{o:?}");
}
