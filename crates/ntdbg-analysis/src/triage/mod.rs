//! Batch triage (`ntdbg triage`, MCP `triage_dumps`): analyse every dump in a folder in
//! parallel and group them by crash signature.
//!
//! The JSON shape is design.md's "Batch triage":
//! `{ "dumps", "buckets": [ { "signature", "count", "kind", "first_seen", "last_seen",
//! "modules", "dumps", "representative" } ], "failed": [ { "path", "error" } ] }`.

mod html;

pub use html::{esc as html_escape, render_html};

use crate::signature::SignatureConfig;
use crate::{analyze_checked, Report};
use ntdbg_engine::{Interrupt, Session};
use ntdbg_symbols::{SharedSymbols, DEFAULT_SYMBOL_MEMORY};
use ntdbg_targets::listing::{find_dump_files, format_unix, written_or_modified, WalkLimits};
use rayon::prelude::*;
use serde::Serialize;
use std::collections::{BTreeMap, HashMap};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How to triage a folder.
#[derive(Debug, Clone, Default)]
pub struct TriageOptions {
    /// Descend into sub-folders.
    pub recursive: bool,
    /// Worker threads; 0 lets rayon choose (one per core).
    pub jobs: usize,
    /// Symbol path for every dump (default: each dump's folder, then `_NT_SYMBOL_PATH`).
    pub symbols: Option<String>,
    /// Never contact symbol servers.
    pub offline: bool,
    /// What makes a signature.
    pub signature: SignatureConfig,
    /// Cancels the dumps not analysed yet (each is then listed as failed, `cancelled`) and
    /// receives `(dumps done, dumps in all)` progress.
    pub interrupt: Interrupt,
    /// The symbol cache the run's dumps share (an MCP server's); `None`: one for this run,
    /// of [`ntdbg_symbols::DEFAULT_SYMBOL_MEMORY`].
    pub shared_symbols: Option<Arc<SharedSymbols>>,
}

impl TriageOptions {
    /// The parsed-symbol cache the run shares: the one given, else a new one.
    pub fn symbol_cache(&self) -> Arc<SharedSymbols> {
        self.shared_symbols
            .clone()
            .unwrap_or_else(|| Arc::new(SharedSymbols::new(DEFAULT_SYMBOL_MEMORY)))
    }
}

/// The result of a batch triage. `R` is the representative report: [`Report`] here, its
/// stored JSON in the crash store (`ntdbg-store`).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct TriageResult<R = Report> {
    /// Dump files found (analysed or failed).
    pub dumps: usize,
    /// Crash buckets.
    pub buckets: Vec<Bucket<R>>,
    /// Dumps that could not be analysed.
    pub failed: Vec<FailedDump>,
}

/// Dumps that share a crash signature.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Bucket<R = Report> {
    /// The shared signature ([`Report::signature`]).
    pub signature: String,
    /// How many dumps.
    pub count: usize,
    /// The event's name: `EXCEPTION_ACCESS_VIOLATION`, a bugcheck name, or `none`.
    pub kind: String,
    /// Earliest dump time (UTC, from the dump header; the file time when it has none).
    pub first_seen: Option<String>,
    /// Latest dump time.
    pub last_seen: Option<String>,
    /// Faulting modules and first application modules on the stack, with their versions
    /// (`crashy.exe 1.2.0.0`, or `crashy.exe (0x6b0cccd2)` by timestamp), each once.
    pub modules: Vec<String>,
    /// The dumps' paths, sorted.
    pub dumps: Vec<String>,
    /// The full report of the first dump (the shape of `analyze --json`; its schema is left
    /// open here so that tool definitions stay small).
    #[schemars(with = "serde_json::Map<String, serde_json::Value>")]
    pub representative: R,
}

impl<R> Bucket<R> {
    /// The same bucket with its representative replaced by `f(representative)`.
    pub fn map_representative<S>(self, f: impl FnOnce(R) -> S) -> Bucket<S> {
        Bucket {
            signature: self.signature,
            count: self.count,
            kind: self.kind,
            first_seen: self.first_seen,
            last_seen: self.last_seen,
            modules: self.modules,
            dumps: self.dumps,
            representative: f(self.representative),
        }
    }
}

/// A dump that could not be analysed.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct FailedDump {
    /// Its path.
    pub path: String,
    /// Why.
    pub error: String,
}

/// Progress callback: `(done, total)`, called from worker threads.
pub type Progress<'a> = &'a (dyn Fn(usize, usize) + Sync);

/// Triage every dump under `dir` (found within [`WalkLimits::SHELL`]). Fails only when `dir`
/// cannot be read.
pub fn triage_dumps(
    dir: &Path,
    options: &TriageOptions,
    progress: Progress<'_>,
) -> std::io::Result<TriageResult> {
    let found = find_dump_files(dir, &WalkLimits::SHELL.recursive(options.recursive))?;
    Ok(triage_paths(&found.files, options, progress))
}

/// One analysed dump, as [`group`] buckets it (`R`: its report, or what stands for it).
#[derive(Debug, Clone)]
pub struct Analysed<R = Report> {
    /// Its path.
    pub path: String,
    /// When it was written (Unix seconds, from the dump header; the file time when it has none).
    pub time: Option<u64>,
    /// Its crash signature ([`Report::signature`]).
    pub signature: String,
    /// The event's name: `EXCEPTION_ACCESS_VIOLATION`, a bugcheck name, or `none`.
    pub kind: String,
    /// Affected modules with their versions (see [`Bucket::modules`]).
    pub modules: Vec<String>,
    /// Its report.
    pub report: R,
}

/// Triage the given dump files (in parallel, `options.jobs` threads).
///
/// Only one report per signature is kept while the dumps are analysed (the representative:
/// the bucket's first dump by path), so memory grows with the buckets, not with the dumps.
pub fn triage_paths(
    files: &[PathBuf],
    options: &TriageOptions,
    progress: Progress<'_>,
) -> TriageResult {
    let total = files.len();
    let shared = options.symbol_cache();
    let representatives = Representatives::default();
    // Counted and reported under one lock, so reports from the workers arrive in order.
    let done = std::sync::Mutex::new(0usize);
    let work = || -> Vec<Result<Analysed<()>, FailedDump>> {
        files
            .par_iter()
            .map(|path| {
                let r = analyse_one(path, options, &shared).map(|a| representatives.offer(a));
                let mut n = done
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                *n += 1;
                progress(*n, total);
                options
                    .interrupt
                    .report(*n as u64, Some(total as u64), "analysing dumps");
                r
            })
            .collect()
    };
    let results = match rayon::ThreadPoolBuilder::new()
        .num_threads(options.jobs)
        .build()
    {
        Ok(pool) => pool.install(work),
        Err(_) => work(),
    };
    representatives.fill(group(results))
}

/// The report of each signature's first dump by path, kept while the others are dropped.
#[derive(Default)]
struct Representatives(std::sync::Mutex<HashMap<String, (String, Report)>>);

impl Representatives {
    /// Keeps `analysed`'s report if its dump is the first by path of its signature so far;
    /// returns the rest of what [`group`] needs.
    fn offer(&self, analysed: Analysed) -> Analysed<()> {
        let Analysed {
            path,
            time,
            signature,
            kind,
            modules,
            report,
        } = analysed;
        let mut kept = self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let first = kept.get(&signature).is_none_or(|(p, _)| path < *p);
        if first {
            kept.insert(signature.clone(), (path.clone(), report));
        }
        Analysed {
            path,
            time,
            signature,
            kind,
            modules,
            report: (),
        }
    }

    /// The grouped result with each bucket's representative report put back.
    fn fill(self, grouped: TriageResult<()>) -> TriageResult {
        let mut kept = self
            .0
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let buckets = grouped
            .buckets
            .into_iter()
            .filter_map(|b| {
                let (_, report) = kept.remove(&b.signature)?;
                Some(b.map_representative(|()| report))
            })
            .collect();
        TriageResult {
            dumps: grouped.dumps,
            buckets,
            failed: grouped.failed,
        }
    }
}

/// Why `ntdbg list` calls the dump at `path` unreadable, when its headers already say so: a
/// file that does not open gets the same words in `list`, `triage` and `ingest`.
fn unreadable_reason(path: &Path) -> Option<String> {
    let error = crate::listing::summarize_dump(path).error?;
    Some(format!(
        "{} is unreadable: {}",
        path.display(),
        error.message
    ))
}

/// Analyses one dump as triage does (a panic in the analysis is an error, not a crash), with
/// symbols from `shared` when dumps of the same build were analysed before.
pub fn analyse_one(
    path: &Path,
    options: &TriageOptions,
    shared: &Arc<SharedSymbols>,
) -> Result<Analysed, FailedDump> {
    let failed = |error: String| FailedDump {
        path: path.display().to_string(),
        error,
    };
    if let Err(cancelled) = options.interrupt.check() {
        return Err(failed(cancelled.to_string()));
    }
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        let mut session = Session::open_dump(path, options.symbols.as_deref())
            .map_err(|e| unreadable_reason(path).unwrap_or_else(|| e.to_string()))?;
        session.set_interrupt(options.interrupt.clone());
        if options.offline {
            session.symbols().set_offline(true);
        }
        session.symbols().share(Some(shared.clone()));
        let report = analyze_checked(&session, &options.signature).map_err(|e| e.to_string())?;
        let modules = affected_modules(&session, &report);
        let written = session.target().system().dump_time.map(u64::from);
        Ok::<(Report, Vec<String>, Option<u64>), String>((report, modules, written))
    }));
    let (report, modules, written) = match outcome {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => return Err(failed(e)),
        Err(_) => return Err(failed("internal error: the analysis panicked".into())),
    };
    let time = written_or_modified(written, path);
    let kind = report
        .event
        .name
        .clone()
        .unwrap_or_else(|| report.event.kind.clone());
    Ok(Analysed {
        path: path.display().to_string(),
        time,
        signature: report.signature.clone(),
        kind,
        modules,
        report,
    })
}

/// The faulting module and the module of the first application frame the signature named
/// (never a frame the walker only guessed), each as `name version` (or `name (timestamp)`
/// without a version resource).
fn affected_modules(session: &Session, report: &Report) -> Vec<String> {
    let label = |m: &crate::report::ModuleFacts| match &m.version {
        Some(v) => format!("{} {v}", m.name),
        None => format!("{} ({})", m.name, m.timestamp),
    };
    let mut out: Vec<String> = report.faulting_module.iter().map(label).collect();
    let app = report
        .signature_frames
        .iter()
        .find(|f| f.role == crate::signature::SignatureRole::Named)
        .and_then(|f| report.stack.iter().find(|s| s.frame == f.frame))
        .and_then(|f| f.module.as_deref())
        .and_then(|m| session.module_by_name(m))
        .map(|m| label(&crate::report::module_facts(m)));
    if let Some(a) = app {
        if !out.contains(&a) {
            out.push(a);
        }
    }
    out
}

/// Groups analysed dumps by signature, largest bucket first; each bucket's representative is
/// the report of its first dump by path.
pub fn group<R>(results: Vec<Result<Analysed<R>, FailedDump>>) -> TriageResult<R> {
    let dumps = results.len();
    let mut failed = Vec::new();
    let mut by_signature: BTreeMap<String, Vec<Analysed<R>>> = BTreeMap::new();
    for r in results {
        match r {
            Ok(a) => by_signature.entry(a.signature.clone()).or_default().push(a),
            Err(f) => failed.push(f),
        }
    }
    let mut buckets: Vec<Bucket<R>> = by_signature
        .into_iter()
        .filter_map(|(signature, mut members)| {
            members.sort_by(|a, b| a.path.cmp(&b.path));
            let first = members.iter().filter_map(|m| m.time).min();
            let last = members.iter().filter_map(|m| m.time).max();
            let mut modules: Vec<String> = Vec::new();
            for label in members.iter().flat_map(|m| &m.modules) {
                if !modules.contains(label) {
                    modules.push(label.clone());
                }
            }
            let paths = members.iter().map(|m| m.path.clone()).collect();
            let count = members.len();
            let first_member = members.into_iter().next()?;
            Some(Bucket {
                signature,
                count,
                kind: first_member.kind,
                first_seen: first.map(format_unix),
                last_seen: last.map(format_unix),
                modules,
                dumps: paths,
                representative: first_member.report,
            })
        })
        .collect();
    buckets.sort_by(|a, b| b.count.cmp(&a.count).then(a.signature.cmp(&b.signature)));
    failed.sort_by(|a, b| a.path.cmp(&b.path));
    TriageResult {
        dumps,
        buckets,
        failed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    fn samples() -> Vec<PathBuf> {
        ["crashy-x64-null.dmp", "crashy-x64-divzero.dmp"]
            .map(ntdbg_testutil::sample)
            .to_vec()
    }

    #[test]
    fn a_cancelled_triage_analyses_nothing_more() {
        let options = TriageOptions {
            offline: true,
            jobs: 1,
            ..Default::default()
        };
        options.interrupt.cancel();
        let result = triage_paths(&samples(), &options, &|_, _| {});
        assert!(result.buckets.is_empty());
        assert_eq!(result.failed.len(), 2);
        assert!(result.failed.iter().all(|f| f.error == "cancelled"));
    }

    #[test]
    fn triage_reports_each_dump_done() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        let options = TriageOptions {
            offline: true,
            jobs: 1,
            interrupt: Interrupt::with_progress(move |p| {
                sink.lock().unwrap().push((p.done, p.total))
            }),
            ..Default::default()
        };
        let result = triage_paths(&samples(), &options, &|_, _| {});
        assert!(result.failed.is_empty(), "{:?}", result.failed);
        assert_eq!(*seen.lock().unwrap(), vec![(1, Some(2)), (2, Some(2))]);
    }

    #[test]
    fn a_hundred_dumps_of_one_build_parse_each_module_once() {
        let run = |files: &[PathBuf]| {
            let shared = Arc::new(SharedSymbols::new(DEFAULT_SYMBOL_MEMORY));
            let options = TriageOptions {
                offline: true,
                jobs: 2,
                shared_symbols: Some(shared.clone()),
                ..Default::default()
            };
            (triage_paths(files, &options, &|_, _| {}), shared.stats())
        };
        let one = vec![ntdbg_testutil::sample("crashy-x64-null.dmp")];
        let hundred = vec![one[0].clone(); 100];
        let (alone, per_dump) = run(&one);
        let (together, stats) = run(&hundred);
        assert!(per_dump.loads > 0);
        assert_eq!(stats.loads, per_dump.loads);
        assert_eq!(stats.hits, 99 * per_dump.loads);
        assert_eq!(together.buckets.len(), 1);
        assert_eq!(together.buckets[0].count, 100);
        let report =
            |r: &TriageResult| serde_json::to_string(&r.buckets[0].representative).unwrap();
        assert_eq!(report(&together), report(&alone));
    }
}
