//! The page frame (one inline style sheet, no script), links and the small formatting every
//! page shares.

pub use ntdbg_analysis::triage::html_escape as esc;
use std::fmt::Write as _;

const CSS: &str = r#"
:root{--bg:#f4f5f7;--card:#fff;--ink:#1b2230;--mute:#5f6b7d;--line:#e2e5ea;--accent:#2f55d4;--new:#c2255c}
*{box-sizing:border-box}
body{margin:0;font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,Arial,sans-serif;background:var(--bg);color:var(--ink)}
header{background:var(--ink);color:#fff;padding:14px 28px;display:flex;gap:24px;align-items:baseline;flex-wrap:wrap}
header a{color:#fff}header .brand{font-weight:700;font-size:17px}
header nav a{color:#c9d1e2;margin-right:14px}
main{max-width:1200px;margin:0 auto;padding:18px 28px 48px}
h1{font-size:20px;margin:4px 0 14px;word-break:break-all}
h2{font-size:13px;text-transform:uppercase;letter-spacing:.05em;color:var(--mute);margin:22px 0 8px}
.card{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:14px 18px;margin-bottom:14px}
.card h2{margin-top:0}table.facts th{width:150px}
.stats{display:flex;gap:12px;flex-wrap:wrap;margin-bottom:14px}
.stat{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:10px 16px;min-width:130px}
.stat b{display:block;font-size:22px}.stat span{color:var(--mute);font-size:12px}
table{border-collapse:collapse;width:100%}
th{text-align:left;font-size:12px;color:var(--mute);font-weight:600;padding:6px 8px;border-bottom:1px solid var(--line)}
td{padding:6px 8px;border-bottom:1px solid #eef0f3;vertical-align:middle}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums}
.mono,.sig{font-family:ui-monospace,"SFMono-Regular",Consolas,monospace;font-size:13px;word-break:break-all}
.badge{display:inline-block;background:var(--new);color:#fff;border-radius:4px;font-size:11px;padding:0 6px;margin-left:6px}
a{color:var(--accent);text-decoration:none}a:hover{text-decoration:underline}
form.filters{display:flex;gap:10px;align-items:center;flex-wrap:wrap;margin-bottom:14px}
form.filters label{color:var(--mute);font-size:12px}
select,input{font:inherit;padding:3px 6px;border:1px solid var(--line);border-radius:5px;background:#fff}
button{font:inherit;padding:3px 12px;border:0;border-radius:5px;background:var(--accent);color:#fff}
pre{background:#0f1420;color:#d7dce6;border-radius:8px;padding:14px 16px;overflow:auto;font:12.5px/1.45 ui-monospace,Consolas,monospace}
.inference{margin:8px 0}.basis{color:var(--mute);font-size:12.5px}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(280px,1fr));gap:14px}
.muted{color:var(--mute)}
svg text{font:11px system-ui,sans-serif;fill:var(--mute)}
"#;

/// A whole page: `title` in the tab and as its heading, then `body`.
pub fn page(title: &str, body: &str) -> String {
    let mut out = String::with_capacity(body.len() + CSS.len() + 512);
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width,initial-scale=1\">\
         <title>{} · ntdbg crash stats</title><style>{CSS}</style></head><body>\
         <header><a class=\"brand\" href=\"/\">ntdbg crash stats</a>\
         <nav><a href=\"/\">Top signatures</a><a href=\"/new\">New signatures</a></nav></header>\
         <main><h1>{}</h1>{body}</main></body></html>\n",
        esc(title),
        esc(title)
    );
    out
}

/// A query string (without `?`) of the pairs whose value is present.
pub fn query(pairs: &[(&str, Option<&str>)]) -> String {
    let mut out = form_urlencoded::Serializer::new(String::new());
    for (k, v) in pairs {
        if let Some(v) = v.filter(|v| !v.is_empty()) {
            out.append_pair(k, v);
        }
    }
    out.finish()
}

/// Unix seconds as `2026-11-30 14:05 UTC`.
pub fn when(t: i64) -> String {
    match time::OffsetDateTime::from_unix_timestamp(t) {
        Ok(d) => format!(
            "{:04}-{:02}-{:02} {:02}:{:02} UTC",
            d.year(),
            u8::from(d.month()),
            d.day(),
            d.hour(),
            d.minute()
        ),
        Err(_) => "?".to_string(),
    }
}

/// Unix seconds as its date, `2026-11-30`.
pub fn day(t: i64) -> String {
    when(t).get(..10).unwrap_or("?").to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_and_times() {
        assert_eq!(
            query(&[("s", Some("AV crashy!f<int>"))]),
            "s=AV+crashy%21f%3Cint%3E"
        );
        assert_eq!(
            query(&[("s", Some("a b")), ("p", None), ("d", Some(""))]),
            "s=a+b"
        );
        assert_eq!(when(86_400 + 3_660), "1970-01-02 01:01 UTC");
        assert_eq!(day(86_400), "1970-01-02");
        let html = page("<x>", "<p>body</p>");
        assert!(html.contains("<title>&lt;x&gt; · ntdbg crash stats</title>"));
        assert!(html.contains("<p>body</p>"));
        assert!(!html.contains("<script"));
    }
}
