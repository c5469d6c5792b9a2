//! `/crash/ID`: one crash. Its cause first (the event and the inferences, each with its basis),
//! then the report as `ntdbg analyze` prints it, what the client said about it, and how to open
//! it in an agent (`open_dump` takes the crash id).

use super::html::{esc, page, query, when};
use super::{PageError, Pages};
use axum::extract::{Path, State};
use axum::response::Html;
use ntdbg_store::{CrashFacts, UploadFacts};
use std::fmt::Write as _;
use std::sync::Arc;

/// `GET /crash/{id}`.
pub(crate) async fn show(
    State(pages): State<Arc<Pages>>,
    Path(id): Path<String>,
) -> Result<Html<String>, PageError> {
    let id = id.trim().to_ascii_lowercase();
    if id.len() != 64 || !id.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(PageError::not_found(format!(
            "{id:?} is not a crash id (64 hex digits, the SHA-256 of the dump)"
        )));
    }
    let key = id.clone();
    let (crash, upload) = pages
        .ask(move |s| Ok((s.crash(&key)?, s.upload_facts(&key)?)))
        .await?;
    let body = match (crash, upload) {
        (Some(crash), _) => recorded(&crash),
        (None, Some(upload)) => format!(
            "<div class=\"card\"><p>Received {} and waiting for analysis.</p></div>{}",
            when(upload.received_at),
            client_card(&upload)
        ),
        (None, None) => return Err(PageError::not_found(format!("no crash {id} here"))),
    };
    Ok(Html(page(&format!("Crash {}", &id[..16]), &body)))
}

/// The page of an analysed crash.
fn recorded(crash: &CrashFacts) -> String {
    let mut body = String::new();
    let report = crash.report.as_ref();
    let event = report
        .and_then(|r| r.pointer("/event/description"))
        .and_then(|d| d.as_str());
    body.push_str("<section id=\"cause\" class=\"card\"><h2>Cause</h2>");
    match (&crash.error, event) {
        (Some(error), _) => {
            let _ = write!(body, "<p>The analysis failed: {}</p>", esc(error));
        }
        (None, Some(event)) => {
            let _ = write!(
                body,
                "<p class=\"event\"><b>{}</b>: {}</p>",
                esc(crash.kind.as_deref().unwrap_or("")),
                esc(event)
            );
        }
        (None, None) => body.push_str("<p class=\"muted\">No event recorded.</p>"),
    }
    let inferences = report
        .and_then(|r| r["inferences"].as_array())
        .cloned()
        .unwrap_or_default();
    for inf in &inferences {
        let _ = write!(
            body,
            "<div class=\"inference\"><div>{}</div><div class=\"basis\">Basis: {}</div></div>",
            esc(inf["text"].as_str().unwrap_or("")),
            esc(inf["basis"].as_str().unwrap_or(""))
        );
    }
    body.push_str("</section>");
    body.push_str("<div class=\"card\"><table class=\"facts\">");
    if let Some(sig) = &crash.signature {
        let _ = write!(
            body,
            "<tr><th>Signature</th><td class=\"sig\"><a href=\"/signature?{}\">{}</a></td></tr>",
            esc(&query(&[("s", Some(sig.as_str()))])),
            esc(sig)
        );
    }
    let rows = [
        ("Crash id", Some(crash.id.clone())),
        ("Seen", Some(when(crash.seen))),
        ("OS build", crash.os.clone()),
        ("Architecture", crash.arch.clone()),
        ("Dump", Some(crash.location.clone())),
    ];
    for (label, value) in rows {
        if let Some(v) = value {
            let _ = write!(
                body,
                "<tr><th>{label}</th><td class=\"mono\">{}</td></tr>",
                esc(&v)
            );
        }
    }
    body.push_str("</table></div>");
    if let Some(upload) = &crash.upload {
        body.push_str(&client_card(upload));
    }
    let _ = write!(
        body,
        "<h2>Debug it</h2><div class=\"card\"><p>An agent on <code>ntdbg mcp --db</code> with this \
         database opens it with <code>open_dump(path=\"{}\")</code>.</p></div>",
        esc(&crash.id)
    );
    if let Some(text) = &crash.report_text {
        let _ = write!(
            body,
            "<h2>Report (as <code>ntdbg analyze</code> prints it)</h2><pre class=\"report\">{}</pre>",
            esc(text)
        );
    }
    body
}

/// What the client said: product, version, id and every annotation.
fn client_card(upload: &UploadFacts) -> String {
    let mut out =
        String::from("<h2>From the client</h2><div class=\"card\"><table class=\"facts\">");
    let mut row = |k: &str, v: &str| {
        let _ = write!(
            out,
            "<tr><th>{}</th><td class=\"mono\">{}</td></tr>",
            esc(k),
            esc(v)
        );
    };
    row("Received", &when(upload.received_at));
    for (k, v) in [
        ("Product", &upload.product),
        ("Version", &upload.version),
        ("Client", &upload.guid),
    ] {
        if let Some(v) = v {
            row(k, v);
        }
    }
    for (k, v) in &upload.annotations {
        row(k, v);
    }
    out.push_str("</table></div>");
    out
}
