//! `ntdbg enqueue` and `ntdbg worker`: a work queue in the database, taken by any number of
//! workers on any number of machines.
//!
//! A worker claims the oldest path whose lease has expired (`FOR UPDATE SKIP LOCKED` on
//! PostgreSQL) and sets a new lease, analyses it outside any transaction, then records it and
//! dequeues it in one transaction. A killed worker's path is claimed again when its lease
//! expires; a path claimed [`WorkerOptions::max_attempts`] times without finishing is recorded
//! as failed. Recording is keyed by content hash, so a path analysed twice is counted once.

use crate::backend::Param;
use crate::dates::now as unix_now;
use crate::ingest::{absolute, analyse, content_hash, insert_record, Record};
use crate::{sql, DbLocation, Store, StoreError};
use ntdbg_analysis::triage::{FailedDump, TriageOptions};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

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
}

impl Store {
    /// Queues `paths` (made absolute); how many were not queued already.
    pub fn enqueue(&mut self, paths: &[PathBuf]) -> Result<usize, StoreError> {
        let now = unix_now();
        self.transaction(|db| {
            let mut added = 0;
            for p in paths {
                let path = absolute(p).display().to_string();
                added += db.execute(
                    sql::ENQUEUE,
                    &[Param::Text(Some(path)), Param::Int(Some(now))],
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
/// forever with [`WorkerOptions::wait`]), analysing and recording each.
pub fn run_worker(
    location: &DbLocation,
    options: &WorkerOptions,
    log: &dyn Fn(&str),
) -> Result<WorkerSummary, StoreError> {
    let mut slot = None;
    let mut summary = WorkerSummary::default();
    loop {
        let claimed = with_store(&mut slot, location, options, log, |s| {
            s.claim(options.lease)
        })?;
        let Some((path, attempts)) = claimed else {
            // Paths leased by other workers are not done yet: one whose worker died comes
            // back when its lease expires, so only an empty queue ends the work.
            let left = with_store(&mut slot, location, options, log, |s| s.queued())?;
            if left > 0 || options.wait {
                std::thread::sleep(options.poll);
                continue;
            }
            return Ok(summary);
        };
        let record = match content_hash(Path::new(&path)) {
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
                    Some(analyse(Path::new(&path), hash, size, &options.triage))
                }
            }
        };
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
}
