//! `ntdbg stackwalk`: minidump-stackwalk's command line and output, from ntdbg's engine.
//!
//! Every minidump-stackwalk 0.27 option is either served, accepted with no effect (said in
//! its help), or refused with an error naming what to use instead: a pipeline never gets a
//! silently different answer.

use clap::{Args, ValueEnum};
use ntdbg_analysis::stackwalk::{render_human, stackwalk};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

/// `ntdbg stackwalk --help` examples and what differs from minidump-stackwalk.
pub const STACKWALK_HELP: &str = "Output: with --json, the schema of `minidump-stackwalk --json` (rust-minidump 0.27):
the same keys with the same types and meanings; without it, minidump-stackwalk's text
layout. Frames come from ntdbg's walker: Breakpad CFI, PDB frame data and the PE unwind
tables of x64/ARM64 images (.pdata, also read from the dump's memory), with PDBs and
symbol servers (Microsoft's protocol and Tecken's) behind the symbols. A frame's trust is
context, cfi, frame_pointer or scan (ntdbg's leaf rule is reported as scan).
Null where minidump-stackwalk runs analyses ntdbg does not: crash_info.instruction,
memory_accesses, instruction_pointer_update, adjusted_address, possible_bit_flips,
crash_inconsistencies. Exit status: 0 report written, 1 the dump could not be read,
2 usage error (also for --dump, --evil-json and --recover-function-args, not served).

Examples:
  ntdbg stackwalk crash.dmp ./symbols --json --pretty
  ntdbg stackwalk crash.dmp --symbols-url https://symbols.mozilla.org/ --symbols-cache /tmp/syms --json
  ntdbg stackwalk crash.dmp -s 'srv*C:\\symbols*https://msdl.microsoft.com/download/symbols' --brief";

/// `minidump-stackwalk --features` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Features {
    /// minidump-stackwalk's default.
    StableBasic,
    /// Identical to stable-basic in minidump-stackwalk 0.27.
    StableAll,
    /// minidump-stackwalk adds --recover-function-args (text only); ntdbg gives stable-basic.
    UnstableAll,
}

/// `minidump-stackwalk --verbose` levels.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Verbosity {
    /// No log.
    Off,
    /// Errors.
    Error,
    /// Warnings.
    Warn,
    /// Information.
    Info,
    /// Debugging.
    Debug,
    /// Tracing.
    Trace,
}

/// The arguments of `ntdbg stackwalk`: minidump-stackwalk's, plus ntdbg's symbol options.
#[derive(Debug, Args)]
pub struct StackwalkArgs {
    /// The minidump file (.dmp).
    pub dump: PathBuf,
    /// Symbol directories (Breakpad `NAME.pdb/ID/NAME.sym` trees, PDB folders, symbol
    /// stores), searched in order.
    #[arg(value_name = "SYMBOLS_PATH")]
    pub symbols_path_legacy: Vec<PathBuf>,
    /// Emit minidump-stackwalk's JSON report.
    #[arg(long, conflicts_with = "cyborg")]
    pub json: bool,
    /// Emit the text report (the default).
    #[arg(long, conflicts_with_all = ["json", "cyborg"])]
    pub human: bool,
    /// Text report on the output, and the JSON report written to this file.
    #[arg(long, value_name = "JSON_FILE")]
    pub cyborg: Option<PathBuf>,
    /// Pretty-print the JSON.
    #[arg(long)]
    pub pretty: bool,
    /// Text report: only the summary and the crashing thread.
    #[arg(long)]
    pub brief: bool,
    /// Write the report here instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub output_file: Option<PathBuf>,
    /// A symbol directory, as the positional SYMBOLS_PATH (repeatable).
    #[arg(long = "symbols-path", value_name = "DIR")]
    pub symbols_path: Vec<PathBuf>,
    /// A symbol server (Microsoft's protocol or Tecken's, e.g. https://symbols.mozilla.org/),
    /// tried in order (repeatable); downloads go to --symbols-cache.
    #[arg(long = "symbols-url", value_name = "URL")]
    pub symbols_url: Vec<String>,
    /// Where downloaded symbols are kept (default: ntdbg's symbol cache).
    #[arg(long, value_name = "DIR")]
    pub symbols_cache: Option<PathBuf>,
    /// Accepted, no effect: ntdbg writes downloads to a temporary file inside the cache.
    #[arg(long, value_name = "DIR")]
    pub symbols_tmp: Option<PathBuf>,
    /// Time limit for each module's symbol downloads, in seconds.
    #[arg(long, value_name = "SECS")]
    pub symbols_download_timeout_secs: Option<u64>,
    /// Also look for PDBs at the paths the dump's CodeView records name.
    #[arg(long)]
    pub use_local_debuginfo: bool,
    /// An ntdbg symbol path (`dir;srv*CACHE*URL`), searched after the directories above.
    #[arg(long, short = 's', value_name = "PATH")]
    pub symbols: Option<String>,
    /// Do not contact symbol servers (also NTDBG_OFFLINE=1); cached files are still used.
    #[arg(long)]
    pub offline: bool,
    /// Accepted, same output for every value (see the notes below).
    #[arg(long, value_enum, value_name = "FEATURES")]
    pub features: Option<Features>,
    /// Accepted, no effect: ntdbg logs nothing; errors go to stderr.
    #[arg(long, value_enum, value_name = "LEVEL")]
    pub verbose: Option<Verbosity>,
    /// Accepted: the file is created empty (ntdbg logs nothing; errors go to stderr).
    #[arg(long, value_name = "FILE")]
    pub log_file: Option<PathBuf>,
    /// Accepted, no effect: the output has no colour.
    #[arg(long)]
    pub no_color: bool,
    /// Accepted, no effect: no progress is shown.
    #[arg(long)]
    pub no_interactive: bool,
    /// Not served: minidump-stackwalk's raw stream dump (use `ntdbg run DUMP -c ...`).
    #[arg(long = "dump", hide = true)]
    pub dump_streams: bool,
    /// Not served (Mozilla's side-channel JSON).
    #[arg(long, value_name = "FILE", hide = true)]
    pub evil_json: Option<PathBuf>,
    /// Not served (experimental in minidump-stackwalk).
    #[arg(long, hide = true)]
    pub recover_function_args: bool,
}

/// Runs `ntdbg stackwalk`.
pub fn run(args: &StackwalkArgs) -> anyhow::Result<ExitCode> {
    if let Some(refused) = refused_option(args) {
        eprintln!("error: {refused}");
        return Ok(ExitCode::from(2));
    }
    if let Some(log) = &args.log_file {
        std::fs::File::create(log)
            .map_err(|e| anyhow::anyhow!("cannot create --log-file {}: {e}", log.display()))?;
    }
    let session = ntdbg_engine::Session::open_dump(&args.dump, symbol_path(args).as_deref())?;
    let symbols = session.symbols();
    if args.offline {
        symbols.set_offline(true);
    }
    if args.use_local_debuginfo {
        symbols.set_codeview_paths(true);
    }
    if let Some(secs) = args.symbols_download_timeout_secs {
        symbols.set_download_timeout(Duration::from_secs(secs));
    }
    let walk = stackwalk(&session)?;

    if let Some(path) = &args.cyborg {
        let mut file = std::io::BufWriter::new(create(path)?);
        write_json(&mut file, &walk.report, args.pretty)?;
        file.flush()?;
    }
    let mut out: Box<dyn Write> = match &args.output_file {
        Some(path) => Box::new(std::io::BufWriter::new(create(path)?)),
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
    };
    if args.json {
        write_json(&mut out, &walk.report, args.pretty)?;
    } else {
        out.write_all(render_human(&walk, args.brief).as_bytes())?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// The options minidump-stackwalk has that ntdbg does not serve, with what to use instead.
fn refused_option(args: &StackwalkArgs) -> Option<&'static str> {
    if args.dump_streams {
        Some("--dump is not served by ntdbg stackwalk: use `ntdbg run DUMP -c \"lm; ~*k; !peb\"` to read a dump's streams")
    } else if args.evil_json.is_some() {
        Some("--evil-json is not served by ntdbg stackwalk (Mozilla's side-channel certificate data)")
    } else if args.recover_function_args {
        Some("--recover-function-args is not served by ntdbg stackwalk: use `ntdbg run DUMP -c \"kb\"` for the stack arguments")
    } else {
        None
    }
}

/// The ntdbg symbol path: the directories, then `--symbols`, then the servers; None (ntdbg's
/// default: the dump's folder, then _NT_SYMBOL_PATH) when nothing is given.
fn symbol_path(args: &StackwalkArgs) -> Option<String> {
    let mut entries: Vec<String> = args
        .symbols_path_legacy
        .iter()
        .chain(&args.symbols_path)
        .map(|p| p.display().to_string())
        .collect();
    entries.extend(args.symbols.clone());
    for url in &args.symbols_url {
        entries.push(match &args.symbols_cache {
            Some(cache) => format!("srv*{}*{url}", cache.display()),
            None => format!("srv*{url}"),
        });
    }
    (!entries.is_empty()).then(|| entries.join(";"))
}

/// Creates an output file, naming it in the error.
fn create(path: &Path) -> anyhow::Result<std::fs::File> {
    std::fs::File::create(path)
        .map_err(|e| anyhow::anyhow!("cannot create {}: {e}", path.display()))
}

/// The JSON report, compact or pretty, with a final newline.
fn write_json(
    out: &mut dyn Write,
    report: &ntdbg_analysis::stackwalk::StackwalkReport,
    pretty: bool,
) -> anyhow::Result<()> {
    if pretty {
        serde_json::to_writer_pretty(&mut *out, report)?;
    } else {
        serde_json::to_writer(&mut *out, report)?;
    }
    writeln!(out)?;
    Ok(())
}
