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
    ("--profile chensiling", "serves HTTP until stopped"),
    ("postgres://", "needs a PostgreSQL server"),
    ("--attach", "needs a live target"),
    ("--connect", "needs a live target"),
    ("https://", "needs a symbol server on the network"),
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

/// The subcommands `ntdbg --help` lists (not `help` itself).
fn subcommands(dir: &Path) -> Vec<String> {
    let out = ntdbg(dir, &["--help".to_string()], &[]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

/// The lines under "Examples:" in a help text, up to the first blank line.
fn examples(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| l.trim() != "Examples:")
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .map(|l| l.trim().to_string())
        .collect()
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
    dir
}

#[test]
fn every_help_example_runs() {
    let dir = example_folder();
    let mut ran = 0;
    let mut parsed_only = Vec::new();
    let mut failures = Vec::new();
    for sub in subcommands(&dir) {
        let help = ntdbg(&dir, &[sub.clone(), "--help".to_string()], &[]);
        let help = String::from_utf8_lossy(&help.stdout).into_owned();
        let lines = examples(&help);
        assert!(!lines.is_empty(), "`ntdbg {sub} --help` shows no example");
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
