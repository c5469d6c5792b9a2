//! Whether memory outside every module holds code, as the dump's memory info list says
//! (JIT compilers write their code into private memory they make executable).

use ntdbg_targets::{memory_info_at, Target};

/// What the memory info list says about an address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Protection {
    /// Committed memory the process could execute.
    Executable,
    /// Memory it could not execute: not executable, reserved or free.
    NotExecutable,
    /// The dump has no memory info list, or the list does not cover the address.
    Unknown,
}

/// How the memory info list of `target` protects `addr`.
pub(crate) fn protection(target: &dyn Target, addr: u64) -> Protection {
    let Some(regions) = target.memory_info() else {
        return Protection::Unknown;
    };
    let Some(region) = memory_info_at(regions, addr) else {
        return Protection::Unknown;
    };
    if region.is_executable() {
        Protection::Executable
    } else {
        Protection::NotExecutable
    }
}
