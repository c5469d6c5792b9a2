//! Every example that `ntdbg SUBCOMMAND --help` shows is run, as a newcomer would paste it, in a
//! folder that holds what the examples name (`crash.dmp`, `./crashes`, `./dumps`, …, made from
//! the repository's samples). An example that needs what a test cannot have (a network server,
//! PostgreSQL, a live target, a server that runs until stopped) is run with `--help` added, so
//! that its arguments are still parsed: an option the command rejects fails either way.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// Longer than any example takes on a loaded machine: a hang guard.
const LIMIT: Duration = Duration::from_secs(300);

/// What an example mentions that a test cannot provide: it is parsed, not run.
const NOT_RUN: &[(&str, &str)] = &[
    ("--http", "serves HTTP until stopped"),
    ("--listen", "serves HTTP until stopped"),
    ("--profile chensiling", "serves HTTP until stopped"),
    ("postgres://", "needs a PostgreSQL server"),
    ("--attach", "needs a live target"),
    ("--connect", "needs a live target"),
    ("https://", "needs a symbol server on the network"),
    ("s3://", "needs an S3 object store"),
];

fn ntdbg(dir: &Path, args: &[String], env: &[(&str, &str)]) -> Output {
    let mut command = Command::new(env!("CARGO_BIN_EXE_ntdbg"));
    command
        .args(args)
        .current_dir(dir)
        .env("HOME", dir)
        .env("XDG_DATA_HOME", dir.join("data"))
        .env("XDG_CACHE_HOME", dir.join("cache"))
        .env("NTDBG_SYMBOL_CACHE", dir.join("cache"))
        .env("NTDBG_HISTORY", dir.join("history"))
        .env("NTDBG_OFFLINE", "1")
        .env_remove("_NT_SYMBOL_PATH")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (name, value) in env {
        command.env(name, value);
    }
    let child = command.spawn().expect("ntdbg starts");
    let pid = child.id();
    let (done, finished) = mpsc::channel();
    std::thread::spawn(move || done.send(child.wait_with_output()));
    match finished.recv_timeout(LIMIT) {
        Ok(out) => out.expect("ntdbg's output"),
        Err(_) => {
            let _ = Command::new("kill").arg(pid.to_string()).status();
            panic!("ntdbg {args:?} ran over {LIMIT:?}");
        }
    }
}

/// The subcommands a help text lists (not `help` itself).
pub(crate) fn listed_subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

/// The help text of `ntdbg COMMAND... --help`.
fn help_of(dir: &Path, command: &[String]) -> String {
    let mut args = command.to_vec();
    args.push("--help".to_string());
    String::from_utf8_lossy(&ntdbg(dir, &args, &[]).stdout).into_owned()
}

/// Every command that does something, with its help, in the order `ntdbg --help` lists them
/// (`ingest` makes the database `crashes` asks): for a group (`ntdbg symbols`), the
/// subcommands it lists in turn.
fn commands(dir: &Path) -> Vec<(Vec<String>, String)> {
    let mut found = Vec::new();
    let mut pending: std::collections::VecDeque<Vec<String>> =
        listed_subcommands(&help_of(dir, &[]))
            .into_iter()
            .map(|s| vec![s])
            .collect();
    while let Some(command) = pending.pop_front() {
        let help = help_of(dir, &command);
        let children = listed_subcommands(&help);
        if children.is_empty() {
            found.push((command, help));
        } else {
            for child in children.into_iter().rev() {
                let mut path = command.clone();
                path.push(child);
                pending.push_front(path);
            }
        }
    }
    found
}

/// The examples under "Examples:" in a help text, up to the first blank line; a line ending in
/// `\` goes on on the next, as in a shell.
fn examples(help: &str) -> Vec<String> {
    let mut examples: Vec<String> = Vec::new();
    let mut continued = false;
    for line in help
        .lines()
        .skip_while(|l| l.trim() != "Examples:")
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
    {
        let line = line.trim();
        let (text, goes_on) = match line.strip_suffix('\\') {
            Some(head) => (head.trim_end(), true),
            None => (line, false),
        };
        match examples.last_mut() {
            Some(last) if continued => {
                last.push(' ');
                last.push_str(text);
            }
            _ => examples.push(text.to_string()),
        }
        continued = goes_on;
    }
    examples
}

/// An example line as arguments for ntdbg: leading `NAME=VALUE` words become the environment,
/// the shell's quotes are removed, and the line ends at a redirection, a pipe, `&&` or a
/// parenthesised remark.
fn split_example(line: &str) -> (Vec<(String, String)>, Vec<String>) {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote = None;
    let mut in_word = false;
    for c in line.chars() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), c) => word.push(c),
            (None, '\'' | '"') => {
                quote = Some(c);
                in_word = true;
            }
            (None, c) if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut word));
                    in_word = false;
                }
            }
            (None, c) => {
                word.push(c);
                in_word = true;
            }
        }
    }
    if in_word {
        words.push(word);
    }
    let end = words
        .iter()
        .position(|w| w.starts_with('>') || w == "|" || w == "&&" || w.starts_with('('))
        .unwrap_or(words.len());
    words.truncate(end);
    let mut env = Vec::new();
    let mut rest = words.into_iter().peekable();
    while let Some(assignment) = rest.next_if(|w| w.contains('=') && !w.starts_with('-')) {
        let (name, value) = assignment.split_once('=').unwrap_or_default();
        env.push((name.to_string(), value.to_string()));
    }
    assert_eq!(
        rest.next().as_deref(),
        Some("ntdbg"),
        "an example that is not an ntdbg command: {line}"
    );
    (env, rest.collect())
}

/// A folder holding what the examples name, made from the repository's samples.
fn example_folder() -> PathBuf {
    let dir = ntdbg_testutil::fresh_dir("help-examples");
    let copy = |sample: &str, to: &str| {
        let to = dir.join(to);
        std::fs::create_dir_all(to.parent().expect("a parent")).expect("a folder");
        std::fs::copy(ntdbg_testutil::sample(sample), to).expect("a copy of a sample");
    };
    copy("crashy-x64-null.dmp", "crash.dmp");
    copy("crashy-x64-null.dmp", "dumps/crash.dmp");
    copy("crashy-x64-null.dmp", "crashes/null.dmp");
    copy("crashy-x64-divzero.dmp", "crashes/divzero.dmp");
    copy("crashy-x64-thread.dmp", "crashes/sub/thread.dmp");
    // The image and its PDB beside each dump, as the samples keep them.
    for folder in ["", "dumps/", "crashes/", "crashes/sub/", "symbols/"] {
        copy("crashy.exe", &format!("{folder}crashy.exe"));
        copy("crashy.pdb", &format!("{folder}crashy.pdb"));
    }
    // A build's output, as `symbols upload`'s example names it.
    copy("crashy.exe", "build/app.exe");
    copy("crashy.pdb", "build/app.pdb");
    // `mcp --redact-rules`' patterns.
    std::fs::write(dir.join("redact.txt"), "# code names\n(?i)project-falcon\n")
        .expect("a rules file");
    dir
}

#[test]
fn every_help_example_runs() {
    let dir = example_folder();
    let mut ran = 0;
    let mut parsed_only = Vec::new();
    let mut failures = Vec::new();
    for (command, help) in commands(&dir) {
        let lines = examples(&help);
        assert!(
            !lines.is_empty(),
            "`ntdbg {} --help` shows no example",
            command.join(" ")
        );
        for line in lines {
            let (env, mut args) = split_example(&line);
            let env: Vec<(&str, &str)> =
                env.iter().map(|(n, v)| (n.as_str(), v.as_str())).collect();
            let not_run = NOT_RUN.iter().find(|(what, _)| line.contains(what));
            if let Some((_, why)) = not_run {
                args.push("--help".to_string());
                parsed_only.push(format!("{line}  ({why})"));
            } else {
                ran += 1;
            }
            let out = ntdbg(&dir, &args, &env);
            if !out.status.success() {
                failures.push(format!(
                    "{line}\n  exit {:?}\n  stderr: {}",
                    out.status.code(),
                    String::from_utf8_lossy(&out.stderr).trim()
                ));
            }
        }
    }
    eprintln!(
        "{ran} examples run; parsed only:\n  {}",
        parsed_only.join("\n  ")
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(ran >= 20, "only {ran} examples ran");
}

#[test]
fn example_lines_split_as_a_shell_would() {
    let (env, args) = split_example(
        "NTDBG_TOKEN=... ntdbg analyze crash.dmp --symbols 'C:\\symbols;D:\\build' > out.txt",
    );
    assert_eq!(env, [("NTDBG_TOKEN".to_string(), "...".to_string())]);
    assert_eq!(
        args,
        ["analyze", "crash.dmp", "--symbols", "C:\\symbols;D:\\build"]
    );
    let (_, args) = split_example("ntdbg run crash.dmp -c \"~*k\" --json");
    assert_eq!(args, ["run", "crash.dmp", "-c", "~*k", "--json"]);
    let (_, args) = split_example("ntdbg mcp --dump ./dumps/crash.dmp   (HTTP on 127.0.0.1:8080)");
    assert_eq!(args, ["mcp", "--dump", "./dumps/crash.dmp"]);
}
