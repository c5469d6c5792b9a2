//! `.dump /ma FILE` and `.dump /m FILE`: a live target writes a dump of itself.
//!
//! ntdbg's Win32 stub writes the file on its host (dbghelp's `MiniDumpWriteDump`); behind a
//! GDB stub ntdbg writes it from the memory the stub can read. The path goes through the
//! front end's file gate (the MCP server's allowed folders) and an existing file is refused
//! unless `/o` is given, as in WinDbg.

use crate::error::{CommandError, ErrorCode};
use crate::output::CommandOutput;
use crate::spec::{CommandSpec, Invocation};
use ntdbg_engine::live::DumpKind;
use ntdbg_engine::Session;

const USAGE: &str = ".dump /ma|/m [/o] FILE";

pub(crate) const COMMANDS: &[CommandSpec] = &[CommandSpec::inspect(
    &[".dump"],
    USAGE,
    "write a dump of the live target (/ma: all memory, /m: minidump, /o: overwrite)",
    "Live targets only: ntdbg's Windows targets (attach pid:N or exe:PATH) write it through \
     dbghelp on their host; behind a GDB stub ntdbg writes it from the memory the stub reads: \
     threads and registers, modules with their CodeView records, the exception, each stack, \
     the code around each pc, TEBs and the PEB (/m), plus every readable page of the stub's \
     memory map (winedbg, gdbserver), else the module images (/ma). WinDbg's other options \
     (/f, /mh, /u, …) are not supported. The MCP server writes only inside its allowed \
     directories. An existing file is refused unless /o is given.",
    dump,
)];

/// What `.dump`'s arguments ask for.
#[derive(Debug, PartialEq, Eq)]
struct DumpRequest<'a> {
    kind: DumpKind,
    overwrite: bool,
    path: &'a str,
}

/// Parses `[/o] /ma|/m [/o] FILE` (the file may be quoted; on Unix it may start with `/`).
fn parse(args: &str) -> Result<DumpRequest<'_>, CommandError> {
    let usage = |what: String| CommandError::syntax(what).with_hint(format!("usage: {USAGE}"));
    let mut kind = None;
    let mut overwrite = false;
    let mut rest = args.trim();
    // An option is `/` and letters; anything else (`/tmp/x.dmp`) is the file.
    while let Some(option) = rest.strip_prefix('/') {
        let end = option.find(char::is_whitespace).unwrap_or(option.len());
        if !option[..end].chars().all(|c| c.is_ascii_alphabetic()) {
            break;
        }
        match option[..end].to_ascii_lowercase().as_str() {
            "ma" => kind = Some(DumpKind::Full),
            "m" => kind = Some(DumpKind::Mini),
            "o" => overwrite = true,
            "mao" | "oma" => (kind, overwrite) = (Some(DumpKind::Full), true),
            "mo" | "om" => (kind, overwrite) = (Some(DumpKind::Mini), true),
            other => return Err(usage(format!(".dump: unknown option /{other}"))),
        }
        rest = option[end..].trim_start();
    }
    let kind = kind.ok_or_else(|| usage(".dump needs /ma or /m".into()))?;
    let path = rest.trim();
    let path = path
        .strip_prefix('"')
        .and_then(|p| p.strip_suffix('"'))
        .unwrap_or(path);
    if path.is_empty() {
        return Err(usage(".dump needs a file name".into()));
    }
    Ok(DumpRequest {
        kind,
        overwrite,
        path,
    })
}

fn dump(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    if session.live().is_none() {
        return Err(CommandError::new(
            ErrorCode::NotLive,
            "`.dump` writes a dump of a live target; this session is already a dump",
        ));
    }
    let request = parse(inv.args)?;
    let path = inv.writable_path(request.path)?;
    if !request.overwrite && std::fs::symlink_metadata(&path).is_ok() {
        return Err(CommandError::new(
            ErrorCode::FileExists,
            format!("{} already exists", path.display()),
        )
        .with_hint("name a new file, or add /o to overwrite it"));
    }
    let summary = session.write_live_dump(request.kind, &path)?;
    let kind = match request.kind {
        DumpKind::Full => "full user dump",
        DumpKind::Mini => "mini user dump",
    };
    let mut text = format!("Creating {} - {kind}\n", path.display());
    if summary.writer == "ntdbg" {
        text.push_str(&format!(
            "Written by ntdbg from the memory the stub reads: {} range(s), {} bytes ({})\n",
            summary.ranges, summary.bytes, summary.memory_from
        ));
    }
    text.push_str("Dump successfully written\n");
    Ok(CommandOutput::text(text))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn options_and_file() {
        assert_eq!(
            parse("/ma c:\\x.dmp").unwrap(),
            DumpRequest {
                kind: DumpKind::Full,
                overwrite: false,
                path: "c:\\x.dmp"
            }
        );
        let r = parse("/o /m \"a b.dmp\"").unwrap();
        assert_eq!(
            (r.kind, r.overwrite, r.path),
            (DumpKind::Mini, true, "a b.dmp")
        );
        assert!(parse("/MAO x").unwrap().overwrite);
        assert_eq!(parse("/m /tmp/x.dmp").unwrap().path, "/tmp/x.dmp");
        for bad in ["", "x.dmp", "/ma", "/f x.dmp", "/o x.dmp"] {
            let e = parse(bad).expect_err(bad);
            assert_eq!(e.code, ErrorCode::SyntaxError, "{bad}");
            assert!(e.hint.unwrap_or_default().contains("usage"), "{bad}");
        }
    }
}
