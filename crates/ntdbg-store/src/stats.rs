//! What the crash-stats page (`ntdbg serve`) shows: top signatures over a period with their
//! daily counts, signatures new since a product version, a signature's versions, OS builds,
//! modules and latest crashes, and one crash's record.

use crate::backend::{Param, Row};
use crate::query::compare_versions;
use crate::{sql, Moment, Store, StoreError, UploadFacts};
use std::collections::{BTreeMap, BTreeSet};

/// Seconds in a day: the trend's unit.
pub const DAY: Moment = 86_400;
/// The longest period shown, in days.
pub const MAX_DAYS: i64 = 366;

/// What the page asks about: a period (whole UTC days) and optionally one product.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatsFilter {
    /// The first day's start (Unix seconds, a multiple of [`DAY`]).
    pub since: Moment,
    /// The last moment of the period.
    pub until: Moment,
    /// Only dumps collected for this product.
    pub product: Option<String>,
}

impl StatsFilter {
    /// The `days` UTC days ending with the one holding `now` (at most [`MAX_DAYS`]).
    pub fn last_days(days: i64, now: Moment, product: Option<String>) -> StatsFilter {
        let days = days.clamp(1, MAX_DAYS);
        let today = now.div_euclid(DAY);
        StatsFilter {
            since: (today - days + 1) * DAY,
            until: now,
            product,
        }
    }

    /// The period's days (their starts).
    pub fn days(&self) -> Vec<Moment> {
        let (first, last) = (self.since.div_euclid(DAY), self.until.div_euclid(DAY));
        (first..=last.min(first + MAX_DAYS))
            .map(|d| d * DAY)
            .collect()
    }

    fn params(&self) -> Vec<Param> {
        vec![
            Param::Int(Some(self.since)),
            Param::Int(Some(self.until)),
            Param::Text(Some(self.product.clone().unwrap_or_default())),
        ]
    }

    /// The period's parameters, then `extra`.
    fn params_with(&self, extra: &str) -> Vec<Param> {
        let mut p = self.params();
        p.push(Param::Text(Some(extra.to_string())));
        p
    }
}

/// One signature's dumps in the period.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignatureCount {
    /// The crash signature.
    pub signature: String,
    /// Dumps in the period.
    pub count: u64,
    /// Dumps on each day of the period ([`StatsFilter::days`]).
    pub daily: Vec<u64>,
    /// When the signature was first seen in the whole store.
    pub first_seen: Option<Moment>,
}

/// The page's front: totals, the daily trend and the top signatures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Overview {
    /// Analysed dumps in the period.
    pub dumps: u64,
    /// Dumps the analysis rejected in the period.
    pub failed: u64,
    /// Dumps still waiting in the queue (any period).
    pub queued: u64,
    /// Analysed dumps on each day.
    pub daily: Vec<u64>,
    /// Signatures, most dumps first.
    pub signatures: Vec<SignatureCount>,
    /// Every product collected dumps named.
    pub products: Vec<String>,
}

/// One signature's page.
#[derive(Debug, Clone, PartialEq)]
pub struct SignatureFacts {
    /// Its dumps in the period, by day.
    pub count: SignatureCount,
    /// Dumps per product and version (collected dumps).
    pub product_versions: Vec<(String, String, u64)>,
    /// Dumps per OS build.
    pub os_builds: Vec<(String, u64)>,
    /// Dumps per affected module and version.
    pub modules: Vec<(String, String, u64)>,
    /// The latest dumps.
    pub samples: Vec<CrashSample>,
    /// The latest dump's report (`analyze --json`).
    pub representative: Option<serde_json::Value>,
}

/// A crash in a list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CrashSample {
    /// The crash id (the dump's SHA-256).
    pub id: String,
    /// When it was seen.
    pub seen: Moment,
    /// The product and version its client named.
    pub product: Option<String>,
    /// The version.
    pub version: Option<String>,
    /// The OS build.
    pub os: Option<String>,
}

/// One crash's page.
#[derive(Debug, Clone, PartialEq)]
pub struct CrashFacts {
    /// The crash id.
    pub id: String,
    /// Where the dump is: a path or an object URL.
    pub location: String,
    /// When it was seen (received, for a collected dump).
    pub seen: Moment,
    /// Why the analysis rejected it, if it did.
    pub error: Option<String>,
    /// Its signature.
    pub signature: Option<String>,
    /// The event's name.
    pub kind: Option<String>,
    /// The OS build.
    pub os: Option<String>,
    /// The architecture.
    pub arch: Option<String>,
    /// The report (`analyze --json`).
    pub report: Option<serde_json::Value>,
    /// The report as `ntdbg analyze` prints it (dumps recorded before this column existed
    /// have none).
    pub report_text: Option<String>,
    /// What its client said, for a collected dump.
    pub upload: Option<UploadFacts>,
}

fn count_at(row: &Row, i: usize) -> Result<u64, StoreError> {
    Ok(row.int(i)?.unwrap_or(0).max(0) as u64)
}

/// Rows of `(text, text?, count)` sorted by count, then by the texts.
fn sorted<T: Ord>(mut v: Vec<(T, u64)>) -> Vec<(T, u64)> {
    v.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    v
}

impl Store {
    /// Per signature: dumps per day of the period, most dumps first.
    fn signature_counts(&mut self, f: &StatsFilter) -> Result<Vec<SignatureCount>, StoreError> {
        let days = f.days();
        let first_day = f.since.div_euclid(DAY);
        let rows = self.db().query(sql::DAILY_BY_SIGNATURE, &f.params())?;
        let mut by_signature: BTreeMap<String, Vec<u64>> = BTreeMap::new();
        for r in &rows {
            let signature = r.text(0)?.unwrap_or_default();
            let day = r.int(1)?.unwrap_or(0) - first_day;
            let daily = by_signature
                .entry(signature)
                .or_insert_with(|| vec![0; days.len()]);
            if let Some(slot) = usize::try_from(day).ok().and_then(|d| daily.get_mut(d)) {
                *slot += count_at(r, 2)?;
            }
        }
        let first_seen = self.first_seen()?;
        let mut out: Vec<SignatureCount> = by_signature
            .into_iter()
            .map(|(signature, daily)| SignatureCount {
                count: daily.iter().sum(),
                first_seen: first_seen.get(&signature).copied(),
                signature,
                daily,
            })
            .collect();
        out.sort_by(|a, b| {
            b.count
                .cmp(&a.count)
                .then_with(|| a.signature.cmp(&b.signature))
        });
        Ok(out)
    }

    /// When each signature was first seen, over the whole store.
    fn first_seen(&mut self) -> Result<BTreeMap<String, Moment>, StoreError> {
        let mut out = BTreeMap::new();
        for r in self.db().query(sql::FIRST_SEEN_BY_SIGNATURE, &[])? {
            if let (Some(sig), Some(first)) = (r.text(0)?, r.int(1)?) {
                out.insert(sig, first);
            }
        }
        Ok(out)
    }

    /// The page's front for `f`.
    pub fn overview(&mut self, f: &StatsFilter) -> Result<Overview, StoreError> {
        let signatures = self.signature_counts(f)?;
        let mut daily = vec![0; f.days().len()];
        for s in &signatures {
            for (total, n) in daily.iter_mut().zip(&s.daily) {
                *total += n;
            }
        }
        let failed = self.db().query(sql::FAILED_IN_PERIOD, &f.params())?;
        let failed = failed.first().map(|r| count_at(r, 0)).transpose()?;
        let products = self
            .db()
            .query(sql::PRODUCTS, &[])?
            .iter()
            .filter_map(|r| r.text(0).transpose())
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Overview {
            dumps: signatures.iter().map(|s| s.count).sum(),
            failed: failed.unwrap_or(0),
            queued: self.queued()?,
            daily,
            signatures,
            products,
        })
    }

    /// The signatures in the period never seen with `product` older than `version` (and
    /// seen with it at that version or later).
    pub fn new_since_version(
        &mut self,
        f: &StatsFilter,
        product: &str,
        version: &str,
    ) -> Result<Vec<SignatureCount>, StoreError> {
        if compare_versions(version, version).is_none() {
            return Err(StoreError::new(format!(
                "{version:?} is not a dotted version (1.4, 2.0.1)"
            )));
        }
        let rows = self.db().query(
            sql::PRODUCT_VERSIONS_BY_SIGNATURE,
            &[Param::Text(Some(product.to_string()))],
        )?;
        let mut all_newer: BTreeMap<String, bool> = BTreeMap::new();
        for r in rows {
            if let (Some(sig), Some(v)) = (r.text(0)?, r.text(1)?) {
                let newer = compare_versions(&v, version).is_some_and(|o| o.is_ge());
                *all_newer.entry(sig).or_insert(true) &= newer;
            }
        }
        let new: BTreeSet<String> = all_newer
            .into_iter()
            .filter_map(|(sig, newer)| newer.then_some(sig))
            .collect();
        let mut counts = self.signature_counts(f)?;
        counts.retain(|c| new.contains(&c.signature));
        Ok(counts)
    }

    /// One signature's page for `f`; `None` when it has no dump in the period.
    pub fn signature_facts(
        &mut self,
        f: &StatsFilter,
        signature: &str,
    ) -> Result<Option<SignatureFacts>, StoreError> {
        let Some(count) = self
            .signature_counts(f)?
            .into_iter()
            .find(|c| c.signature == signature)
        else {
            return Ok(None);
        };
        let params = f.params_with(signature);
        let mut product_versions = Vec::new();
        for r in self.db().query(sql::SIGNATURE_PRODUCT_VERSIONS, &params)? {
            product_versions.push((
                (
                    r.text(0)?.unwrap_or_default(),
                    r.text(1)?.unwrap_or_default(),
                ),
                count_at(&r, 2)?,
            ));
        }
        let mut os_builds = Vec::new();
        for r in self.db().query(sql::SIGNATURE_OS_BUILDS, &params)? {
            os_builds.push((r.text(0)?.unwrap_or_default(), count_at(&r, 1)?));
        }
        let mut modules = Vec::new();
        for r in self.db().query(sql::SIGNATURE_MODULES, &params)? {
            modules.push((
                (
                    r.text(0)?.unwrap_or_default(),
                    r.text(1)?.unwrap_or_default(),
                ),
                count_at(&r, 2)?,
            ));
        }
        let mut samples = Vec::new();
        for r in self.db().query(sql::SIGNATURE_SAMPLES, &params)? {
            samples.push(CrashSample {
                id: r.text(0)?.unwrap_or_default(),
                seen: r.int(1)?.unwrap_or(0),
                product: r.text(2)?,
                version: r.text(3)?,
                os: r.text(4)?,
            });
        }
        let representative = match samples.first() {
            Some(s) => self.crash(&s.id)?.and_then(|c| c.report),
            None => None,
        };
        let flatten = |v: Vec<((String, String), u64)>| {
            sorted(v).into_iter().map(|((a, b), n)| (a, b, n)).collect()
        };
        Ok(Some(SignatureFacts {
            count,
            product_versions: flatten(product_versions),
            os_builds: sorted(os_builds),
            modules: flatten(modules),
            samples,
            representative,
        }))
    }

    /// One crash's record by crash id; `None` when no analysed dump has it (a collected dump
    /// still queued has only its [`Store::upload_facts`]).
    pub fn crash(&mut self, id: &str) -> Result<Option<CrashFacts>, StoreError> {
        let rows = self
            .db()
            .query(sql::CRASH, &[Param::Text(Some(id.to_string()))])?;
        let Some(r) = rows.first() else {
            return Ok(None);
        };
        let json = |t: Option<String>| t.and_then(|t| serde_json::from_str(&t).ok());
        let failed = r.int(2)? != Some(0);
        let facts = CrashFacts {
            id: id.to_string(),
            location: r.text(0)?.unwrap_or_default(),
            seen: r.int(1)?.unwrap_or(0),
            error: if failed { r.text(3)? } else { None },
            signature: r.text(4)?,
            kind: r.text(5)?,
            os: r.text(6)?,
            arch: r.text(7)?,
            report: json(r.text(8)?),
            report_text: r.text(9)?,
            upload: None,
        };
        let upload = self.upload_facts(id)?;
        Ok(Some(CrashFacts { upload, ..facts }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods_are_whole_days() {
        let f = StatsFilter::last_days(7, 10 * DAY + 5, None);
        assert_eq!(f.since, 4 * DAY);
        assert_eq!(f.days().len(), 7);
        assert_eq!(StatsFilter::last_days(0, DAY, None).days().len(), 1);
        assert_eq!(
            StatsFilter::last_days(10_000, 400 * DAY, None).days().len(),
            MAX_DAYS as usize
        );
    }
}
