//! Every SQL statement of the store, for both dialects: written once with `$1` placeholders,
//! with the few that differ chosen by [`Dialect`].
//!
//! Times are Unix seconds (`BIGINT`); `seen` is the dump's own time (its header, else the
//! file's modification time), or the ingest time when it has none, so periods always apply.

use crate::backend::Dialect;

/// The schema, one step per version: step `i` brings the database to version `i + 1`.
pub const MIGRATIONS: &[&str] = &[
    // 1: dumps, their affected modules, and the work queue.
    "CREATE TABLE dumps (
        hash TEXT PRIMARY KEY,
        path TEXT NOT NULL,
        size BIGINT NOT NULL,
        dump_time BIGINT,
        seen BIGINT NOT NULL,
        ingested_at BIGINT NOT NULL,
        failed BIGINT NOT NULL,
        error TEXT,
        signature TEXT,
        kind TEXT,
        os TEXT,
        arch TEXT,
        modules TEXT NOT NULL,
        report TEXT
    );
    CREATE INDEX dumps_signature ON dumps (signature);
    CREATE INDEX dumps_seen ON dumps (seen);
    CREATE TABLE dump_modules (
        hash TEXT NOT NULL REFERENCES dumps (hash),
        name TEXT NOT NULL,
        version TEXT NOT NULL,
        PRIMARY KEY (hash, name, version)
    );
    CREATE INDEX dump_modules_name ON dump_modules (name);
    CREATE TABLE queue (
        path TEXT PRIMARY KEY,
        enqueued_at BIGINT NOT NULL,
        lease_until BIGINT NOT NULL,
        attempts BIGINT NOT NULL
    );",
    // 2: reports received by `ntdbg collect` (what the client said, where the dump is kept),
    // and each dump's report as `ntdbg analyze` prints it.
    "CREATE TABLE uploads (
        hash TEXT PRIMARY KEY,
        location TEXT NOT NULL,
        size BIGINT NOT NULL,
        received_at BIGINT NOT NULL,
        product TEXT,
        version TEXT,
        guid TEXT,
        annotations TEXT NOT NULL
    );
    CREATE INDEX uploads_product ON uploads (product);
    ALTER TABLE dumps ADD COLUMN report_text TEXT;",
];

/// The version table, created before anything else.
pub const CREATE_VERSION_TABLE: &str =
    "CREATE TABLE IF NOT EXISTS schema_version (version BIGINT NOT NULL)";
/// The schema's current version (0: empty).
pub const CURRENT_VERSION: &str = "SELECT COALESCE(MAX(version), 0) FROM schema_version";
/// Records a migration step.
pub const SET_VERSION: &str = "INSERT INTO schema_version (version) VALUES ($1)";

/// Starts a transaction that writes: SQLite takes the write lock at once (so two writers never
/// deadlock upgrading a read lock); PostgreSQL locks rows as it goes.
pub fn begin(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Sqlite => "BEGIN IMMEDIATE",
        Dialect::Postgres => "BEGIN",
    }
}
/// Ends a transaction, keeping its changes.
pub const COMMIT: &str = "COMMIT";
/// Ends a transaction, dropping its changes.
pub const ROLLBACK: &str = "ROLLBACK";

/// Serializes migrations between processes, inside the migration's transaction (SQLite's
/// `BEGIN IMMEDIATE` already does).
pub fn migration_lock(dialect: Dialect) -> Option<&'static str> {
    match dialect {
        Dialect::Sqlite => None,
        // The key is arbitrary: 0x6e746462 is "ntdb".
        Dialect::Postgres => Some("SELECT pg_advisory_xact_lock(1853121634)"),
    }
}

/// Whether a dump with this hash is recorded.
pub const DUMP_EXISTS: &str = "SELECT 1 FROM dumps WHERE hash = $1";

/// Records a dump once: a second insert of the same hash changes nothing (0 rows). A
/// collected dump is seen when it was received.
pub const INSERT_DUMP: &str = "INSERT INTO dumps
    (hash, path, size, dump_time, seen, ingested_at, failed, error, signature, kind, os, arch,
     modules, report, report_text)
    VALUES ($1, $2, $3, $4,
            COALESCE((SELECT received_at FROM uploads WHERE hash = $1), $5),
            $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
    ON CONFLICT (hash) DO NOTHING";

/// Records a report `ntdbg collect` accepted, once per dump.
pub const INSERT_UPLOAD: &str = "INSERT INTO uploads
    (hash, location, size, received_at, product, version, guid, annotations)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
    ON CONFLICT (hash) DO NOTHING";

/// What a collected dump's client said about it.
pub const UPLOAD_OF: &str = "SELECT location, received_at, product, version, guid, annotations
    FROM uploads WHERE hash = $1";

/// Where a dump is (a path or an object URL), recorded or still queued.
pub const DUMP_LOCATION: &str = "SELECT path FROM dumps WHERE hash = $1
    UNION ALL SELECT location FROM uploads WHERE hash = $1";

/// One affected module of a dump.
pub const INSERT_MODULE: &str = "INSERT INTO dump_modules (hash, name, version)
    VALUES ($1, $2, $3) ON CONFLICT (hash, name, version) DO NOTHING";

/// The dumps seen in `[$1, $2]`, without their reports.
pub const DUMPS_IN_PERIOD: &str = "SELECT hash, path, dump_time, failed, error, signature, kind,
    modules FROM dumps WHERE seen >= $1 AND seen <= $2";

/// One dump's report JSON.
pub const REPORT_OF: &str = "SELECT report FROM dumps WHERE hash = $1";

/// When each signature was first seen, over the whole store.
pub const FIRST_SEEN_BY_SIGNATURE: &str =
    "SELECT signature, MIN(seen) FROM dumps WHERE failed = 0 GROUP BY signature";

/// Each signature with every version of module `$1` (any case) its dumps carried.
pub const VERSIONS_BY_SIGNATURE: &str = "SELECT DISTINCT d.signature, m.version
    FROM dumps d JOIN dump_modules m ON m.hash = d.hash
    WHERE d.failed = 0 AND LOWER(m.name) = LOWER($1)";

/// Dumps and buckets per version of module `$1` (any case), seen in `[$2, $3]`.
pub const COUNTS_BY_MODULE_VERSION: &str = "SELECT m.version, COUNT(*),
    COUNT(DISTINCT d.signature)
    FROM dumps d JOIN dump_modules m ON m.hash = d.hash
    WHERE d.failed = 0 AND LOWER(m.name) = LOWER($1) AND d.seen >= $2 AND d.seen <= $3
    GROUP BY m.version";

/// Adds a path to the queue (once: a path already queued keeps its place).
pub const ENQUEUE: &str = "INSERT INTO queue (path, enqueued_at, lease_until, attempts)
    VALUES ($1, $2, 0, 0) ON CONFLICT (path) DO NOTHING";

/// The oldest queued path whose lease has expired (`$1`: now), locked for the claiming
/// transaction; PostgreSQL skips rows other workers are claiming.
pub fn claim_next(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Sqlite => {
            "SELECT path, attempts FROM queue WHERE lease_until < $1
             ORDER BY enqueued_at, path LIMIT 1"
        }
        Dialect::Postgres => {
            "SELECT path, attempts FROM queue WHERE lease_until < $1
             ORDER BY enqueued_at, path LIMIT 1 FOR UPDATE SKIP LOCKED"
        }
    }
}

/// Leases a claimed path until `$1`.
pub const LEASE: &str =
    "UPDATE queue SET lease_until = $1, attempts = attempts + 1 WHERE path = $2";

/// Takes a path off the queue.
pub const DEQUEUE: &str = "DELETE FROM queue WHERE path = $1";

/// Paths still queued (leased or not).
pub const QUEUED: &str = "SELECT COUNT(*) FROM queue";

// ---- the crash-stats page (`ntdbg serve`) ----
//
// `$1`, `$2`: the period (`seen` in `[$1, $2]`); `$3`: a product, or '' for every dump (dumps
// that were not collected have no product).

/// Dumps per signature and day (`seen / 86400`) in the period.
pub const DAILY_BY_SIGNATURE: &str = "SELECT d.signature, d.seen / 86400, COUNT(*)
    FROM dumps d LEFT JOIN uploads u ON u.hash = d.hash
    WHERE d.failed = 0 AND d.seen >= $1 AND d.seen <= $2 AND ($3 = '' OR u.product = $3)
    GROUP BY d.signature, d.seen / 86400";

/// Dumps the analysis rejected in the period.
pub const FAILED_IN_PERIOD: &str = "SELECT COUNT(*)
    FROM dumps d LEFT JOIN uploads u ON u.hash = d.hash
    WHERE d.failed = 1 AND d.seen >= $1 AND d.seen <= $2 AND ($3 = '' OR u.product = $3)";

/// The products collected dumps named.
pub const PRODUCTS: &str =
    "SELECT DISTINCT product FROM uploads WHERE product IS NOT NULL ORDER BY product";

/// Each signature with every version of product `$1` its collected dumps carried.
pub const PRODUCT_VERSIONS_BY_SIGNATURE: &str = "SELECT DISTINCT d.signature, u.version
    FROM dumps d JOIN uploads u ON u.hash = d.hash
    WHERE d.failed = 0 AND u.product = $1 AND u.version IS NOT NULL";

/// A signature's (`$4`) dumps per product and version in the period.
pub const SIGNATURE_PRODUCT_VERSIONS: &str = "SELECT u.product, u.version, COUNT(*)
    FROM dumps d JOIN uploads u ON u.hash = d.hash
    WHERE d.signature = $4 AND d.seen >= $1 AND d.seen <= $2 AND ($3 = '' OR u.product = $3)
    GROUP BY u.product, u.version";

/// A signature's (`$4`) dumps per OS build in the period.
pub const SIGNATURE_OS_BUILDS: &str = "SELECT d.os, COUNT(*)
    FROM dumps d LEFT JOIN uploads u ON u.hash = d.hash
    WHERE d.signature = $4 AND d.seen >= $1 AND d.seen <= $2 AND ($3 = '' OR u.product = $3)
    GROUP BY d.os";

/// A signature's (`$4`) dumps per affected module and version in the period.
pub const SIGNATURE_MODULES: &str = "SELECT m.name, m.version, COUNT(*)
    FROM dumps d JOIN dump_modules m ON m.hash = d.hash LEFT JOIN uploads u ON u.hash = d.hash
    WHERE d.signature = $4 AND d.seen >= $1 AND d.seen <= $2 AND ($3 = '' OR u.product = $3)
    GROUP BY m.name, m.version";

/// A signature's (`$4`) latest dumps in the period, newest first.
pub const SIGNATURE_SAMPLES: &str = "SELECT d.hash, d.seen, u.product, u.version, d.os
    FROM dumps d LEFT JOIN uploads u ON u.hash = d.hash
    WHERE d.signature = $4 AND d.seen >= $1 AND d.seen <= $2 AND ($3 = '' OR u.product = $3)
    ORDER BY d.seen DESC, d.hash LIMIT 20";

/// One dump, by crash id (content hash).
pub const CRASH: &str = "SELECT path, seen, failed, error, signature, kind, os, arch, report,
    report_text FROM dumps WHERE hash = $1";
