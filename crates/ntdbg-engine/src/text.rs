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
    let mut digits = [0; 16];
    let mut out = String::with_capacity(17);
    if pointer_size != 4 {
        out.push_str(lower_hex(value >> 32, 8, &mut digits));
        out.push('`');
    }
    out.push_str(lower_hex(value & 0xffff_ffff, 8, &mut digits));
    out
}

/// `value` in lower-case hex, at least `min_digits` digits (zero-padded, at most 16), spelled
/// into the end of `buf`.
pub(crate) fn lower_hex(value: u64, min_digits: usize, buf: &mut [u8; 16]) -> &str {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let significant = (64 - value.leading_zeros() as usize).div_ceil(4);
    let count = significant.max(min_digits).clamp(1, 16);
    let start = buf.len() - count;
    for (i, slot) in buf[start..].iter_mut().rev().enumerate() {
        *slot = DIGITS[((value >> (4 * i)) & 0xf) as usize];
    }
    // Only ASCII digits were written.
    std::str::from_utf8(&buf[start..]).unwrap_or_default()
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
    format!("{module}+{offset:#x}")
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
    match (module, function, module_base) {
        (Some(m), Some(f), _) => match function_offset {
            Some(0) | None => format!("{m}!{f}"),
            Some(off) => format!("{m}!{f}+{off:#x}"),
        },
        (Some(m), None, Some(base)) => module_offset(m, address.wrapping_sub(base)),
        _ => format!("{address:#x}"),
    }
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
        let mut buf = [0; 16];
        assert_eq!(lower_hex(0, 1, &mut buf), "0");
        assert_eq!(lower_hex(0x10, 1, &mut buf), "10");
        assert_eq!(lower_hex(0x10, 8, &mut buf), "00000010");
        assert_eq!(lower_hex(u64::MAX, 8, &mut buf), "ffffffffffffffff");
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
