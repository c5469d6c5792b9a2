//! Fill patterns: values that debug heaps, runtimes and overflows leave in memory, found in a
//! faulting address or in the registers of the faulting instruction, with what each means.

/// A recognised fill pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FillPattern {
    /// The 32-bit pattern as it prints (`0xfeeefeee`), or the ASCII text (`"AAAA"`).
    pub name: String,
    /// What memory holding it is.
    pub meaning: &'static str,
    /// Which hypothesis it supports: `use_after_free`, `uninitialized`, `overflow`.
    pub hypothesis: &'static str,
}

/// 32-bit patterns: value, meaning, hypothesis.
const PATTERNS: &[(u32, &str, &str)] = &[
    (0xFEEE_FEEE, "the fill the Windows debug heap (and HeapFree under a debugger) writes over freed memory", "use_after_free"),
    (0xDDDD_DDDD, "the MSVC debug CRT's fill of freed heap memory", "use_after_free"),
    (0xCDCD_CDCD, "the MSVC debug CRT's fill of newly allocated heap memory that was never initialised", "uninitialized"),
    (0xBAAD_F00D, "the Windows debug heap's fill of HeapAlloc memory that was never initialised", "uninitialized"),
    (0xCCCC_CCCC, "the MSVC /RTC fill of uninitialised stack memory (or int 3 padding)", "uninitialized"),
    (0xABAB_ABAB, "the Windows debug heap's guard bytes after an allocation: memory past the end of a block", "overflow"),
    (0xFDFD_FDFD, "the MSVC debug CRT's no-man's-land guard around an allocation: memory past the bounds of a block", "overflow"),
    (0xE5E5_E5E5, "the poison jemalloc (Firefox) writes over freed memory", "use_after_free"),
    (0xDEAD_BEEF, "a conventional marker of freed or poisoned memory", "use_after_free"),
];

/// The pattern `value` is made of, for a pointer of `pointer_size` bytes: a known 32-bit
/// pattern (in the low half, repeated or zero in the high half on 64-bit) or the same printable
/// ASCII byte repeated over the whole pointer (`0x4141414141414141`: an overflow with text).
pub(crate) fn fill_pattern(value: u64, pointer_size: usize) -> Option<FillPattern> {
    let low = value as u32;
    let high = (value >> 32) as u32;
    let halves_agree = pointer_size == 4 || high == low || high == 0;
    if halves_agree {
        if let Some((p, meaning, hypothesis)) = PATTERNS.iter().find(|(p, ..)| *p == low) {
            return Some(FillPattern {
                name: format!("{p:#010x}"),
                meaning,
                hypothesis,
            });
        }
    }
    let bytes = &value.to_le_bytes()[..pointer_size.min(8)];
    let first = bytes[0];
    if (0x21..0x7f).contains(&first) && bytes.iter().all(|b| *b == first) {
        return Some(FillPattern {
            name: format!("\"{}\"", (first as char).to_string().repeat(bytes.len())),
            meaning:
                "the same printable character in every byte: string data written over a pointer",
            hypothesis: "overflow",
        });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns_in_pointers_of_both_widths() {
        let p = fill_pattern(0xfeee_feee_feee_feee, 8).expect("freed fill");
        assert_eq!(p.name, "0xfeeefeee");
        assert_eq!(p.hypothesis, "use_after_free");
        assert_eq!(
            fill_pattern(0xfeee_feee, 8).map(|p| p.hypothesis),
            Some("use_after_free")
        );
        assert_eq!(
            fill_pattern(0xbaad_f00d, 4).map(|p| p.hypothesis),
            Some("uninitialized")
        );
        assert_eq!(
            fill_pattern(0xabab_abab_abab_abab, 8).map(|p| p.hypothesis),
            Some("overflow")
        );
        let ascii = fill_pattern(0x4141_4141_4141_4141, 8).expect("ASCII");
        assert_eq!(ascii.name, "\"AAAAAAAA\"");
        assert_eq!(
            fill_pattern(0x4141_4141, 4).map(|p| p.name),
            Some("\"AAAA\"".into())
        );
    }

    #[test]
    fn ordinary_values_are_not_patterns() {
        for v in [
            0u64,
            0x11fce4,
            0x1_4000_1000,
            0x7ff6_1234_5678,
            0xfeee_feee_0000_0001,
            0x4141_4141_4141_4142,
        ] {
            assert_eq!(fill_pattern(v, 8), None, "{v:#x}");
        }
        // A 64-bit value whose halves differ is not a 32-bit fill.
        assert_eq!(fill_pattern(0xdddd_dddd_feee_feee, 8), None);
        assert_eq!(fill_pattern(0x20202020, 4), None);
    }
}
