//! How a crash report's event and frames read in the tools' text answers (`open_dump`,
//! `analyze_crash`).

use ntdbg_analysis::{Report, StackEntry};
use std::fmt::Write;

/// How a report frame was found, as the stack lines show it: `cfi`, or `scan, unverified`
/// when the guess could not be checked (it may be wrong).
pub fn how_found(f: &StackEntry) -> String {
    if f.trust == "unverified" {
        format!("{}, unverified", f.found_by)
    } else {
        f.found_by.clone()
    }
}

/// `module!function+offset [source]` for a report frame.
pub fn frame_text(f: &StackEntry) -> String {
    let mut s = match (&f.module, &f.function) {
        (Some(m), Some(func)) => format!("{m}!{func}"),
        (Some(m), None) => m.clone(),
        (None, _) => f.address.clone(),
    };
    if let Some(off) = &f.offset {
        let _ = write!(s, "+{off}");
    }
    if let Some(src) = &f.source {
        let _ = write!(s, " [{src}]");
    }
    s
}

/// The one-line event description.
pub fn event_line(report: &Report) -> String {
    let e = &report.event;
    match (&e.name, &e.code) {
        (Some(name), Some(code)) => format!(
            "{name} ({code}) at {} on thread {}: {}",
            e.address.as_deref().unwrap_or("?"),
            e.thread_id.as_deref().unwrap_or("?"),
            e.description
        ),
        _ => e.description.clone(),
    }
}
