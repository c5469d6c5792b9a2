//! Command-line arguments.

use clap::{Parser, Subcommand, ValueEnum};
use std::net::SocketAddr;
use std::path::PathBuf;

/// `ntdbg mcp --help` examples, with the client configuration to copy.
const MCP_EXAMPLES: &str = "Examples:
  ntdbg mcp --allow-dir ./dumps
  ntdbg mcp --http 127.0.0.1:8080 --allow-dir ./dumps
  NTDBG_TOKEN=... ntdbg mcp --http 0.0.0.0:8080 --unsafe-http --token-env NTDBG_TOKEN
  ntdbg mcp --profile mcp-windbg --allow-dir ./dumps
  ntdbg mcp --profile windbg-mcp --dump ./dumps/crash.dmp

Client configuration (stdio): {\"command\": \"ntdbg\", \"args\": [\"mcp\"]}
Coming from mcp-windbg: {\"command\": \"ntdbg\", \"args\": [\"mcp\", \"--profile\", \"mcp-windbg\"]}
Coming from windbg-mcp: {\"command\": \"ntdbg\", \"args\": [\"mcp\", \"--profile\", \"windbg-mcp\", \"--dump\", \"crash.dmp\"]}";

/// `ntdbg repl --help`: what the terminal prompt offers.
const REPL_KEYS: &str =
    "On a terminal: line editing, Up/Down history (kept in NTDBG_HISTORY, default
ntdbg/history under the user's data directory), Ctrl-R reverse search, Tab completion of
commands, module!symbol, registers and ~N threads; Ctrl-C clears the line or breaks into a
running live target; Ctrl-D or q quits; .logopen FILE / .logappend FILE / .logclose copy the
session to a file; colour unless NO_COLOR is set. Piped input is read line by line.

Examples:
  ntdbg repl crash.dmp
  ntdbg repl --attach gdb:127.0.0.1:1234";

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
        /// Signature rules: a file of prefix and irrelevant functions and modules that
        /// changes the built-in lists (format: docs/signatures.md).
        #[arg(long, value_name = "FILE")]
        signature_rules: Option<PathBuf>,
    },
    /// Run WinDbg commands on a dump (or a live target with --attach) and print their output.
    #[command(
        after_help = "Examples:\n  ntdbg run crash.dmp -c \".lastevent; .ecxr; r; kn; lm\"\n  ntdbg run crash.dmp -c \"~*k\" --json"
    )]
    Run {
        #[command(flatten)]
        target: TargetArgs,
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
    /// Serve the MCP tools to an AI agent: stdio by default, logs on stderr.
    #[command(after_help = MCP_EXAMPLES)]
    Mcp {
        /// Serve streamable HTTP at http://ADDR/mcp instead of stdio. Loopback addresses only,
        /// unless --unsafe-http.
        #[arg(long, value_name = "ADDR")]
        http: Option<SocketAddr>,
        /// A directory the server may read dumps from and write output files to (repeatable).
        /// Default: the current directory.
        #[arg(long = "allow-dir", value_name = "DIR")]
        allow_dirs: Vec<PathBuf>,
        /// Allow a non-loopback --http address. Requires --token-env.
        #[arg(long, requires_all = ["http", "token_env"])]
        unsafe_http: bool,
        /// Environment variable holding the bearer token every HTTP request must carry.
        #[arg(long, value_name = "VAR", requires = "http")]
        token_env: Option<String>,
        /// Do not contact symbol servers (also NTDBG_OFFLINE=1); cached files are still used.
        #[arg(long)]
        offline: bool,
        /// Which tool names to serve: ntdbg's own, or those of another WinDbg MCP server so
        /// its prompts and scripts keep working unchanged.
        #[arg(long, value_enum, default_value_t = ProfileArg::Ntdbg)]
        profile: ProfileArg,
        /// With --profile windbg-mcp: the dump file its tools work on (inside an --allow-dir).
        #[arg(long, value_name = "PATH", conflicts_with = "attach")]
        dump: Option<PathBuf>,
        /// With --profile windbg-mcp: the live target its tools work on (gdb:HOST:PORT).
        #[arg(long, value_name = "TARGET")]
        attach: Option<String>,
        /// Live sessions refuse run control, breakpoints and writes.
        #[arg(long)]
        read_only: bool,
        /// Close sessions no tool has used for this many seconds, freeing their memory
        /// (0: never).
        #[arg(long, value_name = "SECS", default_value_t = ntdbg_mcp::DEFAULT_IDLE_TIMEOUT.as_secs())]
        idle_timeout: u64,
        /// An HTTP symbol server clients may name in symbol paths (repeatable), besides
        /// Microsoft's and those of _NT_SYMBOL_PATH.
        #[arg(long = "symbol-server", value_name = "URL")]
        symbol_servers: Vec<String>,
        /// A crash database (SQLite file or postgres:// URL, as `ntdbg crashes --db`) for the
        /// read-only query_crashes tool.
        #[arg(long, value_name = "URL|FILE")]
        db: Option<String>,
        /// Parsed symbols kept for sessions on dumps of the same build to share, in MiB
        /// (least recently used dropped first; 0: share nothing).
        #[arg(long, value_name = "MIB", default_value_t = ntdbg_symbols::DEFAULT_SYMBOL_MEMORY >> 20)]
        symbol_memory: u64,
    },
    /// Interactive WinDbg-style prompt on a dump or a live target (`q` quits, `help` lists
    /// commands).
    #[command(after_help = REPL_KEYS)]
    Repl {
        #[command(flatten)]
        target: TargetArgs,
        /// Symbol path (see `analyze --help`).
        #[arg(long, short = 's', value_name = "PATH")]
        symbols: Option<String>,
        /// Do not contact symbol servers (also NTDBG_OFFLINE=1); cached files are still used.
        #[arg(long)]
        offline: bool,
    },
    /// Header-only summaries of the dumps in a folder (kind, arch, OS build, time, process,
    /// exception or bugcheck); fast, reads only headers.
    #[command(
        after_help = "Examples:\n  ntdbg list ./crashes\n  ntdbg list ./crashes --recursive --json"
    )]
    List {
        /// The folder to list.
        dir: PathBuf,
        /// Descend into sub-folders.
        #[arg(long, short = 'r')]
        recursive: bool,
        /// Print JSON (one array of summaries) instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Analyse every dump in a folder in parallel and group them by crash signature.
    #[command(
        after_help = "Examples:\n  ntdbg triage ./crashes\n  ntdbg triage ./crashes --recursive --json --jobs 4\n  ntdbg triage ./crashes --html report.html"
    )]
    Triage {
        /// The folder to triage.
        dir: PathBuf,
        /// Print the buckets as JSON instead of a summary.
        #[arg(long)]
        json: bool,
        /// Also write a self-contained HTML report to this file.
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
        /// Worker threads (default: one per core).
        #[arg(long, short = 'j', value_name = "N")]
        jobs: Option<usize>,
        /// Only the dumps directly in DIR (by default sub-folders are triaged too).
        #[arg(long)]
        top_level: bool,
        /// Symbol path for every dump (see `analyze --help`).
        #[arg(long, short = 's', value_name = "PATH")]
        symbols: Option<String>,
        /// Do not contact symbol servers (also NTDBG_OFFLINE=1); cached files are still used.
        #[arg(long)]
        offline: bool,
        /// Signature rules: a file of prefix and irrelevant functions and modules that
        /// changes the built-in lists (format: docs/signatures.md).
        #[arg(long, value_name = "FILE")]
        signature_rules: Option<PathBuf>,
        /// Parsed symbols kept for the dumps of the same build to share, in MiB
        /// (least recently used dropped first; 0: share nothing).
        #[arg(long, value_name = "MIB", default_value_t = ntdbg_symbols::DEFAULT_SYMBOL_MEMORY >> 20)]
        symbol_memory: u64,
    },
    /// minidump-stackwalk's report (JSON schema or text layout) from ntdbg's engine: a
    /// drop-in for pipelines that run minidump-stackwalk.
    #[command(after_help = crate::stackwalk::STACKWALK_HELP)]
    Stackwalk(crate::stackwalk::StackwalkArgs),
    /// Print a shell completion script for ntdbg to stdout.
    #[command(
        after_help = "Examples:\n  ntdbg completions bash > ~/.local/share/bash-completion/completions/ntdbg\n  ntdbg completions zsh > ~/.zfunc/_ntdbg\n  ntdbg completions fish > ~/.config/fish/completions/ntdbg.fish\n  ntdbg completions powershell >> $PROFILE"
    )]
    Completions {
        /// The shell: bash, zsh, fish, powershell or elvish.
        shell: clap_complete::Shell,
    },
    // The crash store: ingest, crashes, enqueue, worker.
    #[command(flatten)]
    Store(crate::store_cli::StoreCommand),
    /// Symbolize addresses (stdin, one hex virtual address a line) of a Windows image with
    /// its PDB beside it, in llvm-symbolizer's `-f -i` shape (for bench/bigpdb/run.sh).
    #[command(hide = true)]
    SymbolizeImage {
        /// The image (.exe/.dll, PE32+).
        exe: PathBuf,
    },
    /// Write the warm symbol index of a PDB that an earlier run loaded lazily (started by
    /// ntdbg itself, detached, as it exits).
    #[command(hide = true)]
    IndexPdb {
        /// The PDB file.
        pdb: PathBuf,
        /// Its debug file name (as the image names it).
        name: String,
        /// Its debug id (GUID and age).
        key: String,
    },
    /// Print ntdbg's man page (roff) to stdout; with a subcommand, that subcommand's page.
    #[command(
        after_help = "Examples:\n  ntdbg manpage > ntdbg.1 && man ./ntdbg.1\n  ntdbg manpage repl > ntdbg-repl.1"
    )]
    Manpage {
        /// A subcommand (analyze, run, repl, …) whose page to print instead.
        subcommand: Option<String>,
    },
}

/// The tool profiles of `ntdbg mcp --profile`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ProfileArg {
    /// ntdbg's own tools: open_dump, analyze_crash, run_command, read_output, …
    Ntdbg,
    /// mcp-windbg's tools: open_cdb_dump, run_cdb_command, close_cdb_session, open_kd_dump, …
    McpWindbg,
    /// windbg-mcp's tools: wm_session, wm_run_cmd, wm_analyze_crash, … on the --dump (or
    /// --attach) target.
    WindbgMcp,
}

impl From<ProfileArg> for ntdbg_mcp::Profile {
    fn from(p: ProfileArg) -> ntdbg_mcp::Profile {
        match p {
            ProfileArg::Ntdbg => ntdbg_mcp::Profile::Ntdbg,
            ProfileArg::McpWindbg => ntdbg_mcp::Profile::McpWindbg,
            ProfileArg::WindbgMcp => ntdbg_mcp::Profile::WindbgMcp,
        }
    }
}

/// What `run` and `repl` debug: a dump file, or a live target with `--attach`.
#[derive(Debug, clap::Args)]
pub struct TargetArgs {
    /// The dump file (.dmp).
    #[arg(required_unless_present = "attach")]
    pub dump: Option<PathBuf>,
    /// Attach to a live target instead: gdb:HOST:PORT (gdbserver, winedbg --gdb, QEMU), or
    /// on Windows pid:N (a running process) or exe:PATH ARGS (started under the debugger;
    /// symbols default to the program's folder).
    #[arg(long, value_name = "TARGET", conflicts_with = "dump")]
    pub attach: Option<String>,
    /// With --attach: refuse run control, breakpoints and writes.
    #[arg(long, requires = "attach")]
    pub read_only: bool,
}
