//! Names of exception codes: NTSTATUS values and well-known custom codes. The analysis layer
//! decodes exceptions with it; live targets name their debug events with it.

/// Name and short description of an exception code, when it is a known one.
pub fn exception_name(code: u32) -> Option<(&'static str, &'static str)> {
    Some(match code {
        0x8000_0001 => ("STATUS_GUARD_PAGE_VIOLATION", "Guard page violation"),
        0x8000_0002 => ("STATUS_DATATYPE_MISALIGNMENT", "Data misaligned"),
        0x8000_0003 => ("EXCEPTION_BREAKPOINT", "Break instruction exception"),
        0x8000_0004 => ("EXCEPTION_SINGLE_STEP", "Single step exception"),
        0xC000_0005 => ("EXCEPTION_ACCESS_VIOLATION", "Access violation"),
        0xC000_0006 => ("EXCEPTION_IN_PAGE_ERROR", "In-page I/O error"),
        0xC000_0008 => ("STATUS_INVALID_HANDLE", "Invalid handle"),
        0xC000_000D => ("STATUS_INVALID_PARAMETER", "Invalid parameter"),
        0xC000_0017 => ("STATUS_NO_MEMORY", "Out of memory"),
        0xC000_001D => ("EXCEPTION_ILLEGAL_INSTRUCTION", "Illegal instruction"),
        0xC000_0025 => (
            "EXCEPTION_NONCONTINUABLE_EXCEPTION",
            "Non-continuable exception",
        ),
        0xC000_0026 => ("EXCEPTION_INVALID_DISPOSITION", "Invalid disposition"),
        0xC000_008C => ("EXCEPTION_ARRAY_BOUNDS_EXCEEDED", "Array bounds exceeded"),
        0xC000_008D => (
            "EXCEPTION_FLT_DENORMAL_OPERAND",
            "Floating-point denormal operand",
        ),
        0xC000_008E => (
            "EXCEPTION_FLT_DIVIDE_BY_ZERO",
            "Floating-point division by zero",
        ),
        0xC000_008F => (
            "EXCEPTION_FLT_INEXACT_RESULT",
            "Floating-point inexact result",
        ),
        0xC000_0090 => (
            "EXCEPTION_FLT_INVALID_OPERATION",
            "Floating-point invalid operation",
        ),
        0xC000_0091 => ("EXCEPTION_FLT_OVERFLOW", "Floating-point overflow"),
        0xC000_0092 => ("EXCEPTION_FLT_STACK_CHECK", "Floating-point stack check"),
        0xC000_0093 => ("EXCEPTION_FLT_UNDERFLOW", "Floating-point underflow"),
        0xC000_0094 => ("EXCEPTION_INT_DIVIDE_BY_ZERO", "Integer divide-by-zero"),
        0xC000_0095 => ("EXCEPTION_INT_OVERFLOW", "Integer overflow"),
        0xC000_0096 => ("EXCEPTION_PRIV_INSTRUCTION", "Privileged instruction"),
        0xC000_00FD => ("EXCEPTION_STACK_OVERFLOW", "Stack overflow"),
        0xC000_0135 => ("STATUS_DLL_NOT_FOUND", "DLL not found"),
        0xC000_0142 => ("STATUS_DLL_INIT_FAILED", "DLL initialization failed"),
        0xC000_0194 => ("STATUS_POSSIBLE_DEADLOCK", "Possible deadlock"),
        0xC000_0374 => ("STATUS_HEAP_CORRUPTION", "Heap corruption"),
        0xC000_0409 => (
            "STATUS_STACK_BUFFER_OVERRUN",
            "Security check failure or stack buffer overrun",
        ),
        0xC000_0417 => (
            "STATUS_INVALID_CRUNTIME_PARAMETER",
            "Invalid C runtime parameter",
        ),
        0xC000_0420 => ("STATUS_ASSERTION_FAILURE", "Assertion failure"),
        0xC000_041D => (
            "STATUS_FATAL_USER_CALLBACK_EXCEPTION",
            "Fatal user callback exception",
        ),
        0xC015_000F => (
            "STATUS_SXS_EARLY_DEACTIVATION",
            "Activation context deactivated early",
        ),
        0x4000_0015 => ("STATUS_FATAL_APP_EXIT", "Fatal application exit (abort)"),
        0x4000_001F => (
            "STATUS_WX86_BREAKPOINT",
            "WOW64 break instruction exception",
        ),
        0x4001_0005 => ("DBG_CONTROL_C", "Control-C"),
        0x4001_0008 => ("DBG_CONTROL_BREAK", "Control-Break"),
        0x406D_1388 => ("MS_VC_EXCEPTION", "Thread-naming exception (SetThreadName)"),
        0xE06D_7363 => ("CPP_EH_EXCEPTION", "C++ exception (MSVC)"),
        0x2047_4343 => (
            "GCC_CXX_EXCEPTION",
            "C++ exception (GCC/Clang, code \"GCC \")",
        ),
        0xE043_4352 => ("CLR_EXCEPTION", "CLR (.NET) exception"),
        0xE043_4F4D => ("CLR_EXCEPTION_COM", "CLR (.NET) COM exception"),
        _ => return None,
    })
}
