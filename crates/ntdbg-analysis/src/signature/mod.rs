//! Crash signatures that bucket: the exception kind, then the first application frames of
//! the faulting stack, named stably and built only from frames the walker vouches for.
//!
//! [`build_signature`] walks the stack innermost first and gives each frame a role
//! ([`SignatureFrame`]): a frame that is not trusted ends the walk (everything after it was
//! unwound from a guess); crash-delivery functions and system or runtime modules are skipped;
//! prefix functions (`memcpy`, heap and lock entry points) are named and the walk goes on;
//! the first application frames are named. The lists are in [`lists`] and a rules file
//! changes them ([`SignatureConfig::from_rules`], `docs/signatures.md`).

mod lists;
mod rules;

pub use lists::{IRRELEVANT_FUNCTIONS, IRRELEVANT_MODULES, PREFIX_FUNCTIONS};
pub use rules::RulesError;

use crate::exception::ExceptionKind;
use ntdbg_engine::stack::Frame;
use ntdbg_engine::text::module_offset;
use ntdbg_symbols::strip_parameters;
use serde::Serialize;

/// Most frames a report lists in its signature explanation.
const MAX_EXPLAINED: usize = crate::limits::REPORT_FRAMES;

/// Whether a module (file name or WinDbg name) is a system or runtime module by the built-in
/// list ([`IRRELEVANT_MODULES`]).
pub fn is_system_module(name: &str) -> bool {
    let stem = lists::module_stem(name);
    IRRELEVANT_MODULES.iter().any(|p| lists::matches(p, &stem))
}

/// What makes a crash signature: the skip lists and how many application frames are named.
/// `Default` is the built-in lists; a rules file changes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignatureConfig {
    /// Function patterns named in the signature without ending it ([`PREFIX_FUNCTIONS`]).
    pub prefix_functions: Vec<String>,
    /// Function patterns never named ([`IRRELEVANT_FUNCTIONS`]).
    pub irrelevant_functions: Vec<String>,
    /// Module patterns (lower-case stems) never named ([`IRRELEVANT_MODULES`]).
    pub irrelevant_modules: Vec<String>,
    /// How many application frames the signature names (at least 1).
    pub frames: usize,
}

impl Default for SignatureConfig {
    fn default() -> Self {
        let owned = |list: &[&str]| list.iter().map(|s| s.to_string()).collect();
        SignatureConfig {
            prefix_functions: owned(PREFIX_FUNCTIONS),
            irrelevant_functions: owned(IRRELEVANT_FUNCTIONS),
            irrelevant_modules: owned(IRRELEVANT_MODULES),
            frames: 3,
        }
    }
}

impl SignatureConfig {
    /// Whether `name` (file name, path or WinDbg module name) is a system or runtime module.
    pub fn is_system(&self, name: &str) -> bool {
        let stem = lists::module_stem(name);
        self.irrelevant_modules
            .iter()
            .any(|p| lists::matches(p, &stem))
    }

    fn is_irrelevant_function(&self, function: &str) -> bool {
        self.irrelevant_functions
            .iter()
            .any(|p| lists::matches(p, function))
    }

    fn is_prefix_function(&self, function: &str) -> bool {
        self.prefix_functions
            .iter()
            .any(|p| lists::matches(p, function))
    }
}

/// What a frame did for the signature.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SignatureRole {
    /// Named in the signature as an application frame.
    Named,
    /// Named in the signature as a prefix function; the walk went on.
    Prefix,
    /// Left out.
    Skipped,
    /// Not trusted: the walk ended here.
    Stop,
}

impl SignatureRole {
    /// The role as the text report says it.
    pub fn name(self) -> &'static str {
        match self {
            SignatureRole::Named => "named",
            SignatureRole::Prefix => "prefix",
            SignatureRole::Skipped => "skipped",
            SignatureRole::Stop => "stop",
        }
    }
}

/// One frame the signature looked at, with what it did and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct SignatureFrame {
    /// Frame number.
    pub frame: usize,
    /// `module!function`, `module+0xoffset`, or the address outside every module.
    pub name: String,
    /// How the walker found the frame (`context`, `cfi`, `leaf`, `frame_pointer`, `scan`).
    pub found_by: String,
    /// How far its return address was checked (`context`, `unwind_data`, `call_site`,
    /// `frame_chain`, `unverified`): only `unverified` frames are kept out of signatures.
    pub trust: String,
    /// What the frame did for the signature.
    pub role: SignatureRole,
    /// Why.
    pub reason: String,
}

/// A signature and how it was built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    /// `TAG name / name / name`.
    pub text: String,
    /// The frames looked at, innermost first (at most the report's frame count).
    pub frames: Vec<SignatureFrame>,
}

/// How a signature names a frame: `module!function` (no parameters, no offset: stable across
/// builds and load addresses), else `module+0xoffset` (load-address independent), else
/// `None` outside every module.
fn frame_name(f: &Frame) -> Option<String> {
    let module = f.module.as_deref()?;
    match (&f.function, f.module_base) {
        (Some(function), _) => Some(format!("{module}!{}", strip_parameters(function))),
        (None, Some(base)) => Some(module_offset(module, f.instruction.wrapping_sub(base))),
        (None, None) => None,
    }
}

/// Whether `f` has the same symbolized name and trust as `previous`, so that the signature
/// treats it the same way.
fn repeats_frame(previous: &Frame, f: &Frame) -> bool {
    f.module.is_some()
        && f.function.is_some()
        && f.module == previous.module
        && f.function == previous.function
        && f.is_trusted() == previous.is_trusted()
}

/// Why a frame that repeats the named one before it is skipped.
const RECURSION: &str = "repeats the frame before it (recursion)";

/// Merges the last explained frame into the one before it when both are the same recursion:
/// a deep recursion reads as one line that says how far it goes, not one line per frame.
fn collapse_recursion(explained: &mut Vec<SignatureFrame>) {
    let [.., before, last] = explained.as_slice() else {
        return;
    };
    let same = before.name == last.name
        && before.role == SignatureRole::Skipped
        && last.role == SignatureRole::Skipped
        && before.reason.starts_with(RECURSION)
        && last.reason == RECURSION;
    if !same {
        return;
    }
    let to = last.frame;
    explained.pop();
    if let Some(before) = explained.last_mut() {
        before.reason = format!("{RECURSION}, as do the frames after it, to frame {to}");
    }
}

/// The signature of a stack: `tag`, then the frames [`SignatureConfig`] selects joined by
/// ` / ` (`AV_WRITE_NULL crashy!crash_null_write / crashy!mode_null / crashy!main`), and the
/// role of every frame looked at. Never empty; stable across load addresses and build paths.
///
/// Consecutive repeats (recursion) are collapsed and a name seen before (mutual recursion)
/// ends the walk. After the first application frame, an unsymbolized frame ends the walk
/// (its offset would tie the signature to one build). With no application frame, the
/// innermost trusted frame with a module names the crash.
pub fn build_signature(tag: &str, frames: &[Frame], config: &SignatureConfig) -> Signature {
    let mut names: Vec<String> = Vec::new();
    let mut explained: Vec<SignatureFrame> = Vec::new();
    let mut named = 0usize;
    let mut previous: Option<&Frame> = None;
    for f in frames {
        // A frame that repeats the one before it (a recursion) changes nothing the previous
        // one did not (it is skipped, or a prefix already named): with no room left to
        // explain it, it is passed over without building its name.
        let repeats = previous.replace(f).is_some_and(|p| repeats_frame(p, f));
        if repeats && explained.len() >= MAX_EXPLAINED {
            continue;
        }
        let display = frame_name(f).unwrap_or_else(|| format!("{:#x}", f.instruction));
        let mut note = |role: SignatureRole, reason: String| {
            if explained.len() < MAX_EXPLAINED {
                explained.push(SignatureFrame {
                    frame: f.index,
                    name: display.clone(),
                    found_by: f.found_by.name().to_string(),
                    trust: f.trust.name().to_string(),
                    role,
                    reason,
                });
            }
        };
        if !f.is_trusted() {
            note(
                SignatureRole::Stop,
                "a guessed frame whose call site could not be checked: the signature ends here"
                    .into(),
            );
            break;
        }
        let Some(module) = f.module.as_deref() else {
            note(SignatureRole::Skipped, "outside every module".into());
            continue;
        };
        let function = f.function.as_deref().map(strip_parameters);
        if let Some(function) = function {
            if config.is_irrelevant_function(function) {
                note(
                    SignatureRole::Skipped,
                    format!("{function} only delivers or reports the crash"),
                );
                continue;
            }
            if config.is_prefix_function(function) {
                if names.last() != Some(&display) {
                    names.push(display.clone());
                }
                note(
                    SignatureRole::Prefix,
                    format!("{function} is a prefix function: named, and its callers too"),
                );
                continue;
            }
        }
        if config.is_system(module) {
            note(
                SignatureRole::Skipped,
                format!("{module} is a system or runtime module"),
            );
            continue;
        }
        if function.is_none() && named > 0 {
            note(
                SignatureRole::Stop,
                "no symbols: an unsymbolized caller would tie the signature to one build".into(),
            );
            break;
        }
        if names.last() == Some(&display) {
            note(SignatureRole::Skipped, RECURSION.into());
            collapse_recursion(&mut explained);
            continue;
        }
        if names.contains(&display) {
            note(
                SignatureRole::Stop,
                "named already (mutual recursion)".into(),
            );
            break;
        }
        names.push(display.clone());
        named += 1;
        note(
            SignatureRole::Named,
            format!(
                "on no skip list: name {named} of at most {}",
                config.frames.max(1)
            ),
        );
        if named >= config.frames.max(1) {
            break;
        }
    }
    if names.is_empty() {
        if let Some(fallback) = explained
            .iter_mut()
            .find(|e| e.role == SignatureRole::Skipped && !e.name.starts_with("0x"))
        {
            fallback.role = SignatureRole::Named;
            fallback.reason = format!(
                "no trusted application frame: the innermost trusted frame names the crash ({})",
                fallback.reason
            );
            names.push(fallback.name.clone());
        }
    }
    let text = if names.is_empty() {
        let why = if frames.is_empty() {
            "no stack"
        } else if frames.first().is_some_and(|f| !f.is_trusted()) {
            "no trusted frame"
        } else {
            "no module"
        };
        format!("{tag} ({why})")
    } else {
        format!("{tag} {}", names.join(" / "))
    };
    Signature {
        text,
        frames: explained,
    }
}

/// The signature text alone ([`build_signature`]).
pub fn bucket_signature(tag: &str, frames: &[Frame], config: &SignatureConfig) -> String {
    build_signature(tag, frames, config).text
}

/// A short stable tag for an exception kind (`AV_WRITE_NULL`, `STACK_OVERFLOW`,
/// `FAST_FAIL_7`, `CPP_EXCEPTION`, `0xE0001234`); `code` is used for `Other` and `Custom`.
pub fn kind_tag(kind: &ExceptionKind, code: u32) -> String {
    match kind {
        ExceptionKind::AccessViolation {
            access,
            address,
            in_page,
        } => {
            let mut tag = if *in_page { "IN_PAGE_ERROR" } else { "AV" }.to_string();
            match access {
                Some(crate::exception::Access::Read) => tag.push_str("_READ"),
                Some(crate::exception::Access::Write) => tag.push_str("_WRITE"),
                Some(crate::exception::Access::Execute) => tag.push_str("_EXEC"),
                None => {}
            }
            if address.is_some_and(|a| a < 0x1_0000) {
                tag.push_str("_NULL");
            }
            tag
        }
        ExceptionKind::StackOverflow => "STACK_OVERFLOW".into(),
        ExceptionKind::FastFail { code: Some(c) } => format!("FAST_FAIL_{c}"),
        ExceptionKind::FastFail { code: None } => "FAST_FAIL".into(),
        ExceptionKind::Breakpoint => "BREAKPOINT".into(),
        ExceptionKind::DivideByZero => "DIVIDE_BY_ZERO".into(),
        ExceptionKind::CppException => "CPP_EXCEPTION".into(),
        ExceptionKind::Abort => "ABORT".into(),
        ExceptionKind::HeapCorruption => "HEAP_CORRUPTION".into(),
        ExceptionKind::InvalidParameter => "INVALID_PARAMETER".into(),
        ExceptionKind::Other | ExceptionKind::Custom => format!("0x{code:08X}"),
    }
}

#[cfg(test)]
pub(crate) mod tests;
