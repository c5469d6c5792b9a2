//! The help, the man page, the README and the behaviour say the same: the README's Usage names
//! every subcommand, its exit statuses and environment variables are the man page's (which the
//! binary generates from one table), and the exit status is the one they give. README's
//! command table names every command of the table, and ARCHITECTURE.md's "How to add a
//! command" names only files that exist.

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

fn repo_file(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn readme() -> String {
    repo_file("README.md")
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

/// The text of a document's section from its heading (`## Title` or `### Title`) to the next
/// heading of any level.
fn section<'a>(text: &'a str, heading: &str) -> &'a str {
    let start = text
        .find(&format!("\n{heading}\n"))
        .unwrap_or_else(|| panic!("no section {heading:?}"))
        + 1;
    let body = &text[start + heading.len()..];
    let end = body
        .find("\n## ")
        .into_iter()
        .chain(body.find("\n### "))
        .min()
        .unwrap_or(body.len());
    &body[..end]
}

/// The spans between backticks.
fn code_spans(text: &str) -> impl Iterator<Item = &str> {
    text.split('`').skip(1).step_by(2)
}

#[test]
fn how_to_add_a_command_names_only_files_that_exist() {
    // The list of files a new command touches is only useful while every one of them is
    // where it says; a path with a placeholder (`<family>.rs`) must have its folder.
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let architecture = repo_file("ARCHITECTURE.md");
    let how_to = section(&architecture, "## How to add a command");
    let paths: Vec<&str> = code_spans(how_to)
        .filter(|s| !s.contains(' '))
        .filter(|s| {
            ["crates/", "tests/", "tools/", "bench/"]
                .iter()
                .any(|p| s.starts_with(p))
                || s.ends_with(".md")
        })
        .map(|s| s.split('<').next().unwrap_or(s))
        .collect();
    assert!(
        paths.len() >= 10,
        "ARCHITECTURE.md's \"How to add a command\" names only {paths:?}"
    );
    let missing: Vec<&&str> = paths.iter().filter(|p| !root.join(p).exists()).collect();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md's \"How to add a command\" names files that do not exist: {missing:?}"
    );
}

#[test]
fn the_readme_command_table_names_every_command() {
    // ARCHITECTURE.md's "How to add a command" has a new command added to README's table;
    // this holds it there. A command counts as named when one of its names is a word of a
    // code span (`db dw dd`, `sxe`/`sxd`, `!address [ADDR\|-summary]`).
    let readme = readme();
    let table = section(&readme, "### Commands");
    let words: std::collections::BTreeSet<&str> = code_spans(table)
        .flat_map(|span| span.split(|c: char| c.is_whitespace() || ",/[]()\\".contains(c)))
        .filter(|w| !w.is_empty())
        .collect();
    let missing: Vec<&str> = ntdbg_commands::table::all()
        .filter(|spec| !spec.names.iter().any(|n| words.contains(n)))
        .map(|spec| spec.names[0])
        .collect();
    assert!(
        missing.is_empty(),
        "README.md's Commands table does not name: {missing:?}"
    );
}

/// The ntdbg crates a crate's Cargo.toml lists under `[dependencies]` (and target-specific
/// dependency tables), sorted.
fn ntdbg_dependencies(manifest: &str) -> Vec<String> {
    let mut deps = Vec::new();
    let mut in_dependencies = false;
    for line in manifest.lines().map(str::trim) {
        if line.starts_with('[') {
            in_dependencies = line == "[dependencies]"
                || (line.starts_with("[target.") && line.ends_with(".dependencies]"));
        } else if in_dependencies && line.starts_with("ntdbg-") {
            let name = line.split(['.', ' ', '=']).next().unwrap_or(line);
            deps.push(name.to_string());
        }
    }
    deps.sort();
    deps.dedup();
    deps
}

#[test]
fn the_architecture_dependency_table_is_each_crates_cargo_toml() {
    // ARCHITECTURE.md's table of which crate depends on which is the map a newcomer reads
    // first; it must be what the manifests say.
    let architecture = repo_file("ARCHITECTURE.md");
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut checked = 0;
    for row in architecture.lines().filter(|l| l.starts_with("| ntdbg-")) {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        let (crates, listed) = (cells[1], cells[2]);
        let mut listed: Vec<String> = listed
            .split(',')
            .map(|d| d.split_whitespace().next().unwrap_or("").to_string())
            .filter(|d| d.starts_with("ntdbg-"))
            .collect();
        listed.sort();
        for name in crates.split(',').map(str::trim) {
            let manifest = repo_file(&format!("crates/{name}/Cargo.toml"));
            assert_eq!(
                ntdbg_dependencies(&manifest),
                listed,
                "ARCHITECTURE.md's row for {name} is not its Cargo.toml's [dependencies]"
            );
            checked += 1;
        }
    }
    let crates = std::fs::read_dir(root.join("crates"))
        .expect("crates/")
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.path().join("Cargo.toml").exists())
        })
        .count();
    assert_eq!(
        checked, crates,
        "ARCHITECTURE.md's table leaves out a crate"
    );
}
