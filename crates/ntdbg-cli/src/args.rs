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
  ntdbg mcp --tools dumps --allow-dir ./dumps   (no live-target tools listed)
  ntdbg mcp --redact --allow-dir ./dumps   (user and machine names, e-mail, IPs, secrets hidden)
  ntdbg mcp --redact-rules ./redact.txt --transcript ./calls.jsonl --allow-dir ./dumps
  ntdbg mcp --profile windbg-mcp --dump ./dumps/crash.dmp
  ntdbg mcp --profile ntoseye --backend gdb --connect 127.0.0.1:1234
  ntdbg mcp --profile chensiling --dump ./dumps/crash.dmp   (HTTP on 127.0.0.1:8080, as Windbg-MCP)

Client configuration (stdio): {\"command\": \"ntdbg\", \"args\": [\"mcp\"]}
Coming from mcp-windbg: {\"command\": \"ntdbg\", \"args\": [\"mcp\", \"--profile\", \"mcp-windbg\"]}
Coming from windbg-mcp: {\"command\": \"ntdbg\", \"args\": [\"mcp\", \"--profile\", \"windbg-mcp\", \"--dump\", \"crash.dmp\"]}
Coming from ntoseye: {\"command\": \"ntdbg\", \"args\": [\"mcp\", \"--profile\", \"ntoseye\"]}
Coming from chensiling's Windbg-MCP: ntdbg mcp --profile chensiling --dump crash.dmp (HTTP on 127.0.0.1:8080: the client keeps {\"url\": \"http://127.0.0.1:8080/mcp\"})";

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

/// ntdbg, a Windows debugger for AI agents and people: crash dumps analysed natively on any
/// OS, in the WinDbg command language, on the command line, at a prompt, or as MCP tools;
/// live targets over the GDB remote protocol (and the Win32 debugging API on Windows).
#[derive(Debug, Parser)]
#[command(name = "ntdbg", version, long_about = None)]
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
        after_help = "Examples:\n  ntdbg run crash.dmp -c \".lastevent; .ecxr; r; kn; lm\"\n  ntdbg run crash.dmp -c \"~*k\" --json\n  ntdbg run crash.dmp --keep-going -c \"dps @rsp L40; kn; lm\"\n  ntdbg run crash.dmp --timeout 30 -c \"s -a 0 L?0x7fffffffffff password\""
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
        /// Run every command even after one fails (a minidump often lacks the memory a
        /// command reads); the exit status is still 1 when any failed.
        #[arg(long)]
        keep_going: bool,
        /// Stop the command still running after this many seconds (a long `s` search of a
        /// large dump, a `g` on a live target) and report it timed out; the later commands
        /// are not run, the exit status is 1.
        #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
        timeout: Option<u64>,
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
        /// Which of the profile's tools to list: those for dump files, for live targets, or
        /// all. Default: all where live targets are allowed, else the dump tools.
        #[arg(long, value_enum, value_name = "SET")]
        tools: Option<ToolSetArg>,
        /// With --profile windbg-mcp, ntoseye or chensiling: the dump file its tools work on
        /// (inside an --allow-dir).
        #[arg(long, value_name = "PATH", conflicts_with = "attach")]
        dump: Option<PathBuf>,
        /// With --profile windbg-mcp: the live target its tools work on (gdb:HOST:PORT).
        #[arg(long, value_name = "TARGET")]
        attach: Option<String>,
        // ---- ntoseye's start-up flags (--profile ntoseye); see `startup_target` below ----
        /// With --profile ntoseye: the backend to attach at startup, as ntoseye's --backend:
        /// gdb (a GDB stub at --connect) or dump (the file at --dump or --connect); kd, kdnet
        /// and memory are not available in ntdbg.
        #[arg(long, value_name = "NAME", conflicts_with = "attach")]
        backend: Option<String>,
        /// Where to connect at startup, per profile. With --profile ntoseye (and --backend):
        /// HOST:PORT of the GDB stub (--backend gdb, default 127.0.0.1:1234) or the dump's path
        /// (--backend dump). With --profile chensiling: tcp:HOST:PORT of a WinDbg `.server`,
        /// which ntdbg cannot drive (no dbgeng): its tools answer not_available.
        #[arg(long, value_name = "WHERE")]
        connect: Option<String>,
        // ---- end of ntoseye's start-up flags (--backend, --connect) ----
        /// Live sessions refuse run control, breakpoints and writes.
        #[arg(long)]
        read_only: bool,
        /// Which live targets clients may attach (repeatable): local (GDB stubs on loopback
        /// addresses), gdb:HOST:PORT (HOST or PORT may be *), pid and exe (Windows processes),
        /// or none. Default: local, pid and exe, except with --unsafe-http, where none. A
        /// refused target and one that does not answer get the same error.
        #[arg(long = "allow-attach", value_name = "PATTERN")]
        allow_attach: Vec<String>,
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
        /// Hide personal data before results reach the client: user and machine names (from
        /// profile paths, environment strings and the names the dump itself holds), e-mail
        /// and IP addresses, passwords, tokens and keys. Addresses, symbols and hex numbers
        /// never change; each result ends with a count of what was replaced.
        #[arg(long)]
        redact: bool,
        /// More patterns to hide (implies --redact): one regular expression per line, `#`
        /// comments; a group named `v` hides only that group.
        #[arg(long, value_name = "FILE")]
        redact_rules: Option<PathBuf>,
        /// Append one JSON line per tool call (its arguments and the result as sent, redacted
        /// under --redact) to FILE, created readable by its owner only.
        #[arg(long, value_name = "FILE")]
        transcript: Option<PathBuf>,
        #[command(flatten)]
        http_limits: HttpLimitArgs,
        #[command(flatten)]
        chensiling: ChensilingArgs,
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
        /// Print JSON instead of a table: the folder and its dumps' summaries
        /// (`{"directory", "dumps": [...], "truncated"}`).
        #[arg(long)]
        json: bool,
    },
    /// Analyse every dump in a folder in parallel and group them by crash signature.
    #[command(
        after_help = "Examples:\n  ntdbg triage ./crashes\n  ntdbg triage ./crashes --top-level --json --jobs 4\n  ntdbg triage ./crashes --html report.html"
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
    // The crash store: ingest, crashes, enqueue, worker.
    #[command(flatten)]
    Store(crate::store_cli::StoreCommand),
    // The crash server: collect, serve, symbols upload.
    #[command(flatten)]
    Server(crate::server_cli::ServerCommand),
    /// Print a shell completion script for ntdbg to stdout.
    #[command(
        after_help = "Examples:\n  ntdbg completions bash > ~/.local/share/bash-completion/completions/ntdbg\n  ntdbg completions zsh > ~/.zfunc/_ntdbg\n  ntdbg completions fish > ~/.config/fish/completions/ntdbg.fish\n  ntdbg completions powershell >> $PROFILE"
    )]
    Completions {
        /// The shell: bash, zsh, fish, powershell or elvish.
        shell: clap_complete::Shell,
    },
    /// Symbolize addresses (stdin, one hex virtual address a line) of a Windows image with
    /// its PDB beside it, in llvm-symbolizer's `-f -i` shape (for bench/bigpdb/run.sh).
    #[command(hide = true)]
    SymbolizeImage {
        /// The image (.exe/.dll, PE32+).
        exe: PathBuf,
    },
    /// Write the warm symbol indexes of symbol files read lazily, parsing each whole (started
    /// detached by a short-lived ntdbg that read them lazily, so that it need not wait).
    #[command(hide = true, name = ntdbg_symbols::WRITER_COMMAND)]
    SymbolIndex {
        /// KIND SOURCE NAME KEY, once per file: `breakpad` or `pdb`, the symbol file, the PDB
        /// name it answers for and the debug id it must carry.
        #[arg(required = true, value_name = "KIND SOURCE NAME KEY")]
        files: Vec<String>,
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

// ---- chensiling's Windbg-MCP start-up flags (`ntdbg mcp --profile chensiling`) ----------

/// The HTTP transport's limits (`ntdbg mcp --http`), as [`ntdbg_mcp::HttpLimits`].
#[derive(Debug, clap::Args)]
pub struct HttpLimitArgs {
    /// With --http: most connections open at once; past it the one idle longest (a head not
    /// yet sent, a keep-alive between requests) is closed to make room.
    #[arg(long, value_name = "N", default_value_t = ntdbg_mcp::HttpLimits::default().max_connections as u64,
          value_parser = clap::value_parser!(u64).range(1..=65_536))]
    pub http_max_connections: u64,
    /// With --http: seconds a connection gets to send a request's head (also the longest a
    /// keep-alive connection stays idle).
    #[arg(long, value_name = "SECS", default_value_t = ntdbg_mcp::HttpLimits::default().header_timeout.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..))]
    pub http_header_timeout: u64,
    /// With --http: seconds a request gets to send its whole body.
    #[arg(long, value_name = "SECS", default_value_t = ntdbg_mcp::HttpLimits::default().body_timeout.as_secs(),
          value_parser = clap::value_parser!(u64).range(1..))]
    pub http_body_timeout: u64,
}

impl HttpLimitArgs {
    /// The limits these flags set.
    pub fn limits(&self) -> ntdbg_mcp::HttpLimits {
        ntdbg_mcp::HttpLimits {
            max_connections: usize::try_from(self.http_max_connections).unwrap_or(usize::MAX),
            header_timeout: std::time::Duration::from_secs(self.http_header_timeout),
            body_timeout: std::time::Duration::from_secs(self.http_body_timeout),
        }
    }
}

/// The start-up flags of chensiling's Windbg-MCP server, so its users keep their launch line:
/// `--pid`, `--exe` and `--args`, `--http-port`, `--standalone` (`--dump` and `--connect` are
/// the shared flags above, with chensiling's meaning in [`mcp_startup`]).
#[derive(Debug, clap::Args)]
pub struct ChensilingArgs {
    /// With --profile chensiling: attach to process PID (Windows, through ntdbg's native
    /// Windows target; elsewhere its tools answer not_available).
    #[arg(long, value_name = "PID", conflicts_with_all = ["dump", "attach", "exe", "connect", "backend"])]
    pub pid: Option<u32>,
    /// With --profile chensiling: start PATH under the debugger (Windows, as --pid).
    #[arg(long, value_name = "PATH", conflicts_with_all = ["dump", "attach", "connect", "backend"])]
    pub exe: Option<String>,
    /// With --exe: the program's arguments.
    #[arg(
        long = "args",
        value_name = "ARGS",
        requires = "exe",
        allow_hyphen_values = true
    )]
    pub exe_args: Option<String>,
    /// Serve streamable HTTP at http://127.0.0.1:PORT/mcp. With --profile chensiling that
    /// is the default, as in chensiling's Windbg-MCP: PORT from $WINDBG_MCP_HTTP_PORT, else 8080.
    #[arg(long, value_name = "PORT", conflicts_with = "http")]
    pub http_port: Option<u16>,
    /// With --profile chensiling: serve stdio instead of HTTP (for clients that start the
    /// server themselves).
    #[arg(long, conflicts_with_all = ["http", "http_port"])]
    pub stdio: bool,
    /// Accepted for chensiling's Windbg-MCP launch lines: ntdbg always debugs standalone.
    #[arg(long)]
    pub standalone: bool,
}

impl ChensilingArgs {
    /// What `--profile chensiling` opens at startup: `--dump`, `--attach`, or the process
    /// `--pid`/`--exe` name (a live Windows process on Windows, elsewhere recorded as not
    /// available with the reason); `--connect` is recorded as not available.
    fn startup(
        &self,
        dump: Option<PathBuf>,
        attach: Option<String>,
        backend: Option<String>,
        connect: Option<String>,
    ) -> Result<Option<ntdbg_profiles::StartupTarget>, String> {
        use ntdbg_profiles::StartupTarget;
        if backend.is_some() {
            return Err("--backend goes with --profile ntoseye".into());
        }
        let process = match (self.pid, &self.exe) {
            (Some(pid), _) => Some(format!("pid:{pid}")),
            (None, Some(exe)) => Some(match &self.exe_args {
                Some(args) => format!("exe:{exe} {args}"),
                None => format!("exe:{exe}"),
            }),
            (None, None) => None,
        };
        let given = [
            dump.is_some(),
            attach.is_some(),
            connect.is_some(),
            process.is_some(),
        ];
        if given.iter().filter(|g| **g).count() > 1 {
            return Err(CHENSILING_FLAGS.into());
        }
        Ok(match (dump, attach, connect, process) {
            (Some(path), ..) => Some(StartupTarget::Dump(path)),
            (_, Some(target), ..) => Some(StartupTarget::Attach(target)),
            (_, _, Some(connection), _) => Some(StartupTarget::Unavailable(format!(
                "--connect {connection}: a WinDbg remote server (.server) is driven through dbgeng, which ntdbg does not have; open a dump with --dump PATH instead"
            ))),
            (_, _, _, Some(spec)) if cfg!(windows) => Some(StartupTarget::Attach(spec)),
            (_, _, _, Some(spec)) => Some(StartupTarget::Unavailable(format!(
                "{spec}: live Windows processes are debugged through the Win32 debugging API, which exists only on Windows; open a dump with --dump PATH instead"
            ))),
            (None, None, None, None) => None,
        })
    }
}

/// Chensiling's Windbg-MCP default HTTP port.
const CHENSILING_HTTP_PORT: u16 = 8080;

impl ChensilingArgs {
    /// Where `ntdbg mcp` serves HTTP when `--http` is not given: `--http-port` on loopback;
    /// with --profile chensiling, unless `--stdio`, chensiling's own default
    /// (`$WINDBG_MCP_HTTP_PORT`, else 8080). `None`: stdio.
    ///
    /// # Errors
    /// `$WINDBG_MCP_HTTP_PORT` is not a port number.
    pub fn http_address(
        &self,
        profile: ProfileArg,
    ) -> Result<Option<std::net::SocketAddr>, String> {
        let loopback = |port| Some(std::net::SocketAddr::from(([127, 0, 0, 1], port)));
        if let Some(port) = self.http_port {
            return Ok(loopback(port));
        }
        if profile != ProfileArg::Chensiling || self.stdio {
            return Ok(None);
        }
        match std::env::var("WINDBG_MCP_HTTP_PORT") {
            Ok(text) => text.trim().parse::<u16>().map(loopback).map_err(|_| {
                format!("WINDBG_MCP_HTTP_PORT={text:?} is not a port number (0-65535)")
            }),
            Err(_) => Ok(loopback(CHENSILING_HTTP_PORT)),
        }
    }
}

/// One start-up form of --profile chensiling at a time.
const CHENSILING_FLAGS: &str =
    "with --profile chensiling give one of --dump, --attach, --pid, --exe or --connect";

/// The target `ntdbg mcp` opens at startup, for every profile: chensiling's flags here, the
/// others' in [`startup_target`].
///
/// # Errors
/// The flags do not go with the profile, or contradict each other.
pub fn mcp_startup(
    profile: ProfileArg,
    dump: Option<PathBuf>,
    attach: Option<String>,
    backend: Option<String>,
    connect: Option<String>,
    chensiling: &ChensilingArgs,
) -> Result<Option<ntdbg_profiles::StartupTarget>, String> {
    if profile == ProfileArg::Chensiling {
        return chensiling.startup(dump, attach, backend, connect);
    }
    if chensiling.pid.is_some() || chensiling.exe.is_some() {
        return Err("--pid and --exe go with --profile chensiling".into());
    }
    startup_target(profile, dump, attach, backend, connect)
}

// ---- end of chensiling's start-up flags --------------------------------------------------

/// The tool sets of `ntdbg mcp --tools`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ToolSetArg {
    /// The tools for dump files (and those for every target).
    Dumps,
    /// The tools for live targets (and those for every target).
    Live,
    /// Every tool.
    All,
}

impl From<ToolSetArg> for ntdbg_mcp::ToolSet {
    fn from(set: ToolSetArg) -> ntdbg_mcp::ToolSet {
        match set {
            ToolSetArg::Dumps => ntdbg_mcp::ToolSet::Dumps,
            ToolSetArg::Live => ntdbg_mcp::ToolSet::Live,
            ToolSetArg::All => ntdbg_mcp::ToolSet::All,
        }
    }
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
    /// ntoseye's tools: command, open, close, on one session (opened by open, or at startup
    /// by --dump or --backend gdb --connect HOST:PORT).
    Ntoseye,
    /// chensiling's Windbg-MCP intent tools: windbg_context, windbg_analyze, windbg_backtrace,
    /// … answering its ToolEnvelope, on the --dump (--pid, --exe) target.
    Chensiling,
}

impl From<ProfileArg> for ntdbg_profiles::Profile {
    fn from(p: ProfileArg) -> ntdbg_profiles::Profile {
        match p {
            ProfileArg::Ntdbg => ntdbg_profiles::Profile::Ntdbg,
            ProfileArg::McpWindbg => ntdbg_profiles::Profile::McpWindbg,
            ProfileArg::WindbgMcp => ntdbg_profiles::Profile::WindbgMcp,
            ProfileArg::Ntoseye => ntdbg_profiles::Profile::Ntoseye,
            ProfileArg::Chensiling => ntdbg_profiles::Profile::Chensiling,
        }
    }
}

// ---- ntoseye's start-up flags: what `ntdbg mcp` opens at startup ----

/// The target `ntdbg mcp` opens at startup: `--dump` or `--attach` with --profile
/// windbg-mcp; `--dump`, or `--backend` (and `--connect`) with --profile ntoseye; none
/// without these flags.
///
/// # Errors
/// The flags do not go with the profile, or name a backend ntdbg does not serve.
pub fn startup_target(
    profile: ProfileArg,
    dump: Option<PathBuf>,
    attach: Option<String>,
    backend: Option<String>,
    connect: Option<String>,
) -> Result<Option<ntdbg_profiles::StartupTarget>, String> {
    if connect.is_some() && backend.is_none() {
        return Err("--connect goes with --backend (--profile ntoseye)".into());
    }
    match (profile, dump, attach, backend) {
        (_, None, None, None) => Ok(None),
        (ProfileArg::WindbgMcp, Some(path), _, None) => {
            Ok(Some(ntdbg_profiles::StartupTarget::Dump(path)))
        }
        (ProfileArg::WindbgMcp, None, Some(target), None) => {
            Ok(Some(ntdbg_profiles::StartupTarget::Attach(target)))
        }
        (ProfileArg::Ntoseye, Some(path), None, backend)
            if connect.is_none() && backend.as_deref().is_none_or(|b| b == "dump") =>
        {
            Ok(Some(ntdbg_profiles::StartupTarget::Dump(path)))
        }
        (ProfileArg::Ntoseye, None, None, Some(backend)) => {
            ntdbg_profiles::ntoseye_startup_target(&backend, connect.as_deref()).map(Some)
        }
        (ProfileArg::Ntoseye, ..) => Err(NTOSEYE_FLAGS.into()),
        (ProfileArg::WindbgMcp, ..) => Err(WINDBG_MCP_FLAGS.into()),
        _ => Err(PROFILE_FLAGS.into()),
    }
}

/// The start-up flags --profile ntoseye takes.
const NTOSEYE_FLAGS: &str =
    "with --profile ntoseye give --dump PATH, or --backend gdb|dump with --connect (not --attach)";
/// The start-up flags --profile windbg-mcp takes.
const WINDBG_MCP_FLAGS: &str =
    "--backend and --connect go with --profile ntoseye (windbg-mcp takes --dump or --attach)";
/// The profiles that open a target at startup.
const PROFILE_FLAGS: &str = "--dump, --attach, --backend and --connect go with --profile \
     windbg-mcp or ntoseye (the other profiles open targets with their tools)";

#[cfg(test)]
mod ntoseye_startup_tests {
    use super::*;
    use ntdbg_profiles::StartupTarget;

    #[test]
    fn ntoseye_flags_map_to_startup_targets() {
        let p = ProfileArg::Ntoseye;
        let dump = || Some(PathBuf::from("crash.dmp"));
        assert_eq!(startup_target(p, None, None, None, None), Ok(None));
        assert_eq!(
            startup_target(p, dump(), None, None, None),
            Ok(Some(StartupTarget::Dump("crash.dmp".into())))
        );
        assert_eq!(
            startup_target(p, None, None, Some("gdb".into()), Some("h:1".into())),
            Ok(Some(StartupTarget::Attach("gdb:h:1".into())))
        );
        assert_eq!(
            startup_target(p, None, None, Some("dump".into()), Some("c.dmp".into())),
            Ok(Some(StartupTarget::Dump("c.dmp".into())))
        );
        let kd = startup_target(p, None, None, Some("kd".into()), None).unwrap_err();
        assert!(kd.contains("not available"), "{kd}");
        assert!(startup_target(p, dump(), None, Some("gdb".into()), None).is_err());
        assert!(startup_target(p, None, None, None, Some("h:1".into())).is_err());
    }

    #[test]
    fn startup_flags_stay_with_their_profiles() {
        let gdb = || Some("gdb".to_string());
        assert!(startup_target(ProfileArg::WindbgMcp, None, None, gdb(), None).is_err());
        assert!(startup_target(ProfileArg::Ntdbg, Some("c.dmp".into()), None, None, None).is_err());
        assert!(startup_target(
            ProfileArg::Ntoseye,
            None,
            Some("gdb:h:1".into()),
            None,
            None
        )
        .is_err());
        assert_eq!(
            startup_target(
                ProfileArg::WindbgMcp,
                None,
                Some("gdb:h:1".into()),
                None,
                None
            ),
            Ok(Some(ntdbg_profiles::StartupTarget::Attach(
                "gdb:h:1".into()
            )))
        );
    }
}

// ---- end of ntoseye's start-up flags ----

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

#[cfg(test)]
mod tests {
    use super::*;
    use ntdbg_profiles::StartupTarget;

    /// What `ntdbg mcp --profile chensiling ARGS` opens at startup, as `main` asks.
    fn chensiling(args: &[&str]) -> Result<Option<StartupTarget>, String> {
        let argv = ["ntdbg", "mcp", "--profile", "chensiling"]
            .iter()
            .chain(args);
        let cli = Cli::try_parse_from(argv).map_err(|e| e.to_string())?;
        match cli.command {
            Command::Mcp {
                profile,
                dump,
                attach,
                backend,
                connect,
                chensiling,
                ..
            } => mcp_startup(profile, dump, attach, backend, connect, &chensiling),
            _ => unreachable!("parsed as mcp"),
        }
    }

    #[test]
    fn chensiling_start_up_flags_map_to_startup_targets() {
        let pid = chensiling(&["--standalone", "--pid", "42"]).expect("pid");
        let exe = chensiling(&["--exe", "C:\\app.exe", "--args", "-x 1"]).expect("exe");
        if cfg!(windows) {
            assert_eq!(pid, Some(StartupTarget::Attach("pid:42".into())));
            assert_eq!(
                exe,
                Some(StartupTarget::Attach("exe:C:\\app.exe -x 1".into()))
            );
        } else {
            match (pid, exe) {
                (Some(StartupTarget::Unavailable(p)), Some(StartupTarget::Unavailable(e))) => {
                    assert!(
                        p.starts_with("pid:42: ") && p.contains("only on Windows"),
                        "{p}"
                    );
                    assert!(e.starts_with("exe:C:\\app.exe -x 1: "), "{e}");
                }
                other => panic!("unexpected {other:?}"),
            }
        }
        let connect = chensiling(&["--connect", "tcp:localhost:50000"]).expect("connect");
        assert!(matches!(connect, Some(StartupTarget::Unavailable(r)) if r.contains("dbgeng")));
        assert_eq!(
            chensiling(&["--dump", "a.dmp"]),
            Ok(Some(StartupTarget::Dump("a.dmp".into())))
        );
        assert_eq!(chensiling(&[]), Ok(None));
        let cli = Cli::try_parse_from(["ntdbg", "mcp", "--http-port", "8080"]).expect("port");
        assert!(
            matches!(cli.command, Command::Mcp { chensiling, .. } if chensiling.http_port == Some(8080))
        );
    }

    /// Where `ntdbg mcp ARGS` serves HTTP when `--http` is not given (`None`: stdio).
    fn http_of(args: &[&str]) -> Option<std::net::SocketAddr> {
        let cli = Cli::try_parse_from(["ntdbg", "mcp"].iter().chain(args)).expect("parses");
        match cli.command {
            Command::Mcp {
                profile,
                chensiling,
                ..
            } => chensiling.http_address(profile).expect("address"),
            _ => unreachable!("parsed as mcp"),
        }
    }

    #[test]
    fn chensiling_serves_http_on_its_own_default_port_unless_stdio_is_asked() {
        let port = |p: u16| Some(std::net::SocketAddr::from(([127, 0, 0, 1], p)));
        if std::env::var_os("WINDBG_MCP_HTTP_PORT").is_none() {
            assert_eq!(http_of(&["--profile", "chensiling"]), port(8080));
        }
        assert_eq!(
            http_of(&["--profile", "chensiling", "--http-port", "9"]),
            port(9)
        );
        assert_eq!(http_of(&["--profile", "chensiling", "--stdio"]), None);
        assert_eq!(http_of(&[]), None);
        assert_eq!(http_of(&["--http-port", "7"]), port(7));
        let both = Cli::try_parse_from(["ntdbg", "mcp", "--stdio", "--http-port", "7"]);
        assert!(both.is_err());
    }

    #[test]
    fn chensiling_flags_that_contradict_are_usage_errors() {
        assert!(chensiling(&["--pid", "1", "--exe", "a.exe"]).is_err());
        assert!(chensiling(&["--connect", "tcp:1", "--dump", "a.dmp"]).is_err());
        assert!(chensiling(&["--backend", "gdb"]).is_err());
        assert!(chensiling(&["--http-port", "1", "--http", "127.0.0.1:2"]).is_err());
        assert!(chensiling(&["--args", "-x"]).is_err(), "--args needs --exe");
        let other = Cli::try_parse_from(["ntdbg", "mcp", "--pid", "1"]).expect("parses");
        if let Command::Mcp {
            profile,
            chensiling,
            ..
        } = other.command
        {
            assert!(mcp_startup(profile, None, None, None, None, &chensiling).is_err());
        }
    }
}
