//! WinDbg's text primitives, the one place every renderer (disassembly, commands, analysis,
//! `dt`) gets them from: addresses with the backtick, pointer-width hex, the `??` of bytes a
//! dump lacks, and `module!function+0x1a` names.

/// What WinDbg prints for one byte (or a value) the target cannot supply.
pub const UNREADABLE: &str = "??";

/// An address as WinDbg prints it: `00000001`40002134` for 8-byte pointers, `00401ef3` for
/// 4-byte ones.
pub fn address(value: u64, pointer_size: usize) -> String {
    // Spelled digit by digit: stacks print two or more per frame, and `format!`'s padding
    // machinery was most of a `k`'s text rendering.
    let mut spelled = *b"00000000`00000000";
    spell_lower_hex(value & 0xffff_ffff, 8, &mut spelled);
    let from = if pointer_size == 4 {
        9
    } else {
        spell_lower_hex(value >> 32, 8, &mut spelled[..8]);
        0
    };
    String::from_utf8_lossy(&spelled[from..]).into_owned()
}

/// Spells `value` in lower-case hex into the end of `buf`, at least `min_digits` digits
/// (zero-padded) and as many as `buf` holds, and returns where the digits start.
pub(crate) fn spell_lower_hex(value: u64, min_digits: usize, buf: &mut [u8]) -> usize {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut start = buf.len();
    let mut rest = value;
    while start > 0 && (rest != 0 || buf.len() - start < min_digits.max(1)) {
        start -= 1;
        buf[start] = DIGITS[(rest & 0xf) as usize];
        rest >>= 4;
    }
    start
}

/// The `????????` (or `????????`????????`) WinDbg prints for an unreadable pointer.
pub fn unreadable_address(pointer_size: usize) -> &'static str {
    if pointer_size == 4 {
        "????????"
    } else {
        "????????`????????"
    }
}

/// The `--------` (or `--------`--------`) WinDbg prints in an address column that has no
/// address (an inline frame's Child-SP).
pub fn no_address(pointer_size: usize) -> &'static str {
    if pointer_size == 4 {
        "--------"
    } else {
        "--------`--------"
    }
}

/// An address with a `0x` prefix, as `dt` shows pointer values: `0x00000001`40002134`,
/// `0x00401ef3`.
pub fn prefixed_address(value: u64, pointer_size: usize) -> String {
    format!("0x{}", address(value, pointer_size))
}

/// Zero-padded hex at the pointer width, without prefix or backtick (`00007ff7a13110d9`,
/// `00401ef3`), as `.exr` and `!process` print pointers.
pub fn pointer_hex(value: u64, pointer_size: usize) -> String {
    if pointer_size == 4 {
        format!("{:08x}", value & 0xffff_ffff)
    } else {
        format!("{value:016x}")
    }
}

/// [`pointer_hex`] with a `0x` prefix (`0x0000000000000000`, `0x00000000`), as typed results
/// and the analysis report show addresses.
pub fn prefixed_pointer_hex(value: u64, pointer_size: usize) -> String {
    format!("0x{}", pointer_hex(value, pointer_size))
}

/// `module+0x1234`: an address named by its offset in a module.
pub fn module_offset(module: &str, offset: u64) -> String {
    // Without `format!`'s machinery: every frame of a stack names its call site.
    [module, "+", prefixed_hex(offset, &mut [0; 18])].concat()
}

/// How WinDbg names a code address: `module!function+0xoff` (no offset when it is 0 or
/// unknown; `function` as given, callers strip parameter lists), `module+0xrva` without
/// symbols, the bare `0x` address outside modules.
pub fn call_site_name(
    module: Option<&str>,
    module_base: Option<u64>,
    function: Option<&str>,
    function_offset: Option<u64>,
    address: u64,
) -> String {
    // Without `format!`'s machinery, as `module_offset`.
    let mut buf = [0; 18];
    match (module, function, module_base) {
        (Some(m), Some(f), _) => match function_offset {
            Some(0) | None => [m, "!", f].concat(),
            Some(off) => [m, "!", f, "+", prefixed_hex(off, &mut buf)].concat(),
        },
        (Some(m), None, Some(base)) => module_offset(m, address.wrapping_sub(base)),
        _ => prefixed_hex(address, &mut buf).to_string(),
    }
}

/// `value` as `{:#x}` spells it (`0x`, then lower-case hex without padding), spelled into
/// `buf`.
pub(crate) fn prefixed_hex(value: u64, buf: &mut [u8; 18]) -> &str {
    let start = spell_lower_hex(value, 1, &mut buf[2..]);
    buf[start..start + 2].copy_from_slice(b"0x");
    // Only ASCII was written.
    std::str::from_utf8(&buf[start..]).unwrap_or_default()
}

/// Whether a WinDbg name points inside a symbol (`foo!bar+0x1a`, `foo+0x1a`) rather than at its
/// start.
pub fn has_offset(name: &str) -> bool {
    match name.rfind("+0x") {
        Some(pos) => {
            let digits = &name[pos + 3..];
            !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_hexdigit())
        }
        None => false,
    }
}

/// The symbol part of a WinDbg name (`foo!bar+0x1a` -> `foo!bar`).
pub fn strip_offset(name: &str) -> &str {
    if has_offset(name) {
        name.rfind("+0x").map_or(name, |pos| &name[..pos])
    } else {
        name
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lower_hex_pads_to_the_width_asked_and_no_further() {
        let spell = |value, min_digits| {
            let mut buf = [b' '; 18];
            let start = spell_lower_hex(value, min_digits, &mut buf);
            String::from_utf8(buf[start..].to_vec()).unwrap()
        };
        assert_eq!(spell(0, 1), "0");
        assert_eq!(spell(0x10, 1), "10");
        assert_eq!(spell(0x10, 8), "00000010");
        assert_eq!(spell(u64::MAX, 8), "ffffffffffffffff");
        assert_eq!(spell(0x1234, 20), "000000000000001234");
    }

    #[test]
    fn addresses_at_both_widths() {
        assert_eq!(address(0x1_4000_2134, 8), "00000001`40002134");
        assert_eq!(address(0x1_0040_1ef3, 4), "00401ef3");
        assert_eq!(address(u64::MAX, 8), "ffffffff`ffffffff");
        assert_eq!(address(0, 8), "00000000`00000000");
        assert_eq!(prefixed_address(0x1_4000_2134, 8), "0x00000001`40002134");
        assert_eq!(unreadable_address(8), "????????`????????");
        assert_eq!(unreadable_address(4), "????????");
        assert_eq!(no_address(8), "--------`--------");
        assert_eq!(pointer_hex(0x7ff7_a131_10d9, 8), "00007ff7a13110d9");
        assert_eq!(pointer_hex(0x1_0040_1ef3, 4), "00401ef3");
        assert_eq!(prefixed_pointer_hex(0, 4), "0x00000000");
    }

    #[test]
    fn names_with_offsets() {
        assert_eq!(
            call_site_name(Some("crashy"), Some(0x1000), Some("main"), Some(0x1a), 0),
            "crashy!main+0x1a"
        );
        assert_eq!(
            call_site_name(Some("crashy"), Some(0x1000), None, None, 0x1234),
            "crashy+0x234"
        );
        assert_eq!(call_site_name(None, None, None, None, 0x1234), "0x1234");
        assert!(has_offset("foo!bar+0x1a"));
        assert!(!has_offset("foo!bar+0x"));
        assert_eq!(strip_offset("foo!bar+0x1a"), "foo!bar");
        assert_eq!(strip_offset("foo!bar"), "foo!bar");
    }
}
