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
    print(&roff)
}

fn print(bytes: &[u8]) -> anyhow::Result<ExitCode> {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)?;
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}
