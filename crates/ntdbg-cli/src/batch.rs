//! `ntdbg list` and `ntdbg triage`: many dumps at once.

use ntdbg_analysis::triage::{self, DumpSummary, TriageOptions, TriageResult};
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;

/// `ntdbg list DIR`: a table (or JSON) of header summaries.
pub fn list(dir: &Path, recursive: bool, json: bool) -> anyhow::Result<ExitCode> {
    let rows = triage::list_dumps(dir, recursive)
        .map_err(|e| anyhow::anyhow!("cannot read folder {}: {e}", dir.display()))?;
    if rows.is_empty() {
        hint_recursive(dir, recursive, "add --recursive");
    }
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if json {
        serde_json::to_writer_pretty(&mut out, &rows)?;
        writeln!(out)?;
    } else {
        writeln!(
            out,
            "{:<14} {:<5} {:<11} {:<20} {:<18} {:<11} {:<40} PATH",
            "KIND", "ARCH", "OS", "TIME", "PROCESS", "CODE", "EVENT"
        )?;
        for r in &rows {
            writeln!(out, "{}", table_row(r, dir))?;
        }
        let failed = rows.iter().filter(|r| r.error.is_some()).count();
        writeln!(out, "{} dump(s), {failed} unreadable", rows.len())?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn table_row(r: &DumpSummary, dir: &Path) -> String {
    let path = Path::new(&r.path)
        .strip_prefix(dir)
        .map(|p| p.display().to_string())
        .unwrap_or_else(|_| r.path.clone());
    if let Some(err) = &r.error {
        return format!("{:<14} {:<91} {path}", "unreadable", format!("({err})"));
    }
    let dash = || "-".to_string();
    let (code, event) = match &r.headline {
        Some(h) => (
            h.code.clone().unwrap_or_else(dash),
            match &h.name {
                Some(n) if h.kind == "bugcheck" => n.clone(),
                _ => h.description.clone(),
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

/// `ntdbg triage DIR`: analyse, bucket, print (and write HTML).
pub fn triage(
    dir: &Path,
    options: &TriageOptions,
    json: bool,
    html: Option<&Path>,
) -> anyhow::Result<ExitCode> {
    let files = triage::find_dumps(dir, options.recursive)
        .map_err(|e| anyhow::anyhow!("cannot read folder {}: {e}", dir.display()))?;
    if files.is_empty() {
        hint_recursive(dir, options.recursive, "drop --top-level");
    }
    let bar = if std::io::stderr().is_terminal() {
        let bar = indicatif::ProgressBar::new(files.len() as u64);
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{bar:40} {pos}/{len} dumps ({per_sec}, eta {eta})",
        ) {
            bar.set_style(style);
        }
        Some(bar)
    } else {
        None
    };
    let progress = |done: usize, _total: usize| {
        if let Some(b) = &bar {
            b.set_position(done as u64);
        }
    };
    let result = triage::triage_paths(&files, options, &progress);
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    if let Some(path) = html {
        let page = triage::render_html(&result, &dir.display().to_string());
        std::fs::write(path, page)
            .map_err(|e| anyhow::anyhow!("cannot write {}: {e}", path.display()))?;
    }
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if json {
        serde_json::to_writer_pretty(&mut out, &result)?;
        writeln!(out)?;
    } else {
        write_summary(&mut out, &result)?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

fn write_summary(out: &mut impl Write, r: &TriageResult) -> std::io::Result<()> {
    writeln!(
        out,
        "{} dump(s): {} bucket(s), {} failed",
        r.dumps,
        r.buckets.len(),
        r.failed.len()
    )?;
    for b in &r.buckets {
        writeln!(out, "\n{:>5}  {}", b.count, b.signature)?;
        writeln!(
            out,
            "       {} — {}",
            b.kind, b.representative.event.description
        )?;
        if let (Some(f), Some(l)) = (&b.first_seen, &b.last_seen) {
            writeln!(out, "       seen {f} .. {l}")?;
        }
        if !b.modules.is_empty() {
            writeln!(out, "       modules: {}", b.modules.join(", "))?;
        }
        for d in b.dumps.iter().take(3) {
            writeln!(out, "       {d}")?;
        }
        if b.dumps.len() > 3 {
            writeln!(out, "       … and {} more", b.dumps.len() - 3)?;
        }
    }
    if !r.failed.is_empty() {
        writeln!(out, "\nfailed:")?;
        for f in &r.failed {
            writeln!(out, "  {}: {}", f.path, f.error)?;
        }
    }
    Ok(())
}

/// On stderr: no dumps here, but some in sub-folders, and the flag (`advice`) that reaches them.
fn hint_recursive(dir: &Path, recursive: bool, advice: &str) {
    if recursive {
        return;
    }
    if let Ok(deeper) = triage::find_dumps(dir, true) {
        if !deeper.is_empty() {
            eprintln!(
                "note: no dumps directly in {}; {} in sub-folders ({advice})",
                dir.display(),
                deeper.len()
            );
        }
    }
}
