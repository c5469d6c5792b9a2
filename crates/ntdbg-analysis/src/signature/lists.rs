//! The built-in skip lists of crash signatures (`docs/signatures.md` explains each list; a
//! rules file given with `--signature-rules` extends or replaces them).
//!
//! Function patterns are matched against the function name without its parameter list;
//! module patterns against the module's file name without `.dll`/`.exe`/`.sys`/`.drv`,
//! ignoring case. A pattern ending in `*` matches every name that starts with the rest.

/// Modules whose frames never name a signature: the OS, loader, C/C++ runtimes, crash
/// reporting, and the kernel and HAL of kernel dumps.
pub const IRRELEVANT_MODULES: &[&str] = &[
    "ntdll",
    "kernelbase",
    "kernel32",
    "ucrtbase",
    "ucrtbased",
    "msvcrt",
    "vcruntime*",
    "msvcp*",
    "api-ms-win-*",
    "user32",
    "win32u",
    "gdi32",
    "combase",
    "rpcrt4",
    "sechost",
    "advapi32",
    "dbghelp",
    "dbgcore",
    "faultrep",
    "wer",
    "wow64",
    "wow64cpu",
    "wow64win",
    "libc++",
    "libstdc++-6",
    "libgcc_s_seh-1",
    "libgcc_s_dw2-1",
    "libwinpthread-1",
    "nt",
    "ntoskrnl",
    "ntkrnlmp",
    "ntkrnlpa",
    "ntkrpamp",
    "hal",
    "halmacpi",
    "halacpi",
];

/// Functions that only deliver or report a crash (raise, abort, assert, throw, fail-fast,
/// bugcheck and crash-reporter entry points): skipped wherever they are, so the same bug
/// buckets together whether the helper was inlined or not.
pub const IRRELEVANT_FUNCTIONS: &[&str] = &[
    "__debugbreak",
    "DebugBreak",
    "abort",
    "raise",
    "RaiseException",
    "RaiseFailFastException",
    "RtlRaiseException",
    "RtlRaiseStatus",
    "KiUserExceptionDispatcher",
    "KiRaiseUserExceptionDispatcher",
    "RtlReportException*",
    "RtlReportCriticalFailure",
    "UnhandledExceptionFilter",
    "RtlUnhandledExceptionFilter*",
    "WerpReportFault*",
    "MiniDumpWriteDump",
    "_CxxThrowException",
    "__cxa_throw",
    "__cxa_rethrow",
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
    "__report_rangecheckfailure",
    "_purecall",
    "__chkstk",
    "___chkstk_ms",
    "_alloca_probe",
    "std::terminate",
    "terminate",
    "std::__terminate",
    "__gnu_cxx::__verbose_terminate_handler",
    "google_breakpad::*",
    "crashpad::*",
    "rust_panic",
    "core::panicking::*",
    "std::panicking::*",
    "KeBugCheck*",
    "KiBugCheck*",
];

/// Functions where the bug is usually in the caller (memory and string routines, heap and
/// lock entry points): named in the signature, then the next frames are added too (Socorro's
/// "prefix" list).
pub const PREFIX_FUNCTIONS: &[&str] = &[
    "memcpy",
    "memmove",
    "memset",
    "memcmp",
    "strlen",
    "strcpy",
    "strncpy",
    "strcmp",
    "strcat",
    "wcslen",
    "wcscpy",
    "wcscmp",
    "RtlCopyMemory",
    "RtlMoveMemory",
    "RtlFillMemory",
    "RtlZeroMemory",
    "RtlCompareMemory",
    "malloc",
    "calloc",
    "realloc",
    "free",
    "_malloc_base",
    "_free_base",
    "operator new",
    "operator delete",
    "HeapAlloc",
    "HeapFree",
    "HeapReAlloc",
    "RtlAllocateHeap",
    "RtlFreeHeap",
    "RtlReAllocateHeap",
    "RtlpAllocateHeap*",
    "RtlpFreeHeap*",
    "RtlpLowFragHeap*",
    "ExAllocatePool*",
    "ExFreePool*",
    "RtlEnterCriticalSection",
    "RtlLeaveCriticalSection",
    "RtlpWaitOnCriticalSection",
    "EnterCriticalSection",
    "LeaveCriticalSection",
    "RtlAcquireSRWLock*",
    "AcquireSRWLock*",
];

/// Whether `pattern` (exact, or a prefix ending in `*`) matches `name`.
pub(crate) fn matches(pattern: &str, name: &str) -> bool {
    match pattern.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => name == pattern,
    }
}

/// A module's name as module patterns see it: the file name, lower-case, without a
/// `.dll`/`.exe`/`.sys`/`.drv` extension.
pub(crate) fn module_stem(name: &str) -> String {
    let file = ntdbg_engine::module_info::file_name_of(name).to_ascii_lowercase();
    match file.rsplit_once('.') {
        Some((stem, "dll" | "exe" | "sys" | "drv")) => stem.to_string(),
        _ => file,
    }
}
