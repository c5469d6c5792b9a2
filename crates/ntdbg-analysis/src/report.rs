//! The analysis report (`ntdbg analyze --json`, MCP `analyze_crash`): its stable keys, and the
//! facts about modules and frames that both the exception and the bugcheck analyses put in it.

pub use crate::conclusion::Inference;
use crate::signature::is_system_module;
use ntdbg_engine::module_info::{file_name_of, file_version};
use ntdbg_engine::stack::{FoundBy, Frame};
use ntdbg_engine::Session;
use ntdbg_symbols::SymbolStatus;
use serde::Serialize;

pub use crate::limits::REPORT_FRAMES;

/// The report's [`Report::version`]: 2 since addresses and 64-bit values of every typed result
/// are `0x` hex strings (1: some were JSON numbers).
pub const REPORT_VERSION: u32 = 2;

/// The whole report. Field names are part of ntdbg's contract.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct Report {
    /// [`REPORT_VERSION`]. Serialized, but left out of the MCP output schema (its size budget
    /// is spent).
    #[schemars(skip)]
    pub version: u32,
    /// What was analysed.
    pub dump: DumpFacts,
    /// The last event.
    pub event: EventFacts,
    /// The module holding the exception address.
    pub faulting_module: Option<ModuleFacts>,
    /// The faulting thread's stack, innermost first.
    pub stack: Vec<StackEntry>,
    /// The crash signature: the exception kind, then the first application frames.
    pub signature: String,
    /// The frames the signature looked at, each with its role (`named`, `prefix`, `skipped`,
    /// `stop`) and why. Left out of the MCP output schema to keep `tools/list` small.
    #[schemars(skip)]
    pub signature_frames: Vec<crate::signature::SignatureFrame>,
    /// Variables of the faulting and first application frames.
    pub frame_locals: Vec<crate::frame_locals::FrameLocals>,
    /// What the facts suggest, each with its basis.
    pub inferences: Vec<Inference>,
    /// Text and named symbols the faulting context's registers and top stack slots point to
    /// (absent when none). Not in the MCP output schema, which keeps `tools/list` within its
    /// budget.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schemars(skip)]
    pub pointed_to: Vec<PointedTo>,
    /// Dumps without an exception: what every thread waits on (absent otherwise). Not in the
    /// MCP output schema, which keeps `tools/list` within its budget.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    #[schemars(skip)]
    pub waits: Vec<crate::hang::WaitFacts>,
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
    /// The process the dump is of (WinDbg's `PROCESS_NAME`): a user dump's main module, a
    /// small kernel dump's current process (its EPROCESS `ImageFileName`); absent when unknown.
    /// Not in the MCP output schema (its size budget is spent).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schemars(skip)]
    pub process_name: Option<String>,
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
    /// `context`, `cfi`, `leaf`, `frame_pointer` or `scan`.
    pub found_by: String,
    /// How far its return address was checked: `context`, `unwind_data`, `call_site`,
    /// `frame_chain` (JIT code whose frame-pointer chain reaches module code) or `unverified`
    /// (a guess that may be wrong). Left out of the MCP output schema.
    #[schemars(skip)]
    pub trust: String,
}

/// A register or stack slot of the faulting context and the text or symbol its value points to.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct PointedTo {
    /// The register (`rsi`) or stack slot (`[rsp+0x18]`).
    pub place: String,
    /// Its value.
    pub value: String,
    /// `text` or `symbol`.
    pub kind: String,
    /// The text, quoted (`L"…"` when UTF-16), or the symbol (`app!g_settings`).
    pub target: String,
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
        trust: f.trust.name().to_string(),
    }
}

/// What the reported frames cannot vouch for: modules without symbols, scanned frames.
pub(crate) fn frame_limitations(session: &Session, frames: &[Frame]) -> Vec<String> {
    let mut out = symbol_limitations(session, frames);
    let shown = &frames[..frames.len().min(REPORT_FRAMES)];
    let unverified = frame_numbers(shown.iter().filter(|f| !f.is_trusted()));
    if !unverified.is_empty() {
        out.push(format!(
            "{unverified}: guessed (frame pointer, leaf rule or stack scan) and the call before the return address could not be read (trust unverified): may be wrong"
        ));
    }
    let scanned = frame_numbers(
        shown
            .iter()
            .filter(|f| f.is_trusted() && f.found_by == FoundBy::Scan),
    );
    if !scanned.is_empty() {
        out.push(format!(
            "{scanned}: found by stack scanning: the return address follows a call, but may be a stale one left on the stack by an earlier call"
        ));
    }
    out
}

/// `frame 0b` or `frames 0b, 0c, 0d and 2 more`, numbered as `kn` prints them.
fn frame_numbers<'f>(frames: impl Iterator<Item = &'f Frame>) -> String {
    const LISTED: usize = 4;
    let numbers: Vec<String> = frames.map(|f| format!("{:02x}", f.index)).collect();
    match numbers.len() {
        0 => String::new(),
        1 => format!("frame {}", numbers[0]),
        n if n <= LISTED => format!("frames {}", numbers.join(", ")),
        n => format!(
            "frames {} and {} more",
            numbers[..LISTED].join(", "),
            n - LISTED
        ),
    }
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
