//! CodeView register numbers (`CV_REG_*` for x86, `CV_AMD64_*` for x64, `CV_ARM64_*` for
//! ARM64, as in Microsoft's `cvconst.h`) → the registers a stack frame holds.

use super::Machine;

/// A register (or part of one) a variable lives in or is addressed from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CvRegister {
    /// The name WinDbg shows (`ecx`, `r8d`, `rsp`, `x19`).
    pub name: &'static str,
    /// The full register of the context that holds it (`rcx` for `ecx` on x64).
    pub full: &'static str,
    /// Bit position of the part inside the full register (8 for `ah`).
    pub shift: u8,
    /// Width of the part in bits.
    pub bits: u8,
}

impl CvRegister {
    /// The part's value out of the full register's value.
    pub fn extract(&self, full_value: u64) -> u64 {
        let v = full_value >> self.shift;
        if self.bits >= 64 {
            v
        } else {
            v & ((1u64 << self.bits) - 1)
        }
    }

    /// The register numbered `number` on `machine`, if it is one a frame holds.
    pub fn from_number(machine: Machine, number: u16) -> Option<CvRegister> {
        match machine {
            Machine::X86 => x86(number),
            Machine::X64 => x64(number),
            Machine::Arm64 => arm64(number),
        }
    }
}

const fn reg(name: &'static str, full: &'static str, shift: u8, bits: u8) -> CvRegister {
    CvRegister {
        name,
        full,
        shift,
        bits,
    }
}

/// The registers numbered 1..=24 by both `CV_REG_*` and `CV_AMD64_*`: `al`..`bh`, `ax`..`di`,
/// `eax`..`edi`; `wide` gives the full register of a legacy name (`ax` → `rax` or `eax`).
fn legacy(number: u16, wide: fn(&'static str) -> &'static str) -> Option<CvRegister> {
    const BYTES: [&str; 8] = ["al", "cl", "dl", "bl", "ah", "ch", "dh", "bh"];
    const WORDS: [&str; 8] = ["ax", "cx", "dx", "bx", "sp", "bp", "si", "di"];
    const DWORDS: [&str; 8] = ["eax", "ecx", "edx", "ebx", "esp", "ebp", "esi", "edi"];
    let i = usize::from(number);
    Some(match i {
        1..=8 => {
            let name = BYTES[i - 1];
            let high = i > 4;
            reg(name, wide(WORDS[(i - 1) % 4]), if high { 8 } else { 0 }, 8)
        }
        9..=16 => reg(WORDS[i - 9], wide(WORDS[i - 9]), 0, 16),
        17..=24 => reg(DWORDS[i - 17], wide(WORDS[i - 17]), 0, 32),
        _ => return None,
    })
}

fn x86(number: u16) -> Option<CvRegister> {
    fn wide(word: &'static str) -> &'static str {
        match word {
            "ax" => "eax",
            "cx" => "ecx",
            "dx" => "edx",
            "bx" => "ebx",
            "sp" => "esp",
            "bp" => "ebp",
            "si" => "esi",
            _ => "edi",
        }
    }
    match number {
        33 => Some(reg("eip", "eip", 0, 32)),
        n => legacy(n, wide),
    }
}

fn x64(number: u16) -> Option<CvRegister> {
    const FULL: [&str; 16] = [
        "rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10", "r11", "r12",
        "r13", "r14", "r15",
    ];
    const R_B: [&str; 8] = ["r8b", "r9b", "r10b", "r11b", "r12b", "r13b", "r14b", "r15b"];
    const R_W: [&str; 8] = ["r8w", "r9w", "r10w", "r11w", "r12w", "r13w", "r14w", "r15w"];
    const R_D: [&str; 8] = ["r8d", "r9d", "r10d", "r11d", "r12d", "r13d", "r14d", "r15d"];
    fn wide(word: &'static str) -> &'static str {
        match word {
            "ax" => "rax",
            "cx" => "rcx",
            "dx" => "rdx",
            "bx" => "rbx",
            "sp" => "rsp",
            "bp" => "rbp",
            "si" => "rsi",
            _ => "rdi",
        }
    }
    let i = usize::from(number);
    Some(match number {
        33 => reg("rip", "rip", 0, 64),
        324 => reg("sil", "rsi", 0, 8),
        325 => reg("dil", "rdi", 0, 8),
        326 => reg("bpl", "rbp", 0, 8),
        327 => reg("spl", "rsp", 0, 8),
        328..=343 => reg(FULL[i - 328], FULL[i - 328], 0, 64),
        344..=351 => reg(R_B[i - 344], FULL[i - 344 + 8], 0, 8),
        352..=359 => reg(R_W[i - 352], FULL[i - 352 + 8], 0, 16),
        360..=367 => reg(R_D[i - 360], FULL[i - 360 + 8], 0, 32),
        n => return legacy(n, wide),
    })
}

fn arm64(number: u16) -> Option<CvRegister> {
    const X: [&str; 29] = [
        "x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11", "x12", "x13",
        "x14", "x15", "x16", "x17", "x18", "x19", "x20", "x21", "x22", "x23", "x24", "x25", "x26",
        "x27", "x28",
    ];
    const W: [&str; 31] = [
        "w0", "w1", "w2", "w3", "w4", "w5", "w6", "w7", "w8", "w9", "w10", "w11", "w12", "w13",
        "w14", "w15", "w16", "w17", "w18", "w19", "w20", "w21", "w22", "w23", "w24", "w25", "w26",
        "w27", "w28", "w29", "w30",
    ];
    let i = usize::from(number);
    Some(match number {
        // W0..W28 live in X0..X28; W29/W30 in fp/lr.
        10..=38 => reg(W[i - 10], X[i - 10], 0, 32),
        39 => reg("w29", "fp", 0, 32),
        40 => reg("w30", "lr", 0, 32),
        50..=78 => reg(X[i - 50], X[i - 50], 0, 64),
        79 => reg("fp", "fp", 0, 64),
        80 => reg("lr", "lr", 0, 64),
        81 => reg("sp", "sp", 0, 64),
        83 => reg("pc", "pc", 0, 64),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_name_windbg_registers() {
        let name = |m, n| CvRegister::from_number(m, n).map(|r| (r.name, r.full));
        assert_eq!(name(Machine::X64, 330), Some(("rcx", "rcx")));
        assert_eq!(name(Machine::X64, 335), Some(("rsp", "rsp")));
        assert_eq!(name(Machine::X64, 364), Some(("r12d", "r12")));
        assert_eq!(name(Machine::X64, 20), Some(("ebx", "rbx")));
        assert_eq!(name(Machine::X64, 5), Some(("ah", "rax")));
        assert_eq!(name(Machine::X86, 22), Some(("ebp", "ebp")));
        assert_eq!(name(Machine::X86, 11), Some(("dx", "edx")));
        assert_eq!(name(Machine::Arm64, 69), Some(("x19", "x19")));
        assert_eq!(name(Machine::Arm64, 29), Some(("w19", "x19")));
        assert_eq!(name(Machine::Arm64, 81), Some(("sp", "sp")));
        assert_eq!(name(Machine::X64, 400), None);
        let ah = CvRegister::from_number(Machine::X86, 5).unwrap();
        assert_eq!(ah.extract(0x1234_5678), 0x56);
    }
}
