//! `ntdbg enqueue` and `ntdbg worker`: a work queue in the database, taken by any number of
//! workers on any number of machines.
//!
//! A worker claims the oldest path whose lease has expired (`FOR UPDATE SKIP LOCKED` on
//! PostgreSQL) and sets a new lease, analyses it outside any transaction, then records it and
//! dequeues it in one transaction. A killed worker's path is claimed again when its lease
//! expires; a path claimed [`WorkerOptions::max_attempts`] times without finishing is recorded
//! as failed. Recording is keyed by content hash, so a path analysed twice is counted once.
//!
//! A queued entry is a file path or an object URL in a store ([`crate::source`]): a dump from
//! a store is fetched when the store is remote, recorded under its URL, and analysed with the
//! symbols uploaded to that store. A store that cannot be reached leaves the entry queued for
//! a later claim.

use crate::backend::Param;
use crate::dates::now as unix_now;
use crate::ingest::{absolute, analyse, content_hash, insert_record, Record};
use crate::source::{symbol_path, Sources, Unavailable};
use crate::{sql, DbLocation, Store, StoreError};
use ntdbg_analysis::triage::{FailedDump, TriageOptions};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// Wakes this process's workers waiting on an empty queue as soon as work is queued (the
/// collector rings it after each commit), instead of at their next poll.
#[derive(Debug, Default)]
pub struct Doorbell {
    rings: Mutex<u64>,
    rung: Condvar,
}

impl Doorbell {
    /// Wakes every waiting worker.
    pub fn ring(&self) {
        *self.rings.lock().unwrap_or_else(|e| e.into_inner()) += 1;
        self.rung.notify_all();
    }

    /// How many times it has rung.
    fn count(&self) -> u64 {
        *self.rings.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Waits until it rings after `seen` rings, or `timeout` passes.
    fn wait(&self, seen: u64, timeout: Duration) {
        let rings = self.rings.lock().unwrap_or_else(|e| e.into_inner());
        let _ = self
            .rung
            .wait_timeout_while(rings, timeout, |n| *n == seen)
            .unwrap_or_else(|e| e.into_inner());
    }
}

/// How a worker runs.
#[derive(Debug, Clone)]
pub struct WorkerOptions {
    /// How long a claimed path is the worker's before others may take it again; longer than
    /// the slowest analysis.
    pub lease: Duration,
    /// Keep polling an empty queue instead of exiting.
    pub wait: bool,
    /// Pause between polls of an empty queue.
    pub poll: Duration,
    /// How long to keep reconnecting to a database that went away before giving up.
    pub reconnect_for: Duration,
    /// Claims of one path after which it is recorded as failed rather than analysed again
    /// (its analysis killed every worker that tried).
    pub max_attempts: i64,
    /// The analysis settings (`jobs` is unused: one dump at a time per worker).
    pub triage: TriageOptions,
    /// Rung when work arrives in this process (the collector's own workers).
    pub doorbell: Option<Arc<Doorbell>>,
    /// Set to make the worker return after the dump in hand (the collector shutting down).
    pub stop: Option<Arc<AtomicBool>>,
}

impl Default for WorkerOptions {
    fn default() -> WorkerOptions {
        WorkerOptions {
            lease: Duration::from_secs(600),
            wait: false,
            poll: Duration::from_millis(500),
            reconnect_for: Duration::from_secs(300),
            max_attempts: 3,
            triage: TriageOptions::default(),
            doorbell: None,
            stop: None,
        }
    }
}

/// What a worker did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkerSummary {
    /// Newly recorded and analysed.
    pub recorded: usize,
    /// Newly recorded as failed.
    pub failed: usize,
    /// Already in the store (same content).
    pub already: usize,
    /// Paths that could not be read, taken off the queue unrecorded.
    pub unreadable: usize,
    /// Claims left queued because their store could not be reached (tried again later).
    pub deferred: usize,
}

impl Store {
    /// Queues `paths` (made absolute); how many were not queued already.
    pub fn enqueue(&mut self, paths: &[PathBuf]) -> Result<usize, StoreError> {
        let entries: Vec<String> = paths
            .iter()
            .map(|p| absolute(p).display().to_string())
            .collect();
        self.enqueue_entries(&entries)
    }

    /// Copies each of `files` into `objects` (once, by content hash) and queues it there, so
    /// that workers on any machine read it from the store; how many were not queued already.
    pub fn enqueue_into(
        &mut self,
        objects: &ntdbg_objects::Objects,
        files: &[PathBuf],
    ) -> Result<usize, StoreError> {
        let mut entries = Vec::with_capacity(files.len());
        for file in files {
            let (hash, _) = content_hash(file)
                .map_err(|e| StoreError::new(format!("cannot read {}: {e}", file.display())))?;
            let key = ntdbg_objects::keys::dump_key(&hash);
            let fail = |e: ntdbg_objects::ObjectError| StoreError::transient(e.message);
            if !objects.exists_blocking(&key).map_err(fail)? {
                let bytes = std::fs::read(file)
                    .map_err(|e| StoreError::new(format!("cannot read {}: {e}", file.display())))?;
                objects.put_blocking(&key, bytes.into()).map_err(fail)?;
            }
            entries.push(objects.url().object_url(&key));
        }
        self.enqueue_entries(&entries)
    }

    /// Queues paths or object URLs as given; how many were not queued already.
    fn enqueue_entries(&mut self, entries: &[String]) -> Result<usize, StoreError> {
        let now = unix_now();
        self.transaction(|db| {
            let mut added = 0;
            for entry in entries {
                added += db.execute(
                    sql::ENQUEUE,
                    &[Param::Text(Some(entry.clone())), Param::Int(Some(now))],
                )? as usize;
            }
            Ok(added)
        })
    }

    /// Paths still queued, leased or not.
    pub fn queued(&mut self) -> Result<u64, StoreError> {
        let rows = self.db().query(sql::QUEUED, &[])?;
        Ok(crate::store::first_int(&rows)?.unwrap_or(0) as u64)
    }

    /// Claims the next path for `lease`: the path and how many times it was claimed before.
    fn claim(&mut self, lease: Duration) -> Result<Option<(String, i64)>, StoreError> {
        let claim = sql::claim_next(self.db().dialect());
        let now = unix_now();
        let until = now + lease.as_secs().max(1) as i64;
        self.transaction(|db| {
            let rows = db.query(claim, &[Param::Int(Some(now))])?;
            let Some(row) = rows.first() else {
                return Ok(None);
            };
            let path = row.text(0)?.unwrap_or_default();
            let attempts = row.int(1)?.unwrap_or(0);
            db.execute(
                sql::LEASE,
                &[Param::Int(Some(until)), Param::Text(Some(path.clone()))],
            )?;
            Ok(Some((path, attempts)))
        })
    }

    /// Records the path's analysis (when there is one) and takes it off the queue, together;
    /// whether the record was new.
    fn complete(&mut self, path: &str, record: Option<&Record>) -> Result<bool, StoreError> {
        self.transaction(|db| {
            let new = match record {
                Some(r) => insert_record(db, r)?,
                None => false,
            };
            db.execute(sql::DEQUEUE, &[Param::Text(Some(path.to_string()))])?;
            Ok(new)
        })
    }
}

/// Runs `f` on the store, reconnecting with backoff while the database is away (for at most
/// [`WorkerOptions::reconnect_for`]); `log` hears about each retry.
fn with_store<T>(
    slot: &mut Option<Store>,
    location: &DbLocation,
    options: &WorkerOptions,
    log: &dyn Fn(&str),
    mut f: impl FnMut(&mut Store) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    let deadline = Instant::now() + options.reconnect_for;
    let mut backoff = Duration::from_millis(200);
    loop {
        let result = match slot {
            Some(store) => f(store),
            None => Store::open(location).and_then(|mut store| {
                let r = f(&mut store);
                *slot = Some(store);
                r
            }),
        };
        match result {
            Err(e) if e.transient && Instant::now() < deadline => {
                log(&format!(
                    "{e}; reconnecting in {:.1} s",
                    backoff.as_secs_f64()
                ));
                *slot = None;
                std::thread::sleep(backoff);
                backoff = (backoff * 2).min(Duration::from_secs(5));
            }
            other => return other,
        }
    }
}

/// Takes paths from the queue at `location` until it is empty, leased paths included (or
/// forever with [`WorkerOptions::wait`], until [`WorkerOptions::stop`]), analysing and
/// recording each.
pub fn run_worker(
    location: &DbLocation,
    options: &WorkerOptions,
    log: &dyn Fn(&str),
) -> Result<WorkerSummary, StoreError> {
    let mut slot = None;
    let mut summary = WorkerSummary::default();
    let mut sources = Sources::default();
    let stopped = || {
        options
            .stop
            .as_ref()
            .is_some_and(|s| s.load(Ordering::Relaxed))
    };
    while !stopped() {
        let rings = options.doorbell.as_ref().map_or(0, |d| d.count());
        let claimed = with_store(&mut slot, location, options, log, |s| {
            s.claim(options.lease)
        })?;
        let Some((path, attempts)) = claimed else {
            // Paths leased by other workers are not done yet: one whose worker died comes
            // back when its lease expires, so only an empty queue ends the work.
            let left = with_store(&mut slot, location, options, log, |s| s.queued())?;
            if left == 0 && !options.wait {
                return Ok(summary);
            }
            match &options.doorbell {
                Some(bell) => bell.wait(rings, options.poll),
                None => std::thread::sleep(options.poll),
            }
            continue;
        };
        let source = match sources.open(&path) {
            Ok(source) => source,
            Err(Unavailable::Missing(why)) => {
                log(&format!("{why}; taken off the queue"));
                summary.unreadable += 1;
                with_store(&mut slot, location, options, log, |s| {
                    s.complete(&path, None)
                })?;
                continue;
            }
            Err(Unavailable::Failed(why)) => {
                log(&format!(
                    "{why}; left queued, tried again when its lease ends"
                ));
                summary.deferred += 1;
                std::thread::sleep(options.poll);
                continue;
            }
        };
        let record = match content_hash(&source.file) {
            Err(e) => {
                log(&format!(
                    "{path}: cannot read it ({e}); taken off the queue"
                ));
                summary.unreadable += 1;
                None
            }
            Ok((hash, size)) => {
                if with_store(&mut slot, location, options, log, |s| s.contains(&hash))? {
                    summary.already += 1;
                    None
                } else if attempts >= options.max_attempts {
                    Some(Record {
                        hash,
                        size,
                        outcome: Err(FailedDump {
                            path: path.clone(),
                            error: format!(
                                "the analysis did not finish in {attempts} attempts (the \
                                 workers died or their leases expired)"
                            ),
                        }),
                    })
                } else {
                    Some(analyse_entry(&path, &source, hash, size, &options.triage))
                }
            }
        };
        drop(source);
        let new = with_store(&mut slot, location, options, log, |s| {
            s.complete(&path, record.as_ref())
        })?;
        match (&record, new) {
            (Some(r), true) if r.outcome.is_ok() => summary.recorded += 1,
            (Some(_), true) => summary.failed += 1,
            (Some(_), false) => summary.already += 1,
            (None, _) => {}
        }
    }
    Ok(summary)
}

/// Analyses the dump queued as `entry` (readable at `source.file`), recorded under `entry`;
/// a dump from a store gets that store's symbols.
fn analyse_entry(
    entry: &str,
    source: &crate::source::Source,
    hash: String,
    size: u64,
    triage: &TriageOptions,
) -> Record {
    let Some(store) = &source.store else {
        return analyse(&source.file, hash, size, triage);
    };
    let options = TriageOptions {
        symbols: Some(symbol_path(triage.symbols.as_deref(), store)),
        ..triage.clone()
    };
    let mut record = analyse(&source.file, hash, size, &options);
    match &mut record.outcome {
        Ok(a) => {
            a.path = entry.to_string();
            a.report.dump.path = entry.to_string();
        }
        Err(f) => f.path = entry.to_string(),
    }
    record
}
