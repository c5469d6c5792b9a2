//! The leaf rule from the code itself (x86, x64): whether the innermost frame's return
//! address is the word at the stack pointer, decided from the bytes around the instruction
//! pointer when no unwind data describes the function (no image on the symbol path, code
//! outside every module).
//!
//! It is when no instruction between the function's last boundary and the fault moved the
//! stack pointer, and every path from the fault reaches a `ret` without moving it either:
//! that `ret` pops the word the stack pointer points at now. Any path that cannot be followed
//! (bytes missing, an indirect jump, a call on x86, where the callee may pop its arguments)
//! leaves the question open.

use crate::disasm::{
    disassemble_backward, instruction_effects, Bitness, ControlFlow, InstructionEffects, Isa,
    NoSymbols, SliceMemory,
};

/// Longest x86/x64 instruction.
const MAX_INSTRUCTION: usize = 15;
/// Instructions followed from the fault, over all paths.
const MAX_FORWARD: usize = 64;
/// Instructions looked at before the fault, back to the function's last boundary.
const MAX_BACKWARD: usize = 12;
/// Bytes before the fault worth reading: enough for [`MAX_BACKWARD`] instructions to be found
/// by `ub`'s voting (see [`disassemble_backward`]).
pub(crate) const BYTES_BEFORE: usize = MAX_BACKWARD * MAX_INSTRUCTION + 32;

/// Whether the code says the function at `ip` returns through the word at the stack pointer.
/// `before` are the known code bytes that end at `ip` (up to [`BYTES_BEFORE`]; maybe none);
/// `read(addr, len)` gives up to `len` known code bytes at `addr`.
pub(crate) fn returns_through_stack_top(
    bitness: Bitness,
    ip: u64,
    before: &[u8],
    read: &dyn Fn(u64, usize) -> Option<Vec<u8>>,
) -> bool {
    adjusts_nothing_before(bitness, ip, before) && reaches_return_unmoved(bitness, ip, read)
}

/// Whether the instruction moves the stack pointer (a push, a pop, `sub rsp`, `leave`, …);
/// a call's own push is undone by its callee's `ret`.
fn moves_stack(bitness: Bitness, effects: &InstructionEffects) -> bool {
    let sp = match bitness {
        Bitness::Bits32 => "esp",
        Bitness::Bits64 => "rsp",
    };
    !matches!(effects.flow, ControlFlow::Call { .. } | ControlFlow::Return)
        && effects.written.iter().any(|r| r == sp)
}

/// Every path from `ip` reaches a `ret` (at least one does) without moving the stack pointer.
fn reaches_return_unmoved(
    bitness: Bitness,
    ip: u64,
    read: &dyn Fn(u64, usize) -> Option<Vec<u8>>,
) -> bool {
    let mut pending = vec![ip];
    let mut seen = Vec::new();
    let mut decoded = 0;
    let mut returns = false;
    while let Some(start) = pending.pop() {
        let mut at = start;
        loop {
            if seen.contains(&at) {
                break;
            }
            seen.push(at);
            decoded += 1;
            if decoded > MAX_FORWARD {
                return false;
            }
            let Some(effects) =
                read(at, MAX_INSTRUCTION).and_then(|b| instruction_effects(bitness, &b, at))
            else {
                return false;
            };
            if moves_stack(bitness, &effects) {
                return false;
            }
            let next = at.wrapping_add(effects.len as u64);
            match effects.flow {
                ControlFlow::Next => at = next,
                ControlFlow::Return => {
                    returns = true;
                    break;
                }
                // x64 callees never pop their caller's arguments.
                ControlFlow::Call { .. } if bitness == Bitness::Bits64 => at = next,
                ControlFlow::Jump {
                    target: Some(target),
                    conditional,
                } => {
                    if conditional {
                        pending.push(next);
                    }
                    at = target;
                }
                // The path ends here without returning (`int 3`, `ud2`).
                ControlFlow::Trap => break,
                ControlFlow::Call { .. } | ControlFlow::Jump { target: None, .. } => return false,
            }
        }
    }
    returns
}

/// No instruction since the function's last boundary before `ip` (a `ret`, a jump, padding)
/// moved the stack pointer, as far as `before` (the bytes ending at `ip`) decode: the
/// instructions `ub` finds there. Unknown bytes refute nothing.
fn adjusts_nothing_before(bitness: Bitness, ip: u64, before: &[u8]) -> bool {
    let Some(start) = ip.checked_sub(before.len() as u64) else {
        return true;
    };
    let memory = SliceMemory {
        base: start,
        bytes: before,
    };
    let listed = disassemble_backward(Isa::X86(bitness), &memory, &NoSymbols, ip, MAX_BACKWARD);
    let run: Vec<InstructionEffects> = listed
        .iter()
        .filter(|i| i.readable)
        .filter_map(|i| {
            let at = usize::try_from(i.address.checked_sub(start)?).ok()?;
            instruction_effects(bitness, before.get(at..)?, i.address)
        })
        .collect();
    let boundary = run.iter().rposition(|e| {
        matches!(
            e.flow,
            ControlFlow::Return
                | ControlFlow::Trap
                | ControlFlow::Jump {
                    conditional: false,
                    ..
                }
        )
    });
    let since_boundary = boundary.map_or(&run[..], |i| &run[i + 1..]);
    !since_boundary.iter().any(|e| moves_stack(bitness, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    const IP: u64 = 0x1_4000_1040;

    /// `before` ends at [`IP`], `after` starts there; nothing else is known.
    fn leaf(bitness: Bitness, before: &[u8], after: &[u8]) -> bool {
        let after = after.to_vec();
        let read = move |addr: u64, len: usize| -> Option<Vec<u8>> {
            let from = usize::try_from(addr.checked_sub(IP)?).ok()?;
            let bytes = after.get(from..)?;
            (!bytes.is_empty()).then(|| bytes[..len.min(bytes.len())].to_vec())
        };
        returns_through_stack_top(bitness, IP, before, &read)
    }

    const STORE_NULL: [u8; 8] = [0xC6, 0x04, 0x25, 0, 0, 0, 0, 0x01]; // mov byte ptr [0],1
    const RET: u8 = 0xC3;

    #[test]
    fn a_store_then_ret_is_a_leaf() {
        let mut after = STORE_NULL.to_vec();
        after.push(RET);
        // After another function's `ret` and padding.
        assert!(leaf(Bitness::Bits64, &[RET, 0xCC, 0xCC, 0xCC], &after));
        // With nothing known before it.
        assert!(leaf(Bitness::Bits64, &[], &after));
        // x86 too.
        assert!(leaf(Bitness::Bits32, &[RET, 0xCC], &after));
    }

    #[test]
    fn branches_that_all_return_unmoved_are_a_leaf() {
        // test ecx,ecx; je +1; nop; ret
        let after = [0x85, 0xC9, 0x74, 0x01, 0x90, RET];
        assert!(leaf(Bitness::Bits64, &[], &after));
        // An x64 call returns to the same stack pointer.
        let after = [0xE8, 0, 0, 0, 0, RET];
        assert!(leaf(Bitness::Bits64, &[], &after));
    }

    #[test]
    fn a_frame_or_a_pop_before_the_ret_is_not_a_leaf() {
        // pop rbx; ret
        assert!(!leaf(Bitness::Bits64, &[], &[0x5B, RET]));
        // add rsp,28h; ret
        assert!(!leaf(Bitness::Bits64, &[], &[0x48, 0x83, 0xC4, 0x28, RET]));
        // leave; ret
        assert!(!leaf(Bitness::Bits32, &[], &[0xC9, RET]));
        // One branch pops: not a leaf either. je +1; ret; pop rbp; ret
        assert!(!leaf(Bitness::Bits64, &[], &[0x74, 0x01, RET, 0x5D, RET]));
    }

    #[test]
    fn a_push_since_the_function_began_is_not_a_leaf() {
        let mut after = STORE_NULL.to_vec();
        after.extend_from_slice(&[0x5D, RET]);
        // ret; push rbp; <fault>: the push is undone by the pop before the ret.
        assert!(!leaf(Bitness::Bits64, &[RET, 0x55], &after));
        // push rax; <fault>; ret: returns to the pushed value, not to the caller.
        let mut after = STORE_NULL.to_vec();
        after.push(RET);
        assert!(!leaf(Bitness::Bits64, &[RET, 0x50], &after));
    }

    #[test]
    fn what_cannot_be_followed_decides_nothing() {
        // jmp rax
        assert!(!leaf(Bitness::Bits64, &[], &[0xFF, 0xE0]));
        // x86 call: the callee may pop its arguments.
        assert!(!leaf(Bitness::Bits32, &[], &[0xE8, 0, 0, 0, 0, RET]));
        // The bytes end before a ret.
        assert!(!leaf(Bitness::Bits64, &[], &STORE_NULL));
        // A loop that never returns.
        assert!(!leaf(Bitness::Bits64, &[], &[0xEB, 0xFE]));
        // ud2
        assert!(!leaf(Bitness::Bits64, &[], &[0x0F, 0x0B]));
    }
}
