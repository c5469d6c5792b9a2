//! The disassembler's vocabulary: the memory and symbol traits the engine implements, the
//! target bitness, one output line ([`Instruction`]), the memory-operand summary used by crash
//! analysis, and the errors of `uf`.

use serde::Serialize;

/// Target memory as seen by the disassembler.
pub trait CodeMemory {
    /// Fills `buf` from `addr` and returns how many leading bytes are available
    /// (0 = `addr` is unreadable). Bytes past the returned count are ignored.
    fn read(&self, addr: u64, buf: &mut [u8]) -> usize;
}

/// Symbol lookups the disassembler needs for labels and operands.
pub trait AddressNamer {
    /// The WinDbg name of `addr`: `crashy!main+0x10`, or `crashy!main` at the exact start of a
    /// symbol (never `+0x0`); `None` when nothing is known about `addr`.
    fn name(&self, addr: u64) -> Option<String>;

    /// `[start, end)` of the function containing `addr`, used by `uf`.
    fn function_range(&self, addr: u64) -> Option<(u64, u64)>;

    /// Source position WinDbg appends to label lines when line numbers are on
    /// (`c:\src\crashy.c @ 119`, printed as `crashy!main+0x10 [c:\src\crashy.c @ 119]:`).
    /// None by default.
    fn source_line(&self, _addr: u64) -> Option<String> {
        None
    }
}

/// An [`AddressNamer`] that knows no symbols (every address prints as a bare address).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct NoSymbols;

impl AddressNamer for NoSymbols {
    fn name(&self, _addr: u64) -> Option<String> {
        None
    }

    fn function_range(&self, _addr: u64) -> Option<(u64, u64)> {
        None
    }
}

/// [`CodeMemory`] over a byte slice mapped at `base` (everything else is unreadable).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SliceMemory<'a> {
    /// Address of `bytes[0]`.
    pub base: u64,
    /// The readable bytes.
    pub bytes: &'a [u8],
}

impl CodeMemory for SliceMemory<'_> {
    fn read(&self, addr: u64, buf: &mut [u8]) -> usize {
        let Some(offset) = addr.checked_sub(self.base) else {
            return 0;
        };
        let Ok(offset) = usize::try_from(offset) else {
            return 0;
        };
        let Some(available) = self.bytes.get(offset..) else {
            return 0;
        };
        let n = available.len().min(buf.len());
        buf[..n].copy_from_slice(&available[..n]);
        n
    }
}

/// Processor mode of the code being disassembled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Bitness {
    /// x86 (addresses print as 8 hex digits).
    Bits32,
    /// x64 (addresses print as `00000001`40002134`).
    Bits64,
}

impl Bitness {
    /// The mode of `arch`'s code; `None` for architectures the disassembler does not decode.
    pub fn of_arch(arch: ntdbg_targets::Arch) -> Option<Bitness> {
        match arch {
            ntdbg_targets::Arch::X86 => Some(Bitness::Bits32),
            ntdbg_targets::Arch::X64 => Some(Bitness::Bits64),
            _ => None,
        }
    }

    /// The size of a pointer in this mode, in bytes.
    pub fn pointer_size(self) -> usize {
        match self {
            Bitness::Bits32 => 4,
            Bitness::Bits64 => 8,
        }
    }

    /// An address as WinDbg prints it in this mode (see [`crate::text::address`]).
    pub fn address(self, addr: u64) -> String {
        crate::text::address(addr, self.pointer_size())
    }

    /// The decoder bitness for iced-x86.
    pub(crate) fn bits(self) -> u32 {
        match self {
            Bitness::Bits32 => 32,
            Bitness::Bits64 => 64,
        }
    }

    /// `addr` reduced to the target's address width (x86 addresses wrap at 4 GiB).
    pub(crate) fn mask(self, addr: u64) -> u64 {
        match self {
            Bitness::Bits32 => addr & 0xffff_ffff,
            Bitness::Bits64 => addr,
        }
    }
}

/// The instruction set to decode: x86 in one of its modes, or ARM64.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Isa {
    /// x86 or x64 (iced-x86, MASM syntax).
    X86(Bitness),
    /// ARM64 (yaxpeax-arm, Microsoft's ARM64 syntax).
    Arm64,
}

impl Isa {
    /// The instruction set of `arch`; `None` for architectures the disassembler does not decode.
    pub fn of_arch(arch: ntdbg_targets::Arch) -> Option<Isa> {
        match arch {
            ntdbg_targets::Arch::Arm64 => Some(Isa::Arm64),
            other => Bitness::of_arch(other).map(Isa::X86),
        }
    }

    /// `addr` reduced to the target's address width.
    pub(crate) fn mask(self, addr: u64) -> u64 {
        match self {
            Isa::X86(bitness) => bitness.mask(addr),
            Isa::Arm64 => addr,
        }
    }

    /// How addresses print: ARM64 addresses are 64-bit.
    pub(crate) fn address_width(self) -> Bitness {
        match self {
            Isa::X86(bitness) => bitness,
            Isa::Arm64 => Bitness::Bits64,
        }
    }
}

impl From<Bitness> for Isa {
    fn from(bitness: Bitness) -> Isa {
        Isa::X86(bitness)
    }
}

/// One disassembled instruction, as one line of WinDbg `u`/`ub`/`uf` output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Instruction {
    /// Address of the first byte.
    #[serde(serialize_with = "crate::hex_json::serialize")]
    #[schemars(with = "crate::hex_json::Hex")]
    pub address: u64,
    /// The instruction bytes as lower-case hex (`c7042a000000`); empty when unreadable.
    pub bytes: String,
    /// Mnemonic including prefixes (`mov`, `rep stos`, `lock cmpxchg`); `???` when the bytes are
    /// unreadable, invalid or truncated.
    pub mnemonic: String,
    /// MASM operands as WinDbg prints them (`dword ptr [rdx],2Ah`); may be empty.
    pub operands: String,
    /// The complete WinDbg line, without the label line and without a newline (`uf` appends
    /// `  Branch` to direct jumps, as WinDbg does).
    pub text: String,
    /// The label line to print before this instruction (without the trailing `:`), e.g.
    /// `crashy!main+0x10` or `crashy!main+0x10 [c:\src\crashy.c @ 119]`.
    pub label: Option<String>,
    /// Target of a direct jump, conditional jump, call or loop.
    #[serde(serialize_with = "crate::hex_json::serialize")]
    #[schemars(with = "Option<crate::hex_json::Hex>")]
    pub branch_target: Option<u64>,
    /// False when the memory at `address` could not be read (`??` line).
    pub readable: bool,
}

/// The memory operand of an instruction, for effective-address computation by crash analysis:
/// `segment base + base + index * scale + displacement`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryOperand {
    /// Base register (lower-case, e.g. `rdx`); `None` for absolute and RIP-relative operands.
    pub base: Option<String>,
    /// Index register (lower-case), if any.
    pub index: Option<String>,
    /// Index scale (1, 2, 4 or 8).
    pub scale: u32,
    /// Signed displacement; for RIP-relative operands the absolute target address.
    pub displacement: i64,
    /// Explicit `fs`/`gs` segment override (whose base must be added), if any.
    pub segment: Option<String>,
    /// Bytes accessed (0 when unknown, e.g. `lea`).
    pub size: usize,
}

/// Why `uf` could not produce a listing.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DisasmError {
    /// No function range is known and following the flow from the address did not end within
    /// the instruction limit.
    #[error("No function bounds known for {0:#x}; use u")]
    NoFunctionBounds(u64),
    /// The first instruction could not be read or decoded.
    #[error("No code found, aborting")]
    NoCode(u64),
    /// A function with known bounds has more reachable instructions than the limit.
    #[error("Flow analysis of {addr:#x} stopped after {limit} instructions; use u")]
    FlowLimit {
        /// The function start.
        addr: u64,
        /// The instruction limit that was hit.
        limit: usize,
    },
}

/// What control flow does after an instruction, for `uf`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Flow {
    /// Execution continues with the next instruction (also calls and most interrupts).
    Next,
    /// `int 3`: continues only when code (not padding) follows.
    Breakpoint,
    /// Direct conditional jump or loop to the target.
    Conditional(u64),
    /// Direct unconditional jump to the target.
    Jump(u64),
    /// Return, indirect jump, `ud2`, fast-fail, or bytes that do not decode: the block ends.
    Stop,
}

/// One decoded line plus what `uf` needs to follow it.
#[derive(Debug, Clone)]
pub(crate) struct Decoded {
    /// The output line (label not yet assigned).
    pub line: Instruction,
    /// Bytes consumed (at least 1).
    pub len: u64,
    /// Control flow after this instruction.
    pub flow: Flow,
}
