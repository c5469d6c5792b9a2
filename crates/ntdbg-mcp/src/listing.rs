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
use std::io::Read;
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
            } else if has_dump_extension(&path)
                || (file_type.is_file() && has_dump_signature(&path))
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

fn has_dump_extension(path: &Path) -> bool {
    path.extension().and_then(|e| e.to_str()).is_some_and(|e| {
        ["dmp", "mdmp", "hdmp", "dump"]
            .iter()
            .any(|x| e.eq_ignore_ascii_case(x))
    })
}

fn has_dump_signature(path: &Path) -> bool {
    let mut head = [0u8; 8];
    let Ok(mut file) = std::fs::File::open(path) else {
        return false;
    };
    let Ok(n) = file.read(&mut head) else {
        return false;
    };
    head[..n].starts_with(b"MDMP") || head[..n].starts_with(b"PAGEDU")
}

/// The header facts of one file, or why it could not be read.
fn summarize(path: &Path, allowed: &AllowedDirs) -> DumpSummary {
    let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let mut summary = DumpSummary {
        path: path.display().to_string(),
        size,
        kind: None,
        arch: None,
        os_build: None,
        time: None,
        headline: None,
        code: None,
        error: None,
    };
    // A link may point outside the allowed area: check where it resolves before opening.
    let checked = allowed.check_existing(path);
    let opened = checked.and_then(|p| ntdbg_targets::open(&p).map_err(ToolError::from));
    let dump = match opened {
        Ok(d) => d,
        Err(e) => {
            summary.error = Some(ErrorBrief {
                code: e.code,
                message: e.message,
            });
            return summary;
        }
    };
    let system = dump.system();
    summary.kind = Some(dump.kind().name().to_string());
    summary.arch = Some(dump.arch().name().to_string());
    summary.os_build = Some(system.os_version.clone());
    summary.time = system.dump_time.map(|t| rfc3339(u64::from(t)));
    summary.headline = Some(match (dump.bugcheck(), dump.event()) {
        (Some(b), _) => {
            let d = ntdbg_analysis::bugcheck::decode_bugcheck(b.code, b.parameters);
            summary.code = Some(format!("{:#x}", b.code));
            let params: Vec<String> = b.parameters.iter().map(|p| format!("{p:#x}")).collect();
            format!(
                "bugcheck {} ({:#x}) [{}]: {}",
                d.name,
                b.code,
                params.join(", "),
                d.description
            )
        }
        (None, Some(e)) => {
            let d = ntdbg_analysis::exception::decode(e, dump.arch().pointer_size());
            summary.code = Some(format!("{:#010x}", e.code));
            format!("{} ({:#010x}): {}", d.name, e.code, d.description)
        }
        (None, None) => "no exception recorded".to_string(),
    });
    summary
}

/// Seconds since the Unix epoch as `YYYY-MM-DDTHH:MM:SSZ`.
pub fn rfc3339(secs: u64) -> String {
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60
    )
}

/// Howard Hinnant's days-to-civil algorithm, for days since 1970-01-01 (non-negative).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
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
            "not_a_directory",
            format!("{} is not a folder", dir.display()),
        )
        .with_hint("give a folder; open_dump opens a single file"));
    }
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_dates() {
        assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
        assert_eq!(rfc3339(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(rfc3339(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(rfc3339(u64::from(u32::MAX)), "2106-02-07T06:28:15Z");
    }
}
