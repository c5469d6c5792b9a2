//! Assertions: a runtime's assertion function on the stack, or an assertion message
//! ("Assertion failed: x > 0 [File: …] [Line: …]") that a register or a stack slot near the
//! stack pointer points to when the process stopped.

use crate::report::Inference;
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
const STACK_WINDOW: u64 = 0x200;
/// Longest message read.
const MAX_MESSAGE: usize = 512;
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

/// The inference for `abort()` (0x40000015).
pub(super) fn abort(frames: &[Frame]) -> Inference {
    match find_function(frames, ASSERT_FUNCTIONS) {
        Some(f) => Inference::new(
            "assertion",
            "an assertion failed and called abort()",
            format!("exception code 0x40000015 (STATUS_FATAL_APP_EXIT); {f} is on the stack"),
        ),
        None => Inference::new(
            "abort",
            "abort() was called (an assertion, std::terminate or an explicit abort)",
            "exception code 0x40000015 (STATUS_FATAL_APP_EXIT)",
        ),
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

/// The printable text at the start of `bytes` (ASCII, or UTF-16LE when every other byte is
/// zero), up to a terminator.
pub(crate) fn text_at(bytes: &[Option<u8>]) -> Option<String> {
    let wide = bytes.len() >= 4 && bytes[1] == Some(0) && bytes[3] == Some(0);
    let step = if wide { 2 } else { 1 };
    let mut out = String::new();
    for chunk in bytes.chunks(step) {
        let c = chunk[0]?;
        if wide && chunk.get(1).copied().flatten() != Some(0) {
            return None;
        }
        match c {
            0 => break,
            b'\t' | 0x20..=0x7e => out.push(c as char),
            _ => return None,
        }
    }
    (out.len() >= MIN_MESSAGE).then_some(out)
}

/// Where a candidate pointer to a message was found (named only for the one that points to
/// a message).
#[derive(Debug, Clone, Copy)]
enum Place {
    /// A register of the exception context.
    Register(&'static str),
    /// The stack slot this many bytes above the stack pointer.
    StackSlot(usize),
}

impl Place {
    /// `rcx`, `[rsp+0x18]`.
    fn name(self, sp_name: &str) -> String {
        match self {
            Place::Register(register) => register.to_string(),
            Place::StackSlot(offset) => format!("[{sp_name}+{offset:#x}]"),
        }
    }
}

/// An assertion message pointed to by a register of the exception context or by a pointer
/// slot just above the stack pointer.
pub(super) fn assertion_message(session: &Session, event: &ExceptionEvent) -> Option<Inference> {
    let context = event.context.as_ref()?;
    let ptr = session.arch().pointer_size();
    let names: &[&'static str] = if ptr == 8 {
        &[
            "rax", "rcx", "rdx", "rbx", "rsi", "rdi", "r8", "r9", "r10", "r11", "r12", "r13",
            "r14", "r15", "rbp",
        ]
    } else {
        &["eax", "ecx", "edx", "ebx", "esi", "edi", "ebp"]
    };
    let mut candidates: Vec<(Place, u64)> = names
        .iter()
        .filter_map(|r| {
            Some((
                Place::Register(r),
                ntdbg_engine::registers::register(context, r)?,
            ))
        })
        .collect();
    let sp_name = if ptr == 8 { "rsp" } else { "esp" };
    if let Some(sp) = ntdbg_engine::registers::register(context, sp_name) {
        let window = session.read_virtual(sp, STACK_WINDOW as usize);
        for (i, slot) in window.chunks(ptr).enumerate() {
            let bytes: Option<Vec<u8>> = slot.iter().copied().collect();
            let Some(bytes) = bytes.filter(|b| b.len() == ptr) else {
                continue;
            };
            let mut buf = [0u8; 8];
            buf[..ptr].copy_from_slice(&bytes);
            candidates.push((Place::StackSlot(i * ptr), u64::from_le_bytes(buf)));
        }
    }
    for (place, value) in candidates {
        if value < 0x1_0000 {
            continue;
        }
        let read = session.read_memory(value, MAX_MESSAGE);
        let Some(text) = text_at(&read.bytes) else {
            continue;
        };
        if !is_assertion_message(&text) {
            continue;
        }
        let from = if read.from_image.is_empty() {
            "in the dump's memory"
        } else {
            "in the read-only data of the image on the symbol path"
        };
        return Some(Inference::new(
            "assertion",
            format!("an assertion failed: \"{text}\""),
            format!(
                "{} = {value:#x} points to this text ({from}) when exception {:#010x} was raised",
                place.name(sp_name),
                event.code
            ),
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(s: &[u8]) -> Vec<Option<u8>> {
        s.iter().copied().map(Some).collect()
    }

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

    #[test]
    fn text_is_read_in_both_encodings() {
        assert_eq!(
            text_at(&bytes(b"Assertion failed: ok\0junk")).as_deref(),
            Some("Assertion failed: ok")
        );
        let wide: Vec<u8> = "assert(x) failed!"
            .encode_utf16()
            .flat_map(|u| u.to_le_bytes())
            .chain([0, 0])
            .collect();
        assert_eq!(text_at(&bytes(&wide)).as_deref(), Some("assert(x) failed!"));
        assert_eq!(text_at(&bytes(b"short\0")), None);
        assert_eq!(text_at(&bytes(b"\x01\x02binary data here")), None);
        let mut holes = bytes(b"Assertion failed");
        holes[3] = None;
        assert_eq!(text_at(&holes), None);
    }
}
