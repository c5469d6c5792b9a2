//! `ntdbg completions SHELL` and `ntdbg manpage [SUBCOMMAND]`: generated from the argument
//! definitions, printed to stdout.

use std::process::{Command, Output};

fn ntdbg(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ntdbg"))
        .args(args)
        .output()
        .expect("ntdbg runs")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn completion_scripts_for_each_shell_name_the_subcommands() {
    for (shell, marker) in [
        ("bash", "complete -F _ntdbg"),
        ("zsh", "#compdef ntdbg"),
        ("fish", "complete -c ntdbg"),
        ("powershell", "Register-ArgumentCompleter"),
    ] {
        let o = ntdbg(&["completions", shell]);
        assert!(
            o.status.success(),
            "{shell}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        let script = stdout(&o);
        assert!(script.contains(marker), "{shell} script lacks {marker}");
        for sub in ["analyze", "repl", "triage", "manpage"] {
            assert!(script.contains(sub), "{shell} script lacks {sub}");
        }
    }
}

#[test]
fn unknown_shell_is_a_usage_error() {
    let o = ntdbg(&["completions", "cmd.exe"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn man_pages_for_ntdbg_and_a_subcommand() {
    let o = ntdbg(&["manpage"]);
    assert!(o.status.success());
    let page = stdout(&o);
    assert!(page.contains(".TH ntdbg 1"), "{page}");
    assert!(page.contains("repl"), "{page}");
    let o = ntdbg(&["manpage", "repl"]);
    assert!(o.status.success());
    let page = stdout(&o);
    assert!(page.contains(".TH ntdbg-repl 1"), "{page}");
    assert!(page.contains("\\-\\-offline"), "{page}");
}

#[test]
fn man_page_of_an_unknown_subcommand_names_the_real_ones() {
    let o = ntdbg(&["manpage", "nope"]);
    assert_eq!(o.status.code(), Some(2));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("no subcommand 'nope'") && err.contains("analyze"),
        "{err}"
    );
    // Hidden helpers (benchmark plumbing) are neither named nor given a page.
    assert!(!err.contains("symbolize-image"), "{err}");
    let hidden = ntdbg(&["manpage", "symbolize-image"]);
    assert_eq!(hidden.status.code(), Some(2));
}

#[test]
fn help_lists_completions_and_manpage() {
    let help = stdout(&ntdbg(&["--help"]));
    assert!(
        help.contains("completions") && help.contains("manpage"),
        "{help}"
    );
    // The debugging commands and the crash store's come first, the shell helpers last.
    let at = |name: &str| help.find(&format!("\n  {name} ")).expect(name);
    assert!(
        at("worker") < at("completions") && at("completions") < at("manpage"),
        "{help}"
    );
}
