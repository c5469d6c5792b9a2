//! Heap corruption: the heap manager reporting it (`STATUS_HEAP_CORRUPTION`), or faulting
//! inside itself while following its own metadata, with use after free and overflow stated as
//! hypotheses with the facts behind them.

use super::fill_pattern::FillPattern;
use crate::conclusion::Inference;
use crate::evidence::Evidence;
use crate::fault::FaultingInstruction;
use crate::signature::is_system_module;
use ntdbg_engine::stack::Frame;

/// Function names (without module) that belong to a heap manager or the C runtime's heap.
pub(super) fn is_heap_function(name: &str) -> bool {
    let bare = ntdbg_symbols::strip_parameters(name);
    let rtl = (bare.starts_with("Rtl") || bare.starts_with("Rtlp"))
        && (bare.contains("Heap") || bare.contains("FreeBlock") || bare.contains("LowFrag"));
    rtl || matches!(
        bare,
        "HeapAlloc"
            | "HeapFree"
            | "HeapReAlloc"
            | "HeapSize"
            | "HeapValidate"
            | "malloc"
            | "free"
            | "realloc"
            | "calloc"
            | "_malloc_base"
            | "_free_base"
            | "_realloc_base"
            | "_calloc_base"
            | "_free_dbg"
            | "_malloc_dbg"
            | "_realloc_dbg"
            | "_calloc_dbg"
            | "GlobalAlloc"
            | "GlobalFree"
            | "GlobalReAlloc"
            | "LocalAlloc"
            | "LocalFree"
            | "LocalReAlloc"
            | "operator new"
            | "operator delete"
            | "operator new[]"
            | "operator delete[]"
            | "??2@YAPEAX_K@Z"
            | "??3@YAXPEAX@Z"
            | "??2@YAPAXI@Z"
            | "??3@YAXPAX@Z"
            | "_Znwm"
            | "_Znwy"
            | "_Znwj"
            | "_ZdlPv"
            | "_ZdlPvm"
            | "_ZdlPvy"
            | "_ZdaPv"
    ) || bare.starts_with("heap_")
}

/// Whether heap function `name` takes a block back (free, delete, realloc): a bad pointer
/// passed to it faults inside the heap just as damaged metadata does.
fn is_release_function(name: &str) -> bool {
    ["Free", "free", "delete", "ReAlloc", "realloc"]
        .iter()
        .any(|w| name.contains(w))
        || ["??3", "??_V", "_Zdl", "_Zda"]
            .iter()
            .any(|p| name.starts_with(p))
}

/// `STATUS_HEAP_CORRUPTION` (0xC0000374): the heap manager's own verdict.
pub(super) fn heap_corruption_status(site: &str) -> Inference {
    Inference::new(
        "heap_corruption",
        "heap corruption: a buffer overrun, double free or use after free damaged heap metadata; the bug is earlier than this stack",
        format!("exception code 0xC0000374 (STATUS_HEAP_CORRUPTION) raised at {site}; enable page heap (gflags /p /enable) to catch the first bad write"),
    )
}

/// An access violation inside the heap manager: by name when the symbols say so, else inside
/// ntdll (the heap manager's home) through a pointer made of a fill pattern.
pub(super) fn heap_manager_fault(
    evidence: &Evidence,
    frames: &[Frame],
    instruction: Option<&FaultingInstruction>,
    pattern: Option<&(String, FillPattern)>,
) -> Option<Inference> {
    let system_prefix: Vec<&Frame> = frames
        .iter()
        .take_while(|f| f.module.as_deref().is_some_and(is_system_module))
        .collect();
    let caller = frames
        .get(system_prefix.len())
        .map(|f| format!("; called from {}", f.call_site()))
        .unwrap_or_default();
    let instr = instruction
        .map(|i| format!("; faulting instruction {}", i.summary()))
        .unwrap_or_default();
    let hypothesis = |p: Option<&(String, FillPattern)>| {
        match p {
        Some((place, p)) if p.hypothesis == "use_after_free" => format!(
            "; hypothesis: a use after free ({place} holds {}, {})",
            p.name, p.meaning
        ),
        Some((place, p)) => format!(
            "; hypothesis: a heap buffer overflow or a write after free overwrote the metadata ({place} holds {}, {})",
            p.name, p.meaning
        ),
        None => String::new(),
    }
    };
    if let Some(f) = system_prefix
        .iter()
        .take(4)
        .find(|f| f.function.as_deref().is_some_and(is_heap_function))
    {
        return Some(Inference::new(
            "heap_corruption",
            format!(
                "heap corruption: the access violation happened inside the heap manager ({}), which faults when its own metadata was damaged earlier by a buffer overflow, a double free or a use after free; the bug is earlier than this stack",
                f.call_site()
            ),
            format!(
                "frame {} {} is a heap function{caller}{instr}{}",
                f.index,
                f.call_site(),
                hypothesis(pattern)
            ),
        ));
    }
    if let Some(i) = called_heap(
        evidence,
        frames,
        &system_prefix,
        &instr,
        &hypothesis(pattern),
    ) {
        return Some(i);
    }
    let first = system_prefix.first()?;
    let in_ntdll = first
        .module
        .as_deref()
        .is_some_and(|m| m.eq_ignore_ascii_case("ntdll"));
    let (place, p) = pattern?;
    if !in_ntdll || first.function.is_some() {
        return None;
    }
    let text = if p.hypothesis == "use_after_free" {
        format!(
            "heap corruption or a freed object used inside ntdll (home of the heap manager): it followed {place} = {}, a pointer taken from freed memory",
            p.name
        )
    } else {
        format!(
            "heap corruption is likely: the fault is inside ntdll (home of the heap manager) through {place} = {}, memory the heap would only follow if its metadata had been overwritten",
            p.name
        )
    };
    Some(Inference::new(
        "heap_corruption",
        text,
        format!(
            "frame 0 is in ntdll without symbols (the function cannot be named){caller}{instr}{}",
            hypothesis(pattern)
        ),
    ))
}

/// A fault in system code without symbols that the program entered by calling a heap function
/// (`call [__imp_HeapAlloc]`): the heap manager faulted on its own metadata, or on a pointer the
/// program passed it.
fn called_heap(
    evidence: &Evidence,
    frames: &[Frame],
    system_prefix: &[&Frame],
    instr: &str,
    hypothesis: &str,
) -> Option<Inference> {
    let first = system_prefix.first()?;
    if first.index != 0 || system_prefix.iter().any(|f| f.function.is_some()) {
        return None;
    }
    // The call into the system code: made by the first frame outside it.
    let caller = system_prefix.len();
    let (frame, call) = evidence
        .calls
        .iter()
        .find(|(f, c)| *f >= caller && c.function().is_some_and(is_heap_function))?;
    if *frame != caller {
        return None;
    }
    let callee = call.callee.as_deref()?;
    let site = frames
        .iter()
        .find(|f| f.index == *frame)
        .map(Frame::call_site)
        .unwrap_or_else(|| "the program".into());
    let frees = call.function().is_some_and(is_release_function);
    let text = if frees {
        format!("heap corruption or an invalid free: the access violation happened inside the heap manager, which {site} called through {callee}: the block's header was damaged (a buffer overflow, a double free or a use after free), or the pointer passed was never a heap block; the bug is earlier than this stack")
    } else {
        format!("heap corruption: the access violation happened inside the heap manager, which {site} called through {callee}; it faults when its metadata was damaged earlier (a buffer overflow, a double free or a use after free); the bug is earlier than this stack")
    };
    Some(Inference::new(
        "heap_corruption",
        text,
        format!(
            "frames 00-{:02x} are system code without symbols; frame {frame:02x} called {callee} ({}, `{}` at {:#x}){instr}{hypothesis}",
            caller - 1,
            call.how,
            call.text,
            call.at
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heap_functions() {
        for name in [
            "RtlpFreeHeap",
            "RtlFreeHeap",
            "RtlpLowFragHeapAllocFromContext",
            "RtlpInsertFreeBlock",
            "HeapFree",
            "_free_base",
            "free",
            "heap_free",
        ] {
            assert!(is_heap_function(name), "{name}");
        }
        for name in ["RtlUserThreadStart", "main", "CreateFileW", "freeze"] {
            assert!(!is_heap_function(name), "{name}");
        }
    }
}
