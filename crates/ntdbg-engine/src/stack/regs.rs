//! Register sets of walked frames: each architecture's general-purpose registers by number
//! (minidump's names, in its order), its instruction, stack and frame pointers and
//! callee-saved registers, and [`Regs`], one frame's values in a fixed array with a validity
//! bitmask. The walk sets a dozen registers per frame: numbers and a mask instead of
//! minidump's named registers and hashed validity set (a `MinidumpContext` is built only for
//! frames whose registers are asked for: [`super::FrameContext`]).

use std::collections::HashSet;

use minidump::{CpuContext, MinidumpContext, MinidumpContextValidity, MinidumpRawContext};
use ntdbg_targets::Arch;

/// A register's number in its architecture's [`Layout`].
pub(crate) type Reg = u8;

/// The most registers a layout has (ARM64: `x0`–`x28`, `fp`, `lr`, `sp`, `pc`).
const MAX_REGS: usize = 33;

/// One architecture's general-purpose registers.
#[derive(Debug)]
pub(crate) struct Layout {
    /// minidump's name of each register, by number (its `general_purpose_registers` order).
    names: &'static [&'static str],
    /// Each name as a [`key`], by number: a name is looked up among integers, not strings.
    keys: [u64; MAX_REGS],
    /// Other names of registers (ARM64 `x29`, `x30`), as keys.
    aliases: &'static [(u64, Reg)],
    /// The instruction pointer.
    pub(crate) ip: Reg,
    /// The stack pointer.
    pub(crate) sp: Reg,
    /// The frame pointer.
    pub(crate) fp: Reg,
    /// Registers a callee gives back unchanged (the frame pointer included), as a mask.
    callee_saved: u64,
    /// Whether the registers are 32 bits wide (x86).
    narrow: bool,
}

/// A register name of at most 7 bytes as one integer (its bytes, and its length in the top
/// byte so that no two names share one); 0 for a longer name, which no register has.
const fn key(name: &str) -> u64 {
    let bytes = name.as_bytes();
    if bytes.len() > 7 {
        return 0;
    }
    let mut key = (bytes.len() as u64) << 56;
    let mut i = 0;
    while i < bytes.len() {
        key |= (bytes[i] as u64) << (8 * i);
        i += 1;
    }
    key
}

/// The keys of `names`, by number.
const fn keys(names: &[&str]) -> [u64; MAX_REGS] {
    let mut keys = [0; MAX_REGS];
    let mut i = 0;
    while i < names.len() {
        keys[i] = key(names[i]);
        i += 1;
    }
    keys
}

/// The mask of registers `numbers`.
const fn mask(numbers: &[Reg]) -> u64 {
    let mut mask = 0;
    let mut i = 0;
    while i < numbers.len() {
        mask |= 1 << numbers[i];
        i += 1;
    }
    mask
}

const X86_NAMES: &[&str] = &[
    "eip", "esp", "ebp", "ebx", "esi", "edi", "eax", "ecx", "edx", "eflags",
];

static X86: Layout = Layout {
    names: X86_NAMES,
    keys: keys(X86_NAMES),
    aliases: &[],
    ip: 0,
    sp: 1,
    fp: 2,
    // ebp, ebx, esi, edi
    callee_saved: mask(&[2, 3, 4, 5]),
    narrow: true,
};

const X64_NAMES: &[&str] = &[
    "rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10", "r11", "r12", "r13",
    "r14", "r15", "rip",
];

static X64: Layout = Layout {
    names: X64_NAMES,
    keys: keys(X64_NAMES),
    aliases: &[],
    ip: 16,
    sp: 7,
    fp: 6,
    // rbx, rsi, rdi, rbp, r12–r15
    callee_saved: mask(&[3, 4, 5, 6, 12, 13, 14, 15]),
    narrow: false,
};

const ARM64_NAMES: &[&str] = &[
    "x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11", "x12", "x13", "x14",
    "x15", "x16", "x17", "x18", "x19", "x20", "x21", "x22", "x23", "x24", "x25", "x26", "x27",
    "x28", "fp", "lr", "sp", "pc",
];

static ARM64: Layout = Layout {
    names: ARM64_NAMES,
    keys: keys(ARM64_NAMES),
    aliases: &[(key("x29"), 29), (key("x30"), 30)],
    ip: 32,
    sp: 31,
    fp: 29,
    // x19–x28, fp
    callee_saved: mask(&[19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29]),
    narrow: false,
};

/// The register layout of `arch`; `None` for architectures the walker does not know.
pub(crate) fn layout(arch: Arch) -> Option<&'static Layout> {
    match arch {
        Arch::X86 => Some(&X86),
        Arch::X64 => Some(&X64),
        Arch::Arm64 => Some(&ARM64),
        Arch::Other(_) => None,
    }
}

impl Layout {
    /// The number of register `name` (minidump's names and aliases).
    pub(crate) fn number(&self, name: &str) -> Option<Reg> {
        let key = key(name);
        let keys = &self.keys[..self.names.len()];
        match keys.iter().position(|k| *k == key) {
            Some(n) if key != 0 => Some(n as Reg),
            _ => self
                .aliases
                .iter()
                .find(|(alias, _)| *alias == key)
                .map(|(_, n)| *n),
        }
    }

    /// Whether `context` is laid out as this architecture's registers.
    pub(crate) fn fits(&self, context: &MinidumpContext) -> bool {
        let own: &Layout = match &context.raw {
            MinidumpRawContext::X86(_) => &X86,
            MinidumpRawContext::Amd64(_) => &X64,
            MinidumpRawContext::Arm64(_) | MinidumpRawContext::OldArm64(_) => &ARM64,
            _ => return false,
        };
        std::ptr::eq(own, self)
    }
}

/// One frame's registers: every value by number (a caller starts with its callee's values,
/// as a copy of its context would) and which of them are known.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Regs {
    layout: &'static Layout,
    values: [u64; MAX_REGS],
    /// Bit `n` set: register `n` is known.
    valid: u64,
}

impl Regs {
    /// The registers of `context`, which must fit `layout` ([`Layout::fits`]); those it
    /// marks valid are known.
    pub(crate) fn from_context(layout: &'static Layout, context: &MinidumpContext) -> Regs {
        let mut regs = Regs {
            layout,
            values: [0; MAX_REGS],
            valid: 0,
        };
        for (n, name) in layout.names.iter().enumerate() {
            regs.values[n] = context.get_register_always(name);
            if context.get_register(name).is_some() {
                regs.valid |= 1 << n;
            }
        }
        regs
    }

    /// A caller's registers under construction: this frame's values, none known.
    pub(crate) fn caller(&self) -> Regs {
        Regs { valid: 0, ..*self }
    }

    /// The register layout.
    pub(crate) fn layout(&self) -> &'static Layout {
        self.layout
    }

    /// Register `n` when known.
    pub(crate) fn get(&self, n: Reg) -> Option<u64> {
        (self.valid & (1 << n) != 0).then(|| self.values[usize::from(n)])
    }

    /// Register `n`'s value, known or not (as `MinidumpContext::get_stack_pointer` gives it).
    pub(crate) fn value(&self, n: Reg) -> u64 {
        self.values[usize::from(n)]
    }

    /// Register `name` (aliases accepted) when known.
    pub(crate) fn get_named(&self, name: &str) -> Option<u64> {
        self.get(self.layout.number(name)?)
    }

    /// Sets register `n`; `None` for a value too wide for it (x86).
    pub(crate) fn set(&mut self, n: Reg, value: u64) -> Option<()> {
        if self.layout.narrow && u32::try_from(value).is_err() {
            return None;
        }
        self.values[usize::from(n)] = value;
        self.valid |= 1 << n;
        Some(())
    }

    /// Sets register `name` (aliases accepted); `None` for a name the architecture does not
    /// have or a value too wide.
    pub(crate) fn set_named(&mut self, name: &str, value: u64) -> Option<()> {
        self.set(self.layout.number(name)?, value)
    }

    /// Marks register `name` unknown.
    pub(crate) fn clear_named(&mut self, name: &str) {
        if let Some(n) = self.layout.number(name) {
            self.valid &= !(1 << n);
        }
    }

    /// Copies the callee-saved registers `from` knows.
    pub(crate) fn keep_callee_saved(&mut self, from: &Regs) {
        let kept = from.valid & self.layout.callee_saved;
        for n in 0..self.layout.names.len() {
            if kept & (1 << n) != 0 {
                self.values[n] = from.values[n];
            }
        }
        self.valid |= kept;
    }

    /// Whether register `n` is known.
    pub(crate) fn has(&self, n: Reg) -> bool {
        self.valid & (1 << n) != 0
    }

    /// These registers as a context shaped like `template` (the thread's context, which
    /// [`Layout::fits`]): its other state, these values, only the known registers valid.
    pub(crate) fn to_context(self, template: &MinidumpContext) -> MinidumpContext {
        let mut raw = template.raw.clone();
        let names = self.layout.names;
        for (name, &value) in names.iter().zip(&self.values) {
            // Every name is the context's own and every x86 value fits 32 bits (`set`).
            let _ = match &mut raw {
                MinidumpRawContext::X86(c) => c.set_register(name, value as u32),
                MinidumpRawContext::Amd64(c) => c.set_register(name, value),
                MinidumpRawContext::Arm64(c) => c.set_register(name, value),
                MinidumpRawContext::OldArm64(c) => c.set_register(name, value),
                _ => None,
            };
        }
        let valid: HashSet<&'static str> = names
            .iter()
            .enumerate()
            .filter(|(n, _)| self.valid & (1 << n) != 0)
            .map(|(_, name)| *name)
            .collect();
        MinidumpContext {
            raw,
            valid: MinidumpContextValidity::Some(valid),
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use minidump::format::{CONTEXT_AMD64, CONTEXT_ARM64};

    #[test]
    fn numbers_match_minidump_names_and_aliases() {
        for layout in [&X86, &X64, &ARM64] {
            for (n, name) in layout.names.iter().enumerate() {
                assert_eq!(layout.number(name), Some(n as Reg), "{name}");
            }
        }
        assert_eq!(ARM64.number("x29"), Some(29));
        assert_eq!(ARM64.number("x30"), Some(30));
        for bad in [
            "x31",
            "x01",
            "x+1",
            "x",
            "w0",
            "",
            "rip",
            "fp\0",
            "x28\0\0\0\0\0",
        ] {
            assert_eq!(ARM64.number(bad), None, "{bad}");
        }
        assert_eq!(X64.number("eax"), None);
    }

    #[test]
    fn a_context_round_trips_with_only_the_known_registers_valid() {
        let raw = CONTEXT_AMD64 {
            rsp: 0x1000,
            rip: 0x7ff6_0000_1234,
            rbx: 7,
            rax: 9,
            ..Default::default()
        };
        let context = MinidumpContext::from_raw(MinidumpRawContext::Amd64(raw));
        let regs = Regs::from_context(&X64, &context);
        assert_eq!(regs.get(X64.sp), Some(0x1000));
        let mut caller = regs.caller();
        caller.keep_callee_saved(&regs);
        caller.set(X64.ip, 0x42).unwrap();
        caller.set_named("rsp", 0x1008).unwrap();
        assert_eq!(caller.get_named("rax"), None);
        let built = caller.to_context(&context);
        assert_eq!(built.get_register("rip"), Some(0x42));
        assert_eq!(built.get_register("rbx"), Some(7));
        assert_eq!(built.get_register("rax"), None);
        assert_eq!(built.get_register_always("rax"), 9);
    }

    #[test]
    fn arm64_aliases_set_the_same_register_and_x86_values_stay_32_bit() {
        let context =
            MinidumpContext::from_raw(MinidumpRawContext::Arm64(CONTEXT_ARM64::default()));
        let mut regs = Regs::from_context(&ARM64, &context).caller();
        regs.set_named("x29", 5).unwrap();
        assert_eq!(regs.get_named("fp"), Some(5));
        regs.clear_named("fp");
        assert_eq!(regs.get_named("x29"), None);
        let mut x86 = Regs {
            layout: &X86,
            values: [0; MAX_REGS],
            valid: 0,
        };
        assert_eq!(x86.set(X86.sp, 1 << 32), None);
        assert!(!x86.has(X86.sp));
    }
}
