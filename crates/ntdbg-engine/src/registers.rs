//! Register access on a CPU context: full registers, their sub-registers, flags and segments,
//! and reading CONTEXT records from memory for `.cxr`.

use minidump::format as md;
use minidump::{MinidumpContext, MinidumpContextValidity, MinidumpRawContext};
pub use ntdbg_targets::context::{context_from_bytes, context_size};
use ntdbg_targets::Arch;

/// The registers `r` shows, in WinDbg's order, with their values.
pub fn general_registers(ctx: &MinidumpContext) -> Vec<(&'static str, u64)> {
    const X64: &[&str] = &[
        "rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rip", "rsp", "rbp", "r8", "r9", "r10", "r11",
        "r12", "r13", "r14", "r15",
    ];
    const X86: &[&str] = &[
        "eax", "ebx", "ecx", "edx", "esi", "edi", "eip", "esp", "ebp",
    ];
    let names: Vec<&'static str> = match &ctx.raw {
        MinidumpRawContext::Amd64(_) => X64.to_vec(),
        MinidumpRawContext::X86(_) => X86.to_vec(),
        MinidumpRawContext::Arm64(_) | MinidumpRawContext::OldArm64(_) => ARM64_NAMES.to_vec(),
        _ => ctx.general_purpose_registers().to_vec(),
    };
    names
        .into_iter()
        .filter_map(|n| register(ctx, n).map(|v| (n, v)))
        .collect()
}

const ARM64_NAMES: &[&str] = &[
    "x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11", "x12", "x13", "x14",
    "x15", "x16", "x17", "x18", "x19", "x20", "x21", "x22", "x23", "x24", "x25", "x26", "x27",
    "x28", "fp", "lr", "sp", "pc",
];

/// The value of a register by name (lower-case, no `@`), including sub-registers
/// (`eax`, `ax`, `al`, `ah`, `r8d`, `r8w`, `r8b`), flags (`efl`) and segments (`cs`).
pub fn register(ctx: &MinidumpContext, name: &str) -> Option<u64> {
    let name = name.trim_start_matches('@').to_ascii_lowercase();
    match &ctx.raw {
        MinidumpRawContext::Amd64(c) => amd64_register(c, &name),
        MinidumpRawContext::X86(c) => x86_register(c, &name),
        MinidumpRawContext::Arm64(c) => arm64_register(&c.iregs, c.sp, c.pc, c.cpsr, &name),
        MinidumpRawContext::OldArm64(c) => {
            arm64_register(&c.iregs[..31], c.sp, c.pc, c.cpsr, &name)
        }
        _ => ctx.get_register(&name),
    }
}

fn amd64_register(c: &md::CONTEXT_AMD64, name: &str) -> Option<u64> {
    let full = |n: &str| -> Option<u64> {
        Some(match n {
            "rax" => c.rax,
            "rbx" => c.rbx,
            "rcx" => c.rcx,
            "rdx" => c.rdx,
            "rsi" => c.rsi,
            "rdi" => c.rdi,
            "rsp" => c.rsp,
            "rbp" => c.rbp,
            "rip" => c.rip,
            "r8" => c.r8,
            "r9" => c.r9,
            "r10" => c.r10,
            "r11" => c.r11,
            "r12" => c.r12,
            "r13" => c.r13,
            "r14" => c.r14,
            "r15" => c.r15,
            _ => return None,
        })
    };
    if let Some(v) = full(name) {
        return Some(v);
    }
    match name {
        "efl" | "eflags" | "rflags" => return Some(u64::from(c.eflags)),
        "cs" => return Some(u64::from(c.cs)),
        "ds" => return Some(u64::from(c.ds)),
        "es" => return Some(u64::from(c.es)),
        "fs" => return Some(u64::from(c.fs)),
        "gs" => return Some(u64::from(c.gs)),
        "ss" => return Some(u64::from(c.ss)),
        "mxcsr" => return Some(u64::from(c.mx_csr)),
        "dr0" => return Some(c.dr0),
        "dr1" => return Some(c.dr1),
        "dr2" => return Some(c.dr2),
        "dr3" => return Some(c.dr3),
        "dr6" => return Some(c.dr6),
        "dr7" => return Some(c.dr7),
        _ => {}
    }
    // r8d / r8w / r8b
    if let Some(base) = name
        .strip_suffix('d')
        .filter(|b| b.starts_with('r') && b.len() > 1)
    {
        return full(base).map(|v| v & 0xffff_ffff);
    }
    if let Some(base) = name
        .strip_suffix('w')
        .filter(|b| b.starts_with('r') && b.len() > 1)
    {
        return full(base).map(|v| v & 0xffff);
    }
    if let Some(base) = name
        .strip_suffix('b')
        .filter(|b| b.starts_with('r') && b.len() > 1)
    {
        return full(base).map(|v| v & 0xff);
    }
    // eax / esp / eip: the low 32 bits of rax / rsp / rip.
    if let Some(base) = name.strip_prefix('e').filter(|b| b.len() == 2) {
        if let Some(v) = full(&format!("r{base}")) {
            return Some(v & 0xffff_ffff);
        }
    }
    legacy_subregister(name, |n| full(&format!("r{n}")))
}

fn x86_register(c: &md::CONTEXT_X86, name: &str) -> Option<u64> {
    let full = |n: &str| -> Option<u64> {
        Some(u64::from(match n {
            "eax" => c.eax,
            "ebx" => c.ebx,
            "ecx" => c.ecx,
            "edx" => c.edx,
            "esi" => c.esi,
            "edi" => c.edi,
            "esp" => c.esp,
            "ebp" => c.ebp,
            "eip" => c.eip,
            "efl" | "eflags" => c.eflags,
            "cs" => c.cs,
            "ds" => c.ds,
            "es" => c.es,
            "fs" => c.fs,
            "gs" => c.gs,
            "ss" => c.ss,
            "dr0" => c.dr0,
            "dr1" => c.dr1,
            "dr2" => c.dr2,
            "dr3" => c.dr3,
            "dr6" => c.dr6,
            "dr7" => c.dr7,
            _ => return None,
        }))
    };
    full(name).or_else(|| legacy_subregister(name, |n| full(&format!("e{n}"))))
}

/// `ax`/`al`/`ah`/`si`/`sil`… resolved against the 32- or 64-bit register `full("ax")` names.
fn legacy_subregister(name: &str, full: impl Fn(&str) -> Option<u64>) -> Option<u64> {
    let (base, shift, mask) = match name {
        "ax" | "bx" | "cx" | "dx" | "si" | "di" | "sp" | "bp" | "ip" => (name, 0, 0xffff),
        "al" | "bl" | "cl" | "dl" => (&name[..1], 0, 0xff),
        "ah" | "bh" | "ch" | "dh" => (&name[..1], 8, 0xff),
        "sil" | "dil" | "spl" | "bpl" => (&name[..2], 0, 0xff),
        _ => return None,
    };
    let base = match base {
        "a" | "b" | "c" | "d" => format!("{base}x"),
        other => other.to_string(),
    };
    full(&base).map(|v| (v >> shift) & mask)
}

fn arm64_register(iregs: &[u64], sp: u64, pc: u64, cpsr: u32, name: &str) -> Option<u64> {
    match name {
        "fp" => return iregs.get(29).copied(),
        "lr" => return iregs.get(30).copied(),
        "sp" => return Some(sp),
        "pc" => return Some(pc),
        "cpsr" => return Some(u64::from(cpsr)),
        _ => {}
    }
    if let Some(n) = name.strip_prefix('x').and_then(|n| n.parse::<usize>().ok()) {
        return iregs.get(n).copied();
    }
    if let Some(n) = name.strip_prefix('w').and_then(|n| n.parse::<usize>().ok()) {
        return iregs.get(n).map(|v| v & 0xffff_ffff);
    }
    None
}

/// A register's value only when the context says it is known (a walked caller frame's
/// context, or one `.frame /c` installed, marks lost volatile registers as unknown).
pub fn known_register(ctx: &MinidumpContext, name: &str) -> Option<u64> {
    let value = register(ctx, name)?;
    match &ctx.valid {
        MinidumpContextValidity::All => Some(value),
        MinidumpContextValidity::Some(known) => {
            let arch = match &ctx.raw {
                MinidumpRawContext::X86(_) => Arch::X86,
                MinidumpRawContext::Arm64(_) | MinidumpRawContext::OldArm64(_) => Arch::Arm64,
                _ => Arch::X64,
            };
            known
                .contains(full_register_name(arch, name).as_str())
                .then_some(value)
        }
    }
}

/// The full register of the context that holds `name` (`eax` → `rax` on x64, `ah` → `eax`
/// on x86, `w19` → `x19` on ARM64); other names are returned lower-cased as they are.
pub fn full_register_name(arch: Arch, name: &str) -> String {
    let name = name.trim_start_matches('@').to_ascii_lowercase();
    let legacy = |n: &str| -> Option<&'static str> {
        Some(match n {
            "eax" | "ax" | "al" | "ah" => "ax",
            "ebx" | "bx" | "bl" | "bh" => "bx",
            "ecx" | "cx" | "cl" | "ch" => "cx",
            "edx" | "dx" | "dl" | "dh" => "dx",
            "esi" | "si" | "sil" => "si",
            "edi" | "di" | "dil" => "di",
            "esp" | "sp" | "spl" => "sp",
            "ebp" | "bp" | "bpl" => "bp",
            "eip" | "ip" => "ip",
            _ => return None,
        })
    };
    match arch {
        Arch::X64 => {
            if let Some(base) = legacy(&name) {
                return format!("r{base}");
            }
            let numbered = name
                .strip_suffix(['d', 'w', 'b'])
                .filter(|b| b.strip_prefix('r').is_some_and(|n| n.parse::<u8>().is_ok()));
            numbered.map_or(name.clone(), str::to_string)
        }
        Arch::X86 => legacy(&name).map_or(name.clone(), |base| format!("e{base}")),
        Arch::Arm64 => match name.strip_prefix('w').and_then(|n| n.parse::<u8>().ok()) {
            Some(29) => "fp".to_string(),
            Some(30) => "lr".to_string(),
            Some(n) => format!("x{n}"),
            None => name,
        },
        Arch::Other(_) => name,
    }
}

/// Where `name` sits in its full register ([`full_register_name`]): `(shift, bits)`, with
/// `bits` 0 for the whole register (`ah` → `(8, 8)`, `eax` on x64 → `(0, 32)`, `r8w` →
/// `(0, 16)`, `w3` → `(0, 32)`).
pub fn subregister_bits(arch: Arch, name: &str) -> (u32, u32) {
    let name = name.trim_start_matches('@').to_ascii_lowercase();
    if full_register_name(arch, &name) == name {
        return (0, 0);
    }
    match (arch, name.as_str()) {
        (_, "ah" | "bh" | "ch" | "dh") => (8, 8),
        (_, "al" | "bl" | "cl" | "dl" | "sil" | "dil" | "spl" | "bpl") => (0, 8),
        (_, "ax" | "bx" | "cx" | "dx" | "si" | "di" | "sp" | "bp" | "ip") => (0, 16),
        (Arch::X64, n) if n.ends_with('b') => (0, 8),
        (Arch::X64, n) if n.ends_with('w') => (0, 16),
        _ => (0, 32),
    }
}

/// The flag mnemonics WinDbg prints after `iopl=`: `nv up ei pl zr na po nc`.
pub fn flags_text(efl: u64) -> String {
    let bit = |n: u32| efl & (1 << n) != 0;
    let pick = |set: bool, on: &'static str, off: &'static str| if set { on } else { off };
    [
        pick(bit(11), "ov", "nv"),
        pick(bit(10), "dn", "up"),
        pick(bit(9), "ei", "di"),
        pick(bit(7), "ng", "pl"),
        pick(bit(6), "zr", "nz"),
        pick(bit(4), "ac", "na"),
        pick(bit(2), "pe", "po"),
        pick(bit(0), "cy", "nc"),
    ]
    .join(" ")
}

/// The instruction pointer register name for the architecture.
pub fn ip_name(arch: Arch) -> &'static str {
    match arch {
        Arch::X86 => "eip",
        Arch::X64 => "rip",
        _ => "pc",
    }
}

/// The stack pointer register name for the architecture.
pub fn sp_name(arch: Arch) -> &'static str {
    match arch {
        Arch::X86 => "esp",
        Arch::X64 => "rsp",
        _ => "sp",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subregisters_and_their_bits() {
        assert_eq!(subregister_bits(Arch::X64, "rax"), (0, 0));
        assert_eq!(subregister_bits(Arch::X64, "eax"), (0, 32));
        assert_eq!(subregister_bits(Arch::X64, "ah"), (8, 8));
        assert_eq!(subregister_bits(Arch::X64, "r8w"), (0, 16));
        assert_eq!(subregister_bits(Arch::X64, "r15b"), (0, 8));
        assert_eq!(subregister_bits(Arch::X64, "sil"), (0, 8));
        assert_eq!(subregister_bits(Arch::X86, "eax"), (0, 0));
        assert_eq!(subregister_bits(Arch::X86, "ax"), (0, 16));
        assert_eq!(subregister_bits(Arch::Arm64, "w3"), (0, 32));
        assert_eq!(subregister_bits(Arch::X64, "efl"), (0, 0));
    }

    fn amd64() -> MinidumpContext {
        let c = md::CONTEXT_AMD64 {
            rax: 0x1122_3344_5566_7788,
            r8: 0xdead_beef_cafe_f00d,
            eflags: 0x10246,
            cs: 0x33,
            ..Default::default()
        };
        MinidumpContext::from_raw(MinidumpRawContext::Amd64(c))
    }

    #[test]
    fn subregisters() {
        let ctx = amd64();
        assert_eq!(register(&ctx, "rax"), Some(0x1122_3344_5566_7788));
        assert_eq!(register(&ctx, "eax"), Some(0x5566_7788));
        assert_eq!(register(&ctx, "ax"), Some(0x7788));
        assert_eq!(register(&ctx, "al"), Some(0x88));
        assert_eq!(register(&ctx, "ah"), Some(0x77));
        assert_eq!(register(&ctx, "r8d"), Some(0xcafe_f00d));
        assert_eq!(register(&ctx, "r8w"), Some(0xf00d));
        assert_eq!(register(&ctx, "r8b"), Some(0x0d));
        assert_eq!(register(&ctx, "@cs"), Some(0x33));
        assert_eq!(register(&ctx, "nope"), None);
    }

    #[test]
    fn sub_registers_name_their_full_register() {
        assert_eq!(full_register_name(Arch::X64, "ebx"), "rbx");
        assert_eq!(full_register_name(Arch::X64, "r14d"), "r14");
        assert_eq!(full_register_name(Arch::X64, "ah"), "rax");
        assert_eq!(full_register_name(Arch::X64, "rdi"), "rdi");
        assert_eq!(full_register_name(Arch::X86, "cx"), "ecx");
        assert_eq!(full_register_name(Arch::Arm64, "w19"), "x19");
        assert_eq!(full_register_name(Arch::Arm64, "w29"), "fp");
    }

    #[test]
    fn flags_like_windbg() {
        assert_eq!(flags_text(0x10246), "nv up ei pl zr na pe nc");
        assert_eq!(flags_text(0x10202), "nv up ei pl nz na po nc");
    }
}
