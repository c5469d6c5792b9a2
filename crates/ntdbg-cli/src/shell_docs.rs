//! Shell completion scripts and man pages, generated from the clap definitions in [`args`]
//! so they always match the arguments.
//!
//! [`args`]: crate::args

use crate::args::Cli;
use clap::CommandFactory;
use std::io::Write;
use std::process::ExitCode;

/// `ntdbg completions SHELL`: the completion script on stdout.
pub fn completions(shell: clap_complete::Shell) -> anyhow::Result<ExitCode> {
    // Generated into memory first: clap_complete panics on a failed write (`| head`).
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "ntdbg", &mut script);
    print(&script)
}

/// `ntdbg manpage [SUBCOMMAND]`: the page in roff on stdout; an unknown subcommand is a
/// usage error (exit 2) naming the ones there are.
pub fn manpage(subcommand: Option<&str>) -> anyhow::Result<ExitCode> {
    let command = Cli::command();
    let source = format!("ntdbg {}", env!("CARGO_PKG_VERSION"));
    let page = match subcommand {
        None => command,
        Some(name) => {
            let Some(sub) = command.find_subcommand(name).filter(|c| !c.is_hide_set()) else {
                let names: Vec<_> = command
                    .get_subcommands()
                    .filter(|c| !c.is_hide_set())
                    .map(|c| c.get_name().to_string())
                    .collect();
                eprintln!(
                    "error: no subcommand '{name}'; there are: {}",
                    names.join(", ")
                );
                return Ok(ExitCode::from(2));
            };
            sub.clone()
                .display_name(format!("ntdbg-{}", sub.get_name()))
                .bin_name(format!("ntdbg {}", sub.get_name()))
        }
    };
    let mut roff = Vec::new();
    clap_mangen::Man::new(page)
        .source(source)
        .render(&mut roff)?;
    if subcommand.is_none() {
        roff.extend(definitions_section("EXIT STATUS", EXIT_STATUS).into_bytes());
        roff.extend(definitions_section("ENVIRONMENT", ENVIRONMENT).into_bytes());
    }
    print(&roff)
}

/// What ntdbg's exit status means, for the man page; the README says the same (a test
/// checks it).
pub const EXIT_STATUS: &[(&str, &str)] = &[
    ("0", "success"),
    (
        "1",
        "the dump could not be read or a command failed (its error is on stderr); memory that \
         is not in the dump is not a failure: the display commands show ?? for its bytes, or \
         Memory access error, as WinDbg does",
    ),
    ("2", "usage error: an unknown option, subcommand or value"),
];

/// The environment variables ntdbg reads, for the man page; the README names each (a test
/// checks it).
pub const ENVIRONMENT: &[(&str, &str)] = &[
    (
        "_NT_SYMBOL_PATH",
        "the symbol path searched after the dump's own folder when --symbols is not given",
    ),
    (
        "NTDBG_SYMBOL_CACHE",
        "where symbol-server downloads and symbol indexes are kept (default \
         ~/.cache/ntdbg/symbols, %LOCALAPPDATA%\\ntdbg\\symbols on Windows)",
    ),
    ("NTDBG_OFFLINE", "1: contact no symbol server, as --offline"),
    (
        "NTDBG_SYMBOL_TIMEOUT_MS",
        "how long one module's download may take (default 10000)",
    ),
    (
        "NTDBG_SYMBOL_INDEX",
        "off: write and read no symbol index in the cache",
    ),
    (
        "NTDBG_SYMBOL_INDEX_WRITER",
        "thread: a one-command run writes its symbol indexes before it exits, instead of \
         leaving them to a detached ntdbg",
    ),
    (
        "NTDBG_BREAKPAD_LAZY",
        "off or always: whether large Breakpad symbol files are read lazily",
    ),
    (
        "NTDBG_PDB_LAZY",
        "never or always: whether large PDBs are read lazily",
    ),
    (
        "NTDBG_LOG",
        "log on stderr at this level (warn, info, debug; `ntdbg mcp` always logs there)",
    ),
    (
        "NTDBG_HISTORY",
        "the REPL's history file (default ntdbg/history in the user's data folder)",
    ),
    ("NO_COLOR", "set: the REPL prints no colour"),
];

/// A man page section of term / definition pairs, in roff (no preamble: it follows a page).
fn definitions_section(title: &str, items: &[(&str, &str)]) -> String {
    use clap_mangen::roff::{bold, roman, Roff};
    let mut roff = Roff::new();
    roff.control("SH", [title]);
    for (term, definition) in items {
        roff.control("TP", []);
        roff.text([bold(*term)]);
        roff.text([roman(*definition)]);
    }
    roff.to_roff()
}

fn print(bytes: &[u8]) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
