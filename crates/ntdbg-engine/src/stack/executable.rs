//! Whether memory outside every module holds code, as the dump's memory info list says
//! (JIT compilers write their code into private memory they make executable).

use ntdbg_targets::Target;

/// `PAGE_EXECUTE`, `PAGE_EXECUTE_READ`, `PAGE_EXECUTE_READWRITE`, `PAGE_EXECUTE_WRITECOPY`.
const PAGE_EXECUTE_ANY: u32 = 0xf0;
/// The protection bits proper (without `PAGE_GUARD`, `PAGE_NOCACHE`, `PAGE_WRITECOMBINE`).
const PAGE_PROTECTION: u32 = 0xff;
/// `MEM_COMMIT`.
const MEM_COMMIT: u32 = 0x1000;

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
    // Sorted by base: the last region starting at or below `addr`.
    let at = regions.partition_point(|r| r.base <= addr);
    let Some(region) = at.checked_sub(1).map(|i| &regions[i]) else {
        return Protection::Unknown;
    };
    if addr >= region.end() {
        return Protection::Unknown;
    }
    if region.state == MEM_COMMIT && region.protect & PAGE_PROTECTION & PAGE_EXECUTE_ANY != 0 {
        Protection::Executable
    } else {
        Protection::NotExecutable
    }
}
