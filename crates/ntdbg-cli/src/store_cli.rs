//! `ntdbg ingest`, `ntdbg crashes`, `ntdbg enqueue` and `ntdbg worker`: the crash store
//! (`ntdbg-store`) from the command line.

use crate::batch::{progress_bar, write_summary};
use clap::Subcommand;
use ntdbg_analysis::triage::{self, TriageOptions};
use ntdbg_store::{
    parse_time, CrashQuery, CrashesAnswer, DbLocation, ModuleVersions, NewSince, Store,
    StoredTriage, WorkerOptions,
};
use ntdbg_targets::listing::{find_dump_files, WalkLimits};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::Duration;

/// `--db` help, shared by the four subcommands.
pub(crate) const DB_HELP: &str =
    "The crash database: a SQLite file, or postgres://USER@HOST/DB. Default: \
                       crashes.db in the user's data folder (e.g. ~/.local/share/ntdbg)";

/// `--store` help, shared by the commands that read or write the object store.
pub(crate) const STORE_HELP: &str = "The object store for dumps and symbols: a folder, or \
    s3://BUCKET/PREFIX (endpoint, region and credentials from AWS_ENDPOINT_URL, AWS_REGION, \
    AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY; AWS_ALLOW_HTTP=true for plain HTTP). Default: \
    store in the user's data folder (e.g. ~/.local/share/ntdbg/store)";

/// The store's subcommands.
#[derive(Debug, Subcommand)]
pub enum StoreCommand {
    /// Analyse dumps (files or folders, recursively) and record each once in the crash
    /// database, by content hash.
    #[command(
        after_help = "Examples:\n  ntdbg ingest ./crashes\n  ntdbg ingest ./crashes --db crashes.db --jobs 4\n  ntdbg ingest ./crashes --db postgres://ntdbg@db.internal/crashes"
    )]
    Ingest {
        /// Dump files and folders.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        #[arg(long, value_name = "URL|FILE", help = DB_HELP)]
        db: Option<String>,
        /// Dumps analysed at once (default: one per core).
        #[arg(long, short = 'j', value_name = "N")]
        jobs: Option<usize>,
        #[command(flatten)]
        analysis: AnalysisArgs,
    },
    /// Ask the crash database: top buckets over a period, new buckets, one bucket's members,
    /// counts by module version.
    #[command(
        after_help = "Examples:\n  ntdbg crashes --since 7d\n  ntdbg crashes --new-since 2026-11-01 --json\n  ntdbg crashes --module crashy.exe --new-since 1.3\n  ntdbg crashes --bucket 'crashy!mode_null'\n  ntdbg crashes --module crashy.exe\n  ntdbg crashes --html crashes.html"
    )]
    Crashes {
        #[arg(long, value_name = "URL|FILE", help = DB_HELP)]
        db: Option<String>,
        /// Only dumps seen since then: 2026-11-30, 2026-11-30T12:00:00Z, 7d or 12h.
        #[arg(long, value_name = "TIME")]
        since: Option<String>,
        /// Only dumps seen until then (same forms as --since).
        #[arg(long, value_name = "TIME")]
        until: Option<String>,
        /// Only buckets first seen since TIME, or (with --module) never seen with that
        /// module older than VERSION.
        #[arg(long, value_name = "TIME|VERSION")]
        new_since: Option<String>,
        /// One bucket, all its dumps and its representative: its signature, or part of it.
        #[arg(long, value_name = "SIGNATURE")]
        bucket: Option<String>,
        /// Dumps and buckets per version of this module (with --new-since VERSION: the
        /// module whose version counts).
        #[arg(long, value_name = "NAME")]
        module: Option<String>,
        /// Only the N largest buckets.
        #[arg(long, value_name = "N")]
        top: Option<usize>,
        /// Print JSON (the shape of `ntdbg triage --json`) instead of text.
        #[arg(long)]
        json: bool,
        /// Also write the buckets as a self-contained HTML report to this file.
        #[arg(long, value_name = "FILE")]
        html: Option<PathBuf>,
    },
    /// Queue dumps (files or folders, recursively) for `ntdbg worker`s. With --store each is
    /// copied into the object store first, so workers need no shared folder.
    #[command(
        after_help = "Examples:\n  ntdbg enqueue /srv/crashes --db postgres://ntdbg@db.internal/crashes\n  ntdbg enqueue ./crashes --db postgres://ntdbg@db.internal/crashes --store s3://crashes/prod"
    )]
    Enqueue {
        /// Dump files and folders.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        #[arg(long, value_name = "URL|FILE", help = DB_HELP)]
        db: Option<String>,
        #[arg(long, value_name = "URL|DIR", help = STORE_HELP)]
        store: Option<String>,
    },
    /// Take queued dumps one at a time, analyse and record them; exits when the queue is
    /// empty (unless --wait). Run as many as you like, on as many machines.
    #[command(
        after_help = "Examples:\n  ntdbg worker --db postgres://ntdbg@db.internal/crashes\n  ntdbg worker --db postgres://ntdbg@db.internal/crashes --wait"
    )]
    Worker {
        #[arg(long, value_name = "URL|FILE", help = DB_HELP)]
        db: Option<String>,
        /// Keep polling an empty queue instead of exiting.
        #[arg(long)]
        wait: bool,
        /// Seconds a claimed dump stays this worker's; after that (the worker died) another
        /// takes it again.
        #[arg(long, value_name = "SECS", default_value_t = 600)]
        lease: u64,
        #[command(flatten)]
        analysis: AnalysisArgs,
    },
}

/// How dumps are analysed (as `ntdbg triage`).
#[derive(Debug, clap::Args)]
pub(crate) struct AnalysisArgs {
    /// Symbol path for every dump (see `analyze --help`).
    #[arg(long, short = 's', value_name = "PATH")]
    symbols: Option<String>,
    /// Do not contact symbol servers (also NTDBG_OFFLINE=1); cached files are still used.
    #[arg(long)]
    offline: bool,
    /// Signature rules (see `triage --help`).
    #[arg(long, value_name = "FILE")]
    signature_rules: Option<PathBuf>,
}

impl AnalysisArgs {
    /// The analysis settings of `jobs` threads.
    pub(crate) fn options(&self, jobs: usize) -> anyhow::Result<TriageOptions> {
        Ok(TriageOptions {
            recursive: true,
            jobs,
            symbols: self.symbols.clone(),
            offline: self.offline,
            signature: crate::signature_config(self.signature_rules.as_deref())?,
            // One cache for the whole run: dumps of the same build parse their symbols once.
            shared_symbols: Some(std::sync::Arc::new(ntdbg_symbols::SharedSymbols::new(
                ntdbg_symbols::DEFAULT_SYMBOL_MEMORY,
            ))),
            ..Default::default()
        })
    }
}

/// Runs a store subcommand.
pub fn run(command: StoreCommand) -> anyhow::Result<ExitCode> {
    match command {
        StoreCommand::Ingest {
            paths,
            db,
            jobs,
            analysis,
        } => ingest(&paths, db.as_deref(), &analysis.options(jobs.unwrap_or(0))?),
        StoreCommand::Crashes {
            db,
            since,
            until,
            new_since,
            bucket,
            module,
            top,
            json,
            html,
        } => {
            let now = ntdbg_store::now();
            let time = |t: Option<String>| t.map(|t| parse_time(&t, now)).transpose();
            let query = CrashQuery {
                since: time(since)?,
                until: time(until)?,
                new_since: new_since.map(|n| NewSince::parse(&n, now)),
                bucket,
                module,
                top,
            };
            crashes(db.as_deref(), &query, json, html.as_deref())
        }
        StoreCommand::Enqueue { paths, db, store } => {
            let files = dump_files(&paths)?;
            let objects = store
                .map(|url| {
                    ntdbg_objects::Objects::open(&ntdbg_objects::StoreUrl::parse(Some(&url))?)
                })
                .transpose()?;
            let mut store = open(db.as_deref())?;
            let added = match &objects {
                Some(objects) => store.enqueue_into(objects, &files)?,
                None => store.enqueue(&files)?,
            };
            println!(
                "{} dump(s) queued ({} already queued); {} in the queue of {}",
                added,
                files.len() - added,
                store.queued()?,
                store.location()
            );
            Ok(ExitCode::SUCCESS)
        }
        StoreCommand::Worker {
            db,
            wait,
            lease,
            analysis,
        } => {
            let location = DbLocation::parse(db.as_deref())?;
            let options = WorkerOptions {
                lease: Duration::from_secs(lease),
                wait,
                triage: analysis.options(1)?,
                ..Default::default()
            };
            let summary =
                ntdbg_store::run_worker(&location, &options, &|m| eprintln!("worker: {m}"))?;
            println!(
                "{} recorded, {} failed, {} already in the store, {} unreadable, {} left queued (store unreachable)",
                summary.recorded, summary.failed, summary.already, summary.unreadable, summary.deferred
            );
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn open(db: Option<&str>) -> anyhow::Result<Store> {
    Ok(Store::open(&DbLocation::parse(db)?)?)
}

/// [`open`] for a question: a SQLite file must already be there (a mistyped `--db` would
/// otherwise create an empty database and answer that nothing crashed).
fn open_existing(db: Option<&str>) -> anyhow::Result<Store> {
    let location = DbLocation::parse(db)?;
    if let DbLocation::Sqlite(path) = &location {
        if !path.is_file() {
            anyhow::bail!(
                "no crash database at {}: `ntdbg ingest` makes one (check --db)",
                path.display()
            );
        }
    }
    Ok(Store::open(&location)?)
}

/// The dump files among `paths`: files as given, folders searched recursively.
fn dump_files(paths: &[PathBuf]) -> anyhow::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for p in paths {
        let meta = std::fs::metadata(p)
            .map_err(|e| anyhow::anyhow!("cannot read {}: {e}", p.display()))?;
        if meta.is_dir() {
            files.extend(
                find_dump_files(p, &WalkLimits::SHELL)
                    .map_err(|e| anyhow::anyhow!("cannot read folder {}: {e}", p.display()))?
                    .files,
            );
        } else {
            files.push(p.clone());
        }
    }
    Ok(files)
}

/// `ntdbg ingest`.
fn ingest(
    paths: &[PathBuf],
    db: Option<&str>,
    options: &TriageOptions,
) -> anyhow::Result<ExitCode> {
    let files = dump_files(paths)?;
    let store = open(db)?;
    let location = store.location().to_string();
    let store = Mutex::new(store);
    let bar = progress_bar(files.len());
    let progress = |done: usize, _total: usize| {
        if let Some(b) = &bar {
            b.set_position(done as u64);
        }
    };
    let summary = ntdbg_store::ingest_files(&store, &files, options, &progress);
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let summary = summary?;
    for (path, error) in &summary.unreadable {
        eprintln!("warning: cannot read {path}: {error}");
    }
    println!(
        "{} dump(s): {} recorded, {} failed analysis (recorded as failed), {} already in {}",
        summary.files, summary.recorded, summary.failed, summary.already, location
    );
    Ok(if summary.unreadable.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `ntdbg crashes`.
fn crashes(
    db: Option<&str>,
    query: &CrashQuery,
    json: bool,
    html: Option<&Path>,
) -> anyhow::Result<ExitCode> {
    let mut store = open_existing(db)?;
    let answer = store.crashes(query)?;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    match &answer {
        CrashesAnswer::Buckets(result) => {
            if let Some(path) = html {
                let page = triage::render_html(result, &store.location().to_string());
                std::fs::write(path, page)
                    .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
            }
            if json {
                serde_json::to_writer_pretty(&mut out, result)?;
                writeln!(out)?;
            } else {
                write_buckets(&mut out, result, query.bucket.is_some())?;
            }
        }
        CrashesAnswer::Modules(versions) => {
            if json {
                serde_json::to_writer_pretty(&mut out, versions)?;
                writeln!(out)?;
            } else {
                write_versions(&mut out, versions)?;
            }
        }
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// Frames of a bucket's representative stack shown by `--bucket`.
const REPRESENTATIVE_FRAMES: usize = 12;

/// The buckets as `ntdbg triage` prints them; for one bucket, every dump and the
/// representative's stack.
fn write_buckets(out: &mut impl Write, r: &StoredTriage, one: bool) -> std::io::Result<()> {
    let describe = |rep: &serde_json::Value| {
        rep.pointer("/event/description")
            .and_then(|d| d.as_str())
            .unwrap_or("")
            .to_string()
    };
    write_summary(out, r, describe, if one { usize::MAX } else { 3 })?;
    if !one {
        return Ok(());
    }
    for b in &r.buckets {
        let path = b
            .representative
            .pointer("/dump/path")
            .and_then(|p| p.as_str());
        writeln!(out, "\nrepresentative: {}", path.unwrap_or("?"))?;
        let frames = b.representative["stack"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        for f in frames.iter().take(REPRESENTATIVE_FRAMES) {
            let s = |k: &str| f[k].as_str().map(str::to_string);
            let name = match (s("module"), s("function"), s("offset")) {
                (Some(m), Some(func), Some(o)) => format!("{m}!{func}+{o}"),
                (Some(m), Some(func), None) => format!("{m}!{func}"),
                (Some(m), None, Some(o)) => format!("{m}+{o}"),
                _ => s("address").unwrap_or_default(),
            };
            writeln!(
                out,
                "  {:02} {name}  ({})",
                f["frame"].as_u64().unwrap_or(0),
                s("found_by").unwrap_or_default()
            )?;
        }
    }
    Ok(())
}

/// Counts by module version as a table.
fn write_versions(out: &mut impl Write, v: &ModuleVersions) -> std::io::Result<()> {
    writeln!(out, "{}: {} version(s)", v.module, v.versions.len())?;
    if v.versions.is_empty() {
        return Ok(());
    }
    writeln!(out, "{:>7} {:>8}  version", "dumps", "buckets")?;
    for m in &v.versions {
        writeln!(out, "{:>7} {:>8}  {}", m.dumps, m.buckets, m.version)?;
    }
    Ok(())
}
