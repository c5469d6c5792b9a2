//! Crash signatures: the first frame that belongs to the application, named stably.

use crate::exception::ExceptionKind;
use ntdbg_engine::stack::Frame;
use ntdbg_engine::text::module_offset;
use ntdbg_symbols::strip_parameters;

/// Modules whose frames never make a signature: the OS, loader and C/C++ runtimes.
pub const SYSTEM_MODULES: &[&str] = &[
    "ntdll",
    "kernelbase",
    "kernel32",
    "ucrtbase",
    "ucrtbased",
    "msvcrt",
    "msvcp140",
    "vcruntime140",
    "vcruntime140_1",
    "vcruntime140d",
    "msvcp140d",
    "user32",
    "win32u",
    "gdi32",
    "combase",
    "rpcrt4",
    "sechost",
    "advapi32",
    "dbghelp",
    "wow64",
    "wow64cpu",
    "wow64win",
    "libc++",
    "libstdc++-6",
    "libgcc_s_seh-1",
    "libwinpthread-1",
    "nt",
    "ntoskrnl",
    "ntkrnlmp",
    "ntkrnlpa",
    "ntkrpamp",
    "hal",
];

/// Whether a module (file name or WinDbg name) is a system or runtime module.
pub fn is_system_module(name: &str) -> bool {
    let file = ntdbg_engine::module_info::file_name_of(name).to_ascii_lowercase();
    let stem = file.rsplit_once('.').map(|(s, _)| s).unwrap_or(&file);
    SYSTEM_MODULES.contains(&stem)
        || stem.starts_with("vcruntime")
        || stem.starts_with("api-ms-win-")
}

/// Functions that only deliver a crash (assertion, abort and throw helpers): a signature skips
/// them even in application modules, so `__debugbreak` inlined or not buckets the same.
pub const DELIVERY_FUNCTIONS: &[&str] = &[
    "__debugbreak",
    "DebugBreak",
    "abort",
    "raise",
    "RaiseException",
    "_CxxThrowException",
    "__cxa_throw",
    "_Unwind_RaiseException",
    "__fastfail",
    "_assert",
    "_wassert",
    "__assert_fail",
    "_invalid_parameter",
    "_invalid_parameter_noinfo",
    "_invalid_parameter_noinfo_noreturn",
    "_invoke_watson",
    "__report_gsfailure",
    "__chkstk",
    "___chkstk_ms",
    "_alloca_probe",
    "std::terminate",
    "terminate",
];

/// What makes a crash signature: which modules count as system/runtime and how many
/// application frames are joined.
#[derive(Debug, Clone)]
pub struct SignatureConfig {
    /// Module stems (lower-case, without extension) whose frames never make a signature.
    pub system_modules: Vec<String>,
    /// Module stem prefixes treated the same way (`vcruntime`, `api-ms-win-`).
    pub system_prefixes: Vec<String>,
    /// How many application frames the signature names (at least 1).
    pub frames: usize,
}

impl Default for SignatureConfig {
    fn default() -> Self {
        SignatureConfig {
            system_modules: SYSTEM_MODULES.iter().map(|s| s.to_string()).collect(),
            system_prefixes: vec!["vcruntime".into(), "api-ms-win-".into(), "msvcp".into()],
            frames: 3,
        }
    }
}

impl SignatureConfig {
    /// Whether `name` (file name, path or WinDbg module name) is a system or runtime module.
    pub fn is_system(&self, name: &str) -> bool {
        let file = ntdbg_engine::module_info::file_name_of(name).to_ascii_lowercase();
        let stem = match file.rsplit_once('.') {
            Some((s, "dll" | "exe" | "sys" | "drv")) => s,
            _ => file.as_str(),
        };
        self.system_modules.iter().any(|m| m == stem)
            || self
                .system_prefixes
                .iter()
                .any(|p| stem.starts_with(p.as_str()))
    }
}

/// `module!function` of the first frame outside system modules (without offsets, so the same
/// crash at another load address or build path gives the same signature).
pub fn crash_signature(frames: &[Frame], kind: Option<&ExceptionKind>) -> String {
    let named = |f: &Frame| -> Option<String> {
        let module = f.module.as_ref()?;
        Some(match &f.function {
            Some(function) => format!("{module}!{}", strip_parameters(function)),
            None => module_offset(module, f.instruction.wrapping_sub(f.module_base?)),
        })
    };
    let app_frame = frames
        .iter()
        .filter(|f| f.module.as_deref().is_some_and(|m| !is_system_module(m)))
        .find_map(named);
    if let Some(s) = app_frame.or_else(|| frames.iter().find_map(named)) {
        return s;
    }
    match kind {
        Some(ExceptionKind::StackOverflow) => "stack_overflow!unknown".into(),
        Some(_) | None => frames
            .first()
            .map(|f| format!("{:#x}", f.instruction))
            .unwrap_or_else(|| "unknown".into()),
    }
}

/// The application frames a bucketing signature names, innermost first: frames outside
/// system modules, delivery helpers skipped, function names without parameters or offsets,
/// consecutive repeats (recursion) collapsed, stopping at the first name seen before (mutual
/// recursion) and after `config.frames` names. Frames after the first one count only when
/// symbolized (an unnamed caller would make the signature depend on the build). With no
/// application frame, the first frame with a module is used (`module+0xoffset` when unnamed).
pub fn signature_frames(frames: &[Frame], config: &SignatureConfig) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for f in frames {
        let Some(module) = f.module.as_deref() else {
            continue;
        };
        if config.is_system(module) {
            continue;
        }
        let name = match &f.function {
            Some(function) => {
                let bare = strip_parameters(function);
                if DELIVERY_FUNCTIONS.contains(&bare) {
                    continue;
                }
                format!("{module}!{bare}")
            }
            None if out.is_empty() => match f.module_base {
                Some(base) => module_offset(module, f.instruction.wrapping_sub(base)),
                None => continue,
            },
            None => break,
        };
        if out.last() == Some(&name) {
            continue;
        }
        if out.contains(&name) {
            break;
        }
        out.push(name);
        if out.len() >= config.frames.max(1) {
            break;
        }
    }
    if out.is_empty() {
        if let Some(f) = frames.iter().find(|f| f.module.is_some()) {
            let module = f.module.as_deref().unwrap_or_default();
            out.push(match (&f.function, f.module_base) {
                (Some(function), _) => format!("{module}!{}", strip_parameters(function)),
                (None, Some(base)) => module_offset(module, f.instruction.wrapping_sub(base)),
                (None, None) => module.to_string(),
            });
        }
    }
    out
}

/// The bucketing signature: the exception kind tag, then [`signature_frames`] joined by
/// ` / ` (`AV_WRITE_NULL crashy!crash_null_write / crashy!mode_null / crashy!main`).
/// Never empty; stable across ASLR bases and build paths.
pub fn bucket_signature(tag: &str, frames: &[Frame], config: &SignatureConfig) -> String {
    let names = signature_frames(frames, config);
    if names.is_empty() {
        let top = frames
            .first()
            .map(|_| "no module".to_string())
            .unwrap_or_else(|| "no stack".to_string());
        return format!("{tag} ({top})");
    }
    format!("{tag} {}", names.join(" / "))
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
mod tests {
    use super::*;

    #[test]
    fn system_modules() {
        assert!(is_system_module("ntdll"));
        assert!(is_system_module(r"C:\Windows\System32\KERNELBASE.dll"));
        assert!(is_system_module("api-ms-win-crt-runtime-l1-1-0.dll"));
        assert!(!is_system_module("crashy.exe"));
        let config = SignatureConfig::default();
        assert!(config.is_system("VCRUNTIME140_1.dll"));
        assert!(config.is_system("msvcp140"));
        assert!(!config.is_system("crashy"));
    }

    #[test]
    fn tags() {
        use crate::exception::Access;
        let av = ExceptionKind::AccessViolation {
            access: Some(Access::Write),
            address: Some(0x10),
            in_page: false,
        };
        assert_eq!(kind_tag(&av, 0xC000_0005), "AV_WRITE_NULL");
        assert_eq!(kind_tag(&ExceptionKind::Custom, 0xE000_1234), "0xE0001234");
        assert_eq!(
            kind_tag(&ExceptionKind::FastFail { code: Some(7) }, 0),
            "FAST_FAIL_7"
        );
    }
}
