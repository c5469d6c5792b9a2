//! The triage report as one self-contained HTML file (inline CSS, no scripts, no network).

use super::{Bucket, TriageResult};
use serde::{Deserialize, Serialize};
use std::fmt::Write as _;

/// Frames of the representative stack shown per bucket.
const STACK_ROWS: usize = 12;
/// Dump links shown per bucket before "and N more".
const DUMP_LINKS: usize = 50;

const CSS: &str = r#"
:root{--bg:#f5f6f8;--card:#fff;--ink:#1d2330;--mute:#667085;--line:#e4e7ec;--accent:#3b5bdb}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 -apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif;background:var(--bg);color:var(--ink)}
header{background:#1d2330;color:#fff;padding:22px 32px}
header h1{margin:0 0 4px;font-size:22px;font-weight:600}
header .sub{color:#aab2c5;font-size:13px}
main{max-width:1180px;margin:0 auto;padding:20px 32px 48px}
.stats{display:flex;gap:14px;margin-bottom:18px}
.stat{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:12px 18px;min-width:140px}
.stat b{display:block;font-size:24px}
.stat span{color:var(--mute);font-size:12px;text-transform:uppercase;letter-spacing:.04em}
.dist{display:flex;height:10px;border-radius:5px;overflow:hidden;margin:4px 0 22px;background:var(--line)}
.dist i{display:block;height:100%}
.bucket{background:var(--card);border:1px solid var(--line);border-radius:10px;margin-bottom:16px;overflow:hidden}
.bhead{display:flex;align-items:center;gap:14px;padding:14px 18px;border-bottom:1px solid var(--line)}
.count{min-width:46px;height:46px;border-radius:23px;color:#fff;font-size:18px;font-weight:700;display:flex;align-items:center;justify-content:center}
.sig{font:600 14px/1.35 ui-monospace,"SFMono-Regular",Consolas,monospace;word-break:break-all}
.meta{color:var(--mute);font-size:12px;margin-top:3px}
.tag{display:inline-block;border-radius:4px;padding:1px 7px;font-size:11px;font-weight:600;margin-right:6px;color:#fff}
.bbody{display:grid;grid-template-columns:3fr 2fr;gap:18px;padding:14px 18px}
h3{font-size:12px;text-transform:uppercase;letter-spacing:.04em;color:var(--mute);margin:0 0 6px}
table{border-collapse:collapse;width:100%;font:12px/1.4 ui-monospace,Consolas,monospace}
td{padding:2px 6px;border-bottom:1px solid #f0f1f4;vertical-align:top}
td.n{color:var(--mute);width:24px;text-align:right}
td.how{color:var(--mute);width:60px}
ul{margin:0;padding-left:18px}
li{margin:2px 0}
.inf{margin-bottom:6px}
.basis{color:var(--mute);font-size:12px}
a{color:var(--accent);text-decoration:none}
.dumps{font:12px ui-monospace,Consolas,monospace;word-break:break-all}
.failed td{font-family:inherit}
footer{color:var(--mute);font-size:12px;text-align:center;margin-top:28px}
"#;

const PALETTE: &[&str] = &[
    "#3b5bdb", "#e8590c", "#2b8a3e", "#c2255c", "#7048e8", "#0b7285", "#e67700", "#5c940d",
];

/// Escapes text for HTML element content and attribute values (also the crash-stats page's,
/// as `triage::html_escape`).
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// `file:` link for a dump's path. A relative path is made absolute against the current folder
/// (the one it is relative to), so that the link works from wherever the report is opened.
fn href(path: &str) -> String {
    let absolute = std::path::absolute(path)
        .map_or_else(|_| path.to_string(), |p| p.to_string_lossy().into_owned());
    let p = absolute.replace('\\', "/");
    let encoded: String = p
        .chars()
        .map(|c| match c {
            ' ' => "%20".to_string(),
            '#' => "%23".to_string(),
            '?' => "%3F".to_string(),
            '%' => "%25".to_string(),
            _ => c.to_string(),
        })
        .collect();
    if encoded.starts_with('/') {
        format!("file://{encoded}")
    } else if encoded.as_bytes().get(1..3) == Some(b":/") {
        format!("file:///{encoded}")
    } else {
        encoded
    }
}

/// What the page shows of a representative report, read back from its JSON (the same keys as
/// `analyze --json`), so that a report stored as JSON renders as the analysed one does.
#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct Shown {
    event: ShownEvent,
    dump: ShownDump,
    stack: Vec<ShownFrame>,
    inferences: Vec<ShownInference>,
    signature_frames: Vec<ShownSignatureFrame>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ShownEvent {
    description: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ShownDump {
    arch: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ShownFrame {
    frame: usize,
    module: Option<String>,
    function: Option<String>,
    offset: Option<String>,
    address: String,
    source: Option<String>,
    found_by: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ShownInference {
    text: String,
    basis: String,
}

#[derive(Debug, Default, Deserialize)]
#[serde(default)]
struct ShownSignatureFrame {
    frame: usize,
    name: String,
    role: String,
    found_by: String,
    reason: String,
}

/// The part of `report` the page shows; a report that does not serialize shows nothing.
fn shown(report: &impl Serialize) -> Shown {
    serde_json::to_value(report)
        .and_then(serde_json::from_value)
        .unwrap_or_default()
}

/// Renders the triage result as a complete HTML document. `title` names the folder.
/// `R` is the representative report or its JSON.
pub fn render_html<R: Serialize>(result: &TriageResult<R>, title: &str) -> String {
    let mut h = String::new();
    let analysed: usize = result.buckets.iter().map(|b| b.count).sum();
    let _ = write!(
        h,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n\
         <title>ntdbg triage: {t}</title>\n<style>{CSS}</style>\n</head>\n<body>\n\
         <header><h1>Crash triage</h1><div class=\"sub\">{t}</div></header>\n<main>\n",
        t = esc(title)
    );
    let _ = writeln!(
        h,
        "<div class=\"stats\">\
         <div class=\"stat\"><b>{}</b><span>dumps</span></div>\
         <div class=\"stat\"><b>{}</b><span>buckets</span></div>\
         <div class=\"stat\"><b>{analysed}</b><span>analysed</span></div>\
         <div class=\"stat\"><b>{}</b><span>failed</span></div></div>",
        result.dumps,
        result.buckets.len(),
        result.failed.len()
    );
    if analysed > 0 {
        h.push_str("<div class=\"dist\">");
        for (i, b) in result.buckets.iter().enumerate() {
            let pct = b.count as f64 * 100.0 / analysed as f64;
            let _ = write!(
                h,
                "<i style=\"width:{pct:.3}%;background:{}\" title=\"{} ({})\"></i>",
                PALETTE[i % PALETTE.len()],
                esc(&b.signature),
                b.count
            );
        }
        h.push_str("</div>\n");
    }
    for (i, b) in result.buckets.iter().enumerate() {
        bucket(&mut h, i, b);
    }
    if !result.failed.is_empty() {
        h.push_str(
            "<section class=\"bucket failed\" id=\"failed\"><div class=\"bhead\"><div>\
             <div class=\"sig\">Dumps that could not be analysed</div></div></div>\
             <div style=\"padding:10px 18px\"><table>",
        );
        for f in &result.failed {
            let _ = write!(
                h,
                "<tr><td class=\"dumps\"><a href=\"{}\">{}</a></td><td>{}</td></tr>",
                esc(&href(&f.path)),
                esc(&f.path),
                esc(&f.error)
            );
        }
        h.push_str("</table></div></section>\n");
    }
    h.push_str("<footer>Generated by ntdbg. Signatures: exception kind + first application frames, without offsets.</footer>\n</main>\n</body>\n</html>\n");
    h
}

fn bucket<R: Serialize>(h: &mut String, i: usize, b: &Bucket<R>) {
    let color = PALETTE[i % PALETTE.len()];
    let r = &shown(&b.representative);
    let seen = match (&b.first_seen, &b.last_seen) {
        (Some(f), Some(l)) if f == l => format!("seen {f}"),
        (Some(f), Some(l)) => format!("first seen {f} &middot; last seen {l}"),
        _ => "time unknown".into(),
    };
    let _ = write!(
        h,
        "<section class=\"bucket\" id=\"bucket-{i}\"><div class=\"bhead\">\
         <div class=\"count\" style=\"background:{color}\">{}</div><div>\
         <div class=\"sig\">{}</div>\
         <div class=\"meta\"><span class=\"tag\" style=\"background:{color}\">{}</span>{} &middot; {} &middot; {}</div>\
         </div></div>\n<div class=\"bbody\"><div>",
        b.count,
        esc(&b.signature),
        esc(&b.kind),
        esc(&r.event.description),
        seen,
        esc(&r.dump.arch)
    );
    h.push_str("<h3>Representative stack</h3><table>");
    for f in r.stack.iter().take(STACK_ROWS) {
        let name = match (&f.module, &f.function, &f.offset) {
            (Some(m), Some(func), Some(o)) => format!("{m}!{func}+{o}"),
            (Some(m), Some(func), None) => format!("{m}!{func}"),
            (Some(m), None, Some(o)) => format!("{m}+{o}"),
            _ => f.address.clone(),
        };
        let src = f
            .source
            .as_deref()
            .map(|s| format!("<div class=\"basis\">{}</div>", esc(s)))
            .unwrap_or_default();
        let _ = write!(
            h,
            "<tr><td class=\"n\">{:02}</td><td>{}{src}</td><td class=\"how\">{}</td></tr>",
            f.frame,
            esc(&name),
            esc(&f.found_by)
        );
    }
    if r.stack.len() > STACK_ROWS {
        let _ = write!(
            h,
            "<tr><td></td><td class=\"basis\">… {} more frames</td><td></td></tr>",
            r.stack.len() - STACK_ROWS
        );
    }
    h.push_str("</table></div><div>");
    if !r.inferences.is_empty() {
        h.push_str("<h3>Inferences</h3>");
        for inf in &r.inferences {
            let _ = write!(
                h,
                "<div class=\"inf\">{}<div class=\"basis\">{}</div></div>",
                esc(&inf.text),
                esc(&inf.basis)
            );
        }
    }
    if !r.signature_frames.is_empty() {
        h.push_str("<h3>Signature frames</h3>");
        for f in &r.signature_frames {
            let _ = write!(
                h,
                "<div class=\"inf\">{:02} {} &middot; {}<div class=\"basis\">{} frame: {}</div></div>",
                f.frame,
                esc(&f.name),
                esc(&f.role),
                esc(&f.found_by),
                esc(&f.reason)
            );
        }
    }
    if !b.modules.is_empty() {
        h.push_str("<h3>Affected modules</h3><ul>");
        for m in &b.modules {
            let _ = write!(h, "<li>{}</li>", esc(m));
        }
        h.push_str("</ul>");
    }
    let _ = write!(
        h,
        "<h3 style=\"margin-top:10px\">Dumps ({})</h3><ul class=\"dumps\">",
        b.count
    );
    for d in b.dumps.iter().take(DUMP_LINKS) {
        let _ = write!(h, "<li><a href=\"{}\">{}</a></li>", esc(&href(d)), esc(d));
    }
    if b.dumps.len() > DUMP_LINKS {
        let _ = write!(h, "<li>… and {} more</li>", b.dumps.len() - DUMP_LINKS);
    }
    h.push_str("</ul></div></div></section>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes() {
        assert_eq!(esc("a<b>&\"'"), "a&lt;b&gt;&amp;&quot;&#39;");
        assert_eq!(href("/x y/a#b.dmp"), "file:///x%20y/a%23b.dmp");
    }

    #[test]
    fn a_relative_dump_path_links_absolutely() {
        let here = std::env::current_dir().expect("the current folder");
        let link = href("crashes/a.dmp");
        let expected = here.join("crashes").join("a.dmp");
        let expected = expected.to_string_lossy().replace('\\', "/");
        assert!(link.starts_with("file:///"), "{link}");
        assert!(link.ends_with(&expected), "{link} vs {expected}");
    }
}
