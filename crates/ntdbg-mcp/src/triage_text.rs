//! The text of a triage: buckets largest first, each with its count, signature and kind, then
//! when it was seen, its modules and a few of its dumps; then the dumps that failed. Shared by
//! `triage_dumps` and `query_crashes`.

use ntdbg_analysis::triage::{self, TriageResult};
use std::fmt::Write as _;
use std::path::Path;

/// The buckets as text, dumps named relative to `base`.
pub(crate) fn triage_text<R>(result: &TriageResult<R>, base: &Path) -> String {
    let mut text = format!(
        "{} dump(s): {} bucket(s), {} failed\n",
        result.dumps,
        result.buckets.len(),
        result.failed.len()
    );
    for b in &result.buckets {
        let _ = writeln!(text, "{:>5}  {}  ({})", b.count, b.signature, b.kind);
        bucket_details(&mut text, b, base);
    }
    for f in &result.failed {
        let _ = writeln!(text, "failed: {}: {}", f.path, f.error);
    }
    text
}

/// Dumps named per bucket in the text; the rest are counted (format "json" lists all).
const TEXT_DUMPS_PER_BUCKET: usize = 3;

/// A bucket's second line: when, which modules, which dumps (relative to the folder).
fn bucket_details<R>(text: &mut String, b: &triage::Bucket<R>, dir: &Path) {
    let seen = match (&b.first_seen, &b.last_seen) {
        (Some(first), Some(last)) if first != last => format!("seen {first}..{last}; "),
        (Some(first), _) => format!("seen {first}; "),
        _ => String::new(),
    };
    let dumps: Vec<String> = b
        .dumps
        .iter()
        .take(TEXT_DUMPS_PER_BUCKET)
        .map(|d| {
            Path::new(d)
                .strip_prefix(dir)
                .map_or_else(|_| d.clone(), |rel| rel.display().to_string())
        })
        .collect();
    let more = match b.dumps.len().saturating_sub(TEXT_DUMPS_PER_BUCKET) {
        0 => String::new(),
        n => format!(" (+{n} more)"),
    };
    let _ = writeln!(
        text,
        "       {seen}modules: {}; dumps: {}{more}",
        b.modules.join(", "),
        dumps.join(", ")
    );
}
