//! Command-line arguments.

use clap::{Parser, Subcommand};
use std::path::PathBuf;

/// Windows crash-dump analysis, natively on any OS, in the WinDbg command language.
#[derive(Debug, Parser)]
#[command(name = "ntdbg", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// One-shot crash triage: exception, faulting module and frame, stack, signature.
    #[command(
        after_help = "Examples:\n  ntdbg analyze crash.dmp\n  ntdbg analyze crash.dmp --json --symbols 'C:\\symbols;D:\\build'"
    )]
    Analyze {
        /// The dump file (.dmp).
        dump: PathBuf,
        /// Print the report as JSON (stable keys) instead of text.
        #[arg(long)]
        json: bool,
        /// Symbol path: directories (plain or symbol-store layout) and symbol servers
        /// (srv*CACHE*URL) separated by ';'. Default: the dump's folder, then _NT_SYMBOL_PATH.
        #[arg(long, short = 's', value_name = "PATH")]
        symbols: Option<String>,
        /// Do not contact symbol servers (also NTDBG_OFFLINE=1); cached files are still used.
        #[arg(long)]
        offline: bool,
    },
    /// Run WinDbg commands on a dump and print their output.
    #[command(
        after_help = "Examples:\n  ntdbg run crash.dmp -c \".lastevent; .ecxr; r; kn; lm\"\n  ntdbg run crash.dmp -c \"~*k\" --json"
    )]
    Run {
        /// The dump file (.dmp).
        dump: PathBuf,
        /// Commands, separated by ';' or newlines (e.g. ".ecxr; kb").
        #[arg(long, short = 'c', value_name = "CMDS")]
        commands: String,
        /// Symbol path (see `analyze --help`).
        #[arg(long, short = 's', value_name = "PATH")]
        symbols: Option<String>,
        /// Do not contact symbol servers (also NTDBG_OFFLINE=1); cached files are still used.
        #[arg(long)]
        offline: bool,
        /// Print one JSON object per command, with typed results.
        #[arg(long)]
        json: bool,
    },
    /// Interactive WinDbg-style prompt on a dump (`q` quits, `help` lists commands).
    Repl {
        /// The dump file (.dmp).
        dump: PathBuf,
        /// Symbol path (see `analyze --help`).
        #[arg(long, short = 's', value_name = "PATH")]
        symbols: Option<String>,
        /// Do not contact symbol servers (also NTDBG_OFFLINE=1); cached files are still used.
        #[arg(long)]
        offline: bool,
    },
}
