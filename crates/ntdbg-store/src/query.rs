//! `ntdbg crashes` and MCP `query_crashes`: the daily questions, answered from the store in
//! triage's own shapes.

use crate::backend::{Param, Row};
use crate::{sql, Moment, Store, StoreError};
use ntdbg_analysis::triage::{group, Analysed, FailedDump, TriageResult};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// Buckets as `ntdbg triage --json` gives them, each representative being its stored report.
pub type StoredTriage = TriageResult<serde_json::Value>;

/// What makes a bucket new.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NewSince {
    /// First seen at or after this moment (over the whole store, not only the period).
    Time(Moment),
    /// Never seen with [`CrashQuery::module`] older than this version (`1.2`, `1.2.0.0`),
    /// and seen with it at this version or later.
    Version(String),
}

/// A question for the store. Without `bucket`, `new_since` and `module`: the top buckets.
#[derive(Debug, Clone, Default)]
pub struct CrashQuery {
    /// Dumps seen at or after this moment.
    pub since: Option<Moment>,
    /// Dumps seen at or before this moment.
    pub until: Option<Moment>,
    /// Only the buckets new since a moment or a version.
    pub new_since: Option<NewSince>,
    /// One bucket: its exact signature, or text found in exactly one signature.
    pub bucket: Option<String>,
    /// A module (file name, any case): alone, its dumps and buckets per version; with
    /// `new_since` a version, the module whose version counts.
    pub module: Option<String>,
    /// Keep the largest `top` buckets.
    pub top: Option<usize>,
}

/// Dumps and buckets per version of one module.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ModuleVersions {
    /// The module asked about.
    pub module: String,
    /// Its versions, newest first.
    pub versions: Vec<ModuleVersion>,
}

/// One version of a module.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ModuleVersion {
    /// `1.2.0.0`, or `(0x6b0cccd2)` (the PE timestamp) without a version resource.
    pub version: String,
    /// Dumps whose crash involved the module at this version.
    pub dumps: u64,
    /// Buckets among them.
    pub buckets: u64,
}

/// The answer to a [`CrashQuery`].
#[derive(Debug, Clone)]
pub enum CrashesAnswer {
    /// Buckets (with the failed dumps when no bucket filter applies).
    Buckets(StoredTriage),
    /// Counts by module version.
    Modules(ModuleVersions),
}

impl NewSince {
    /// `--new-since`: a time ([`crate::parse_time`]), else a version.
    pub fn parse(text: &str, now: Moment) -> NewSince {
        match crate::parse_time(text, now) {
            Ok(t) => NewSince::Time(t),
            Err(_) => NewSince::Version(text.trim().to_string()),
        }
    }
}

/// A dotted version as numbers (`1.2` is `[1, 2]`), or `None` when it is not one.
fn version_key(v: &str) -> Option<Vec<u64>> {
    let mut parts: Vec<u64> = v
        .split('.')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    while parts.len() > 1 && parts.last() == Some(&0) {
        parts.pop();
    }
    Some(parts)
}

/// `a` and `b` as dotted versions (trailing zeros ignored); `None` when either is not one.
pub(crate) fn compare_versions(a: &str, b: &str) -> Option<std::cmp::Ordering> {
    Some(version_key(a)?.cmp(&version_key(b)?))
}

fn text(s: &str) -> Param {
    Param::Text(Some(s.to_string()))
}

/// One stored dump as triage's grouping takes it (the report stands in as its hash).
fn member(row: &Row) -> Result<Result<Analysed<String>, FailedDump>, StoreError> {
    let hash = row.text(0)?.unwrap_or_default();
    let path = row.text(1)?.unwrap_or_default();
    if row.int(3)? != Some(0) {
        return Ok(Err(FailedDump {
            path,
            error: row.text(4)?.unwrap_or_default(),
        }));
    }
    let modules = row.text(7)?.unwrap_or_default();
    Ok(Ok(Analysed {
        path,
        time: row.int(2)?.and_then(|t| u64::try_from(t).ok()),
        signature: row.text(5)?.unwrap_or_default(),
        kind: row.text(6)?.unwrap_or_default(),
        modules: serde_json::from_str(&modules).unwrap_or_default(),
        report: hash,
    }))
}

impl Store {
    /// Answers `q`.
    pub fn crashes(&mut self, q: &CrashQuery) -> Result<CrashesAnswer, StoreError> {
        let period = [
            Param::Int(Some(q.since.unwrap_or(i64::MIN))),
            Param::Int(Some(q.until.unwrap_or(i64::MAX))),
        ];
        match (&q.module, &q.new_since, &q.bucket) {
            (Some(module), None, None) => {
                return self
                    .module_versions(module, &period)
                    .map(CrashesAnswer::Modules)
            }
            (None, Some(NewSince::Version(_)), _) => {
                return Err(StoreError::new(
                    "--new-since VERSION needs --module NAME: the module whose version counts",
                ))
            }
            _ => {}
        }
        let rows = self.db().query(sql::DUMPS_IN_PERIOD, &period)?;
        let mut members = rows.iter().map(member).collect::<Result<Vec<_>, _>>()?;
        let signatures: BTreeSet<&str> = members
            .iter()
            .filter_map(|m| m.as_ref().ok().map(|a| a.signature.as_str()))
            .collect();
        let mut keep: Option<BTreeSet<String>> = None;
        if let Some(b) = &q.bucket {
            keep = Some(BTreeSet::from([find_bucket(&signatures, b)?]));
        }
        if let Some(n) = &q.new_since {
            let new = self.new_signatures(n, q.module.as_deref())?;
            keep = Some(match keep {
                Some(k) => k.intersection(&new).cloned().collect(),
                None => new,
            });
        }
        if let Some(keep) = &keep {
            members.retain(|m| m.as_ref().is_ok_and(|a| keep.contains(&a.signature)));
        }
        let mut result = group(members);
        if let Some(top) = q.top {
            result.buckets.truncate(top);
        }
        let mut buckets = Vec::with_capacity(result.buckets.len());
        for b in result.buckets {
            let report = self.report_of(&b.representative)?;
            buckets.push(b.map_representative(|_| report));
        }
        Ok(CrashesAnswer::Buckets(TriageResult {
            dumps: result.dumps,
            buckets,
            failed: result.failed,
        }))
    }

    /// A stored report's JSON.
    fn report_of(&mut self, hash: &str) -> Result<serde_json::Value, StoreError> {
        let rows = self.db().query(sql::REPORT_OF, &[text(hash)])?;
        let json = rows
            .first()
            .map(|r| r.text(0))
            .transpose()?
            .flatten()
            .ok_or_else(|| StoreError::new(format!("dump {hash} has no stored report")))?;
        serde_json::from_str(&json)
            .map_err(|e| StoreError::new(format!("dump {hash}: stored report is not JSON: {e}")))
    }

    /// The signatures new since a moment or a version.
    fn new_signatures(
        &mut self,
        since: &NewSince,
        module: Option<&str>,
    ) -> Result<BTreeSet<String>, StoreError> {
        match since {
            NewSince::Time(t) => {
                let rows = self.db().query(sql::FIRST_SEEN_BY_SIGNATURE, &[])?;
                let mut out = BTreeSet::new();
                for r in rows {
                    if let (Some(sig), Some(first)) = (r.text(0)?, r.int(1)?) {
                        if first >= *t {
                            out.insert(sig);
                        }
                    }
                }
                Ok(out)
            }
            NewSince::Version(v) => {
                if version_key(v).is_none() {
                    return Err(StoreError::new(format!(
                        "--new-since {v:?}: neither a date (2026-11-30, 7d) nor a dotted version"
                    )));
                }
                let module = module.unwrap_or_default();
                let rows = self
                    .db()
                    .query(sql::VERSIONS_BY_SIGNATURE, &[text(module)])?;
                // Per signature: whether every version seen is at least `v`.
                let mut all_newer: BTreeMap<String, bool> = BTreeMap::new();
                for r in rows {
                    if let (Some(sig), Some(version)) = (r.text(0)?, r.text(1)?) {
                        let newer = compare_versions(&version, v).is_some_and(|o| o.is_ge());
                        *all_newer.entry(sig).or_insert(true) &= newer;
                    }
                }
                Ok(all_newer
                    .into_iter()
                    .filter_map(|(sig, newer)| newer.then_some(sig))
                    .collect())
            }
        }
    }

    /// Dumps and buckets per version of `module` in the period.
    fn module_versions(
        &mut self,
        module: &str,
        period: &[Param; 2],
    ) -> Result<ModuleVersions, StoreError> {
        let params = [text(module), period[0].clone(), period[1].clone()];
        let rows = self.db().query(sql::COUNTS_BY_MODULE_VERSION, &params)?;
        let mut versions = rows
            .iter()
            .map(|r| {
                Ok(ModuleVersion {
                    version: r.text(0)?.unwrap_or_default(),
                    dumps: r.int(1)?.unwrap_or(0) as u64,
                    buckets: r.int(2)?.unwrap_or(0) as u64,
                })
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        versions.sort_by(|a, b| {
            compare_versions(&b.version, &a.version).unwrap_or_else(|| b.version.cmp(&a.version))
        });
        Ok(ModuleVersions {
            module: module.to_string(),
            versions,
        })
    }
}

/// The one signature `wanted` names: itself, or the only one containing it.
fn find_bucket(signatures: &BTreeSet<&str>, wanted: &str) -> Result<String, StoreError> {
    if signatures.contains(wanted) {
        return Ok(wanted.to_string());
    }
    let found: Vec<&&str> = signatures.iter().filter(|s| s.contains(wanted)).collect();
    match found.as_slice() {
        [one] => Ok(one.to_string()),
        [] => Err(StoreError::new(format!(
            "no bucket's signature contains {wanted:?} in this period"
        ))),
        many => Err(StoreError::new(format!(
            "{} buckets' signatures contain {wanted:?}; give more of one: {}",
            many.len(),
            many.iter()
                .take(5)
                .map(|s| format!("{s:?}"))
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_compare_by_number() {
        use std::cmp::Ordering::*;
        assert_eq!(compare_versions("1.10", "1.9"), Some(Greater));
        assert_eq!(compare_versions("1.2.0.0", "1.2"), Some(Equal));
        assert_eq!(compare_versions("(0x6b0cccd2)", "1.2"), None);
    }

    #[test]
    fn a_bucket_is_found_by_part_of_its_signature() {
        let sigs = BTreeSet::from(["AV a!f", "AV a!g", "DIV b!h"]);
        assert_eq!(find_bucket(&sigs, "b!h").unwrap(), "DIV b!h");
        assert_eq!(find_bucket(&sigs, "AV a!f").unwrap(), "AV a!f");
        assert!(find_bucket(&sigs, "AV").is_err());
        assert!(find_bucket(&sigs, "zzz").is_err());
    }
}
