//! The chensiling Windbg-MCP tools' arguments, with its names, types, defaults and enums:
//! counts and sizes are strings (`"20"`, `"0x20"`, `"10h"`), read by [`count`]. Unknown
//! arguments are ignored, as Windbg-MCP's (FastMCP's) argument models ignore them.

use super::envelope::{EnvelopeError, Stage};
use schemars::JsonSchema;
use serde::Deserialize;

fn s(value: &str) -> String {
    value.to_string()
}
fn d20() -> String {
    s("20")
}
fn d50() -> String {
    s("50")
}
fn d8() -> String {
    s("8")
}
fn d1() -> String {
    s("1")
}
fn d0() -> String {
    s("0")
}
fn true_text() -> String {
    s("true")
}
fn x20() -> String {
    s("0x20")
}
fn x2000() -> String {
    s("0x2000")
}

/// `windbg_context` scopes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ContextScope {
    /// Target, registers, top frame, last event.
    #[default]
    Default,
    /// Also the threads.
    Threads,
    /// Also the kernel processes.
    Processes,
    /// Both.
    All,
}

/// `windbg_context` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ContextArgs {
    /// Extra lists.
    #[serde(default)]
    pub scope: ContextScope,
    /// Add modules.
    #[serde(default)]
    pub include_modules: bool,
    /// Most modules.
    #[serde(default = "d20")]
    pub module_limit: String,
    /// Most threads/processes.
    #[serde(default = "d50")]
    pub list_limit: String,
    /// Inline raw.
    pub include_raw: Option<bool>,
}

/// `windbg_analyze` scopes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AnalyzeScope {
    /// Analysis, exception context, registers, stack.
    #[default]
    Crash,
    /// Wait chains.
    Hang,
    /// The analysis only.
    Quick,
}

/// `windbg_analyze` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct AnalyzeArgs {
    /// crash, hang or quick.
    #[serde(default)]
    pub scope: AnalyzeScope,
    /// Inline raw.
    pub include_raw: Option<bool>,
}

/// `windbg_backtrace` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct BacktraceArgs {
    /// Frames, 1-200.
    #[serde(default = "d20")]
    pub depth: String,
    /// "true": parameters.
    #[serde(default = "true_text")]
    pub show_params: String,
    /// Frame number: its locals.
    pub frame: Option<String>,
}

/// `windbg_disassemble` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct DisassembleArgs {
    /// Address expression.
    pub at: String,
    /// Instructions, 1-128.
    #[serde(default = "d8")]
    pub count: String,
}

/// `windbg_evaluate` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct EvaluateArgs {
    /// MASM expression.
    pub expression: String,
}

/// `windbg_lookup` routes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum LookupKind {
    /// Chosen from the input.
    #[default]
    Auto,
    /// Nearest symbol (ln).
    Address,
    /// Symbol search (x).
    Symbol,
    /// Type layout (dt).
    Type,
    /// Function (uf).
    Function,
}

/// `windbg_lookup` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct LookupArgs {
    /// Address, symbol pattern or type.
    pub what: String,
    /// Route.
    #[serde(default)]
    pub kind: LookupKind,
}

/// `windbg_read_memory` element formats (with WinDbg's one-letter aliases).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum MemoryFormat {
    /// dwords.
    #[default]
    Auto,
    /// Bytes.
    Byte,
    /// Bytes.
    B,
    /// Words.
    Word,
    /// Words.
    W,
    /// Dwords.
    Dword,
    /// Dwords.
    D,
    /// Qwords.
    Qword,
    /// Qwords.
    Q,
    /// ASCII.
    Ascii,
    /// ASCII.
    A,
}

impl MemoryFormat {
    /// The canonical name and the WinDbg display command.
    pub fn command(self) -> (&'static str, &'static str) {
        match self {
            MemoryFormat::Auto => ("auto", "dd"),
            MemoryFormat::Byte | MemoryFormat::B => ("byte", "db"),
            MemoryFormat::Word | MemoryFormat::W => ("word", "dw"),
            MemoryFormat::Dword | MemoryFormat::D => ("dword", "dd"),
            MemoryFormat::Qword | MemoryFormat::Q => ("qword", "dq"),
            MemoryFormat::Ascii | MemoryFormat::A => ("ascii", "da"),
        }
    }
}

/// `windbg_read_memory` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ReadMemoryArgs {
    /// Address expression.
    pub address: String,
    /// Elements (not bytes), 1-0x400.
    #[serde(default = "x20")]
    pub size: String,
    /// Element format.
    #[serde(default)]
    pub format: MemoryFormat,
}

/// `windbg_write_memory` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct WriteMemoryArgs {
    /// Address expression.
    pub address: String,
    /// Bytes, space-separated hex.
    pub values: String,
}

/// `windbg_breakpoint` actions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum BreakpointAction {
    /// bp TARGET.
    Set,
    /// bl.
    List,
    /// bc ID.
    Clear,
    /// be ID.
    Enable,
    /// bd ID.
    Disable,
}

/// `windbg_breakpoint` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct BreakpointArgs {
    /// What to do.
    pub action: BreakpointAction,
    /// set: address expression.
    pub target: Option<String>,
    /// set: condition.
    pub condition: Option<String>,
    /// Decimal id or *.
    pub id: Option<String>,
}

/// `windbg_control` actions (with WinDbg's command names as aliases).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ControlAction {
    /// Resume.
    Go,
    /// Resume.
    G,
    /// Trace into.
    StepInto,
    /// Trace into.
    T,
    /// Step over.
    StepOver,
    /// Step over.
    P,
    /// Run to return.
    StepOut,
    /// Run to return.
    Gu,
}

impl ControlAction {
    /// The canonical name.
    pub fn name(self) -> &'static str {
        match self {
            ControlAction::Go | ControlAction::G => "go",
            ControlAction::StepInto | ControlAction::T => "step_into",
            ControlAction::StepOver | ControlAction::P => "step_over",
            ControlAction::StepOut | ControlAction::Gu => "step_out",
        }
    }
}

/// `windbg_control` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ControlArgs {
    /// What to do.
    pub action: ControlAction,
    /// Steps, 1-1000 (go: 1).
    #[serde(default = "d1")]
    pub count: String,
}

/// `windbg_sympath` actions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SympathAction {
    /// The path.
    Show,
    /// Replace it.
    Set,
    /// Load symbols again.
    Reload,
    /// Modules' symbol state.
    Check,
}

/// `windbg_sympath` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SympathArgs {
    /// What to do.
    pub action: SympathAction,
    /// set: symbol path.
    pub path: Option<String>,
    /// reload/check: module.
    pub module: Option<String>,
}

/// `windbg_session` actions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SessionAction {
    /// Channel state.
    #[default]
    Status,
    /// Break in.
    Interrupt,
    /// Recover the channel.
    Recover,
}

/// `windbg_session` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct SessionArgs {
    /// What to do.
    #[serde(default)]
    pub action: SessionAction,
    /// interrupt: active command.
    pub command_id: Option<String>,
}

/// `windbg_output` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct OutputArgs {
    /// From a source.
    pub command_id: String,
    /// First byte.
    #[serde(default = "d0")]
    pub offset: String,
    /// Bytes, max 0x8000.
    #[serde(default = "x2000")]
    pub limit: String,
}

/// `windbg_thread` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ThreadArgs {
    /// _ETHREAD expression.
    pub thread: Option<String>,
    /// Inline raw.
    pub include_raw: Option<bool>,
}

/// `windbg_module` and `windbg_image_verify` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ModuleArgs {
    /// Module name.
    pub module: String,
    /// Inline raw.
    pub include_raw: Option<bool>,
}

/// `windbg_memory_mapping` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct MappingArgs {
    /// Address expression.
    pub address: String,
    /// Inline raw.
    #[allow(dead_code)] // accepted as Windbg-MCP does; ntdbg runs no command here to inline
    pub include_raw: Option<bool>,
}

/// `windbg_pool` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct PoolArgs {
    /// Address expression.
    pub address: String,
    /// Try on any dump.
    pub force: Option<bool>,
    /// Inline raw.
    #[allow(dead_code)] // accepted as Windbg-MCP does; ntdbg runs no command here to inline
    pub include_raw: Option<bool>,
}

/// `windbg_blackbox` kinds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, serde::Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum BlackboxKind {
    /// PnP.
    Pnp,
    /// NTFS.
    Ntfs,
    /// Winlogon.
    Winlogon,
    /// All three.
    #[default]
    All,
}

/// `windbg_blackbox` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct BlackboxArgs {
    /// Record kind.
    #[serde(default)]
    pub kind: BlackboxKind,
    /// Inline raw.
    #[allow(dead_code)] // accepted as Windbg-MCP does; ntdbg runs no command here to inline
    pub include_raw: Option<bool>,
}

/// `windbg_exec` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
pub struct ExecArgs {
    /// WinDbg command line.
    pub command: String,
}

/// Reads a count argument as Windbg-MCP does: decimal, `0x` hex or `10h` hex, blank for
/// `default`, within `min..=max`.
///
/// # Errors
/// An `invalid_argument` input error naming `name`.
pub fn count(
    text: &str,
    name: &str,
    default: Option<u64>,
    min: u64,
    max: u64,
) -> Result<u64, EnvelopeError> {
    let invalid = |message: String| EnvelopeError {
        code: "invalid_argument".into(),
        message,
        stage: Stage::Input,
        recoverable: true,
    };
    let t = text.trim().to_ascii_lowercase();
    if t.is_empty() {
        return default.ok_or_else(|| invalid(format!("'{name}' is required.")));
    }
    let parsed = if let Some(hex) = t.strip_prefix("0x") {
        u64::from_str_radix(hex, 16)
    } else if let Some(hex) = t.strip_suffix('h') {
        u64::from_str_radix(hex, 16)
    } else {
        t.parse::<u64>()
    };
    let n = parsed.map_err(|_| {
        invalid(format!(
            "'{name}' must be an integer; decimal and 0x-prefixed hex are supported."
        ))
    })?;
    if n < min {
        return Err(invalid(format!("'{name}' must be >= {min}.")));
    }
    if n > max {
        return Err(invalid(format!("'{name}' must be <= {max}.")));
    }
    Ok(n)
}

/// Refuses text that would smuggle a second command into one the tool builds.
///
/// # Errors
/// `invalid_argument` when required and blank, `unsafe_argument` for `;`, newlines or NUL.
pub fn intent_text(value: &str, name: &str, required: bool) -> Result<(), EnvelopeError> {
    if required && value.trim().is_empty() {
        return Err(EnvelopeError {
            code: "invalid_argument".into(),
            message: format!("'{name}' is required."),
            stage: Stage::Input,
            recoverable: true,
        });
    }
    if value.contains([';', '\r', '\n', '\0']) {
        return Err(EnvelopeError {
            code: "unsafe_argument".into(),
            message: format!("'{name}' contains a command separator or newline."),
            stage: Stage::Input,
            recoverable: false,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_read_decimal_and_both_hex_forms() {
        assert_eq!(count("20", "depth", Some(20), 1, 200).ok(), Some(20));
        assert_eq!(count("0x20", "size", None, 1, 0x400).ok(), Some(32));
        assert_eq!(count("10h", "count", None, 1, 128).ok(), Some(16));
        assert_eq!(count("  ", "depth", Some(20), 1, 200).ok(), Some(20));
    }

    #[test]
    fn bad_counts_are_input_errors() {
        let e = count("zz", "depth", Some(20), 1, 200).unwrap_err();
        assert_eq!(
            (e.code.as_str(), e.stage),
            ("invalid_argument", Stage::Input)
        );
        assert!(count("0", "depth", None, 1, 200)
            .unwrap_err()
            .message
            .contains(">= 1"));
        assert!(count("0x401", "size", None, 1, 0x400)
            .unwrap_err()
            .message
            .contains("<= 1024"));
        assert!(count("", "command_id", None, 1, 2).is_err());
    }

    #[test]
    fn separators_are_refused() {
        assert!(intent_text("@rip", "at", true).is_ok());
        assert_eq!(
            intent_text("", "at", true).unwrap_err().code,
            "invalid_argument"
        );
        let e = intent_text("rip; .shell", "at", true).unwrap_err();
        assert_eq!(e.code, "unsafe_argument");
        assert!(!e.recoverable);
    }

    #[test]
    fn arguments_take_windbg_mcp_defaults_and_aliases() {
        let a: BacktraceArgs = serde_json::from_str("{}").expect("defaults");
        assert_eq!(
            (a.depth.as_str(), a.show_params.as_str(), a.frame),
            ("20", "true", None)
        );
        let m: ReadMemoryArgs =
            serde_json::from_str(r#"{"address":"@rsp","format":"q"}"#).expect("q");
        assert_eq!(
            (m.size.as_str(), m.format.command()),
            ("0x20", ("qword", "dq"))
        );
        let c: ControlArgs = serde_json::from_str(r#"{"action":"gu"}"#).expect("gu");
        assert_eq!((c.action.name(), c.count.as_str()), ("step_out", "1"));
        assert!(serde_json::from_str::<ReadMemoryArgs>(r#"{"size":"4"}"#).is_err());
    }
}
