//! Register sets of walked frames: what each architecture calls its instruction, stack and
//! frame pointers, which registers a callee preserves, and a caller's context built register
//! by register with exactly the registers that were recovered marked valid.

use std::collections::HashSet;

use minidump::{CpuContext, MinidumpContext, MinidumpContextValidity, MinidumpRawContext};
use ntdbg_targets::Arch;

/// The names of one architecture's special registers, as minidump contexts spell them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Names {
    pub(crate) ip: &'static str,
    pub(crate) sp: &'static str,
    pub(crate) fp: &'static str,
    /// Registers a callee gives back unchanged (the frame pointer included).
    pub(crate) callee_saved: &'static [&'static str],
}

/// The register names of `arch`; `None` for architectures the walker does not know.
pub(crate) fn names(arch: Arch) -> Option<Names> {
    match arch {
        Arch::X86 => Some(Names {
            ip: "eip",
            sp: "esp",
            fp: "ebp",
            callee_saved: &["ebp", "ebx", "esi", "edi"],
        }),
        Arch::X64 => Some(Names {
            ip: "rip",
            sp: "rsp",
            fp: "rbp",
            callee_saved: &["rbx", "rbp", "rsi", "rdi", "r12", "r13", "r14", "r15"],
        }),
        Arch::Arm64 => Some(Names {
            ip: "pc",
            sp: "sp",
            fp: "fp",
            callee_saved: &[
                "x19", "x20", "x21", "x22", "x23", "x24", "x25", "x26", "x27", "x28", "fp",
            ],
        }),
        Arch::Other(_) => None,
    }
}

/// A caller's registers under construction: starts as a copy of the callee's values with
/// nothing valid, and gains one valid register per [`CallerContext::set`].
#[derive(Debug, Clone)]
pub(crate) struct CallerContext {
    raw: MinidumpRawContext,
    /// The canonical names set (a name set twice is listed twice): a list beats hashing on
    /// every set; the context's set is built once, by [`CallerContext::finish`].
    valid: Vec<&'static str>,
}

impl CallerContext {
    /// An empty caller context shaped like `callee` (same architecture and layout).
    pub(crate) fn like(callee: &MinidumpContext) -> CallerContext {
        CallerContext {
            raw: callee.raw.clone(),
            valid: Vec::new(),
        }
    }

    /// Sets register `name` (aliases such as `x29` accepted); `None` for a name the
    /// context does not have or a value that does not fit it.
    pub(crate) fn set(&mut self, name: &str, value: u64) -> Option<()> {
        let canonical = self.canonical(name)?;
        self.set_canonical(canonical, value)
    }

    /// Sets register `canonical`, a name as the context's own register list spells it (no
    /// alias: the walk sets a dozen registers per frame, and looking each name up shows).
    fn set_canonical(&mut self, canonical: &'static str, value: u64) -> Option<()> {
        match &mut self.raw {
            MinidumpRawContext::X86(c) => c.set_register(canonical, u32::try_from(value).ok()?)?,
            MinidumpRawContext::Amd64(c) => c.set_register(canonical, value)?,
            MinidumpRawContext::Arm64(c) => c.set_register(canonical, value)?,
            MinidumpRawContext::OldArm64(c) => c.set_register(canonical, value)?,
            _ => return None,
        }
        self.valid.push(canonical);
        Some(())
    }

    /// The context's own name for register `name` (`fp` for `x29`).
    fn canonical(&self, name: &str) -> Option<&'static str> {
        match &self.raw {
            MinidumpRawContext::X86(c) => c.memoize_register(name),
            MinidumpRawContext::Amd64(c) => c.memoize_register(name),
            MinidumpRawContext::Arm64(c) => c.memoize_register(name),
            MinidumpRawContext::OldArm64(c) => c.memoize_register(name),
            _ => None,
        }
    }

    /// Marks register `name` unknown.
    pub(crate) fn clear(&mut self, name: &str) {
        if let Some(canonical) = self.canonical(name) {
            self.valid.retain(|v| *v != canonical);
        }
    }

    /// Copies the registers in `names` that `from` knows; `names` are the architecture's
    /// own names, as [`names`] lists them (no aliases).
    pub(crate) fn keep(&mut self, from: &MinidumpContext, names: &[&'static str]) {
        for name in names {
            if let Some(v) = from.get_register(name) {
                self.set_canonical(name, v);
            }
        }
    }

    /// Whether register `name` has been set.
    pub(crate) fn has(&self, name: &str) -> bool {
        self.valid.contains(&name)
    }

    /// The finished context: only the registers set are valid.
    pub(crate) fn finish(self) -> MinidumpContext {
        MinidumpContext {
            raw: self.raw,
            valid: MinidumpContextValidity::Some(self.valid.into_iter().collect::<HashSet<_>>()),
        }
    }
}

/// A register of `context` only when valid, by any of its names (`x29` and `fp` alike).
pub(crate) fn known(context: &MinidumpContext, name: &str) -> Option<u64> {
    let canonical = match &context.raw {
        MinidumpRawContext::X86(c) => c.memoize_register(name),
        MinidumpRawContext::Amd64(c) => c.memoize_register(name),
        MinidumpRawContext::Arm64(c) => c.memoize_register(name),
        MinidumpRawContext::OldArm64(c) => c.memoize_register(name),
        _ => None,
    }?;
    context.get_register(canonical)
}

/// An ARM64 code address without its pointer-authentication bits (48-bit virtual
/// addresses: user addresses get the high bits cleared, kernel addresses set).
pub(crate) fn strip_pac(addr: u64) -> u64 {
    const LOW: u64 = (1 << 48) - 1;
    if addr & (1 << 55) != 0 {
        addr | !LOW
    } else {
        addr & LOW
    }
}
