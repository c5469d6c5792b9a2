//! `ntdbg list` / MCP `list_dumps`: the header-only dump summaries of
//! [`ntdbg_targets::listing`], with exception and bugcheck codes named by this crate, and
//! their one text form ([`render_table`]).

use crate::bugcheck::{bugcheck_name, decode_bugcheck};
use crate::exception::decode;
use ntdbg_targets::listing::{DescribeEvent, DumpListing, DumpSummary, EventText, WalkLimits};
use ntdbg_targets::ExceptionEvent;
use std::fmt::Write;
use std::path::Path;

/// Names exception codes ([`decode`]) and bugchecks ([`decode_bugcheck`]) for the summaries.
#[derive(Debug, Clone, Copy, Default)]
pub struct EventNames;

impl DescribeEvent for EventNames {
    fn exception(&self, event: &ExceptionEvent, pointer_size: usize) -> EventText {
        let d = decode(event, pointer_size);
        EventText {
            name: d.name,
            description: d.description,
        }
    }

    fn bugcheck(&self, code: u32, parameters: [u64; 4]) -> EventText {
        EventText {
            name: bugcheck_name(code),
            description: decode_bugcheck(code, parameters).description,
        }
    }
}

/// Summaries of the dumps under `dir` within `limits`, sorted by path. Fails only when `dir`
/// itself cannot be read.
pub fn list_dumps(dir: &Path, limits: &WalkLimits) -> std::io::Result<DumpListing> {
    ntdbg_targets::listing::list_dumps(dir, limits, &EventNames)
}

/// The header summary of one dump file. Never fails: problems go into `error`.
pub fn summarize_dump(path: &Path) -> DumpSummary {
    ntdbg_targets::listing::summarize_dump(path, &EventNames)
}

/// The listing as a table, one dump a line, paths relative to `base` when under it:
/// `KIND ARCH OS TIME PROCESS CODE EVENT PATH`, then a count.
pub fn render_table(listing: &DumpListing, base: &Path) -> String {
    let mut text = format!(
        "{:<14} {:<5} {:<11} {:<20} {:<18} {:<11} {:<40} PATH\n",
        "KIND", "ARCH", "OS", "TIME", "PROCESS", "CODE", "EVENT"
    );
    for r in &listing.dumps {
        let _ = writeln!(text, "{}", table_row(r, base));
    }
    let failed = listing.dumps.iter().filter(|r| r.error.is_some()).count();
    let _ = writeln!(text, "{} dump(s), {failed} unreadable", listing.dumps.len());
    if listing.truncated {
        text.push_str("(listing stopped at its limit: name a subfolder to see more)\n");
    }
    text
}

fn table_row(r: &DumpSummary, base: &Path) -> String {
    let path = Path::new(&r.path)
        .strip_prefix(base)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| r.path.clone());
    if let Some(err) = &r.error {
        return format!(
            "{:<14} {:<91} {path}",
            "unreadable",
            format!("({})", err.message)
        );
    }
    let dash = || "-".to_string();
    let (code, event) = match &r.event {
        Some(e) => (
            e.code.clone().unwrap_or_else(dash),
            match &e.name {
                Some(n) if e.kind == "bugcheck" => n.clone(),
                _ => e.description.clone(),
            },
        ),
        None => (dash(), dash()),
    };
    let event: String = if event.chars().count() > 40 {
        event.chars().take(39).chain(['…']).collect()
    } else {
        event
    };
    format!(
        "{:<14} {:<5} {:<11} {:<20} {:<18} {:<11} {:<40} {path}",
        r.kind.clone().unwrap_or_else(dash),
        r.arch.clone().unwrap_or_else(dash),
        r.os_build.clone().unwrap_or_else(dash),
        r.time.clone().unwrap_or_else(dash),
        r.process.clone().unwrap_or_else(dash),
        code,
        event
    )
}
