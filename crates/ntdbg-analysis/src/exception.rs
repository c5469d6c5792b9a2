//! Decoding an exception record: its name, what its parameters mean, and a one-line
//! description for people.

use crate::ntstatus::{exception_name, fast_fail_name};
use ntdbg_engine::text::prefixed_pointer_hex;
use ntdbg_targets::ExceptionEvent;

/// The kind of memory access an access violation (or in-page error) reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// A read.
    Read,
    /// A write.
    Write,
    /// Executing non-executable memory (DEP).
    Execute,
}

impl Access {
    fn from_parameter(p: u64) -> Option<Access> {
        match p {
            0 => Some(Access::Read),
            1 => Some(Access::Write),
            8 => Some(Access::Execute),
            _ => None,
        }
    }
    /// `read`, `write` or `execute`.
    pub fn name(self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::Write => "write",
            Access::Execute => "execute",
        }
    }
}

/// What an exception is, with its parameters decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExceptionKind {
    /// 0xC0000005 (and 0xC0000006 in-page errors): an invalid memory access.
    AccessViolation {
        /// Read, write or execute, when the parameters say.
        access: Option<Access>,
        /// The inaccessible address, when the parameters say.
        address: Option<u64>,
        /// Whether this is an in-page I/O error rather than an access violation.
        in_page: bool,
    },
    /// 0xC00000FD.
    StackOverflow,
    /// 0xC0000409 with a `__fastfail` code.
    FastFail {
        /// The fast-fail code.
        code: Option<u64>,
    },
    /// 0x80000003 / 0x4000001F.
    Breakpoint,
    /// 0xC0000094 and friends.
    DivideByZero,
    /// 0xE06D7363 (MSVC) or 0x20474343 (GCC/Clang).
    CppException,
    /// 0x40000015: `abort()`.
    Abort,
    /// 0xC0000374.
    HeapCorruption,
    /// 0xC000000D / 0xC0000417.
    InvalidParameter,
    /// Another known NTSTATUS.
    Other,
    /// A code nobody names: an application's own `RaiseException` code.
    Custom,
}

/// An exception record made readable.
#[derive(Debug, Clone)]
pub struct DecodedException {
    /// The code's symbolic name, e.g. `EXCEPTION_ACCESS_VIOLATION`.
    pub name: String,
    /// WinDbg's short text for the code, e.g. `Access violation`.
    pub short: String,
    /// One line saying what happened, e.g. `write to 0x0000000000000000`.
    pub description: String,
    /// What kind of exception it is.
    pub kind: ExceptionKind,
}

/// Decodes an exception event. `pointer_size` decides how addresses print.
pub fn decode(event: &ExceptionEvent, pointer_size: usize) -> DecodedException {
    let p = |i: usize| event.parameters.get(i).copied();
    let addr = |a: u64| prefixed_pointer_hex(a, pointer_size);
    let (name, short) = match exception_name(event.code) {
        Some((n, s)) => (n.to_string(), s.to_string()),
        None => (
            format!("0x{:08X}", event.code),
            "Unknown exception".to_string(),
        ),
    };
    let (kind, description) = match event.code {
        0xC000_0005 | 0xC000_0006 => {
            let access = p(0).and_then(Access::from_parameter);
            let address = p(1);
            let in_page = event.code == 0xC000_0006;
            let what = match access {
                Some(Access::Execute) => "execute (DEP) at".to_string(),
                Some(a) => format!("{} to", a.name()),
                None => "access to".to_string(),
            };
            let what = if access == Some(Access::Read) {
                "read from".to_string()
            } else {
                what
            };
            let desc = match address {
                Some(a) => format!("{what} {}", addr(a)),
                None => "invalid memory access".to_string(),
            };
            let desc = if in_page {
                format!(
                    "in-page I/O error: {desc} (status 0x{:08x})",
                    p(2).unwrap_or(0)
                )
            } else {
                desc
            };
            (
                ExceptionKind::AccessViolation {
                    access,
                    address,
                    in_page,
                },
                desc,
            )
        }
        0xC000_00FD => (ExceptionKind::StackOverflow, "stack overflow".to_string()),
        0xC000_0409 => {
            let code = p(0);
            let desc = match code {
                Some(c) => format!(
                    "fast fail: {} ({c})",
                    fast_fail_name(c).unwrap_or("unknown fast-fail code")
                ),
                None => "security check failure (stack buffer overrun)".to_string(),
            };
            (ExceptionKind::FastFail { code }, desc)
        }
        0x8000_0003 | 0x4000_001F => (ExceptionKind::Breakpoint, "breakpoint hit".to_string()),
        0xC000_0094 | 0xC000_008E => (
            ExceptionKind::DivideByZero,
            "integer or floating-point division by zero".to_string(),
        ),
        0xE06D_7363 => (
            ExceptionKind::CppException,
            "C++ exception thrown (MSVC)".to_string(),
        ),
        0x2047_4343 => (
            ExceptionKind::CppException,
            "C++ exception thrown (GCC/Clang runtime)".to_string(),
        ),
        0x4000_0015 => (
            ExceptionKind::Abort,
            "abort() called: fatal application exit".to_string(),
        ),
        0xC000_0374 => (
            ExceptionKind::HeapCorruption,
            "the heap manager detected corruption".to_string(),
        ),
        0xC000_000D | 0xC000_0417 => (
            ExceptionKind::InvalidParameter,
            "invalid parameter passed to a system or C runtime function".to_string(),
        ),
        code if exception_name(code).is_some() => (ExceptionKind::Other, short.to_lowercase()),
        code => (
            ExceptionKind::Custom,
            format!(
                "application-defined exception 0x{code:08X} (RaiseException) with {} parameter(s)",
                event.parameters.len()
            ),
        ),
    };
    DecodedException {
        name,
        short,
        description,
        kind,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(code: u32, parameters: Vec<u64>) -> ExceptionEvent {
        ExceptionEvent {
            thread_id: 1,
            code,
            flags: 0,
            address: 0x1000,
            parameters,
            nested_record: 0,
            context: None,
        }
    }

    #[test]
    fn access_violations() {
        let d = decode(&event(0xC000_0005, vec![1, 0]), 8);
        assert_eq!(d.description, "write to 0x0000000000000000");
        assert_eq!(d.name, "EXCEPTION_ACCESS_VIOLATION");
        let d = decode(&event(0xC000_0005, vec![0, 0x45]), 4);
        assert_eq!(d.description, "read from 0x00000045");
        let d = decode(&event(0xC000_0005, vec![8, 0x1234]), 8);
        assert!(
            d.description.starts_with("execute (DEP)"),
            "{}",
            d.description
        );
    }

    #[test]
    fn fast_fail_and_custom() {
        assert!(decode(&event(0xC000_0409, vec![7]), 8)
            .description
            .contains("FAST_FAIL_FATAL_APP_EXIT"));
        let d = decode(&event(0xE000_1234, vec![1, 2, 3]), 8);
        assert_eq!(d.kind, ExceptionKind::Custom);
        assert_eq!(d.name, "0xE0001234");
    }
}
