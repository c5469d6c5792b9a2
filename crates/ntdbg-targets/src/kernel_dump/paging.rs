//! Virtual-to-physical translation: the page-table walks of the architectures Windows runs on.
//!
//! - x64: 4 levels of 512 8-byte entries from CR3 (2 MiB and 1 GiB large pages).
//! - ARM64: 4 levels with the 4 KiB granule and 48-bit addresses (2 MiB and 1 GiB blocks),
//!   from the translation table base the dump header gives as `DirectoryTableBase`.
//! - x86 PAE: a 4-entry page-directory-pointer table, then 2 levels of 512 8-byte entries
//!   (2 MiB large pages).
//! - x86 without PAE: 2 levels of 1024 4-byte entries (4 MiB large pages).
//!
//! Only valid entries are followed. Transition, prototype and paged-out PTEs (valid bit clear)
//! give `None`: the bytes are unavailable, never guessed.

/// Which page-table format a dump uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Paging {
    /// x64 4-level paging.
    X64,
    /// ARM64 4-level translation, 4 KiB granule.
    Arm64,
    /// 32-bit x86 with Physical Address Extension (3 levels).
    X86Pae,
    /// 32-bit x86 without PAE (2 levels).
    X86,
}

/// One level of a walk: where its index lies in the virtual address and how wide it is.
#[derive(Debug, Clone, Copy)]
struct Level {
    shift: u32,
    bits: u32,
    /// Whether an entry at this level may map a large page (block) instead of a table.
    large: bool,
}

const fn level(shift: u32, bits: u32, large: bool) -> Level {
    Level { shift, bits, large }
}

const FOUR_LEVEL_X64: &[Level] = &[
    level(39, 9, false),
    level(30, 9, true),
    level(21, 9, true),
    level(12, 9, false),
];
const FOUR_LEVEL_ARM64: &[Level] = FOUR_LEVEL_X64;
const PAE: &[Level] = &[level(30, 2, false), level(21, 9, true), level(12, 9, false)];
const NON_PAE: &[Level] = &[level(22, 10, true), level(12, 10, false)];

/// Bits 12..51 of an x64 / PAE entry: the next table's (or page's) physical address.
const X64_ADDR: u64 = 0x000f_ffff_ffff_f000;
/// Bits 12..47 of an ARM64 descriptor (48-bit output addresses).
const ARM64_ADDR: u64 = 0x0000_ffff_ffff_f000;
/// Bits 12..31 of a non-PAE x86 entry.
const X86_ADDR: u64 = 0xffff_f000;

impl Paging {
    fn levels(self) -> &'static [Level] {
        match self {
            Paging::X64 => FOUR_LEVEL_X64,
            Paging::Arm64 => FOUR_LEVEL_ARM64,
            Paging::X86Pae => PAE,
            Paging::X86 => NON_PAE,
        }
    }

    fn entry_size(self) -> u64 {
        match self {
            Paging::X86 => 4,
            _ => 8,
        }
    }

    /// Whether the processor could translate `va` at all: 32-bit x86 addresses fit in 32 bits;
    /// 48-bit x64/ARM64 addresses are sign-extended from bit 47 (others fault, so they must
    /// not alias a valid address through the index bits).
    fn accepts(self, va: u64) -> bool {
        match self {
            Paging::X86 | Paging::X86Pae => va <= 0xffff_ffff,
            Paging::X64 | Paging::Arm64 => matches!(va >> 47, 0 | 0x1_ffff),
        }
    }

    /// The root table's physical address from the header's `DirectoryTableBase`.
    fn root(self, dtb: u64) -> u64 {
        match self {
            Paging::X64 => dtb & X64_ADDR,
            // TTBR: bits 48..63 are the ASID, bit 0 CnP.
            Paging::Arm64 => dtb & ARM64_ADDR,
            // CR3 with PAE: the PDPT is 32-byte aligned.
            Paging::X86Pae => dtb & 0xffff_ffe0,
            Paging::X86 => dtb & X86_ADDR,
        }
    }

    /// What an entry at `level` (0 = root) says: `None` invalid, `Some(Ok(table))` the next
    /// table's address, `Some(Err(base))` a large page (block) at `base`.
    fn decode(self, entry: u64, level: Level, last: bool) -> Option<Result<u64, u64>> {
        match self {
            Paging::Arm64 => {
                // Bit 0 valid; bit 1 set: table (or, at the last level, page); clear: block.
                if entry & 1 == 0 {
                    return None;
                }
                if entry & 2 != 0 {
                    Some(Ok(entry & ARM64_ADDR))
                } else if !last && level.large {
                    Some(Err(entry & ARM64_ADDR))
                } else {
                    None
                }
            }
            _ => {
                if entry & 1 == 0 {
                    return None;
                }
                let mask = if self == Paging::X86 {
                    X86_ADDR
                } else {
                    X64_ADDR
                };
                // Bit 7 (PS) marks a large page where the level allows one.
                if !last && level.large && entry & 0x80 != 0 {
                    Some(Err(entry & mask))
                } else {
                    Some(Ok(entry & mask))
                }
            }
        }
    }
}

/// Translates `va` with the tables rooted at `dtb`. `read_phys` reads the aligned 8-byte
/// physical word at an address. Returns the physical address of `va` and how many bytes from
/// it stay in the same page (4 KiB, or the large page's size).
pub fn translate(
    paging: Paging,
    dtb: u64,
    va: u64,
    read_phys: impl Fn(u64) -> Option<u64>,
) -> Option<(u64, u64)> {
    if !paging.accepts(va) {
        return None;
    }
    let levels = paging.levels();
    let size = paging.entry_size();
    let mut table = paging.root(dtb);
    for (i, level) in levels.iter().enumerate() {
        let index = (va >> level.shift) & ((1 << level.bits) - 1);
        let at = table.checked_add(index * size)?;
        let word = read_phys(at & !7)?;
        let entry = if size == 4 {
            (word >> ((at & 4) * 8)) & 0xffff_ffff
        } else {
            word
        };
        let last = i + 1 == levels.len();
        match paging.decode(entry, *level, last)? {
            Ok(next) if !last => table = next,
            Ok(page) => {
                let off = va & 0xfff;
                return Some((page | off, 0x1000 - off));
            }
            Err(base) => {
                let span = 1u64 << level.shift;
                let off = va & (span - 1);
                return Some(((base & !(span - 1)) | off, span - off));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn walks_small_large_and_huge_pages() {
        let mut mem: HashMap<u64, u64> = HashMap::new();
        let dtb = 0x1000;
        // va 0xffff_8000_0000_0000: pml4 index 256.
        mem.insert(dtb + 256 * 8, 0x2000 | 3);
        mem.insert(0x2000, 0x3000 | 3); // pdpt[0] -> pd
        mem.insert(0x2000 + 8, 0x4000_0000 | 0x83); // pdpt[1] -> 1 GiB page
        mem.insert(0x3000, 0x4000 | 3); // pd[0] -> pt
        mem.insert(0x3000 + 8, 0x0060_0000 | 0x83); // pd[1] -> 2 MiB page
        mem.insert(0x4000 + 5 * 8, 0x9000 | 1); // pt[5] -> page 0x9000
        mem.insert(0x4000 + 6 * 8, 0x1_2340_0000 | 0x800); // transition: not present
        let read = |pa: u64| mem.get(&pa).copied().or(Some(0));
        let base = 0xffff_8000_0000_0000u64;
        let x64 = |va| translate(Paging::X64, dtb, va, read);
        assert_eq!(x64(base + 0x5123), Some((0x9123, 0xedd)));
        assert_eq!(x64(base + 0x6000), None);
        assert_eq!(x64(base + 0x20_0010), Some((0x60_0010, 0x1f_fff0)));
        assert_eq!(x64(base + 0x4000_0020), Some((0x4000_0020, 0x3fff_ffe0)));
        assert_eq!(x64(0x1000), None);
        assert_eq!(translate(Paging::X64, dtb, base, |_| None), None);
        // Non-canonical: the same index bits, but no processor would translate it.
        assert_eq!(x64(0x0000_8000_0000_5123), None);
    }

    #[test]
    fn arm64_blocks_and_pages() {
        let mut mem: HashMap<u64, u64> = HashMap::new();
        let ttbr = 0x1000 | (0x42 << 48); // an ASID in the top bits
        mem.insert(0x1000 + 256 * 8, 0x2000 | 3); // L0 -> L1 table
        mem.insert(0x2000, 0x3000 | 3); // L1[0] -> L2 table
        mem.insert(0x2000 + 8, 0x4000_0000 | 0x401); // L1[1] -> 1 GiB block
        mem.insert(0x3000, 0x4000 | 3); // L2[0] -> L3 table
        mem.insert(0x3000 + 8, 0x0060_0000 | 0x401); // L2[1] -> 2 MiB block
        mem.insert(0x4000 + 5 * 8, 0x9000 | 0x403); // L3[5] -> page
        mem.insert(0x4000 + 6 * 8, 0x9000 | 0x401); // L3 entry with bit 1 clear: invalid
        let read = |pa: u64| mem.get(&pa).copied().or(Some(0));
        let base = 0xffff_8000_0000_0000u64;
        let arm = |va| translate(Paging::Arm64, ttbr, va, read);
        assert_eq!(arm(base + 0x5123), Some((0x9123, 0xedd)));
        assert_eq!(arm(base + 0x6000), None);
        assert_eq!(arm(base + 0x20_0010), Some((0x60_0010, 0x1f_fff0)));
        assert_eq!(arm(base + 0x4000_0020), Some((0x4000_0020, 0x3fff_ffe0)));
    }

    #[test]
    fn x86_pae_and_non_pae() {
        let mut mem: HashMap<u64, u64> = HashMap::new();
        // PAE: PDPT at 0x1020 (32-byte aligned), va 0x8000_0000 -> PDPT[2].
        mem.insert(0x1020 + 2 * 8, 0x2000 | 1);
        mem.insert(0x2000, 0x3000 | 3); // PD[0] -> PT
        mem.insert(0x2000 + 8, 0x0060_0000 | 0x83); // PD[1] -> 2 MiB
        mem.insert(0x3000 + 5 * 8, 0x1_0000_9000 | 3); // above 4 GiB physical
        let read = |pa: u64| mem.get(&pa).copied().or(Some(0));
        let pae = |va| translate(Paging::X86Pae, 0x1020, va, read);
        assert_eq!(pae(0x8000_5123), Some((0x1_0000_9123, 0xedd)));
        assert_eq!(pae(0x8020_0010), Some((0x60_0010, 0x1f_fff0)));
        assert_eq!(pae(0x4000_0000), None);

        // Non-PAE: 4-byte entries, read as halves of aligned 8-byte words.
        let mut mem: HashMap<u64, u64> = HashMap::new();
        // PD index of 0x8040_0000 is 0x201 (odd: the upper half of a word).
        mem.insert(0x1000 + 0x200 * 4, (0x2000 | 3) << 32);
        mem.insert(0x1000 + 0x202 * 4, 0x0080_0000 | 0x83); // 4 MiB page at 0x8080_0000
                                                            // PT[4] and PT[5]: the two halves of one word.
        mem.insert(0x2000 + 4 * 4, ((0x9000 | 3) << 32) | 0x9000 | 3);
        let read = |pa: u64| mem.get(&pa).copied().or(Some(0));
        let x86 = |va| translate(Paging::X86, 0x1000, va, read);
        assert_eq!(x86(0x8040_5123), Some((0x9123, 0xedd)));
        assert_eq!(x86(0x8040_4000), Some((0x9000, 0x1000)));
        assert_eq!(x86(0x8090_0010), Some((0x90_0010, 0x2f_fff0)));
        assert_eq!(x86(0x1000), None);
        assert_eq!(x86(0x1_8040_5123), None, "above 4 GiB does not alias");
    }
}
