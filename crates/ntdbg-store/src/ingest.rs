//! `ntdbg ingest`: analyse dumps as triage does and record each once, by content hash.

use crate::backend::{Backend, Param};
use crate::{sql, Store, StoreError};
use ntdbg_analysis::render::render_report;
use ntdbg_analysis::triage::{analyse_one, Analysed, FailedDump, TriageOptions};
use rayon::prelude::*;
use sha2::{Digest, Sha256};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// What an ingest did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IngestSummary {
    /// Files looked at.
    pub files: usize,
    /// Newly recorded and analysed.
    pub recorded: usize,
    /// Newly recorded as failed (the analysis rejected them).
    pub failed: usize,
    /// Already in the store (same content), left as they were.
    pub already: usize,
    /// Files that could not be read, with why; not recorded.
    pub unreadable: Vec<(String, String)>,
}

/// The SHA-256 of a file's bytes (lowercase hex) and its size.
pub fn content_hash(path: &Path) -> std::io::Result<(String, u64)> {
    let mut file = ntdbg_files::open_regular(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut size = 0u64;
    loop {
        let n = file.read(&mut buf)?;
        if n == 0 {
            break;
        }
        size += n as u64;
        hasher.update(&buf[..n]);
    }
    Ok((hex::encode(hasher.finalize()), size))
}

/// A dump's analysis as the store records it.
pub(crate) struct Record {
    pub(crate) hash: String,
    pub(crate) size: u64,
    pub(crate) outcome: Result<Analysed, FailedDump>,
}

/// `path` made absolute (so members can be opened from anywhere), unchanged when that fails.
pub(crate) fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}

/// Analyses the dump at `path` (absolute) whose content hash is known (symbols shared with the
/// run's other dumps when `options` holds a cache).
pub(crate) fn analyse(path: &Path, hash: String, size: u64, options: &TriageOptions) -> Record {
    Record {
        hash,
        size,
        outcome: analyse_one(path, options, &options.symbol_cache()),
    }
}

/// `name version` (or `name (timestamp)`) split at its last space: versions and timestamps
/// have none, file names may.
fn split_module_label(label: &str) -> (&str, &str) {
    label.rsplit_once(' ').unwrap_or((label, ""))
}

/// Inserts `record` unless its hash is there; whether it was new. Call inside a transaction.
pub(crate) fn insert_record(db: &mut dyn Backend, record: &Record) -> Result<bool, StoreError> {
    let now = crate::dates::now();
    let text = |s: &str| Param::Text(Some(s.to_string()));
    let none = Param::Text(None);
    let (path, params, modules) = match &record.outcome {
        Ok(a) => {
            let report = serde_json::to_string(&a.report)
                .map_err(|e| StoreError::new(format!("cannot serialize the report: {e}")))?;
            let time = a.time.map(|t| t as i64);
            let modules = serde_json::to_string(&a.modules).unwrap_or_else(|_| "[]".into());
            (
                &a.path,
                vec![
                    Param::Int(time),
                    Param::Int(Some(time.unwrap_or(now))),
                    Param::Int(Some(now)),
                    Param::Int(Some(0)),
                    none.clone(),
                    text(&a.signature),
                    text(&a.kind),
                    text(&a.report.dump.os_build),
                    text(&a.report.dump.arch),
                    Param::Text(Some(modules)),
                    Param::Text(Some(report)),
                    Param::Text(Some(render_report(&a.report))),
                ],
                a.modules.as_slice(),
            )
        }
        Err(f) => (
            &f.path,
            vec![
                Param::Int(None),
                Param::Int(Some(now)),
                Param::Int(Some(now)),
                Param::Int(Some(1)),
                text(&f.error),
                none.clone(),
                none.clone(),
                none.clone(),
                none.clone(),
                text("[]"),
                none.clone(),
                none,
            ],
            &[][..],
        ),
    };
    let mut all = vec![
        text(&record.hash),
        text(path),
        Param::Int(Some(record.size as i64)),
    ];
    all.extend(params);
    if db.execute(sql::INSERT_DUMP, &all)? == 0 {
        return Ok(false);
    }
    for label in modules {
        let (name, version) = split_module_label(label);
        db.execute(
            sql::INSERT_MODULE,
            &[text(&record.hash), text(name), text(version)],
        )?;
    }
    Ok(true)
}

impl Store {
    /// Whether a dump with this content hash is recorded.
    pub fn contains(&mut self, hash: &str) -> Result<bool, StoreError> {
        Ok(!self
            .db()
            .query(sql::DUMP_EXISTS, &[Param::Text(Some(hash.to_string()))])?
            .is_empty())
    }

    /// Records `record` once; whether it was new.
    pub(crate) fn record(&mut self, record: &Record) -> Result<bool, StoreError> {
        self.transaction(|db| insert_record(db, record))
    }
}

/// What became of one file.
enum Outcome {
    Recorded { failed: bool },
    Already,
    Unreadable(String, String),
}

/// Ingests `files` (`options.jobs` at a time): each is hashed, skipped when the store has its
/// content, else analysed as triage does and recorded. `progress(done, total)` is called
/// after each file. Stops at the first database error.
pub fn ingest_files(
    store: &Mutex<Store>,
    files: &[PathBuf],
    options: &TriageOptions,
    progress: &(dyn Fn(usize, usize) + Sync),
) -> Result<IngestSummary, StoreError> {
    let total = files.len();
    let done = Mutex::new(0usize);
    let lock = || {
        store
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    };
    let one = |path: &PathBuf| -> Result<Outcome, StoreError> {
        let path = absolute(path);
        let (hash, size) = match content_hash(&path) {
            Ok(h) => h,
            Err(e) => {
                return Ok(Outcome::Unreadable(
                    path.display().to_string(),
                    e.to_string(),
                ))
            }
        };
        if lock().contains(&hash)? {
            return Ok(Outcome::Already);
        }
        let record = analyse(&path, hash, size, options);
        let failed = record.outcome.is_err();
        Ok(if lock().record(&record)? {
            Outcome::Recorded { failed }
        } else {
            Outcome::Already
        })
    };
    let work = || -> Result<Vec<Outcome>, StoreError> {
        files
            .par_iter()
            .map(|path| {
                let outcome = one(path);
                let mut n = done
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                *n += 1;
                progress(*n, total);
                outcome
            })
            .collect()
    };
    let outcomes = match rayon::ThreadPoolBuilder::new()
        .num_threads(options.jobs)
        .build()
    {
        Ok(pool) => pool.install(work),
        Err(_) => work(),
    }?;
    let mut summary = IngestSummary {
        files: total,
        ..Default::default()
    };
    for o in outcomes {
        match o {
            Outcome::Recorded { failed: false } => summary.recorded += 1,
            Outcome::Recorded { failed: true } => summary.failed += 1,
            Outcome::Already => summary.already += 1,
            Outcome::Unreadable(p, e) => summary.unreadable.push((p, e)),
        }
    }
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_labels_split_at_the_version() {
        assert_eq!(
            split_module_label("crashy.exe 1.2.0.0"),
            ("crashy.exe", "1.2.0.0")
        );
        assert_eq!(
            split_module_label("My App.exe (0x6b0cccd2)"),
            ("My App.exe", "(0x6b0cccd2)")
        );
    }
}
