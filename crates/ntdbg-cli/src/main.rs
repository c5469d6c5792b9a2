//! `ntdbg`: Windows crash-dump analysis from the command line.
//!
//! Thin by design: argument parsing ([`args`]), then the engine, analysis and command crates
//! do the work. Exit status: 0 success, 1 the dump or a command failed, 2 usage error.

mod args;
mod batch;
mod hints;
mod pretty_json;
mod progress;
mod repl;
mod run_json;
mod server_cli;
mod shell_docs;
mod skipped;
mod stackwalk;
mod store_cli;
mod symbolize;
mod time_limit;

use args::{Cli, Command};
use clap::Parser;
use ntdbg_commands::Status;
use ntdbg_engine::Session;
use std::io::Write;
use std::process::ExitCode;
use std::time::Duration;

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Every command logs to stderr when asked (`NTDBG_LOG=warn`: e.g. a damaged symbol index
    // answered from its symbol file); `ntdbg mcp` always does.
    if std::env::var_os("NTDBG_LOG").is_some() {
        ntdbg_mcp::init_stderr_logging();
    }
    // One command and out: symbol indexes that need a whole parse are left to a detached
    // writer. Long-lived processes write them on a thread.
    if !matches!(
        cli.command,
        Command::Mcp { .. }
            | Command::Repl { .. }
            | Command::Triage { .. }
            | Command::Store(_)
            | Command::Server(_)
    ) {
        if let Ok(exe) = std::env::current_exe() {
            ntdbg_symbols::write_indexes_out_of_process(exe);
        }
    }
    // Symbol paths may name a crash store's bucket (srv*s3://…/symbols).
    ntdbg_objects::register_symbol_reader();
    let result = run(cli);
    // Symbol indexes written in the background must be complete before the process ends
    // (or are handed to the detached writer).
    ntdbg_symbols::finish_index_writes();
    match result {
        Ok(code) => code,
        Err(err) => {
            // A closed pipe (`ntdbg … | head`) is not an error worth reporting, whether the
            // write failed directly or inside the JSON writer.
            if err.chain().any(|e| {
                let kind = e
                    .downcast_ref::<std::io::Error>()
                    .map(std::io::Error::kind)
                    .or_else(|| e.downcast_ref::<serde_json::Error>()?.io_error_kind());
                kind == Some(std::io::ErrorKind::BrokenPipe)
            }) {
                return ExitCode::SUCCESS;
            }
            eprintln!("error: {err:#}");
            ExitCode::from(1)
        }
    }
}

/// `ntdbg __symbol-index (KIND SOURCE NAME KEY)…`: writes each file's index in turn; a file
/// that fails is reported and the others are still written.
fn write_symbol_indexes(files: &[String]) -> anyhow::Result<ExitCode> {
    if !files.len().is_multiple_of(4) {
        eprintln!("error: expected KIND SOURCE NAME KEY quadruples");
        return Ok(ExitCode::from(2));
    }
    let mut code = ExitCode::SUCCESS;
    for job in files.chunks(4) {
        let [kind, source, name, key] = job else {
            continue;
        };
        if let Err(e) = ntdbg_symbols::write_symbol_index(kind, source.as_ref(), name, key) {
            eprintln!("error: {e}");
            code = ExitCode::from(1);
        }
    }
    Ok(code)
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Analyze {
            dump,
            json,
            symbols,
            offline,
            signature_rules,
        } => {
            let rules = signature_config(signature_rules.as_deref())?;
            let session = open(&dump, symbols.as_deref(), offline)?;
            let indicator = progress::Indicator::install(session.symbols());
            let report = ntdbg_analysis::analyze_checked(&session, &rules)?;
            drop(indicator);
            // One write for the whole report, not one per line (stdout is line-buffered).
            let mut out = std::io::BufWriter::new(std::io::stdout().lock());
            if json {
                serde_json::to_writer_pretty(&mut out, &report)?;
                writeln!(out)?;
            } else {
                out.write_all(ntdbg_analysis::render::render_report(&report).as_bytes())?;
            }
            out.flush()?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Run {
            target,
            commands,
            symbols,
            json,
            offline,
            keep_going,
            timeout,
        } => {
            let mut session = target.open(symbols.as_deref(), offline)?;
            let on_error = if keep_going {
                ntdbg_commands::OnError::Continue
            } else {
                ntdbg_commands::OnError::Stop
            };
            let limit = timeout.map(std::time::Duration::from_secs);
            let status = run_commands(&mut session, &commands, on_error, json, limit);
            detach(&session);
            status
        }
        Command::Mcp {
            http,
            allow_dirs,
            unsafe_http,
            token_env,
            offline,
            read_only,
            allow_attach,
            idle_timeout,
            symbol_servers,
            symbol_memory,
            profile,
            tools,
            dump,
            attach,
            backend,
            connect,
            db,
            redact,
            redact_rules,
            transcript,
            http_limits,
            chensiling,
        } => {
            let startup =
                match args::mcp_startup(profile, dump, attach, backend, connect, &chensiling) {
                    Ok(startup) => startup,
                    Err(e) => {
                        eprintln!("error: {e}");
                        return Ok(ExitCode::from(2));
                    }
                };
            let http = match http {
                Some(address) => Some(address),
                None => match chensiling.http_address(profile) {
                    Ok(address) => address,
                    Err(e) => {
                        eprintln!("error: {e}");
                        return Ok(ExitCode::from(2));
                    }
                },
            };
            let attach_policy = match ntdbg_mcp::AttachPolicy::parse(&allow_attach, unsafe_http) {
                Ok(policy) => policy,
                Err(e) => {
                    eprintln!("error: {e}");
                    return Ok(ExitCode::from(2));
                }
            };
            let options = McpOptions {
                offline,
                read_only,
                attach_policy,
                idle_timeout,
                symbol_servers,
                symbol_memory: mib(symbol_memory),
                profile: profile.into(),
                tools: tools.map(Into::into),
                startup,
                db,
                redact: redact || redact_rules.is_some(),
                redact_rules,
                transcript,
                http_limits: http_limits.limits(),
            };
            mcp(
                http,
                &allow_dirs,
                unsafe_http,
                token_env.as_deref(),
                options,
            )
        }
        Command::Repl {
            target,
            symbols,
            offline,
        } => {
            let mut session = target.open(symbols.as_deref(), offline)?;
            let _indicator = progress::Indicator::install(session.symbols());
            let ended = repl::run(&mut session);
            detach(&session);
            ended?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Stackwalk(args) => stackwalk::run(&args),
        Command::Completions { shell } => shell_docs::completions(shell),
        Command::Manpage { subcommand } => shell_docs::manpage(subcommand.as_deref()),
        Command::SymbolIndex { files } => write_symbol_indexes(&files),
        Command::SymbolizeImage { exe } => {
            symbolize::symbolize_image(&exe)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::List {
            dir,
            recursive,
            json,
        } => batch::list(&dir, recursive, json),
        Command::Triage {
            dir,
            json,
            html,
            jobs,
            top_level,
            symbols,
            offline,
            signature_rules,
            symbol_memory,
        } => {
            warn_missing_symbol_folders(symbols.as_deref());
            let options = ntdbg_analysis::triage::TriageOptions {
                recursive: !top_level,
                jobs: jobs.unwrap_or(0),
                symbols,
                offline,
                signature: signature_config(signature_rules.as_deref())?,
                shared_symbols: Some(std::sync::Arc::new(ntdbg_symbols::SharedSymbols::new(mib(
                    symbol_memory,
                )))),
                ..Default::default()
            };
            batch::triage(&dir, &options, json, html.as_deref())
        }
        Command::Store(command) => store_cli::run(command),
        Command::Server(command) => server_cli::run(command),
    }
}

/// The signature lists: the built-in ones, changed by `--signature-rules FILE` when given.
fn signature_config(
    rules: Option<&std::path::Path>,
) -> anyhow::Result<ntdbg_analysis::signature::SignatureConfig> {
    Ok(match rules {
        Some(path) => ntdbg_analysis::signature::SignatureConfig::from_rules_file(path)?,
        None => Default::default(),
    })
}

/// `--symbol-memory`'s MiB in bytes.
fn mib(n: u64) -> u64 {
    n.saturating_mul(1 << 20)
}

/// What `ntdbg mcp` serves, besides its transport.
struct McpOptions {
    offline: bool,
    read_only: bool,
    /// `--allow-attach`: the live targets clients may attach.
    attach_policy: ntdbg_mcp::AttachPolicy,
    /// Seconds a session may stay unused before it is closed (0: never).
    idle_timeout: u64,
    /// HTTP symbol servers clients may name, besides Microsoft's and `_NT_SYMBOL_PATH`'s.
    symbol_servers: Vec<String>,
    /// Bytes of parsed symbols the sessions share.
    symbol_memory: u64,
    profile: ntdbg_profiles::Profile,
    /// `--tools`: the tool set (`None`: by whether live targets are allowed).
    tools: Option<ntdbg_mcp::ToolSet>,
    startup: Option<ntdbg_profiles::StartupTarget>,
    /// `--db`: the crash database query_crashes answers from.
    db: Option<String>,
    /// `--redact` (or `--redact-rules`): hide personal data in results.
    redact: bool,
    /// `--redact-rules`: more patterns to hide.
    redact_rules: Option<std::path::PathBuf>,
    /// `--transcript`: the JSONL file every call is recorded in.
    transcript: Option<std::path::PathBuf>,
    /// `--http-max-connections`, `--http-header-timeout`, `--http-body-timeout`.
    http_limits: ntdbg_mcp::HttpLimits,
}

/// The redactor and transcript `ntdbg mcp`'s options ask for; a rules file that does not
/// read or parse, or a transcript that cannot be opened, is a start-up error.
fn privacy(
    options: &McpOptions,
) -> Result<
    (
        Option<ntdbg_mcp::redact::Redactor>,
        Option<ntdbg_mcp::redact::transcript::Transcript>,
    ),
    String,
> {
    let redactor = match (&options.redact_rules, options.redact) {
        (Some(path), _) => Some(ntdbg_mcp::redact::Redactor::new(
            ntdbg_mcp::redact::rules::load_rules_file(path)?,
        )),
        (None, true) => Some(ntdbg_mcp::redact::Redactor::new(Vec::new())),
        (None, false) => None,
    };
    let transcript = match &options.transcript {
        Some(path) => Some(
            ntdbg_mcp::redact::transcript::Transcript::open(path)
                .map_err(|e| format!("cannot open the transcript {}: {e}", path.display()))?,
        ),
        None => None,
    };
    Ok((redactor, transcript))
}

/// `ntdbg mcp`: the MCP server. Bad security options are usage errors (exit 2).
fn mcp(
    http: Option<std::net::SocketAddr>,
    allow_dirs: &[std::path::PathBuf],
    unsafe_http: bool,
    token_env: Option<&str>,
    options: McpOptions,
) -> anyhow::Result<ExitCode> {
    ntdbg_mcp::init_stderr_logging();
    let (redactor, transcript) = match privacy(&options) {
        Ok(privacy) => privacy,
        Err(e) => {
            eprintln!("error: {e}");
            return Ok(ExitCode::from(2));
        }
    };
    let allowed = ntdbg_mcp::AllowedDirs::new(allow_dirs)?;
    let transport = match http {
        None => ntdbg_mcp::Transport::Stdio,
        Some(addr) => {
            // Only the variable's name is ever printed, never the token.
            let token = match token_env.map(std::env::var) {
                Some(Ok(token)) => Some(token),
                Some(Err(_)) => {
                    eprintln!("error: the environment variable named by --token-env is not set");
                    return Ok(ExitCode::from(2));
                }
                None => None,
            };
            let http_options = ntdbg_mcp::HttpOptions {
                addr,
                unsafe_http,
                token,
                limits: options.http_limits,
            };
            if let Err(e) = http_options.validate() {
                eprintln!("error: {e}");
                return Ok(ExitCode::from(2));
            }
            ntdbg_mcp::Transport::Http(http_options)
        }
    };
    let idle_timeout =
        (options.idle_timeout > 0).then(|| Duration::from_secs(options.idle_timeout));
    let mut server = ntdbg_mcp::NtdbgServer::new(allowed)
        .offline(options.offline)
        .read_only(options.read_only)
        .with_attach_policy(options.attach_policy)
        .idle_timeout(idle_timeout)
        .symbol_servers(options.symbol_servers)
        .symbol_memory(options.symbol_memory)
        .with_surface(ntdbg_profiles::surface(options.profile, options.startup));
    if let Some(db) = options.db {
        server = server.with_crash_store(ntdbg_store::DbLocation::parse(Some(&db))?);
    }
    server = server
        .with_tools(options.tools)
        .with_redaction(redactor)
        .with_transcript(transcript);
    ntdbg_mcp::run(server, transport)?;
    Ok(ExitCode::SUCCESS)
}

impl args::TargetArgs {
    /// Opens the dump, or attaches to the live target.
    fn open(&self, symbols: Option<&str>, offline: bool) -> anyhow::Result<Session> {
        match (&self.attach, &self.dump) {
            (Some(target), _) => {
                warn_missing_symbol_folders(symbols);
                let opts = ntdbg_engine::live::AttachOptions {
                    read_only: self.read_only,
                    ..Default::default()
                };
                Ok(offline_if(
                    Session::attach(target, symbols, &opts)?,
                    offline,
                ))
            }
            (None, Some(dump)) => open(dump, symbols, offline).inspect(warn_of_losses),
            (None, None) => anyhow::bail!(
                "give a dump file or --attach gdb:HOST:PORT (pid:N, exe:PATH on Windows)"
            ),
        }
    }
}

/// Leaves a live target cleanly (breakpoints removed, detached) before the process exits.
fn detach(session: &Session) {
    if let Some(live) = session.live() {
        if let Err(e) = live.close(std::time::Duration::from_secs(5)) {
            eprintln!("warning: detaching from the target failed: {e}");
        }
    }
}

/// Opens a dump; the error already names the file. `offline` turns symbol servers off.
fn open(dump: &std::path::Path, symbols: Option<&str>, offline: bool) -> anyhow::Result<Session> {
    warn_missing_symbol_folders(symbols);
    Ok(offline_if(Session::open_dump(dump, symbols)?, offline))
}

/// Says on stderr which folders of a `--symbols` path do not exist: otherwise the missing
/// symbols read as the dump's fault. Caches are left out (a download creates them); a path that
/// does not parse is reported when the session opens.
fn warn_missing_symbol_folders(symbols: Option<&str>) {
    use ntdbg_symbols::SymbolPathEntry;
    let Some(path) = symbols.and_then(|s| ntdbg_symbols::SymbolPath::parse(s).ok()) else {
        return;
    };
    for entry in path.entries() {
        let folder = match entry {
            SymbolPathEntry::Local(dir) => dir.clone(),
            SymbolPathEntry::Server { url, .. } if !entry.is_http_server() => {
                std::path::PathBuf::from(url)
            }
            _ => continue,
        };
        if !folder.is_dir() {
            eprintln!(
                "warning: symbol path folder {} does not exist",
                folder.display()
            );
        }
    }
}

/// Says on stderr what could not be read of a dump cut short (`analyze` reports it among its
/// limitations instead).
fn warn_of_losses(session: &Session) {
    for loss in session.target().file_losses() {
        eprintln!("warning: {loss}");
    }
}

/// `session`, kept off symbol servers when `offline`.
fn offline_if(session: Session, offline: bool) -> Session {
    if offline {
        session.symbols().set_offline(true);
    }
    session
}

/// Bytes `ntdbg run` gathers before each write to stdout: `~*k --json` of a 100-thread dump is
/// megabytes, which the default 8 KiB buffer sends in hundreds of `write` calls.
const OUTPUT_BUFFER: usize = 64 * 1024;

/// Runs a batch and prints each command's output under a cdb-style prompt; after a failure it
/// stops or goes on as `on_error` says; exit 1 when a command failed.
fn run_commands(
    session: &mut Session,
    commands: &str,
    on_error: ntdbg_commands::OnError,
    json: bool,
    limit: Option<std::time::Duration>,
) -> anyhow::Result<ExitCode> {
    let indicator = progress::Indicator::install(session.symbols());
    let watchdog =
        limit.map(|limit| time_limit::Watchdog::start(session.interrupt().clone(), limit));
    let results = ntdbg_commands::run_batch_with(session, commands, on_error);
    drop(indicator);
    let mut results = results?;
    if let Some(watchdog) = watchdog {
        watchdog.finish(&mut results);
    }
    // Buffered: one write per block, not one per line (stdout is line-buffered); flushed
    // before anything goes to stderr so the two stay in order.
    let mut out = std::io::BufWriter::with_capacity(OUTPUT_BUFFER, std::io::stdout().lock());
    let mut failed = false;
    if json {
        failed = results
            .iter()
            .any(|r| matches!(r.status, Status::Failed | Status::TimedOut));
        run_json::write(&mut out, &results)?;
    } else {
        for r in &results {
            // The prompt each command was given at, as cdb shows it.
            let prompt = repl::prompt(session, r.thread);
            match r.status {
                Status::Succeeded => {
                    write!(out, "{prompt}{}\n{}", r.command, r.output)?;
                    if !r.output.is_empty() && !r.output.ends_with('\n') {
                        writeln!(out)?;
                    }
                }
                Status::Failed => {
                    writeln!(out, "{prompt}{}", r.command)?;
                    out.flush()?;
                    let hint = r
                        .error
                        .as_ref()
                        .map_or(String::new(), |e| hints::line(e.code));
                    eprint!("error: {}\n{hint}", r.output);
                    failed = true;
                }
                // Listed once, after the loop.
                Status::NotExecuted => {}
                Status::TimedOut => {
                    out.flush()?;
                    if r.output.is_empty() {
                        eprintln!("timed out: {}", r.command);
                    } else {
                        eprintln!("timed out: {}: {}", r.command, r.output);
                    }
                    failed = true;
                }
            }
        }
    }
    out.flush()?;
    if let Some(line) = skipped::line(&results).filter(|_| !json) {
        eprintln!("{line}");
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}
