//! Reports received by `ntdbg collect`: each dump kept once in the object store (by its
//! SHA-256, which is the crash id), recorded with what its client said about it, and queued
//! for the workers.

use crate::backend::Param;
use crate::{sql, Moment, Store, StoreError};
use std::collections::BTreeMap;

/// A crash report the collector accepted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Upload {
    /// The SHA-256 of the dump (lower-case hex): the crash id.
    pub hash: String,
    /// Where the dump is kept: its object URL (`s3://…/dumps/…`, `file://…/dumps/…`).
    pub location: String,
    /// The dump's size in bytes.
    pub size: u64,
    /// When it was received.
    pub received_at: Moment,
    /// The product the client named (`prod` or `product`).
    pub product: Option<String>,
    /// Its version (`ver` or `version`).
    pub version: Option<String>,
    /// The client's id (`guid`).
    pub guid: Option<String>,
    /// Every annotation the client sent (form fields and the URL's query), by name.
    pub annotations: BTreeMap<String, String>,
}

/// What the client said about a collected dump.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UploadFacts {
    /// Where the dump is kept.
    pub location: String,
    /// When it was received.
    pub received_at: Moment,
    /// The product.
    pub product: Option<String>,
    /// Its version.
    pub version: Option<String>,
    /// The client's id.
    pub guid: Option<String>,
    /// Every annotation, by name.
    pub annotations: BTreeMap<String, String>,
}

impl Store {
    /// Makes every commit of this connection durable before it returns (SQLite's
    /// `synchronous=FULL`; PostgreSQL's commits already are, unless its server was told
    /// otherwise). For the collector, which answers a client only once its report is safe.
    pub fn durable_commits(&mut self) -> Result<(), StoreError> {
        match self.db().dialect() {
            crate::backend::Dialect::Sqlite => self.db().batch("PRAGMA synchronous = FULL"),
            crate::backend::Dialect::Postgres => Ok(()),
        }
    }

    /// Records `uploads` and queues their dumps, all in one transaction; how many were new
    /// (a dump received before keeps its first record).
    pub fn accept(&mut self, uploads: &[Upload]) -> Result<usize, StoreError> {
        self.transaction(|db| {
            let mut new = 0;
            for u in uploads {
                let text = |s: &str| Param::Text(Some(s.to_string()));
                let optional = |s: &Option<String>| Param::Text(s.clone());
                let annotations = serde_json::to_string(&u.annotations)
                    .map_err(|e| StoreError::new(format!("annotations: {e}")))?;
                let added = db.execute(
                    sql::INSERT_UPLOAD,
                    &[
                        text(&u.hash),
                        text(&u.location),
                        Param::Int(Some(u.size as i64)),
                        Param::Int(Some(u.received_at)),
                        optional(&u.product),
                        optional(&u.version),
                        optional(&u.guid),
                        Param::Text(Some(annotations)),
                    ],
                )?;
                if added > 0 {
                    new += 1;
                    db.execute(
                        sql::ENQUEUE,
                        &[text(&u.location), Param::Int(Some(u.received_at))],
                    )?;
                }
            }
            Ok(new)
        })
    }

    /// Where the dump with this crash id (content hash) is: a path or an object URL.
    pub fn dump_location(&mut self, hash: &str) -> Result<Option<String>, StoreError> {
        let rows = self
            .db()
            .query(sql::DUMP_LOCATION, &[Param::Text(Some(hash.to_string()))])?;
        match rows.first() {
            Some(r) => r.text(0),
            None => Ok(None),
        }
    }

    /// What the client said about the collected dump with this crash id.
    pub fn upload_facts(&mut self, hash: &str) -> Result<Option<UploadFacts>, StoreError> {
        let rows = self
            .db()
            .query(sql::UPLOAD_OF, &[Param::Text(Some(hash.to_string()))])?;
        let Some(r) = rows.first() else {
            return Ok(None);
        };
        Ok(Some(UploadFacts {
            location: r.text(0)?.unwrap_or_default(),
            received_at: r.int(1)?.unwrap_or(0),
            product: r.text(2)?,
            version: r.text(3)?,
            guid: r.text(4)?,
            annotations: serde_json::from_str(&r.text(5)?.unwrap_or_default()).unwrap_or_default(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{run_worker, DbLocation, StatsFilter, WorkerOptions};
    use ntdbg_objects::{keys, upload_symbol_file, Objects, StoreUrl};
    use ntdbg_testutil::corrupt::TempDir;

    /// Puts a sample dump into `objects` as the collector does; its upload record.
    fn collected(objects: &Objects, sample: &str, version: &str) -> Upload {
        let bytes = std::fs::read(ntdbg_testutil::sample(sample)).expect("sample");
        let (hash, size) = {
            use sha2::Digest;
            (
                hex::encode(sha2::Sha256::digest(&bytes)),
                bytes.len() as u64,
            )
        };
        let key = keys::dump_key(&hash);
        objects.put_blocking(&key, bytes.into()).expect("put");
        Upload {
            location: objects.url().object_url(&key),
            hash,
            size,
            received_at: crate::now(),
            product: Some("crashy".into()),
            version: Some(version.into()),
            guid: Some("client-1".into()),
            annotations: BTreeMap::from([("prod".into(), "crashy".into())]),
        }
    }

    #[test]
    fn collected_dumps_are_analysed_with_the_stores_symbols_and_shown_once() {
        let dir = TempDir::new("store-collected");
        let objects = Objects::open(&StoreUrl::Local(dir.path().join("store"))).unwrap();
        for file in ["crashy.pdb", "crashy.exe"] {
            let filed = upload_symbol_file(&objects, &ntdbg_testutil::sample(file)).unwrap();
            assert!(!filed.already);
        }
        let location = DbLocation::Sqlite(dir.path().join("crashes.db"));
        let mut store = Store::open(&location).unwrap();
        store.durable_commits().unwrap();
        let null = collected(&objects, "crashy-x64-null.dmp", "1.0");
        let divzero = collected(&objects, "crashy-x64-divzero.dmp", "1.1");
        let uploads = [null.clone(), divzero.clone()];
        assert_eq!(store.accept(&uploads).unwrap(), 2);
        assert_eq!(store.accept(&uploads).unwrap(), 0, "each dump once");
        assert_eq!(store.queued().unwrap(), 2);

        let mut options = WorkerOptions::default();
        options.triage.offline = true;
        let summary = run_worker(&location, &options, &|m| panic!("worker: {m}")).unwrap();
        assert_eq!((summary.recorded, summary.failed), (2, 0));

        let crash = store.crash(&null.hash).unwrap().expect("recorded");
        let signature = crash.signature.clone().unwrap();
        assert!(signature.contains("crashy!write_null"), "{signature}");
        assert!(crash.report_text.unwrap().contains("write_null"));
        assert_eq!(crash.location, null.location);
        assert_eq!(crash.upload.unwrap().version.as_deref(), Some("1.0"));
        assert_eq!(
            store.dump_location(&null.hash).unwrap(),
            Some(null.location)
        );

        let period = StatsFilter::last_days(1, crate::now(), None);
        let overview = store.overview(&period).unwrap();
        assert_eq!(
            (overview.dumps, overview.failed, overview.queued),
            (2, 0, 0)
        );
        assert_eq!(overview.products, ["crashy"]);
        assert_eq!(overview.daily, [2]);
        let new = store.new_since_version(&period, "crashy", "1.1").unwrap();
        assert_eq!(new.len(), 1);
        assert!(new[0].signature.contains("divide"), "{new:?}");
        let facts = store.signature_facts(&period, &signature).unwrap().unwrap();
        assert_eq!(facts.product_versions, [("crashy".into(), "1.0".into(), 1)]);
        assert_eq!(facts.samples.len(), 1);
        assert!(facts.representative.is_some());
        let other = StatsFilter::last_days(1, crate::now(), Some("other".into()));
        assert_eq!(store.overview(&other).unwrap().dumps, 0);
    }
}
