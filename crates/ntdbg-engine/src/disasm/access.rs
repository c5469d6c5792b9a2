//! The memory an x86/x64 instruction reads or writes, with the address computed from the
//! registers: what a fault's exception record would say (`write to 0x10`) when a GDB stub
//! reports only a signal.

use iced_x86::{InstructionInfoFactory, OpAccess, Register};

use super::format::register_name;
use super::registers::{decode_with_text, full_register};
use super::types::Bitness;

/// A memory access of one instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryAccess {
    /// Whether it writes (else it only reads).
    pub write: bool,
    /// The address it accesses.
    pub address: u64,
}

/// The one memory location the instruction at the start of `bytes` (located at `addr`)
/// accesses, its address computed with `register` (a full register's value by lower-case
/// name, `fs_base`/`gs_base` for segment bases); `None` when the instruction is invalid,
/// accesses no memory, accesses several different places (`movs`), or needs a register
/// whose value is unknown.
pub fn memory_access(
    bitness: Bitness,
    bytes: &[u8],
    addr: u64,
    register: &dyn Fn(&str) -> Option<u64>,
) -> Option<MemoryAccess> {
    let (instr, _) = decode_with_text(bitness, bytes, addr)?;
    let mut factory = InstructionInfoFactory::new();
    let info = factory.info(&instr);
    let mut found: Option<MemoryAccess> = None;
    for (i, used) in info.used_memory().iter().enumerate() {
        let write = matches!(
            used.access(),
            OpAccess::Write | OpAccess::CondWrite | OpAccess::ReadWrite | OpAccess::ReadCondWrite
        );
        if matches!(used.access(), OpAccess::NoMemAccess | OpAccess::None) {
            continue;
        }
        let address = used.virtual_address(i, |reg: Register, _, _| {
            let name = match reg {
                Register::FS => return register("fs_base"),
                Register::GS => return register("gs_base"),
                Register::ES | Register::CS | Register::SS | Register::DS => return Some(0),
                other => register_name(full_register(bitness, other)),
            };
            let value = register(&name)?;
            // A 32-bit register of a 64-bit mode operand is its low half.
            Some(match reg.size() {
                4 if bitness == Bitness::Bits64 => value & 0xffff_ffff,
                2 => value & 0xffff,
                1 => value & 0xff,
                _ => value,
            })
        })?;
        let access = MemoryAccess {
            write,
            address: bitness.mask(address),
        };
        match found {
            None => found = Some(access),
            Some(f) if f.address == access.address => {
                found = Some(MemoryAccess {
                    write: f.write || access.write,
                    ..f
                })
            }
            Some(_) => return None,
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn regs(name: &str) -> Option<u64> {
        match name {
            "rax" => Some(0x10),
            "rbx" => Some(0x1000),
            "rcx" => Some(2),
            "gs_base" => Some(0x7ff0_0000),
            _ => None,
        }
    }

    #[test]
    fn the_address_and_direction_of_one_access() {
        // mov dword ptr [rax],1
        let store = memory_access(Bitness::Bits64, &[0xc7, 0x00, 1, 0, 0, 0], 0x1000, &regs);
        assert_eq!(
            store,
            Some(MemoryAccess {
                write: true,
                address: 0x10
            })
        );
        // mov dword ptr [10h],1 (absolute)
        let absolute = [0xc7, 0x04, 0x25, 0x10, 0, 0, 0, 1, 0, 0, 0];
        assert_eq!(
            memory_access(Bitness::Bits64, &absolute, 0x1000, &regs).map(|a| a.address),
            Some(0x10)
        );
        // mov eax,[rbx+rcx*8+8]: a read
        let load = memory_access(Bitness::Bits64, &[0x8b, 0x44, 0xcb, 0x08], 0x1000, &regs);
        assert_eq!(
            load,
            Some(MemoryAccess {
                write: false,
                address: 0x1018
            })
        );
        // mov rax,gs:[30h]
        let teb = [0x65, 0x48, 0x8b, 0x04, 0x25, 0x30, 0, 0, 0];
        assert_eq!(
            memory_access(Bitness::Bits64, &teb, 0x1000, &regs).map(|a| a.address),
            Some(0x7ff0_0030)
        );
        // An unknown register, no memory, movsb's two places: nothing claimed.
        assert_eq!(
            memory_access(Bitness::Bits64, &[0x8b, 0x06], 0x1000, &regs),
            None
        );
        assert_eq!(memory_access(Bitness::Bits64, &[0x90], 0x1000, &regs), None);
        let movs = |name: &str| Some(if name == "rsi" { 0x100 } else { 0x200 });
        assert_eq!(memory_access(Bitness::Bits64, &[0xa4], 0x1000, &movs), None);
    }
}
