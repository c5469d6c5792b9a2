//! Uncaught C++ exceptions: the thrown type for MSVC, the runtime for GCC/Clang.

use crate::cxx::{thrown_type, ThrownType, GCC_CPP_CODE};
use crate::report::Inference;
use ntdbg_engine::Session;
use ntdbg_targets::ExceptionEvent;

/// The C++ exception inference.
pub(super) fn cpp_exception(session: &Session, event: &ExceptionEvent) -> Inference {
    let kind = "cpp_exception";
    if event.code == GCC_CPP_CODE {
        return Inference::new(
            kind,
            "an unhandled C++ exception thrown by the GCC/Clang (libstdc++/libc++) runtime; the thrown type is not recorded in the exception record",
            "exception code 0x20474343 (' GCC')",
        );
    }
    match thrown_type(session, event) {
        Some(ThrownType::Known { name, decorated }) => Inference::new(
            kind,
            format!("an unhandled C++ exception of type {name}"),
            format!(
                "exception code 0xE06D7363; ThrowInfo {:#x} -> CatchableTypeArray -> TypeDescriptor {decorated}",
                event.parameters.get(2).copied().unwrap_or(0)
            ),
        ),
        Some(ThrownType::Unknown(why)) => Inference::new(
            kind,
            format!("an unhandled C++ exception (MSVC); {why}"),
            "exception code 0xE06D7363",
        ),
        None => Inference::new(
            kind,
            "an unhandled C++ exception",
            format!("exception code {:#010x}", event.code),
        ),
    }
}
