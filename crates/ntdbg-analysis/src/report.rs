//! The analysis report (`ntdbg analyze --json`, MCP `analyze_crash`): its stable keys and how it
//! is built from a session.

use crate::exception::{decode, format_hex_address, ExceptionKind};
use crate::signature::{bucket_signature, is_system_module, kind_tag, SignatureConfig};
use ntdbg_engine::module_info::{file_name_of, file_version};
use ntdbg_engine::stack::{Frame, Stack};
use ntdbg_engine::{module_name, Session};
use ntdbg_symbols::SymbolStatus;
use serde::Serialize;

/// How many frames of the faulting stack the report carries.
pub const REPORT_FRAMES: usize = 32;

/// The whole report. Field names are part of ntdbg's contract.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Report {
    /// What was analysed.
    pub dump: DumpFacts,
    /// The last event.
    pub event: EventFacts,
    /// The module holding the exception address.
    pub faulting_module: Option<ModuleFacts>,
    /// The faulting thread's stack from the exception context, innermost first.
    pub stack: Vec<StackEntry>,
    /// A stable crash signature: the exception kind, then the first application frames
    /// (`AV_WRITE_NULL crashy!crash_null_write / crashy!mode_null / crashy!main`); see
    /// [`crate::signature::bucket_signature`].
    pub signature: String,
    /// Variables of the faulting and first application frames.
    pub frame_locals: Vec<crate::frame_locals::FrameLocals>,
    /// What the facts suggest, each with its basis.
    pub inferences: Vec<Inference>,
    /// What could not be known, and why.
    pub limitations: Vec<String>,
    /// Commands worth running next.
    pub next_commands: Vec<String>,
}

/// Facts about the dump file.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct DumpFacts {
    /// The dump's path.
    pub path: String,
    /// `user`, `kernel-small`, `kernel-triage`, `kernel`, `kernel-full` or `kernel-bitmap`.
    pub kind: String,
    /// `x86`, `x64` or `arm64`.
    pub arch: String,
    /// `10.0.19041`.
    pub os_build: String,
    /// Number of loaded modules.
    pub modules: usize,
    /// Number of threads.
    pub threads: usize,
}

/// The last event, decoded.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct EventFacts {
    /// `exception`, `bugcheck` or `none`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The exception code (`0xc0000005`).
    pub code: Option<String>,
    /// Its symbolic name.
    pub name: Option<String>,
    /// The exception address.
    pub address: Option<String>,
    /// The thread that raised it.
    pub thread_id: Option<String>,
    /// The exception parameters.
    pub parameters: Vec<String>,
    /// What happened, in one line.
    pub description: String,
}

/// A module's identity.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct ModuleFacts {
    /// File name (`crashy.exe`).
    pub name: String,
    /// Base address.
    pub base: String,
    /// SizeOfImage.
    pub size: String,
    /// PE TimeDateStamp.
    pub timestamp: String,
    /// File version from the version resource, when the dump has it.
    pub version: Option<String>,
}

/// One frame of the report's stack.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct StackEntry {
    /// Frame number.
    pub frame: usize,
    /// Module name.
    pub module: Option<String>,
    /// Function name.
    pub function: Option<String>,
    /// Offset from the function start (or from the module base without symbols).
    pub offset: Option<String>,
    /// The frame's instruction address.
    pub address: String,
    /// `file:line`, when known.
    pub source: Option<String>,
    /// `context`, `cfi`, `frame_pointer` or `scan`.
    pub found_by: String,
}

/// A conclusion and the facts it rests on.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Inference {
    /// The conclusion.
    pub text: String,
    /// The facts behind it.
    pub basis: String,
}

/// Analyses the session's last event. Never fails: what cannot be known becomes a limitation.
/// When symbols may be downloaded, the event stack's modules load in parallel first, so every
/// front end (CLI, `!analyze`, MCP) gets overlapping downloads.
pub fn analyze(session: &Session) -> Report {
    analyze_with(session, &SignatureConfig::default())
}

/// [`analyze`] with a chosen signature configuration (which modules count as system).
pub fn analyze_with(session: &Session, config: &SignatureConfig) -> Report {
    session.preload_event_stack_symbols();
    let target = session.target();
    let ptr = target.arch().pointer_size();
    let hex = |v: u64| format!("{v:#x}");
    let mut limitations = Vec::new();

    let dump = DumpFacts {
        path: target.origin().to_string(),
        kind: target.kind().name().to_string(),
        arch: target.arch().name().to_string(),
        os_build: target.system().os_version.clone(),
        modules: target.modules().iter().count(),
        threads: target.threads().len(),
    };

    if let Some(bugcheck) = target.bugcheck() {
        return crate::bugcheck::bugcheck_report(session, bugcheck, dump, config);
    }

    let (event, decoded) = match target.event() {
        Some(e) => {
            let d = decode(e, ptr);
            let facts = EventFacts {
                kind: "exception".into(),
                code: Some(format!("{:#010x}", e.code)),
                name: Some(d.name.clone()),
                address: Some(format_hex_address(e.address, ptr)),
                thread_id: Some(hex(u64::from(e.thread_id))),
                parameters: e.parameters.iter().map(|p| hex(*p)).collect(),
                description: d.description.clone(),
            };
            (facts, Some((e, d)))
        }
        None => {
            limitations.push("the dump has no exception stream: no crash event to analyse".into());
            let facts = EventFacts {
                kind: "none".into(),
                code: None,
                name: None,
                address: None,
                thread_id: None,
                parameters: Vec::new(),
                description: "no exception recorded in the dump".into(),
            };
            (facts, None)
        }
    };

    let faulting_module = decoded
        .as_ref()
        .and_then(|(e, _)| session.module_at(e.address))
        .map(module_facts);

    let walked: Option<Stack> = match session.event_stack() {
        Ok(stack) => {
            if let Some(note) = &stack.note {
                limitations.push(note.clone());
            }
            Some(stack)
        }
        Err(err) => match session.current_thread().map(|_| session.stack()) {
            Some(Ok(stack)) => {
                limitations.push(format!("{err}; showing the current thread's own stack"));
                Some(stack)
            }
            _ => {
                limitations.push(err.to_string());
                None
            }
        },
    };
    let frame_locals = walked
        .as_ref()
        .map(|s| crate::frame_locals::frame_locals(session, s, config))
        .unwrap_or_default();
    let app_frame = walked
        .as_ref()
        .and_then(|s| crate::frame_locals::first_application_frame(s, config));
    let frames: Vec<Frame> = walked.map(|s| s.frames).unwrap_or_default();
    limitations.extend(frame_limitations(session, &frames));

    let stack: Vec<StackEntry> = frames.iter().take(REPORT_FRAMES).map(stack_entry).collect();
    let tag = decoded
        .as_ref()
        .map(|(e, d)| kind_tag(&d.kind, e.code))
        .unwrap_or_else(|| "NO_EXCEPTION".into());
    let signature = bucket_signature(&tag, &frames, config);
    let inferences = decoded
        .as_ref()
        .map(|(e, d)| crate::inference::infer(session, e, d, &frames))
        .unwrap_or_default();
    let mut next_commands = vec![".ecxr".to_string(), "kb".to_string()];
    if let Some(m) = &faulting_module {
        next_commands.push(format!("lmv m {}", module_name(&m.name)));
    }
    if let Some((e, _)) = &decoded {
        next_commands.push(format!("u {:#x}", e.address));
        match decode(e, ptr).kind {
            ExceptionKind::StackOverflow => next_commands.push("kn 100".into()),
            ExceptionKind::AccessViolation { .. } => {
                next_commands.push("r".into());
                if crate::fault::faulting_instruction(session, e).is_some() {
                    next_commands.push(format!("ub {:#x} L8", e.address));
                }
            }
            ExceptionKind::CppException if e.parameters.len() > 1 => {
                next_commands.push(format!("dps {:#x} L4", e.parameters[1]));
            }
            _ => {}
        }
    }
    if let Some(n) = app_frame.filter(|n| frame_locals.iter().any(|l| l.frame == *n)) {
        next_commands.push(format!(".frame {n:x}; dv /t"));
    }
    next_commands.push("~*k".into());

    Report {
        dump,
        event,
        faulting_module,
        stack,
        signature,
        frame_locals,
        inferences,
        limitations,
        next_commands,
    }
}

pub(crate) fn module_facts(m: &minidump::MinidumpModule) -> ModuleFacts {
    ModuleFacts {
        name: file_name_of(&m.name).to_string(),
        base: format!("{:#x}", m.raw.base_of_image),
        size: format!("{:#x}", m.raw.size_of_image),
        timestamp: format!("{:#010x}", m.raw.time_date_stamp),
        version: file_version(m),
    }
}

pub(crate) fn stack_entry(f: &Frame) -> StackEntry {
    let offset = match (f.function_offset, &f.function, f.module_base) {
        (Some(off), Some(_), _) => Some(format!("{off:#x}")),
        (_, None, Some(base)) => Some(format!("{:#x}", f.instruction.wrapping_sub(base))),
        _ => None,
    };
    StackEntry {
        frame: f.index,
        module: f.module.clone(),
        function: f.function.clone(),
        offset,
        address: format!("{:#x}", f.instruction),
        source: f.source(),
        found_by: f.found_by.name().to_string(),
    }
}

/// What the reported frames cannot vouch for: modules without symbols, scanned frames.
pub(crate) fn frame_limitations(session: &Session, frames: &[Frame]) -> Vec<String> {
    let mut out = symbol_limitations(session, frames);
    if frames
        .iter()
        .take(REPORT_FRAMES)
        .any(|f| f.found_by.name() == "scan")
    {
        out.push("some frames were found by stack scanning and may be spurious".to_string());
    }
    out
}

/// One line per module on the stack whose symbols were not found.
fn symbol_limitations(session: &Session, frames: &[Frame]) -> Vec<String> {
    let mut seen = Vec::new();
    let mut out = Vec::new();
    for f in frames.iter().take(REPORT_FRAMES) {
        let Some(base) = f.module_base else { continue };
        if seen.contains(&base) {
            continue;
        }
        seen.push(base);
        let Some(module) = session.module_at(base) else {
            continue;
        };
        let symbols = session.module_symbols(module);
        if symbols.status() == SymbolStatus::NoSymbols {
            let file = file_name_of(&module.name);
            let wanted = symbols
                .pdb_identity()
                .map(|(pdb, id)| format!("{pdb}/{id}"))
                .unwrap_or_else(|| "no debug identifier in the dump or image".into());
            let note = if is_system_module(file) {
                "; system module"
            } else {
                ""
            };
            out.push(format!("no symbols for {file} ({wanted}){note}"));
        }
    }
    out
}
