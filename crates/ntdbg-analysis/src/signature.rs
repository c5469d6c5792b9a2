//! Crash signatures: the first frame that belongs to the application, named stably.

use crate::exception::ExceptionKind;
use ntdbg_engine::stack::Frame;
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

/// `module!function` of the first frame outside system modules (without offsets, so the same
/// crash at another load address or build path gives the same signature).
pub fn crash_signature(frames: &[Frame], kind: Option<&ExceptionKind>) -> String {
    let named = |f: &Frame| -> Option<String> {
        let module = f.module.as_ref()?;
        Some(match &f.function {
            Some(function) => format!("{module}!{}", strip_parameters(function)),
            None => format!("{module}+{:#x}", f.instruction.wrapping_sub(f.module_base?)),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_modules() {
        assert!(is_system_module("ntdll"));
        assert!(is_system_module(r"C:\Windows\System32\KERNELBASE.dll"));
        assert!(is_system_module("api-ms-win-crt-runtime-l1-1-0.dll"));
        assert!(!is_system_module("crashy.exe"));
    }
}
