//! `list_dumps` / `ntdbg list`: a header-only summary of every dump in a folder.
//!
//! Reads only the file header, the stream directory and the few small streams a summary
//! needs (system info, exception, the first module's name) of a minidump, or the first
//! 8 KiB of a kernel dump: thousands of dumps per second, whatever their size.

use crate::bugcheck::bugcheck_name;
use crate::exception::decode;
use ntdbg_targets::kernel_dump::KernelHeader;
use ntdbg_targets::ExceptionEvent;
use serde::Serialize;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// Most stream directory entries read.
const MAX_STREAMS: u32 = 4096;
/// Most characters of a module name read.
const MAX_NAME_BYTES: u32 = 1024;
/// Deepest folder recursion.
const MAX_DEPTH: usize = 32;

/// One dump's header summary (the `list_dumps` row). Unreadable files carry `error`.
#[derive(Debug, Clone, Serialize, Default)]
pub struct DumpSummary {
    /// The file's path.
    pub path: String,
    /// File size in bytes.
    pub size: u64,
    /// `user`, `kernel-small`, `kernel-triage`, `kernel`, `kernel-full`, `kernel-bitmap`.
    pub kind: Option<String>,
    /// `x86`, `x64`, `arm64` (or the raw processor architecture).
    pub arch: Option<String>,
    /// `10.0.19041`, or for kernel dumps the build number alone.
    pub os_build: Option<String>,
    /// When the dump was written, UTC (`2024-05-01T12:34:56Z`).
    pub time: Option<String>,
    /// The same as seconds since 1970.
    pub time_unix: Option<u64>,
    /// The process's executable (first module) of a user dump.
    pub process: Option<String>,
    /// The crash in one line.
    pub headline: Option<Headline>,
    /// Why the file could not be summarised.
    pub error: Option<String>,
}

/// The crash a header names: an exception or a bugcheck.
#[derive(Debug, Clone, Serialize)]
pub struct Headline {
    /// `exception`, `bugcheck` or `none`.
    #[serde(rename = "type")]
    pub kind: String,
    /// `0xc0000005` or `0x0000007e`.
    pub code: Option<String>,
    /// `EXCEPTION_ACCESS_VIOLATION`, `SYSTEM_THREAD_EXCEPTION_NOT_HANDLED`.
    pub name: Option<String>,
    /// Exception or bugcheck parameters.
    pub parameters: Vec<String>,
    /// `write to 0x0000000000000000`.
    pub description: String,
}

/// Summaries of the dumps in `dir` (sub-folders too with `recursive`), sorted by path.
/// Files that look like dumps (`MDMP`/`PAGEDU*` magic, or a `.dmp`/`.mdmp`/`.hdmp` name) are
/// listed; a `.dmp` name that is unreadable or not a dump is listed with its `error`.
/// Fails only when `dir` itself cannot be read.
pub fn list_dumps(dir: &Path, recursive: bool) -> std::io::Result<Vec<DumpSummary>> {
    let mut files = Vec::new();
    collect_files(dir, recursive, 0, &mut files)?;
    files.sort();
    Ok(files
        .iter()
        .filter_map(|p| summarize_candidate(p))
        .collect())
}

/// Every regular file under `dir` (sorted order is left to the caller).
pub(crate) fn collect_files(
    dir: &Path,
    recursive: bool,
    depth: usize,
    out: &mut Vec<PathBuf>,
) -> std::io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let Ok(entry) = entry else { continue };
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        let path = entry.path();
        if kind.is_dir() || (kind.is_symlink() && path.is_dir()) {
            if recursive && depth < MAX_DEPTH {
                // A sub-folder that cannot be read is skipped, not fatal.
                let _ = collect_files(&path, recursive, depth + 1, out);
            }
        } else {
            out.push(path);
        }
    }
    Ok(())
}

/// Whether the file name says it is a dump (`.dmp`, `.mdmp`, `.hdmp`, or a compressed `.dmp`).
pub fn has_dump_name(path: &Path) -> bool {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_ascii_lowercase())
        .unwrap_or_default();
    [".dmp", ".mdmp", ".hdmp", ".dmp.xz", ".dmp.gz", ".dmp.zip"]
        .iter()
        .any(|ext| name.ends_with(ext))
}

/// The summary of a file if it is (or claims to be) a dump; `None` for other files.
fn summarize_candidate(path: &Path) -> Option<DumpSummary> {
    let summary = summarize_dump(path);
    if summary.error.is_some() && summary.kind.is_none() && !has_dump_name(path) {
        return None;
    }
    Some(summary)
}

/// Whether the file starts with a dump signature (a cheap 8-byte read).
pub fn looks_like_dump(path: &Path) -> bool {
    let mut head = [0u8; 8];
    File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok()
        && (head.starts_with(b"MDMP") || head == *b"PAGEDU64" || head == *b"PAGEDUMP")
}

/// The header summary of one dump file. Never fails: problems go into `error`.
pub fn summarize_dump(path: &Path) -> DumpSummary {
    let mut s = DumpSummary {
        path: path.display().to_string(),
        ..DumpSummary::default()
    };
    let mut file = match File::open(path) {
        Ok(f) => f,
        Err(e) => {
            s.error = Some(format!("cannot open: {e}"));
            return s;
        }
    };
    s.size = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut head = [0u8; 8];
    if file.read_exact(&mut head).is_err() {
        s.error = Some(format!("not a dump: only {} bytes", s.size));
        return s;
    }
    let result = if head.starts_with(b"MDMP") {
        user_summary(&mut file, &mut s)
    } else if head == *b"PAGEDU64" || head == *b"PAGEDUMP" {
        kernel_summary(&mut file, &mut s)
    } else if head.starts_with(&[0xFD, b'7', b'z', b'X', b'Z']) {
        Err("xz-compressed: decompress it first (xz -d)".to_string())
    } else {
        Err(format!(
            "not a dump: signature {:?} is neither MDMP nor PAGEDU64/PAGEDUMP",
            String::from_utf8_lossy(&head[..4])
        ))
    };
    if let Err(e) = result {
        s.error = Some(e);
    }
    s
}

fn read_at(file: &mut File, offset: u64, len: usize) -> Result<Vec<u8>, String> {
    file.seek(SeekFrom::Start(offset))
        .map_err(|e| format!("seek to {offset:#x}: {e}"))?;
    let mut buf = vec![0u8; len];
    file.read_exact(&mut buf)
        .map_err(|_| format!("truncated: {len} bytes at {offset:#x} are past the end"))?;
    Ok(buf)
}

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}
fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}
fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// Reads a minidump's header, directory and the system-info, exception and module streams.
fn user_summary(file: &mut File, s: &mut DumpSummary) -> Result<(), String> {
    s.kind = Some("user".into());
    let header = read_at(file, 0, 32)?;
    let streams = u32_at(&header, 8).unwrap_or(0);
    let dir_rva = u32_at(&header, 12).unwrap_or(0);
    let stamp = u32_at(&header, 20).unwrap_or(0);
    if stamp != 0 {
        s.time_unix = Some(u64::from(stamp));
        s.time = Some(format_unix(u64::from(stamp)));
    }
    if streams > MAX_STREAMS {
        return Err(format!("corrupt: {streams} streams in the directory"));
    }
    let dir = read_at(file, u64::from(dir_rva), streams as usize * 12)?;
    let mut system = None;
    let mut exception = None;
    let mut modules = None;
    for entry in dir.chunks_exact(12) {
        let kind = u32_at(entry, 0).unwrap_or(0);
        let size = u32_at(entry, 4).unwrap_or(0);
        let rva = u32_at(entry, 8).unwrap_or(0);
        if kind != 0 && u64::from(rva) + u64::from(size) > s.size {
            return Err(format!(
                "corrupt: stream type {kind} ({size} bytes at {rva:#x}) extends past the end of the {}-byte file",
                s.size
            ));
        }
        match kind {
            7 if system.is_none() => system = Some((rva, size)),
            6 if exception.is_none() => exception = Some((rva, size)),
            4 if modules.is_none() => modules = Some((rva, size)),
            _ => {}
        }
    }
    let mut pointer_size = 8;
    if let Some((rva, size)) = system {
        let b = read_at(file, u64::from(rva), (size as usize).min(32))?;
        let arch = u16_at(&b, 0).unwrap_or(0xFFFF);
        let (name, ptr) = match arch {
            0 => ("x86".to_string(), 4),
            9 => ("x64".to_string(), 8),
            12 => ("arm64".to_string(), 8),
            5 => ("arm".to_string(), 4),
            other => (format!("arch {other}"), 8),
        };
        pointer_size = ptr;
        s.arch = Some(name);
        if let (Some(major), Some(minor), Some(build)) =
            (u32_at(&b, 8), u32_at(&b, 12), u32_at(&b, 16))
        {
            s.os_build = Some(format!("{major}.{minor}.{build}"));
        }
    }
    s.headline = Some(match exception {
        Some((rva, size)) => {
            let b = read_at(file, u64::from(rva), (size as usize).min(168))?;
            let code = u32_at(&b, 8).ok_or("corrupt exception stream")?;
            let count = u32_at(&b, 32).unwrap_or(0).min(15) as usize;
            let parameters: Vec<u64> = (0..count).filter_map(|i| u64_at(&b, 40 + 8 * i)).collect();
            let event = ExceptionEvent {
                thread_id: u32_at(&b, 0).unwrap_or(0),
                code,
                flags: u32_at(&b, 12).unwrap_or(0),
                address: u64_at(&b, 24).unwrap_or(0),
                parameters: parameters.clone(),
                nested_record: u64_at(&b, 16).unwrap_or(0),
                context: None,
            };
            let d = decode(&event, pointer_size);
            Headline {
                kind: "exception".into(),
                code: Some(format!("{code:#010x}")),
                name: Some(d.name),
                parameters: parameters.iter().map(|p| format!("{p:#x}")).collect(),
                description: d.description,
            }
        }
        None => Headline {
            kind: "none".into(),
            code: None,
            name: None,
            parameters: Vec::new(),
            description: "no exception recorded in the dump".into(),
        },
    });
    if let Some((rva, size)) = modules {
        if size >= 4 + 108 {
            // Best effort: a damaged module name does not make the dump unreadable.
            s.process = first_module_name(file, rva).ok().flatten();
        }
    }
    Ok(())
}

/// The file name of the first module (the executable) of a module-list stream.
fn first_module_name(file: &mut File, rva: u32) -> Result<Option<String>, String> {
    let b = read_at(file, u64::from(rva), 4 + 108)?;
    if u32_at(&b, 0).unwrap_or(0) == 0 {
        return Ok(None);
    }
    let name_rva = u32_at(&b, 4 + 20).unwrap_or(0);
    let len = read_at(file, u64::from(name_rva), 4)?;
    let bytes = u32_at(&len, 0).unwrap_or(0).min(MAX_NAME_BYTES);
    let raw = read_at(file, u64::from(name_rva) + 4, bytes as usize)?;
    let units: Vec<u16> = raw
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    let full = String::from_utf16_lossy(&units);
    let name = full.rsplit(['\\', '/']).next().unwrap_or(&full).to_string();
    Ok((!name.is_empty()).then_some(name))
}

/// Reads a kernel dump's header page.
fn kernel_summary(file: &mut File, s: &mut DumpSummary) -> Result<(), String> {
    let len = s.size.min(0x2000) as usize;
    let buf = read_at(file, 0, len)?;
    let header = match KernelHeader::parse(&buf) {
        Some(Ok(h)) => h,
        Some(Err(e)) => return Err(format!("corrupt kernel dump header: {e}")),
        None => return Err("not a kernel dump".into()),
    };
    s.kind = Some(
        header
            .kind()
            .map(|k| k.name().to_string())
            .unwrap_or_else(|| format!("kernel (DumpType {})", header.dump_type)),
    );
    s.arch = Some(
        match header.machine_image_type {
            0x8664 => "x64",
            0x14c => "x86",
            0xaa64 => "arm64",
            _ => "unknown",
        }
        .to_string(),
    );
    s.os_build = Some(format!("{}", header.minor_version));
    if let Some(unix) = header
        .system_time
        .and_then(ntdbg_targets::kernel_dump::filetime_to_unix)
    {
        s.time_unix = Some(unix);
        s.time = Some(format_unix(unix));
    }
    let code = header.bugcheck_code;
    let params = header.bugcheck_parameters;
    let decoded = crate::bugcheck::decode_bugcheck(code, params);
    s.headline = Some(Headline {
        kind: "bugcheck".into(),
        code: Some(format!("{code:#010x}")),
        name: Some(bugcheck_name(code)),
        parameters: params.iter().map(|p| format!("{p:#x}")).collect(),
        description: decoded.description,
    });
    Ok(())
}

/// `2024-05-01T12:34:56Z` for seconds since 1970 (UTC).
pub fn format_unix(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rem / 3600,
        (rem % 3600) / 60,
        rem % 60
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_unix_time() {
        assert_eq!(format_unix(0), "1970-01-01T00:00:00Z");
        assert_eq!(format_unix(1_700_000_000), "2023-11-14T22:13:20Z");
        assert_eq!(format_unix(951_782_400), "2000-02-29T00:00:00Z");
    }
}
