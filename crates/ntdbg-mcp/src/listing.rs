//! `list_dumps`: the dumps in a folder, each with a header-only summary.
//!
//! The walk and the summaries are `ntdbg list`'s ([`ntdbg_targets::listing`], within
//! [`WalkLimits::SERVER`]: bounded in depth and size, folders reached through links not
//! followed); here each file is first checked against the allowed directories (a file reached
//! through a link may lead out of them), and one that fails is listed with the reason.

use crate::dto::ListDumpsResult;
use crate::error::ToolError;
use crate::paths::AllowedDirs;
use ntdbg_engine::ErrorCode;
use ntdbg_targets::listing::{find_dump_files, DumpSummary, WalkLimits};
use std::path::{Path, PathBuf};

/// Lists the dumps in `dir` (already checked to be inside an allowed directory).
///
/// # Errors
/// `io_error` when `dir` cannot be read.
pub fn list_dumps(
    dir: &Path,
    recursive: bool,
    allowed: &AllowedDirs,
) -> Result<ListDumpsResult, ToolError> {
    let found = find_dump_files(dir, &WalkLimits::SERVER.recursive(recursive)).map_err(|e| {
        ToolError::new(
            ErrorCode::IoError,
            format!("cannot read {}: {e}", dir.display()),
        )
    })?;
    Ok(ListDumpsResult {
        directory: dir.display().to_string(),
        dumps: found.files.iter().map(|p| summarize(p, allowed)).collect(),
        truncated: found.truncated,
    })
}

/// The header facts of one file (listed under the path found), or why it could not be read.
fn summarize(path: &Path, allowed: &AllowedDirs) -> DumpSummary {
    match allowed.check_existing(path) {
        Ok(checked) => DumpSummary {
            path: path.display().to_string(),
            ..ntdbg_analysis::listing::summarize_dump(&checked)
        },
        Err(e) => DumpSummary::unreadable(path, e.code.name(), e.message),
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
