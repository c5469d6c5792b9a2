//! `ntdbg list` and `ntdbg triage`: many dumps at once.

use ntdbg_analysis::listing::{list_dumps, render_table};
use ntdbg_analysis::triage::{self, TriageOptions, TriageResult};
use ntdbg_targets::listing::{find_dump_files, WalkLimits};
use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;

/// `ntdbg list DIR`: a table (or JSON) of header summaries.
pub fn list(dir: &Path, recursive: bool, json: bool) -> anyhow::Result<ExitCode> {
    let listing = list_dumps(dir, &WalkLimits::SHELL.recursive(recursive))
        .map_err(|e| anyhow::anyhow!("cannot read folder {}: {e}", dir.display()))?;
    if listing.dumps.is_empty() {
        hint_recursive(dir, recursive, "add --recursive");
    }
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    if json {
        serde_json::to_writer_pretty(&mut out, &listing)?;
        writeln!(out)?;
    } else {
        write!(out, "{}", render_table(&listing, dir))?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// `ntdbg triage DIR`: analyse, bucket, print (and write HTML).
pub fn triage(
    dir: &Path,
    options: &TriageOptions,
    json: bool,
    html: Option<&Path>,
) -> anyhow::Result<ExitCode> {
    let files = find_dump_files(dir, &WalkLimits::SHELL.recursive(options.recursive))
        .map_err(|e| anyhow::anyhow!("cannot read folder {}: {e}", dir.display()))?
        .files;
    if files.is_empty() {
        hint_recursive(dir, options.recursive, "drop --top-level");
    }
    let bar = progress_bar(files.len());
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
        write_summary(&mut out, &result, |r| r.event.description.clone(), 3)?;
    }
    out.flush()?;
    Ok(ExitCode::SUCCESS)
}

/// A progress bar over `len` dumps on stderr, when stderr is a terminal.
pub(crate) fn progress_bar(len: usize) -> Option<indicatif::ProgressBar> {
    if !std::io::stderr().is_terminal() {
        return None;
    }
    let bar = indicatif::ProgressBar::new(len as u64);
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} dumps ({per_sec}, eta {eta})")
    {
        bar.set_style(style);
    }
    Some(bar)
}

/// The buckets as text: `describe` tells a representative's event in one line; at most
/// `shown` dumps are listed per bucket.
pub(crate) fn write_summary<R>(
    out: &mut impl Write,
    r: &TriageResult<R>,
    describe: impl Fn(&R) -> String,
    shown: usize,
) -> std::io::Result<()> {
    writeln!(
        out,
        "{} dump(s): {} bucket(s), {} failed",
        r.dumps,
        r.buckets.len(),
        r.failed.len()
    )?;
    for b in &r.buckets {
        writeln!(out, "\n{:>5}  {}", b.count, b.signature)?;
        writeln!(out, "       {} — {}", b.kind, describe(&b.representative))?;
        if let (Some(f), Some(l)) = (&b.first_seen, &b.last_seen) {
            writeln!(out, "       seen {f} .. {l}")?;
        }
        if !b.modules.is_empty() {
            writeln!(out, "       modules: {}", b.modules.join(", "))?;
        }
        for d in b.dumps.iter().take(shown) {
            writeln!(out, "       {d}")?;
        }
        if b.dumps.len() > shown {
            writeln!(out, "       … and {} more", b.dumps.len() - shown)?;
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
    if let Ok(deeper) = find_dump_files(dir, &WalkLimits::SHELL) {
        let deeper = deeper.files;
        if !deeper.is_empty() {
            eprintln!(
                "note: no dumps directly in {}; {} in sub-folders ({advice})",
                dir.display(),
                deeper.len()
            );
        }
    }
}
