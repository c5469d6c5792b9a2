//! Is the instruction that ends exactly at a return address a call? The check every guessed
//! frame (frame pointer, stack scan, leaf function) must pass before it is presented as a
//! validated frame.

use iced_x86::{Decoder, DecoderOptions, FlowControl};
use ntdbg_targets::Arch;

/// Longest x86/x64 instruction.
pub(crate) const MAX_X86_CALL: usize = 15;

/// What the bytes before a return address say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CallCheck {
    /// A call instruction ends exactly at the return address.
    Call,
    /// The bytes are known and no call ends there: not a return address.
    NotCall,
    /// The code before the return address is in neither the dump nor a module image.
    Unknown,
}

/// Checks `code`, the bytes that end at return address `ra` (as many as known, up to 15 for
/// x86/x64, 4 for ARM64), for a call ending exactly at `ra`. An empty `code` is
/// [`CallCheck::Unknown`].
pub(crate) fn check(arch: Arch, ra: u64, code: &[u8]) -> CallCheck {
    if code.is_empty() {
        return CallCheck::Unknown;
    }
    let is_call = match arch {
        Arch::X86 => ends_with_x86_call(32, ra, code),
        Arch::X64 => ends_with_x86_call(64, ra, code),
        Arch::Arm64 => match code.get(code.len().wrapping_sub(4)..) {
            Some(word) => is_arm64_call(u32::from_le_bytes([word[0], word[1], word[2], word[3]])),
            None => return CallCheck::Unknown,
        },
        Arch::Other(_) => return CallCheck::Unknown,
    };
    if is_call {
        CallCheck::Call
    } else if arch != Arch::Arm64 && code.len() < MAX_X86_CALL {
        // A longer call (prefixes, SIB, displacement) may start before the known bytes.
        CallCheck::Unknown
    } else {
        CallCheck::NotCall
    }
}

/// Whether some suffix of `code` decodes as exactly one near or far call (`E8 rel`, every
/// `FF /2` and `FF /3` form, with prefixes) ending at `ra`.
fn ends_with_x86_call(bitness: u32, ra: u64, code: &[u8]) -> bool {
    (2..=code.len().min(MAX_X86_CALL)).any(|len| {
        let start = code.len() - len;
        let ip = ra.wrapping_sub(len as u64);
        let mut decoder = Decoder::with_ip(bitness, &code[start..], ip, DecoderOptions::NONE);
        let instruction = decoder.decode();
        !instruction.is_invalid()
            && instruction.len() == len
            && matches!(
                instruction.flow_control(),
                FlowControl::Call | FlowControl::IndirectCall
            )
    })
}

/// ARM64 `BL`, `BLR` and the pointer-authenticating `BLRAA`, `BLRAAZ`, `BLRAB`, `BLRABZ`.
fn is_arm64_call(word: u32) -> bool {
    const BL: (u32, u32) = (0xFC00_0000, 0x9400_0000);
    const BLR: (u32, u32) = (0xFFFF_FC1F, 0xD63F_0000);
    const BLRA_Z: (u32, u32) = (0xFFFF_F81F, 0xD63F_081F);
    const BLRA: (u32, u32) = (0xFFFF_F800, 0xD73F_0800);
    [BL, BLR, BLRA_Z, BLRA]
        .iter()
        .any(|(mask, value)| word & mask == *value)
}

#[cfg(test)]
mod tests {
    use super::*;

    const RA: u64 = 0x1_4000_1010;

    fn x64(code: &[u8]) -> CallCheck {
        check(Arch::X64, RA, code)
    }

    /// Fifteen bytes ending with `tail`, padded with `int3`.
    fn padded(tail: &[u8]) -> Vec<u8> {
        let mut code = vec![0xCC; MAX_X86_CALL - tail.len()];
        code.extend_from_slice(tail);
        code
    }

    #[test]
    fn x64_call_encodings_are_calls() {
        let calls: &[&[u8]] = &[
            &[0xE8, 0x10, 0x20, 0x30, 0x40],             // call rel32
            &[0xFF, 0xD0],                               // call rax
            &[0x41, 0xFF, 0xD3],                         // call r11
            &[0xFF, 0x10],                               // call [rax]
            &[0xFF, 0x50, 0x08],                         // call [rax+8]
            &[0xFF, 0x90, 0x00, 0x01, 0x00, 0x00],       // call [rax+100h]
            &[0xFF, 0x15, 0x00, 0x10, 0x00, 0x00],       // call [rip+1000h]
            &[0xFF, 0x14, 0x24],                         // call [rsp]
            &[0xFF, 0x54, 0x24, 0x08],                   // call [rsp+8]
            &[0x41, 0xFF, 0x54, 0xC5, 0x08],             // call [r13+rax*8+8]
            &[0x48, 0xFF, 0x15, 0x00, 0x10, 0x00, 0x00], // rex.w call [rip+1000h]
            &[0x2E, 0xFF, 0x15, 0x00, 0x10, 0x00, 0x00], // cs: call [rip+1000h]
            &[0xF2, 0xFF, 0xD0],                         // bnd call rax
            &[0xFF, 0x1D, 0x00, 0x10, 0x00, 0x00],       // call far [rip+1000h] (FF /3)
        ];
        for c in calls {
            assert_eq!(x64(&padded(c)), CallCheck::Call, "{c:02x?}");
        }
    }

    #[test]
    fn x86_call_encodings_are_calls() {
        let calls: &[&[u8]] = &[
            &[0xE8, 0x10, 0x20, 0x30, 0x40],       // call rel32
            &[0xFF, 0xD6],                         // call esi
            &[0xFF, 0x15, 0x00, 0x10, 0x40, 0x00], // call [00401000h]
            &[0xFF, 0x55, 0x08],                   // call [ebp+8]
            &[0x66, 0xE8, 0x10, 0x20],             // call rel16 (operand-size prefix)
        ];
        for c in calls {
            assert_eq!(
                check(Arch::X86, 0x40_1010, &padded(c)),
                CallCheck::Call,
                "{c:02x?}"
            );
        }
    }

    #[test]
    fn non_calls_are_rejected() {
        let others: &[&[u8]] = &[
            &[0xC3],                               // ret
            &[0xE9, 0x10, 0x20, 0x30, 0x40],       // jmp rel32
            &[0xFF, 0xE0],                         // jmp rax
            &[0xFF, 0x25, 0x00, 0x10, 0x00, 0x00], // jmp [rip+1000h]
            &[0x48, 0x89, 0x45, 0xF8],             // mov [rbp-8],rax
            &[0x90],                               // nop
        ];
        for c in others {
            assert_eq!(x64(&padded(c)), CallCheck::NotCall, "{c:02x?}");
        }
        // A call that does not end exactly at the return address.
        let mut code = padded(&[0xE8, 0x10, 0x20, 0x30, 0x40]);
        code.push(0x90);
        assert_eq!(x64(&code[1..]), CallCheck::NotCall);
    }

    #[test]
    fn short_or_missing_code_is_unknown_unless_a_call_is_seen() {
        assert_eq!(x64(&[]), CallCheck::Unknown);
        assert_eq!(x64(&[0x90, 0x90]), CallCheck::Unknown);
        assert_eq!(x64(&[0xFF, 0xD0]), CallCheck::Call);
        assert_eq!(check(Arch::Arm64, RA, &[0x00, 0x00]), CallCheck::Unknown);
    }

    #[test]
    fn arm64_calls() {
        let words: [(u32, bool); 9] = [
            (0x9400_0010, true),  // bl #0x40
            (0x97FF_FFF0, true),  // bl #-0x40
            (0xD63F_0100, true),  // blr x8
            (0xD63F_091F, true),  // blraaz x8
            (0xD63F_0D1F, true),  // blrabz x8
            (0xD73F_0911, true),  // blraa x8, x17
            (0xD65F_03C0, false), // ret
            (0x1400_0010, false), // b #0x40
            (0xD61F_0100, false), // br x8
        ];
        for (word, call) in words {
            let expected = if call {
                CallCheck::Call
            } else {
                CallCheck::NotCall
            };
            assert_eq!(
                check(Arch::Arm64, RA, &word.to_le_bytes()),
                expected,
                "{word:#010x}"
            );
        }
    }
}
