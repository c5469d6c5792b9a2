//! The crash store: every dump analysed once, recorded by content hash, and asked the daily
//! questions (`ntdbg ingest`, `ntdbg crashes`, `ntdbg enqueue`, `ntdbg worker`, MCP
//! `query_crashes`).
//!
//! # Design
//!
//! - **A layer above analysis.** Analysis and bucketing are triage's
//!   ([`ntdbg_analysis::triage::analyse_one`] and [`ntdbg_analysis::triage::group`]); the store
//!   only records their results and reads them back into triage's own DTOs
//!   ([`ntdbg_analysis::triage::TriageResult`], with each representative report as its stored
//!   JSON). The engine and the analysis know nothing of the store.
//! - **Two backends, one query layer.** [`backend::Backend`] is four calls (`batch`, `execute`,
//!   `query`, and which [`backend::Dialect`]); [`Store`] writes every operation once on top of it.
//!   SQLite through `rusqlite` with its `bundled` feature (SQLite's C source compiled by the `cc`
//!   crate: nothing to install, and it cross-builds for Windows with mingw); PostgreSQL through
//!   the synchronous `postgres` crate. Both are blocking, like the rest of the CLI (rayon
//!   threads), so no async runtime is pulled into `ingest` and `worker`; `sqlx` would have
//!   brought its macros, a runtime and its own SQLite build for the same four calls.
//! - **All SQL in one module** ([`sql`]), written once with `$1` placeholders (SQLite's driver
//!   receives them as `?1`); the few statements that differ (transaction start, the queue's
//!   `FOR UPDATE SKIP LOCKED`, the migration lock) are chosen by dialect there.
//! - **Versioned migrations**: [`sql::MIGRATIONS`], applied in order under a lock (SQLite's
//!   `BEGIN IMMEDIATE`, PostgreSQL's transaction-scoped advisory lock), each recorded in
//!   `schema_version`; a database newer than this build is refused, never changed.
//! - **Recorded once.** A dump's key is the SHA-256 of its bytes: `INSERT … ON CONFLICT DO
//!   NOTHING` makes ingesting a file again (or a copy of it elsewhere) change nothing, and makes
//!   a retried queue job harmless. A dump the analysis rejects is recorded too, as failed with
//!   its error, so it is not retried forever.
//! - **Concurrency.** SQLite: WAL journal and a busy timeout, so several `ingest` processes on
//!   one machine wait for each other instead of failing. PostgreSQL: a `queue` table; a worker
//!   claims one path (`FOR UPDATE SKIP LOCKED`) by setting a lease expiry, analyses it outside
//!   any transaction, then records it and dequeues it in one transaction. A worker killed
//!   mid-dump leaves its lease to expire, and another takes the path again; a worker whose
//!   database restarts reconnects with backoff and retries the step it was on.
//! - **Collected reports** ([`Store::accept`], for `ntdbg collect`): the dump is already in an
//!   object store (`ntdbg-objects`); its upload (product, version, annotations, where it is)
//!   is recorded and its object URL queued in one transaction, committed durably before the
//!   client is answered. Workers read queued object URLs from the store (`source.rs`) with the
//!   symbols uploaded to it, and record the report as `ntdbg analyze` prints it too, for the
//!   crash-stats page (`stats.rs`, `ntdbg serve`).

pub mod backend;
mod dates;
mod error;
mod ingest;
mod location;
mod postgres_backend;
mod query;
mod queue;
mod source;
pub mod sql;
mod sqlite_backend;
mod stats;
mod store;
mod uploads;

pub use dates::{now, parse_time, Moment};
pub use error::StoreError;
pub use ingest::{content_hash, ingest_files, IngestSummary};
pub use location::DbLocation;
pub use query::{CrashQuery, CrashesAnswer, ModuleVersion, ModuleVersions, NewSince, StoredTriage};
pub use queue::{run_worker, Doorbell, WorkerOptions, WorkerSummary};
pub use source::symbol_path as store_symbol_path;
pub use stats::{
    CrashFacts, CrashSample, Overview, SignatureCount, SignatureFacts, StatsFilter, DAY, MAX_DAYS,
};
pub use store::Store;
pub use uploads::{Upload, UploadFacts};
