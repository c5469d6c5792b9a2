//! Dumps in a folder: one walk with explicit limits ([`find_dump_files`]) and one header-only
//! summary per file ([`DumpSummary`]), shared by `ntdbg list`, `ntdbg triage` and the MCP
//! tools `list_dumps` and `triage_dumps`.
//!
//! A summary reads only the file header, the stream directory and the few small streams it
//! needs (system info, exception, the first module's name) of a minidump, or the first 8 KiB of
//! a kernel dump: thousands of dumps per second, whatever their size. The names and one-line
//! descriptions of exception and bugcheck codes come from the caller ([`DescribeEvent`]),
//! which knows them; this layer only reads files.

use crate::kernel_dump::{filetime_to_unix, KernelHeader};
use crate::ExceptionEvent;
use schemars::JsonSchema;
use serde::Serialize;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// Most stream directory entries read.
const MAX_STREAMS: u32 = 4096;
/// Most bytes of a module name read.
const MAX_NAME_BYTES: u32 = 1024;

/// How far a walk goes and what it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WalkLimits {
    /// Deepest sub-folder level entered (0: the folder itself only).
    pub max_depth: usize,
    /// Most directory entries looked at; past it the walk stops and says it was truncated.
    pub max_entries: usize,
    /// Most dump files returned; past it the walk stops and says it was truncated.
    pub max_dumps: usize,
    /// Whether links are followed: folders reached through a link are entered and a linked
    /// file's signature is read. Without it, linked folders are skipped and linked files are
    /// taken by name only, so that the caller can check where a link leads before anything
    /// reads it.
    pub follow_links: bool,
}

impl WalkLimits {
    /// For a person at a shell (`ntdbg list`, `ntdbg triage`): 32 levels deep, no count
    /// limit, links followed.
    pub const SHELL: WalkLimits = WalkLimits {
        max_depth: 32,
        max_entries: usize::MAX,
        max_dumps: usize::MAX,
        follow_links: true,
    };

    /// For a server answering clients (MCP): 16 levels deep, 50,000 entries, 500 dumps, links
    /// not followed.
    pub const SERVER: WalkLimits = WalkLimits {
        max_depth: 16,
        max_entries: 50_000,
        max_dumps: 500,
        follow_links: false,
    };

    /// The same limits, with sub-folders only when `recursive`.
    pub fn recursive(self, recursive: bool) -> WalkLimits {
        WalkLimits {
            max_depth: if recursive { self.max_depth } else { 0 },
            ..self
        }
    }

    /// The same limits with at most `max_dumps` dumps.
    pub fn max_dumps(self, max_dumps: usize) -> WalkLimits {
        WalkLimits { max_dumps, ..self }
    }
}

/// The dump files a walk found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DumpFiles {
    /// Files with a dump signature or a dump-like name ([`has_dump_name`]), sorted by path.
    pub files: Vec<PathBuf>,
    /// Whether the walk stopped at one of its limits (entries or dumps) before the end.
    pub truncated: bool,
}

/// The dump files under `dir`, within `limits`. A sub-folder that cannot be read is skipped;
/// fails only when `dir` itself cannot be read.
pub fn find_dump_files(dir: &Path, limits: &WalkLimits) -> std::io::Result<DumpFiles> {
    let mut found = DumpFiles::default();
    let mut seen = 0usize;
    let mut pending = vec![(dir.to_path_buf(), 0usize)];
    let mut first = true;
    'walk: while let Some((folder, depth)) = pending.pop() {
        let entries = match std::fs::read_dir(&folder) {
            Ok(entries) => entries,
            Err(e) if first => return Err(e),
            Err(_) => continue,
        };
        first = false;
        for entry in entries.flatten() {
            seen += 1;
            if seen > limits.max_entries || found.files.len() >= limits.max_dumps {
                found.truncated = true;
                break 'walk;
            }
            let Ok(file_type) = entry.file_type() else {
                continue;
            };
            let path = entry.path();
            let is_link = file_type.is_symlink();
            let is_dir = file_type.is_dir() || (is_link && limits.follow_links && path.is_dir());
            if is_dir {
                if depth < limits.max_depth {
                    pending.push((path, depth + 1));
                }
            } else if has_dump_name(&path)
                || ((!is_link || limits.follow_links) && looks_like_dump(&path))
            {
                found.files.push(path);
            }
        }
    }
    found.files.sort();
    Ok(found)
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

/// Whether the file is a regular file starting with a dump signature (a cheap 8-byte read).
pub fn looks_like_dump(path: &Path) -> bool {
    let mut head = [0u8; 8];
    ntdbg_files::open_regular(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .is_ok()
        && (head.starts_with(b"MDMP") || head == *b"PAGEDU64" || head == *b"PAGEDUMP")
}

/// The dumps of one folder, with their header facts (`ntdbg list --json`, MCP `list_dumps`).
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DumpListing {
    /// The folder scanned.
    pub directory: String,
    /// One entry per dump file, by path.
    pub dumps: Vec<DumpSummary>,
    /// Whether the scan stopped at its limit.
    pub truncated: bool,
}

/// One dump's header facts, or `error`.
#[derive(Debug, Clone, Default, Serialize, JsonSchema)]
pub struct DumpSummary {
    /// The file.
    pub path: String,
    /// File size in bytes.
    pub size: u64,
    /// user | kernel | kernel-full | kernel-bitmap | kernel-small | kernel-triage.
    pub kind: Option<String>,
    /// x86 | x64 | arm64.
    pub arch: Option<String>,
    /// Windows version, e.g. 10.0.19041.
    pub os_build: Option<String>,
    /// When the dump was written (UTC, RFC 3339).
    pub time: Option<String>,
    /// The same as seconds since 1970.
    pub time_unix: Option<u64>,
    /// A user dump's executable.
    pub process: Option<String>,
    /// Exception or bugcheck code (0x hex).
    pub code: Option<String>,
    /// The exception or bugcheck (with parameters) in one line.
    pub headline: Option<String>,
    /// The exception or bugcheck, field by field.
    pub event: Option<DumpEvent>,
    /// Why the file could not be read.
    pub error: Option<SummaryError>,
}

/// The exception or bugcheck a header names.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct DumpEvent {
    /// exception | bugcheck | none.
    #[serde(rename = "type")]
    pub kind: String,
    /// 0x hex.
    pub code: Option<String>,
    /// e.g. EXCEPTION_ACCESS_VIOLATION.
    pub name: Option<String>,
    /// 0x hex.
    pub parameters: Vec<String>,
    /// What happened, in words.
    pub description: String,
}

/// Why a file could not be summarised.
#[derive(Debug, Clone, Serialize, JsonSchema)]
pub struct SummaryError {
    /// Stable code (`unreadable_dump`, `path_not_allowed`…).
    pub code: String,
    /// What went wrong.
    pub message: String,
}

/// A code's name and what it means in one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventText {
    /// `EXCEPTION_ACCESS_VIOLATION`, `SYSTEM_THREAD_EXCEPTION_NOT_HANDLED`.
    pub name: String,
    /// `write to 0x0000000000000000`.
    pub description: String,
}

/// Names and describes exception and bugcheck codes for the summaries (the analysis layer
/// knows them).
pub trait DescribeEvent {
    /// An exception event (no context), with pointers `pointer_size` bytes wide.
    fn exception(&self, event: &ExceptionEvent, pointer_size: usize) -> EventText;
    /// A bugcheck code and its four parameters.
    fn bugcheck(&self, code: u32, parameters: [u64; 4]) -> EventText;
}

impl DumpSummary {
    /// A file listed without being read, with why.
    pub fn unreadable(path: &Path, code: &str, message: String) -> DumpSummary {
        DumpSummary {
            path: path.display().to_string(),
            size: std::fs::metadata(path).map(|m| m.len()).unwrap_or(0),
            error: Some(SummaryError {
                code: code.into(),
                message,
            }),
            ..DumpSummary::default()
        }
    }

    /// Sets the event and the two fields derived from it (`code`, `headline`).
    fn set_event(&mut self, event: DumpEvent) {
        let name = event.name.as_deref().unwrap_or("");
        let code = event.code.as_deref().unwrap_or("");
        self.headline = Some(match event.kind.as_str() {
            "bugcheck" => format!(
                "bugcheck {name} ({code}) [{}]: {}",
                event.parameters.join(", "),
                event.description
            ),
            "exception" => format!("{name} ({code}): {}", event.description),
            _ => event.description.clone(),
        });
        self.code = event.code.clone();
        self.event = Some(event);
    }
}

/// Summaries of the dumps under `dir` within `limits`. Fails only when `dir` itself cannot be
/// read.
pub fn list_dumps(
    dir: &Path,
    limits: &WalkLimits,
    describe: &dyn DescribeEvent,
) -> std::io::Result<DumpListing> {
    let found = find_dump_files(dir, limits)?;
    Ok(DumpListing {
        directory: dir.display().to_string(),
        dumps: found
            .files
            .iter()
            .map(|p| summarize_dump(p, describe))
            .collect(),
        truncated: found.truncated,
    })
}

/// The header summary of one dump file. Never fails: problems go into `error`
/// (`unreadable_dump`).
pub fn summarize_dump(path: &Path, describe: &dyn DescribeEvent) -> DumpSummary {
    let mut s = DumpSummary {
        path: path.display().to_string(),
        ..DumpSummary::default()
    };
    if let Err(message) = read_summary(path, &mut s, describe) {
        s.error = Some(SummaryError {
            code: "unreadable_dump".into(),
            message,
        });
    }
    s
}

fn read_summary(
    path: &Path,
    s: &mut DumpSummary,
    describe: &dyn DescribeEvent,
) -> Result<(), String> {
    let mut file = ntdbg_files::open_regular(path).map_err(|e| format!("cannot open: {e}"))?;
    s.size = file.metadata().map(|m| m.len()).unwrap_or(0);
    let mut head = [0u8; 8];
    if file.read_exact(&mut head).is_err() {
        return Err(format!("not a dump: only {} bytes", s.size));
    }
    if head.starts_with(b"MDMP") {
        user_summary(&mut file, s, describe)
    } else if head == *b"PAGEDU64" || head == *b"PAGEDUMP" {
        kernel_summary(&mut file, s, describe)
    } else if head.starts_with(&[0xFD, b'7', b'z', b'X', b'Z']) {
        Err("xz-compressed: decompress it first (xz -d)".to_string())
    } else {
        Err(format!(
            "not a dump: signature {:?} is neither MDMP nor PAGEDU64/PAGEDUMP",
            String::from_utf8_lossy(&head[..4])
        ))
    }
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

/// The event of a dump cut short whose exception stream, if it had one, is gone with the end
/// of the file (the words `analyze` uses too).
pub const NO_EXCEPTION_LEFT: &str =
    "no exception record in what is left of the dump (the file is cut short)";

/// Reads a minidump's header, directory and the system-info, exception and module streams
/// (`MINIDUMP_HEADER`, `MINIDUMP_DIRECTORY`, `MINIDUMP_SYSTEM_INFO`,
/// `MINIDUMP_EXCEPTION_STREAM`, the first `MINIDUMP_MODULE`).
fn user_summary(
    file: &mut File,
    s: &mut DumpSummary,
    describe: &dyn DescribeEvent,
) -> Result<(), String> {
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
    // A dump cut short is read as far as it goes, as opening it does: streams that run past
    // the end of the file are left out, but without its system info nothing opens it.
    let mut first_cut = None;
    for entry in dir.chunks_exact(12) {
        let kind = u32_at(entry, 0).unwrap_or(0);
        let size = u32_at(entry, 4).unwrap_or(0);
        let rva = u32_at(entry, 8).unwrap_or(0);
        if kind != 0 && u64::from(rva) + u64::from(size) > s.size {
            first_cut.get_or_insert(format!(
                "corrupt: stream type {kind} ({size} bytes at {rva:#x}) extends past the end of the {}-byte file",
                s.size
            ));
            continue;
        }
        match kind {
            7 if system.is_none() => system = Some((rva, size)),
            6 if exception.is_none() => exception = Some((rva, size)),
            4 if modules.is_none() => modules = Some((rva, size)),
            _ => {}
        }
    }
    if system.is_none() {
        if let Some(cut) = first_cut {
            return Err(cut);
        }
    }
    let cut_short = first_cut.is_some();
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
    let event = match exception {
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
            let text = describe.exception(&event, pointer_size);
            DumpEvent {
                kind: "exception".into(),
                code: Some(format!("{code:#010x}")),
                name: Some(text.name),
                parameters: parameters.iter().map(|p| format!("{p:#x}")).collect(),
                description: text.description,
            }
        }
        None => DumpEvent {
            kind: "none".into(),
            code: None,
            name: None,
            parameters: Vec::new(),
            description: if cut_short {
                NO_EXCEPTION_LEFT.into()
            } else {
                "no exception recorded in the dump".into()
            },
        },
    };
    s.set_event(event);
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
fn kernel_summary(
    file: &mut File,
    s: &mut DumpSummary,
    describe: &dyn DescribeEvent,
) -> Result<(), String> {
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
            0x1c4 => "arm",
            _ => "unknown",
        }
        .to_string(),
    );
    s.os_build = Some(format!("{}", header.minor_version));
    if let Some(unix) = header.system_time.and_then(filetime_to_unix) {
        s.time_unix = Some(unix);
        s.time = Some(format_unix(unix));
    }
    let code = header.bugcheck_code;
    let params = header.bugcheck_parameters;
    let text = describe.bugcheck(code, params);
    s.set_event(DumpEvent {
        kind: "bugcheck".into(),
        code: Some(format!("{code:#010x}")),
        name: Some(text.name),
        parameters: params.iter().map(|p| format!("{p:#x}")).collect(),
        description: text.description,
    });
    Ok(())
}

/// When a dump was written, in seconds since 1970: `header_time` (from the dump's header)
/// when there is one, else the modification time of the file at `path`.
pub fn written_or_modified(header_time: Option<u64>, path: &Path) -> Option<u64> {
    header_time.or_else(|| {
        std::fs::metadata(path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_secs())
    })
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

    #[test]
    fn dump_names() {
        assert!(has_dump_name(Path::new("a/B.DMP")));
        assert!(has_dump_name(Path::new("x.dmp.xz")));
        assert!(!has_dump_name(Path::new("x.pdb")));
    }
}
