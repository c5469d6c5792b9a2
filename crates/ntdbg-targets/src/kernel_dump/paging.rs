//! x64 virtual-to-physical translation: the 4-level page-table walk from CR3.
//!
//! Only present entries are followed. Transition, prototype and paged-out PTEs (present bit
//! clear) give `None`: the bytes are unavailable, never guessed.

/// Bits 12..51 of a table entry: the next table's (or page's) physical address.
const ADDR_MASK: u64 = 0x000f_ffff_ffff_f000;
const PRESENT: u64 = 1;
const LARGE: u64 = 1 << 7;

/// Translates `va` with the tables rooted at `dtb`, reading 8-byte physical entries with
/// `read_phys`. Returns the physical address of `va` and how many bytes from it stay in the
/// same page (4 KiB, 2 MiB or 1 GiB).
pub fn translate_x64(
    dtb: u64,
    va: u64,
    read_phys: impl Fn(u64) -> Option<u64>,
) -> Option<(u64, u64)> {
    let index = |shift: u32| (va >> shift) & 0x1ff;
    let pml4e = read_phys((dtb & ADDR_MASK) + index(39) * 8)?;
    if pml4e & PRESENT == 0 {
        return None;
    }
    let pdpte = read_phys((pml4e & ADDR_MASK) + index(30) * 8)?;
    if pdpte & PRESENT == 0 {
        return None;
    }
    if pdpte & LARGE != 0 {
        let off = va & 0x3fff_ffff;
        return Some(((pdpte & 0x000f_ffff_c000_0000) | off, 0x4000_0000 - off));
    }
    let pde = read_phys((pdpte & ADDR_MASK) + index(21) * 8)?;
    if pde & PRESENT == 0 {
        return None;
    }
    if pde & LARGE != 0 {
        let off = va & 0x1f_ffff;
        return Some(((pde & 0x000f_ffff_ffe0_0000) | off, 0x20_0000 - off));
    }
    let pte = read_phys((pde & ADDR_MASK) + index(12) * 8)?;
    if pte & PRESENT == 0 {
        return None;
    }
    let off = va & 0xfff;
    Some(((pte & ADDR_MASK) | off, 0x1000 - off))
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
        assert_eq!(
            translate_x64(dtb, base + 0x5123, read),
            Some((0x9123, 0xedd))
        );
        assert_eq!(translate_x64(dtb, base + 0x6000, read), None);
        assert_eq!(
            translate_x64(dtb, base + 0x20_0010, read),
            Some((0x60_0010, 0x1f_fff0))
        );
        assert_eq!(
            translate_x64(dtb, base + 0x4000_0020, read),
            Some((0x4000_0020, 0x3fff_ffe0))
        );
        assert_eq!(translate_x64(dtb, 0x1000, read), None);
        assert_eq!(translate_x64(dtb, base, |_| None), None);
    }
}
