//! `/`: top signatures of a period and their trend; `/new`: signatures new since a product
//! version (or first seen in the period).

use super::chart::{bars, sparkline};
use super::html::{day, esc, page, query};
use super::{PageError, Pages, Period};
use axum::extract::{Query, State};
use axum::response::Html;
use ntdbg_store::{SignatureCount, StatsFilter};
use serde::Deserialize;
use std::fmt::Write as _;
use std::sync::Arc;

/// Signatures listed at most.
const TOP: usize = 50;
/// Periods offered, in days.
const PERIODS: &[i64] = &[1, 7, 14, 30, 90];

/// `GET /`.
pub(crate) async fn top(
    State(pages): State<Arc<Pages>>,
    Query(period): Query<Period>,
) -> Result<Html<String>, PageError> {
    let filter = period.filter();
    let f = filter.clone();
    let overview = pages.ask(move |s| s.overview(&f)).await?;
    let mut body = filters(&period, &overview.products, None);
    let _ = write!(
        body,
        "<div class=\"stats\">{}{}{}{}</div>",
        stat(overview.dumps, "crashes analysed"),
        stat(overview.signatures.len() as u64, "signatures"),
        stat(overview.failed, "could not be analysed"),
        stat(overview.queued, "waiting for analysis"),
    );
    let _ = write!(
        body,
        "<div class=\"card\"><h2>Crashes per day</h2>{}</div>",
        bars(filter.since, &overview.daily, 1100, 160)
    );
    body.push_str("<h2>Top signatures</h2>");
    body.push_str(&signature_table(&overview.signatures, &period, &filter));
    Ok(Html(page("Top signatures", &body)))
}

/// `/new`'s query.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct NewQuery {
    days: Option<i64>,
    product: Option<String>,
    version: Option<String>,
}

/// `GET /new`.
pub(crate) async fn new(
    State(pages): State<Arc<Pages>>,
    Query(q): Query<NewQuery>,
) -> Result<Html<String>, PageError> {
    let period = Period {
        days: q.days,
        product: q.product.clone(),
    };
    let filter = period.filter();
    let version = q.version.clone().filter(|v| !v.trim().is_empty());
    let (f, product, v) = (filter.clone(), q.product.clone(), version.clone());
    let (overview, new) = pages
        .ask(move |s| {
            let overview = s.overview(&f)?;
            let new = match (product.as_deref().filter(|p| !p.is_empty()), &v) {
                (Some(p), Some(v)) => s.new_since_version(&f, p, v)?,
                _ => overview
                    .signatures
                    .iter()
                    .filter(|c| c.first_seen.is_some_and(|t| t >= f.since))
                    .cloned()
                    .collect(),
            };
            Ok((overview, new))
        })
        .await?;
    let mut body = filters(&period, &overview.products, Some(version.as_deref()));
    let what = match (&period.product, &version) {
        (Some(p), Some(v)) if !p.is_empty() => format!(
            "Signatures never seen with {} older than {}",
            esc(p),
            esc(v)
        ),
        _ => format!(
            "Signatures first seen since {} (choose a product and a version to compare versions)",
            day(filter.since)
        ),
    };
    let _ = write!(body, "<h2>{what}</h2>");
    body.push_str(&signature_table(&new, &period, &filter));
    Ok(Html(page("New signatures", &body)))
}

fn stat(n: u64, label: &str) -> String {
    format!(
        "<div class=\"stat\"><b>{n}</b><span>{}</span></div>",
        esc(label)
    )
}

/// The filter form: period, product, and (on `/new`) the version.
fn filters(period: &Period, products: &[String], version: Option<Option<&str>>) -> String {
    let days = period.days.unwrap_or(super::DEFAULT_DAYS);
    let mut form = String::from("<form class=\"filters\" method=\"get\">");
    form.push_str("<label for=\"days\">Period</label><select id=\"days\" name=\"days\">");
    for d in PERIODS {
        let selected = if *d == days { " selected" } else { "" };
        let label = if *d == 1 {
            "today".to_string()
        } else {
            format!("last {d} days")
        };
        let _ = write!(form, "<option value=\"{d}\"{selected}>{label}</option>");
    }
    form.push_str("</select><label for=\"product\">Product</label><select id=\"product\" name=\"product\"><option value=\"\">all</option>");
    let chosen = period.product.as_deref().unwrap_or("");
    for p in products {
        let selected = if p == chosen { " selected" } else { "" };
        let _ = write!(
            form,
            "<option value=\"{}\"{selected}>{}</option>",
            esc(p),
            esc(p)
        );
    }
    form.push_str("</select>");
    if let Some(v) = version {
        let _ = write!(
            form,
            "<label for=\"version\">New since version</label><input id=\"version\" name=\"version\" placeholder=\"1.4.0\" value=\"{}\">",
            esc(v.unwrap_or(""))
        );
    }
    form.push_str("<button type=\"submit\">Show</button></form>");
    form
}

/// Signatures as a table: count, share, trend, first seen, each linking to its page.
fn signature_table(counts: &[SignatureCount], period: &Period, filter: &StatsFilter) -> String {
    if counts.is_empty() {
        return "<p class=\"muted\">No crashes in this period.</p>".to_string();
    }
    let total: u64 = counts.iter().map(|c| c.count).sum::<u64>().max(1);
    let mut t = String::from(
        "<div class=\"card\"><table class=\"signatures\"><thead><tr><th class=\"num\">#</th><th>Signature</th>\
         <th class=\"num\">Crashes</th><th class=\"num\">Share</th><th>Trend</th><th>First seen</th></tr></thead><tbody>",
    );
    let keep = period.query();
    for (i, c) in counts.iter().take(TOP).enumerate() {
        let link = query(&[("s", Some(c.signature.as_str()))]);
        let href = if keep.is_empty() {
            link
        } else {
            format!("{link}&{keep}")
        };
        let new = c.first_seen.is_some_and(|t| t >= filter.since);
        let _ = write!(
            t,
            "<tr><td class=\"num\">{}</td><td class=\"sig\"><a href=\"/signature?{}\">{}</a>{}</td>\
             <td class=\"num\">{}</td><td class=\"num\">{:.1} %</td><td>{}</td><td>{}</td></tr>",
            i + 1,
            esc(&href),
            esc(&c.signature),
            if new { "<span class=\"badge\">new</span>" } else { "" },
            c.count,
            100.0 * c.count as f64 / total as f64,
            sparkline(&c.daily),
            c.first_seen.map(day).unwrap_or_default()
        );
    }
    t.push_str("</tbody></table></div>");
    t
}
