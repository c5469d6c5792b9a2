//! `/signature?s=SIG`: one signature's crashes over the period by day, product version, OS
//! build and module version, its representative stack and its latest crashes.

use super::chart::bars;
use super::html::{day, esc, page, when};
use super::{PageError, Pages, Period};
use axum::extract::{Query, State};
use axum::response::Html;
use serde::Deserialize;
use std::fmt::Write as _;
use std::sync::Arc;

/// Frames of the representative stack shown.
const FRAMES: usize = 16;

/// The signature page's query.
#[derive(Debug, Deserialize)]
pub(crate) struct SignatureQuery {
    s: String,
    days: Option<i64>,
    product: Option<String>,
}

/// `GET /signature`.
pub(crate) async fn show(
    State(pages): State<Arc<Pages>>,
    Query(q): Query<SignatureQuery>,
) -> Result<Html<String>, PageError> {
    let period = Period {
        days: q.days,
        product: q.product,
    };
    let filter = period.filter();
    let (f, sig) = (filter.clone(), q.s.clone());
    let facts = pages
        .ask(move |s| s.signature_facts(&f, &sig))
        .await?
        .ok_or_else(|| {
            PageError::not_found(format!(
                "no crash with signature {:?} in this period ({} to now)",
                q.s,
                day(filter.since)
            ))
        })?;
    let mut body = String::new();
    let c = &facts.count;
    let _ = write!(
        body,
        "<div class=\"stats\"><div class=\"stat\"><b>{}</b><span>crashes since {}</span></div>\
         <div class=\"stat\"><b>{}</b><span>first seen</span></div></div>",
        c.count,
        day(filter.since),
        c.first_seen.map(day).unwrap_or_default()
    );
    let _ = write!(
        body,
        "<div class=\"card\"><h2>Crashes per day</h2>{}</div><div class=\"grid\">",
        bars(filter.since, &c.daily, 700, 120)
    );
    let versions: Vec<(String, u64)> = facts
        .product_versions
        .iter()
        .map(|(p, v, n)| (format!("{p} {v}"), *n))
        .collect();
    body.push_str(&counts_card("Product versions", &versions));
    body.push_str(&counts_card("OS builds", &facts.os_builds));
    let modules: Vec<(String, u64)> = facts
        .modules
        .iter()
        .map(|(m, v, n)| (format!("{m} {v}"), *n))
        .collect();
    body.push_str(&counts_card("Modules", &modules));
    body.push_str("</div>");
    if let Some(report) = &facts.representative {
        body.push_str(&stack_card(report));
    }
    body.push_str(
        "<h2>Latest crashes</h2><div class=\"card\"><table class=\"crashes\"><thead><tr><th>Crash</th>\
         <th>Seen</th><th>Product</th><th>OS build</th></tr></thead><tbody>",
    );
    for s in &facts.samples {
        let product = [s.product.as_deref(), s.version.as_deref()]
            .into_iter()
            .flatten()
            .collect::<Vec<_>>()
            .join(" ");
        let _ = write!(
            body,
            "<tr><td class=\"mono\"><a href=\"/crash/{}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&s.id),
            esc(s.id.get(..16).unwrap_or(&s.id)),
            when(s.seen),
            esc(&product),
            esc(s.os.as_deref().unwrap_or(""))
        );
    }
    body.push_str("</tbody></table></div>");
    Ok(Html(page(&q.s, &body)))
}

/// A card of labelled counts.
fn counts_card(title: &str, rows: &[(String, u64)]) -> String {
    let mut out = format!("<div class=\"card\"><h2>{}</h2><table>", esc(title));
    if rows.is_empty() {
        out.push_str("<tr><td class=\"muted\">none recorded</td></tr>");
    }
    for (label, n) in rows {
        let _ = write!(
            out,
            "<tr><td class=\"mono\">{}</td><td class=\"num\">{n}</td></tr>",
            esc(label)
        );
    }
    out.push_str("</table></div>");
    out
}

/// The representative report's stack.
fn stack_card(report: &serde_json::Value) -> String {
    let mut out = String::from(
        "<h2>Representative stack</h2><div class=\"card\"><table class=\"stack\"><thead><tr><th class=\"num\">#</th>\
         <th>Frame</th><th>Source</th><th>Found by</th></tr></thead><tbody>",
    );
    let frames = report["stack"].as_array().cloned().unwrap_or_default();
    for f in frames.iter().take(FRAMES) {
        let s = |k: &str| f[k].as_str().unwrap_or("");
        let name = match (s("module"), s("function"), s("offset")) {
            (m, func, o) if !func.is_empty() && !o.is_empty() => format!("{m}!{func}+{o}"),
            (m, func, _) if !func.is_empty() => format!("{m}!{func}"),
            (m, _, o) if !m.is_empty() => format!("{m}+{o}"),
            _ => s("address").to_string(),
        };
        let _ = write!(
            out,
            "<tr><td class=\"num\">{}</td><td class=\"mono\">{}</td><td class=\"mono\">{}</td><td>{}</td></tr>",
            f["frame"].as_u64().unwrap_or(0),
            esc(&name),
            esc(s("source")),
            esc(s("found_by"))
        );
    }
    out.push_str("</tbody></table></div>");
    out
}
