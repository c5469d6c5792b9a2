//! `ntdbg collect`, `ntdbg serve` and `ntdbg symbols upload`: a crash server (`ntdbg-web`) and
//! its object store (`ntdbg-objects`) from the command line.

use crate::store_cli::{AnalysisArgs, DB_HELP, STORE_HELP};
use clap::Subcommand;
use ntdbg_objects::{upload_symbol_file, Objects, StoreUrl};
use ntdbg_store::{DbLocation, WorkerOptions};
use ntdbg_web::{CollectOptions, Exposure, Limits, PageOptions, ProductTokens};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

/// The crash server's subcommands.
#[derive(Debug, Subcommand)]
pub enum ServerCommand {
    /// Accept crash reports over HTTP in the Crashpad/Breakpad upload format (POST /submit):
    /// each dump stored once in the object store, queued, and answered with its crash id.
    /// With SQLite the collector analyses what it accepts; with PostgreSQL `ntdbg worker`s do.
    #[command(
        after_help = "Examples:\n  ntdbg collect --listen 127.0.0.1:8900\n  ntdbg collect --listen 127.0.0.1:8900 --pages --symbols ./symbols\n  ntdbg collect --listen 0.0.0.0:8900 --unsafe-http --tokens tokens.txt \\\n      --db postgres://ntdbg@db.internal/crashes --store s3://crashes/prod\n\nCrashpad: CrashpadClient::StartHandler(..., url = \"http://HOST:8900/submit?token=TOKEN\", ...)\nTokens file: one `PRODUCT TOKEN` line per product (`*` for any product)."
    )]
    Collect {
        /// Where to listen (loopback only, unless --unsafe-http).
        #[arg(long, value_name = "ADDR")]
        listen: SocketAddr,
        #[arg(long, value_name = "URL|FILE", help = DB_HELP)]
        db: Option<String>,
        #[arg(long, value_name = "URL|DIR", help = STORE_HELP)]
        store: Option<String>,
        /// Per-product upload tokens: lines of `PRODUCT TOKEN` (`*`: any product). A report
        /// carries its token as `?token=` in the upload URL or as a bearer token.
        #[arg(long, value_name = "FILE")]
        tokens: Option<PathBuf>,
        /// Allow a non-loopback --listen address. Requires --tokens.
        #[arg(long)]
        unsafe_http: bool,
        /// The largest report accepted, compressed or not, in MiB.
        #[arg(long, value_name = "MIB", default_value_t = 64)]
        max_upload: usize,
        /// Reports a second accepted from one client address (0: no limit); bursts of up to
        /// five times as many pass.
        #[arg(long, value_name = "N", default_value_t = 20)]
        rate_limit: u32,
        /// Analysis workers in this process. Default: 1 with SQLite, 0 with PostgreSQL
        /// (run `ntdbg worker`s).
        #[arg(long, value_name = "N")]
        workers: Option<usize>,
        /// Also serve the crash-stats page (see `ntdbg serve`) on this port.
        #[arg(long)]
        pages: bool,
        /// With --pages: the environment variable holding the token the page asks for
        /// (required with --unsafe-http).
        #[arg(long, value_name = "VAR", requires = "pages")]
        token_env: Option<String>,
        #[command(flatten)]
        connections: ConnectionArgs,
        #[command(flatten)]
        analysis: AnalysisArgs,
    },
    /// Serve the crash-stats page: top signatures and their trend, new signatures since a
    /// version, a signature's versions, OS builds and stack, a crash's report.
    #[command(
        after_help = "Examples:\n  ntdbg serve --listen 127.0.0.1:8901\n  NTDBG_PAGE_TOKEN=... ntdbg serve --listen 0.0.0.0:8901 --unsafe-http --token-env NTDBG_PAGE_TOKEN \\\n      --db postgres://ntdbg@db.internal/crashes\n\nWith a token, a browser asks for it: any user name, the token as password."
    )]
    Serve {
        /// Where to listen (loopback only, unless --unsafe-http).
        #[arg(long, value_name = "ADDR")]
        listen: SocketAddr,
        #[arg(long, value_name = "URL|FILE", help = DB_HELP)]
        db: Option<String>,
        /// Allow a non-loopback --listen address. Requires --token-env.
        #[arg(long, requires = "token_env")]
        unsafe_http: bool,
        /// Environment variable holding the token every request must carry.
        #[arg(long, value_name = "VAR")]
        token_env: Option<String>,
        #[command(flatten)]
        connections: ConnectionArgs,
    },
    /// Symbol files for the crash store.
    #[command(subcommand)]
    Symbols(SymbolsCommand),
}

/// `ntdbg symbols …`.
#[derive(Debug, Subcommand)]
pub enum SymbolsCommand {
    /// File PDBs, PE images (.exe, .dll) and Breakpad .sym files into the object store in
    /// symbol-server layout; workers analyse the store's dumps with them, and `analyze`,
    /// `ntdbg mcp` read them as a symbol path entry (the store's symbols folder, or
    /// srv*s3://BUCKET/PREFIX/symbols).
    #[command(
        after_help = "Examples:\n  ntdbg symbols upload build/app.pdb build/app.exe\n  ntdbg symbols upload build/*.pdb --store s3://crashes/prod\n  ntdbg analyze crash.dmp --symbols 'srv*s3://crashes/prod/symbols'"
    )]
    Upload {
        /// Symbol files and folders (searched recursively for .pdb, .exe, .dll, .sym).
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        #[arg(long, value_name = "URL|DIR", help = STORE_HELP)]
        store: Option<String>,
    },
}

/// Connection bounds of an HTTP surface.
#[derive(Debug, clap::Args)]
pub struct ConnectionArgs {
    /// Connections served at once (more wait).
    #[arg(long, value_name = "N", default_value_t = 256)]
    max_connections: usize,
    /// Seconds a request's headers may take to arrive.
    #[arg(long, value_name = "SECS", default_value_t = 10)]
    header_timeout: u64,
    /// Seconds a request's body may take to arrive.
    #[arg(long, value_name = "SECS", default_value_t = 60)]
    body_timeout: u64,
}

impl ConnectionArgs {
    fn limits(&self) -> Limits {
        Limits {
            connections: self.max_connections,
            header_timeout: std::time::Duration::from_secs(self.header_timeout.max(1)),
            body_timeout: std::time::Duration::from_secs(self.body_timeout.max(1)),
        }
    }
}

/// Runs a crash-server subcommand. Bad security options are usage errors (exit 2).
pub fn run(command: ServerCommand) -> anyhow::Result<ExitCode> {
    match command {
        ServerCommand::Collect {
            listen,
            db,
            store,
            tokens,
            unsafe_http,
            max_upload,
            rate_limit,
            workers,
            pages,
            token_env,
            connections,
            analysis,
        } => {
            let db = DbLocation::parse(db.as_deref())?;
            let workers = workers.unwrap_or(match db {
                DbLocation::Sqlite(_) => 1,
                DbLocation::Postgres(_) => 0,
            });
            let page_token = match token_env.as_deref().map(token_from) {
                Some(Err(code)) => return Ok(code),
                Some(Ok(t)) => Some(t),
                None => None,
            };
            let options = CollectOptions {
                exposure: Exposure {
                    addr: listen,
                    unsafe_http,
                },
                db,
                store: StoreUrl::parse(store.as_deref())?,
                tokens: tokens
                    .map(|f| ProductTokens::load(&f))
                    .transpose()
                    .map_err(anyhow::Error::msg)?,
                max_upload: max_upload.saturating_mul(1 << 20),
                rate_limit: (rate_limit, rate_limit.saturating_mul(5)),
                limits: connections.limits(),
                workers,
                worker: WorkerOptions {
                    triage: analysis.options(1)?,
                    ..Default::default()
                },
                pages: pages.then_some(page_token),
            };
            if let Err(e) = options
                .exposure
                .validate(options.tokens.is_some(), "--tokens FILE")
            {
                eprintln!("error: {e}");
                return Ok(ExitCode::from(2));
            }
            serve(listen, "collector", ntdbg_web::SUBMIT_PATH, |listener| {
                ntdbg_web::run_collector(listener, options, ntdbg_mcp::shutdown_signal())
            })
        }
        ServerCommand::Serve {
            listen,
            db,
            unsafe_http,
            token_env,
            connections,
        } => {
            let token = match token_env.as_deref().map(token_from) {
                Some(Err(code)) => return Ok(code),
                Some(Ok(t)) => Some(t),
                None => None,
            };
            let exposure = Exposure {
                addr: listen,
                unsafe_http,
            };
            if let Err(e) = exposure.validate(token.is_some(), "--token-env VAR") {
                eprintln!("error: {e}");
                return Ok(ExitCode::from(2));
            }
            let options = PageOptions {
                db: DbLocation::parse(db.as_deref())?,
                token,
                any_host: unsafe_http,
            };
            let limits = connections.limits();
            serve(listen, "crash-stats page", "/", |listener| async move {
                ntdbg_web::run_pages(
                    listener,
                    options,
                    &exposure,
                    &limits,
                    ntdbg_mcp::shutdown_signal(),
                )
                .await
            })
        }
        ServerCommand::Symbols(SymbolsCommand::Upload { paths, store }) => {
            upload_symbols(&paths, store.as_deref())
        }
    }
}

/// The token in the environment variable `var` (only its name is ever printed), or exit 2.
fn token_from(var: &str) -> Result<String, ExitCode> {
    match std::env::var(var) {
        Ok(t) if !t.trim().is_empty() => Ok(t),
        _ => {
            eprintln!("error: the environment variable {var} (--token-env) is not set or empty");
            Err(ExitCode::from(2))
        }
    }
}

/// Binds `addr`, says where it serves, and runs `surface` until ctrl-c or SIGTERM.
fn serve<F, Fut>(addr: SocketAddr, what: &str, path: &str, surface: F) -> anyhow::Result<ExitCode>
where
    F: FnOnce(tokio::net::TcpListener) -> Fut,
    Fut: std::future::Future<Output = Result<(), String>>,
{
    ntdbg_mcp::init_stderr_logging();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| anyhow::anyhow!("cannot listen on {addr}: {e}"))?;
        let local = listener.local_addr()?;
        eprintln!("ntdbg {what} listening on http://{local}{path}");
        surface(listener).await.map_err(anyhow::Error::msg)?;
        Ok(ExitCode::SUCCESS)
    })
}

/// `ntdbg symbols upload`.
fn upload_symbols(paths: &[PathBuf], store: Option<&str>) -> anyhow::Result<ExitCode> {
    let objects = Objects::open(&StoreUrl::parse(store)?)?;
    let files = symbol_files(paths)?;
    let (mut filed, mut already, mut failed) = (0, 0, 0);
    for file in &files {
        match upload_symbol_file(&objects, file) {
            Ok(s) => {
                if s.already {
                    already += 1;
                } else {
                    filed += 1;
                }
                println!(
                    "{}  {}{}",
                    objects.url().object_url(&s.key),
                    s.place.kind,
                    if s.already { " (already there)" } else { "" }
                );
            }
            Err(e) => {
                eprintln!("error: {e}");
                failed += 1;
            }
        }
    }
    println!(
        "{filed} file(s) uploaded, {already} already in {}, {failed} failed",
        objects.url()
    );
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Files as given; folders searched recursively for symbol files and images.
fn symbol_files(paths: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    const KINDS: &[&str] = &["pdb", "exe", "dll", "sys", "sym"];
    let mut files = Vec::new();
    let mut folders: Vec<PathBuf> = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p)
            .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", p.display()))?;
        if meta.is_dir() {
            folders.push(p.clone());
        } else {
            files.push(p.clone());
        }
    }
    while let Some(dir) = folders.pop() {
        let entries = std::fs::read_dir(&dir)
            .map_err(|e| anyhow::anyhow!("cannot read folder {}: {e}", dir.display()))?;
        let mut found: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
        found.sort();
        for path in found {
            if path.is_dir() {
                folders.push(path);
            } else if path
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| KINDS.iter().any(|k| e.eq_ignore_ascii_case(k)))
            {
                files.push(path);
            }
        }
    }
    Ok(files)
}
