//! Assertions: a runtime's assertion function on the stack, or an assertion message
//! ("Assertion failed: x > 0 [File: …] [Line: …]") that a register or a stack slot near the
//! stack pointer points to when the process stopped.

use crate::conclusion::Inference;
use crate::evidence::pointed::{candidates, text_target, Target};
use crate::evidence::Evidence;
use ntdbg_engine::stack::Frame;
use ntdbg_engine::Session;
use ntdbg_targets::ExceptionEvent;

/// Assertion entry points of the C runtimes.
pub(super) const ASSERT_FUNCTIONS: &[&str] = &[
    "_assert",
    "_wassert",
    "__assert_fail",
    "_CrtDbgReport",
    "_CrtDbgReportW",
];

/// The C runtime's invalid-parameter handlers.
pub(super) const INVALID_PARAMETER_FUNCTIONS: &[&str] = &[
    "_invalid_parameter",
    "_invalid_parameter_noinfo",
    "_invalid_parameter_noinfo_noreturn",
    "_invoke_watson",
];

/// Bytes of the stack above the stack pointer whose pointer slots are looked at.
const STACK_WINDOW: usize = 0x200;
/// Shortest text taken for a message.
const MIN_MESSAGE: usize = 12;

/// `module!function` of the first frame whose bare function name is in `names`.
pub(super) fn find_function(frames: &[Frame], names: &[&str]) -> Option<String> {
    frames.iter().find_map(|f| {
        let function = f.function.as_deref()?;
        let bare = ntdbg_symbols::strip_parameters(function);
        names.contains(&bare).then(|| f.call_site())
    })
}

/// `std::terminate` as symbols and imports name it.
const TERMINATE_FUNCTIONS: &[&str] = &["terminate", "std::terminate", "_ZSt9terminatev"];

/// The inference for `abort()` (0x40000015): who called it, when the stack or the call chain
/// shows it.
pub(super) fn abort(evidence: &Evidence, frames: &[Frame]) -> Inference {
    const BASIS: &str = "exception code 0x40000015 (STATUS_FATAL_APP_EXIT)";
    if let Some(f) = find_function(frames, ASSERT_FUNCTIONS) {
        return Inference::new(
            "assertion",
            "an assertion failed and called abort()",
            format!("{BASIS}; {f} is on the stack"),
        );
    }
    let called = |names: &[&str]| {
        evidence
            .called(&|n| names.contains(&n))
            .and_then(|(frame, call)| {
                let caller = frames.iter().find(|f| f.index == *frame)?.call_site();
                Some((caller, call.callee.clone()?, call.at))
            })
    };
    if let Some((caller, callee, at)) = called(ASSERT_FUNCTIONS) {
        return Inference::new(
            "assertion",
            format!("an assertion failed in {caller} and called abort()"),
            format!("{BASIS}; {caller} called {callee} (the call at {at:#x})"),
        );
    }
    if let Some((caller, callee, at)) = called(TERMINATE_FUNCTIONS) {
        return Inference::new(
            "abort",
            format!("std::terminate() was called from {caller}, which calls abort(): most often an exception no handler caught (or one thrown from a noexcept function or a destructor during unwinding)"),
            format!("{BASIS}; {caller} called {callee} (the call at {at:#x})"),
        );
    }
    if let Some((caller, callee, at)) = called(&["abort"]) {
        return Inference::new(
            "abort",
            format!("{caller} called abort()"),
            format!("{BASIS}; {caller} called {callee} (the call at {at:#x})"),
        );
    }
    Inference::new(
        "abort",
        "abort() was called (an assertion, std::terminate or an explicit abort)",
        BASIS,
    )
}

/// The stack protector's and `_FORTIFY_SOURCE`'s failure functions (GCC, Clang, MinGW's
/// libssp), with what their failure means.
const STACK_CHECKS: &[(&str, &str)] = &[
    ("__stack_chk_fail", "the stack protector (-fstack-protector) found the canary of {f} overwritten when it returned: a stack buffer overrun in {f}"),
    ("__stack_chk_fail_local", "the stack protector (-fstack-protector) found the canary of {f} overwritten when it returned: a stack buffer overrun in {f}"),
    ("__chk_fail", "a _FORTIFY_SOURCE check in {f} found a copy larger than its destination buffer: a buffer overflow"),
    ("__fortify_fail", "a _FORTIFY_SOURCE check in {f} found a copy larger than its destination buffer: a buffer overflow"),
];

/// A failed stack-protector or fortify check: its failure function on the stack (its caller is
/// the function whose buffer overflowed) or called in the chain.
pub(super) fn stack_protector(evidence: &Evidence, frames: &[Frame]) -> Option<Inference> {
    let meaning = |name: &str| {
        STACK_CHECKS
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, m)| *m)
    };
    for (k, f) in frames.iter().enumerate().take(16) {
        let Some(name) = f.function.as_deref().map(ntdbg_symbols::strip_parameters) else {
            continue;
        };
        if let Some(m) = meaning(name) {
            let victim = frames.get(k + 1).map(function_name)?;
            return Some(Inference::new(
                "runtime_check",
                m.replace("{f}", &victim),
                format!(
                    "exception code {:#010x}; frame {:02x} is {}, called by {victim}",
                    evidence.event.code,
                    f.index,
                    f.call_site()
                ),
            ));
        }
    }
    let (frame, call) = evidence.called(&|n| meaning(n).is_some())?;
    let victim = function_name(frames.iter().find(|f| f.index == *frame)?);
    Some(Inference::new(
        "runtime_check",
        meaning(call.function()?)?.replace("{f}", &victim),
        format!(
            "exception code {:#010x}; {victim} called {} (`{}` at {:#x})",
            evidence.event.code,
            call.callee.as_deref()?,
            call.text,
            call.at
        ),
    ))
}

/// `module!function` of a frame without the offset (`module+0x…` without symbols).
fn function_name(f: &Frame) -> String {
    let site = f.call_site();
    match &f.function {
        Some(_) => site.split('+').next().unwrap_or(&site).to_string(),
        None => site,
    }
}

/// Whether `text` reads like an assertion or check message (and not a format string).
pub(crate) fn is_assertion_message(text: &str) -> bool {
    let lower = text.to_ascii_lowercase();
    !text.contains('%')
        && (lower.contains("assert")
            || lower.contains("check failed")
            || (lower.contains("[file:") && lower.contains("line")))
}

/// An assertion message pointed to by a register of the exception context or by a pointer
/// slot just above the stack pointer.
pub(super) fn assertion_message(session: &Session, event: &ExceptionEvent) -> Option<Inference> {
    candidates(session, event, STACK_WINDOW).into_iter().find_map(|(place, value)| {
        let Some(Target::Text {
            text, from_image, ..
        }) = text_target(session, value)
        else {
            return None;
        };
        if text.len() < MIN_MESSAGE || !is_assertion_message(&text) {
            return None;
        }
        let from = if from_image {
            "in the read-only data of the image on the symbol path"
        } else {
            "in the dump's memory"
        };
        Some(Inference::new(
            "assertion",
            format!("an assertion failed: \"{text}\""),
            format!(
                "{place} = {value:#x} points to this text ({from}) when exception {:#010x} was raised",
                event.code
            ),
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assertion_messages_are_recognised() {
        assert!(is_assertion_message(
            "Assertion failed: x > 0 [File: faults.c] [Line: 152]"
        ));
        assert!(is_assertion_message("Check failed: size <= capacity"));
        assert!(is_assertion_message(
            "ASSERT(ptr != nullptr) in [File: a.cpp] [Line: 3]"
        ));
        assert!(!is_assertion_message(
            "Assertion failed: %s, file %s, line %d"
        ));
        assert!(!is_assertion_message("C:\\Windows\\System32\\kernel32.dll"));
    }
}
