//! Possible bit flips: an inaccessible address that is one bit away from memory the process
//! really uses (a module image, a thread's stack, a committed region), as minidump-stackwalk
//! reports them. Stated as a hypothesis (faulty RAM or CPU), with the region the corrected
//! address lands in and any register already holding a value near it.

use crate::conclusion::Inference;
use ntdbg_engine::Session;
use ntdbg_targets::{Arch, ExceptionEvent};
use std::ops::Range;

/// Memory the process uses, as the dump describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UsedRegion {
    /// The addresses.
    pub range: Range<u64>,
    /// What it is, for people: `the stack of thread 0x24`, `faults.exe`.
    pub what: String,
}

/// One candidate: flipping `bit` of the address gives `corrected`, inside `region`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Flip<'a> {
    /// The bit number.
    pub bit: u32,
    /// The address with that bit flipped.
    pub corrected: u64,
    /// Where it lands.
    pub region: &'a UsedRegion,
}

/// Distance below which an address next to a region is an overrun, not a bit flip.
const ADJACENT: u64 = 0x100;
/// More candidates than this say nothing: the regions are too dense for one flip to stand out.
const MAX_CANDIDATES: usize = 2;

/// The single-bit flips of `address` over `bits` that land in one of `regions`. Empty when the
/// address itself, or anything within [`ADJACENT`] bytes of it, is in a region (then it is no
/// flip but an overrun or a valid address), or when more than [`MAX_CANDIDATES`] flips land.
pub(crate) fn one_bit_away(
    address: u64,
    bits: Range<u32>,
    regions: &[UsedRegion],
) -> Vec<Flip<'_>> {
    let near = |a: u64| {
        regions.iter().any(|r| {
            a.saturating_add(ADJACENT) >= r.range.start && a < r.range.end.saturating_add(ADJACENT)
        })
    };
    if near(address) {
        return Vec::new();
    }
    let flips: Vec<Flip<'_>> = bits
        .filter(|b| *b < 64)
        .filter_map(|bit| {
            let corrected = address ^ (1u64 << bit);
            let region = regions.iter().find(|r| r.range.contains(&corrected))?;
            Some(Flip {
                bit,
                corrected,
                region,
            })
        })
        .collect();
    if flips.len() > MAX_CANDIDATES {
        return Vec::new();
    }
    flips
}

/// The bits worth flipping for `address` on `arch`: the user-mode bits of a canonical x64
/// address, the high bits of a non-canonical one, the 32 bits of an x86 address.
fn bit_range(arch: Arch, address: u64) -> Range<u32> {
    match arch {
        Arch::X64 | Arch::Arm64 if address >> 47 == 0 => 0..47,
        Arch::X64 | Arch::Arm64 => 47..64,
        _ => 0..32,
    }
}

/// The regions the dump says the process uses: module images, thread stacks (captured, and the
/// TEB's range when the dump has it), committed regions of the MemoryInfoList.
fn used_regions(session: &Session) -> Vec<UsedRegion> {
    let target = session.target();
    let mut out: Vec<UsedRegion> = target
        .modules()
        .iter()
        .map(|m| UsedRegion {
            range: m.raw.base_of_image
                ..m.raw
                    .base_of_image
                    .saturating_add(u64::from(m.raw.size_of_image)),
            what: format!(
                "the image of {}",
                ntdbg_engine::module_info::file_name_of(&m.name)
            ),
        })
        .collect();
    for t in target.threads() {
        if let Some(s) = &t.stack {
            out.push(UsedRegion {
                range: s.base..s.end(),
                what: format!("the stack of thread {:#x}", t.id),
            });
        }
    }
    if let Some(info) = target.memory_info() {
        const MEM_COMMIT: u32 = 0x1000;
        const PAGE_NOACCESS: u32 = 0x01;
        const PAGE_GUARD: u32 = 0x100;
        for r in info.iter().filter(|r| {
            r.state == MEM_COMMIT && r.protect & (PAGE_NOACCESS | PAGE_GUARD) == 0 && r.protect != 0
        }) {
            out.push(UsedRegion {
                range: r.base..r.end(),
                what: format!(
                    "committed memory {:#x}..{:#x} (MemoryInfoList)",
                    r.base,
                    r.end()
                ),
            });
        }
    }
    out
}

/// The bit-flip hypothesis for the inaccessible `address` (the faulting address, or the value of
/// the faulting instruction's base register named `register`).
pub(super) fn bit_flip(
    session: &Session,
    event: &ExceptionEvent,
    address: u64,
    register: Option<&str>,
) -> Option<Inference> {
    let regions = used_regions(session);
    let flips = one_bit_away(address, bit_range(session.arch(), address), &regions);
    let first = flips.first()?;
    let candidates = flips
        .iter()
        .map(|f| format!("bit {} -> {:#x} in {}", f.bit, f.corrected, f.region.what))
        .collect::<Vec<_>>()
        .join("; ");
    let nearby = event.context.as_ref().and_then(|ctx| {
        let names: &[&str] = if session.arch().pointer_size() == 8 {
            &[
                "rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "r8", "r9", "r10", "r11", "r12",
                "r13", "r14", "r15",
            ]
        } else {
            &["eax", "ebx", "ecx", "edx", "esi", "edi", "ebp"]
        };
        names.iter().find_map(|r| {
            let v = ntdbg_engine::registers::register(ctx, r)?;
            (v.abs_diff(first.corrected) < 0x1000 && Some(*r) != register)
                .then(|| format!("; {r} = {v:#x} lies within 4 KiB of the corrected address"))
        })
    });
    let source = register
        .map(|r| format!("{r} = {address:#x}"))
        .unwrap_or_else(|| format!("the faulting address {address:#x}"));
    Some(Inference::new(
        "bit_flip",
        format!(
            "possible bit flip: {address:#x} is one bit away from {:#x} ({}); faulty memory or CPU can corrupt a valid pointer this way — a hypothesis, worth checking against other crashes from the same machine",
            first.corrected, first.region.what
        ),
        format!(
            "{source} maps to nothing in the dump; flipping one bit lands in used memory: {candidates}{}",
            nearby.unwrap_or_default()
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn regions() -> Vec<UsedRegion> {
        vec![
            UsedRegion {
                range: 0x11_0000..0x12_0000,
                what: "stack".into(),
            },
            UsedRegion {
                range: 0x1_4000_0000..0x1_4003_d000,
                what: "image".into(),
            },
            UsedRegion {
                range: 0x13a_0000..0x13b_0000,
                what: "heap".into(),
            },
        ]
    }

    #[test]
    fn one_bit_from_a_stack_image_or_heap_address() {
        let r = regions();
        let flips = one_bit_away(0x10_0011_fce4, 0..47, &r);
        assert_eq!(flips.len(), 1);
        assert_eq!(
            (
                flips[0].bit,
                flips[0].corrected,
                flips[0].region.what.as_str()
            ),
            (36, 0x11_fce4, "stack")
        );
        let flips = one_bit_away(0x1_4000_1000 ^ (1 << 40), 0..47, &r);
        assert_eq!(flips[0].region.what, "image");
        let flips = one_bit_away(0x13a_0330 ^ (1 << 30), 0..47, &r);
        assert_eq!(flips[0].corrected, 0x13a_0330);
        assert_eq!(flips[0].region.what, "heap");
        // Non-canonical: a high bit flipped.
        let flips = one_bit_away(0x0000_8000_0011_fce4, 47..64, &r);
        assert_eq!(flips[0].bit, 47);
        let flips = one_bit_away(0x0100_0000_0011_fce4, 47..64, &r);
        assert_eq!(flips[0].bit, 56);
    }

    #[test]
    fn two_bits_away_or_adjacent_is_no_flip() {
        let r = regions();
        assert!(
            one_bit_away(0x30_0011_fce4, 0..47, &r).is_empty(),
            "two bits"
        );
        assert!(
            one_bit_away(0x12_0010, 0..47, &r).is_empty(),
            "just past the stack: an overrun"
        );
        assert!(
            one_bit_away(0x11_fce4, 0..47, &r).is_empty(),
            "a valid address"
        );
        assert!(
            one_bit_away(0x7fff_0000_0000, 0..47, &r).is_empty(),
            "far from everything"
        );
    }
}
