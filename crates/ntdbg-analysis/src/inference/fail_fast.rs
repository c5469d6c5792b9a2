//! `__fastfail` (0xC0000409): the fast-fail code by name and what it means.

use crate::conclusion::Inference;
use crate::ntstatus::fast_fail_name;

/// The fail-fast inference for fast-fail `code` (the first exception parameter).
pub(super) fn fail_fast(code: Option<u64>) -> Inference {
    let name = code.and_then(fast_fail_name);
    let text = match (code, name) {
        (Some(7), _) => "the process terminated itself with __fastfail(FAST_FAIL_FATAL_APP_EXIT): an explicit fatal exit (abort-like), not memory corruption".to_string(),
        (Some(c), Some(n)) => match meaning(c) {
            Some(m) => format!("the process terminated itself with __fastfail({n}): {m}"),
            None => format!("the process terminated itself with __fastfail({n}): a security or integrity check failed"),
        },
        _ => "the process terminated itself with __fastfail: a security or integrity check failed".to_string(),
    };
    let kind = match code {
        Some(3 | 35 | 50) => "heap_corruption",
        _ => "fail_fast",
    };
    Inference::new(
        kind,
        text,
        format!(
            "exception code 0xC0000409, fast-fail code {}",
            match (code, name) {
                (Some(c), Some(n)) => format!("{c} ({n})"),
                (Some(c), None) => format!("{c} (not a documented FAST_FAIL_* code)"),
                (None, _) => "missing from the exception record".into(),
            }
        ),
    )
}

/// What the common fast-fail codes say about the bug.
fn meaning(code: u64) -> Option<&'static str> {
    Some(match code {
        0 | 2 => "the /GS stack cookie of a function was overwritten: a stack buffer overrun in the function that returned (memory corruption)",
        3 => "a doubly linked list entry was corrupted (LIST_ENTRY links do not point back): heap or object memory corruption",
        4 => "the stack pointer left the thread's stack",
        5 => "a function was called with an invalid argument that it refuses to handle",
        10 => "Control Flow Guard blocked an indirect call to an address that is not a valid call target: a corrupted function pointer or vtable",
        11 => "Control Flow Guard blocked a write",
        14 => "a reference count underflowed or overflowed: an object was released too often (use after free)",
        18 | 38 => "longjmp was given an invalid jump buffer",
        21 => "the exception handler chain is corrupt",
        35 => "the heap raised an unexpected exception: heap corruption",
        44 => "the hardware shadow stack (CET) found a return address that differs from the one pushed: a corrupted return address",
        50 => "the heap manager found its metadata corrupted: a heap buffer overrun, double free or use after free",
        57 => "a return address was not a valid return target (CET)",
        _ => return None,
    })
}
