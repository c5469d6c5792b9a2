//! `list_dumps`: the dumps in a folder, each with a header-only summary.
//!
//! A file is a candidate when its extension says dump (`.dmp`, `.mdmp`, `.hdmp`, `.dump`) or
//! its first bytes carry a dump signature (`MDMP`, `PAGEDUMP`, `PAGEDU64`). Each candidate is
//! opened with [`ntdbg_targets::open`] (memory-mapped; headers and streams parsed, memory not
//! read) for its facts; one that cannot be opened is listed with the reason. Folders reached through links
//! are not followed, files reached through links are checked against the allowed directories,
//! and the walk is bounded in depth and size.

use crate::dto::{DumpSummary, ErrorBrief, ListDumpsResult};
use crate::error::ToolError;
use crate::paths::AllowedDirs;
use ntdbg_engine::ErrorCode;
use std::path::{Path, PathBuf};

/// Most dumps listed in one call.
pub const MAX_DUMPS: usize = 500;
/// Most directory entries looked at in one call.
const MAX_ENTRIES: usize = 50_000;
/// Deepest subfolder level visited with `recursive`.
const MAX_DEPTH: usize = 16;

/// Lists the dumps in `dir` (already checked to be inside an allowed directory).
pub fn list_dumps(dir: &Path, recursive: bool, allowed: &AllowedDirs) -> ListDumpsResult {
    let mut files = Vec::new();
    let mut truncated = false;
    let mut seen = 0usize;
    let mut pending = vec![(dir.to_path_buf(), 0usize)];
    'walk: while let Some((folder, depth)) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > MAX_ENTRIES || files.len() >= MAX_DUMPS {
                truncated = true;
                break 'walk;
            }
            let Ok(file_type) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            if file_type.is_dir() {
                if recursive && depth < MAX_DEPTH {
                    pending.push((path, depth + 1));
                }
            } else if ntdbg_analysis::listing::has_dump_name(&path)
                || (file_type.is_file() && ntdbg_analysis::listing::looks_like_dump(&path))
            {
                // Links are only taken by name: their target is checked before anything reads it.
                files.push(path);
            }
        }
    }
    files.sort();
    let dumps = files.iter().map(|p| summarize(p, allowed)).collect();
    ListDumpsResult {
        directory: dir.display().to_string(),
        dumps,
        truncated,
    }
}

/// The header facts of one file, or why it could not be read.
fn summarize(path: &Path, allowed: &AllowedDirs) -> DumpSummary {
    let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let checked = match allowed.check_existing(path) {
        Ok(p) => p,
        Err(e) => {
            return DumpSummary {
                path: path.display().to_string(),
                size,
                kind: None,
                arch: None,
                os_build: None,
                time: None,
                headline: None,
                code: None,
                error: Some(ErrorBrief {
                    code: e.code.name().into(),
                    message: e.message,
                }),
            };
        }
    };
    // Header-only facts, shared with `ntdbg list`.
    let s = ntdbg_analysis::listing::summarize_dump(&checked);
    let headline = s.headline.as_ref().map(|h| {
        let name = h.name.as_deref().unwrap_or("");
        let code = h.code.as_deref().unwrap_or("");
        match h.kind.as_str() {
            "bugcheck" => format!(
                "bugcheck {name} ({code}) [{}]: {}",
                h.parameters.join(", "),
                h.description
            ),
            "exception" => format!("{name} ({code}): {}", h.description),
            _ => h.description.clone(),
        }
    });
    DumpSummary {
        path: path.display().to_string(),
        size: s.size,
        kind: s.kind,
        arch: s.arch,
        os_build: s.os_build,
        time: s.time,
        code: s.headline.as_ref().and_then(|h| h.code.clone()),
        headline,
        error: s.error.map(|message| ErrorBrief {
            code: "unreadable_dump".into(),
            message,
        }),
    }
}

/// The folder a `list_dumps` call scans: the one given (checked), or the first allowed one.
///
/// # Errors
/// The path check's errors, and `not_a_directory`.
pub fn resolve_directory(
    directory: Option<&str>,
    allowed: &AllowedDirs,
) -> Result<PathBuf, ToolError> {
    let dir = match directory {
        Some(d) if !d.trim().is_empty() => allowed.check_existing(Path::new(d))?,
        _ => allowed.primary().to_path_buf(),
    };
    if !dir.is_dir() {
        return Err(ToolError::new(
            ErrorCode::NotADirectory,
            format!("{} is not a folder", dir.display()),
        )
        .with_hint("give a folder; open_dump opens a single file"));
    }
    Ok(dir)
}
