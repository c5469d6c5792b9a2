//! `ub`: the instructions that end exactly at an address.
//!
//! x86 code cannot be decoded backwards, so `ub` guesses where instructions start:
//!
//! 1. Read the window `[end - (count * 15 + 32), end)` — enough bytes for `count` maximal
//!    instructions plus some room for decoding to synchronise — shrunk to the part that is
//!    readable up to `end`.
//! 2. Decode once at every offset of the window. Each offset has a successor (offset + length);
//!    an offset *lands* when following successors reaches `end` exactly without meeting an
//!    invalid opcode or running past `end`. Its *depth* is the number of instructions to `end`.
//! 3. Every landing offset with depth ≥ `count` votes for the start of its last `count`
//!    instructions (its tail). Decoding from different offsets synchronises quickly on real
//!    code, so the true tail collects the votes of nearly every earlier offset, while
//!    misaligned decodes only win votes from a few offsets near themselves.
//! 4. The tail with the most votes wins; ties go to the tail reached by the longest consistent
//!    run (deepest voter), then to the earlier address.
//!
//! When no offset reaches `count` instructions (little readable memory before `end`), the
//! deepest landing run is used, so fewer lines are shown. When the byte just before `end` is
//! unreadable, the `count` bytes before `end` are shown as `??` lines, as WinDbg does.
//!
//! ARM64 needs none of this: its instructions are 4 aligned bytes, so `ub` lists the `count`
//! words before `end`.

use iced_x86::{Decoder, DecoderOptions};

use super::arm64;
use super::forward::disassemble_forward;
use super::line::MAX_INSTRUCTION_LEN;
use super::types::{AddressNamer, Bitness, CodeMemory, Instruction, Isa};

/// Extra bytes read before the `count * 15` needed, so decoding can synchronise.
const SYNC_SLACK: u64 = 32;
/// Upper bound of the window, to bound the work for huge counts.
const MAX_WINDOW: u64 = 64 * 1024;

/// `ub end L<count>`: the `count` instructions that end exactly at `end` (see the module docs
/// for the heuristic); labels as in `u`.
pub fn disassemble_backward(
    isa: impl Into<Isa>,
    memory: &dyn CodeMemory,
    namer: &dyn AddressNamer,
    end: u64,
    count: usize,
) -> Vec<Instruction> {
    let bitness = match isa.into() {
        Isa::X86(bitness) => bitness,
        Isa::Arm64 => return arm64_backward(memory, namer, end, count),
    };
    let end = bitness.mask(end);
    // Every instruction takes at least one byte of the window.
    let count = count.min(MAX_WINDOW as usize);
    if count == 0 {
        return Vec::new();
    }
    let window = (count as u64)
        .saturating_mul(MAX_INSTRUCTION_LEN as u64)
        .saturating_add(SYNC_SLACK)
        .min(MAX_WINDOW);
    let lowest = end.saturating_sub(window);
    let Some(base) = readable_start(memory, lowest, end) else {
        let start = end.saturating_sub(count as u64);
        let n = usize::try_from(end - start).unwrap_or(0);
        let mut lines = disassemble_forward(bitness, memory, namer, start, n);
        lines.retain(|line| line.address < end);
        return lines;
    };
    let mut bytes = vec![0u8; usize::try_from(end - base).unwrap_or(0)];
    let got = memory.read(base, &mut bytes).min(bytes.len());
    bytes.truncate(got);
    match best_tail(bitness, base, &bytes, count) {
        Some((offset, n)) => disassemble_forward(bitness, memory, namer, base + offset as u64, n),
        None => {
            // Nothing lands on `end` (only invalid bytes): show the last `count` bytes as they
            // decode, stopping at `end`.
            let start = end.saturating_sub(count as u64).max(base);
            let mut lines = disassemble_forward(bitness, memory, namer, start, count);
            lines.retain(|line| line.address < end);
            lines
        }
    }
}

/// ARM64 instructions are 4 aligned bytes: `ub` shows the `count` words before `end`.
fn arm64_backward(
    memory: &dyn CodeMemory,
    namer: &dyn AddressNamer,
    end: u64,
    count: usize,
) -> Vec<Instruction> {
    let end = end & !(arm64::INSTRUCTION_LEN - 1);
    let words = u64::try_from(count)
        .unwrap_or(u64::MAX)
        .min(end / arm64::INSTRUCTION_LEN)
        .min(MAX_WINDOW / arm64::INSTRUCTION_LEN);
    let start = end - words * arm64::INSTRUCTION_LEN;
    disassemble_forward(Isa::Arm64, memory, namer, start, words as usize)
}

/// The lowest `s` in `[lowest, end)` such that all of `[s, end)` is readable. Readability of
/// `[s, end)` only grows with `s`, so this is a binary search.
fn readable_start(memory: &dyn CodeMemory, lowest: u64, end: u64) -> Option<u64> {
    let readable = |s: u64| {
        let want = usize::try_from(end - s).unwrap_or(usize::MAX);
        let mut buf = vec![0u8; want];
        memory.read(s, &mut buf) >= want
    };
    if lowest >= end || !readable(end - 1) {
        return None;
    }
    let (mut lo, mut hi) = (lowest, end - 1);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if readable(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    Some(lo)
}

/// The winning tail as (offset in `bytes`, instruction count), by the vote described in the
/// module docs.
fn best_tail(bitness: Bitness, base: u64, bytes: &[u8], count: usize) -> Option<(usize, usize)> {
    let len = bytes.len();
    // depth[o]: instructions from offset o to the end of the window (0 = does not land).
    let mut next = vec![usize::MAX; len];
    let mut depth = vec![0usize; len];
    for offset in (0..len).rev() {
        let mut decoder = Decoder::with_ip(
            bitness.bits(),
            &bytes[offset..],
            base + offset as u64,
            DecoderOptions::NONE,
        );
        let instr = decoder.decode();
        if instr.is_invalid() {
            continue;
        }
        let successor = offset + instr.len();
        next[offset] = successor;
        depth[offset] = match successor.cmp(&len) {
            std::cmp::Ordering::Equal => 1,
            std::cmp::Ordering::Less if depth[successor] > 0 => depth[successor] + 1,
            _ => 0,
        };
    }
    let deepest = depth.iter().copied().max().unwrap_or(0);
    let want = count.min(deepest);
    if want == 0 {
        return None;
    }
    // tail[o]: the offset where the last `want` instructions of o's run start.
    let mut tail = vec![usize::MAX; len];
    let mut votes = vec![0usize; len];
    let mut longest = vec![0usize; len];
    for offset in (0..len).rev() {
        tail[offset] = match depth[offset].cmp(&want) {
            std::cmp::Ordering::Equal => offset,
            std::cmp::Ordering::Greater => tail[next[offset]],
            std::cmp::Ordering::Less => continue,
        };
        let t = tail[offset];
        votes[t] += 1;
        longest[t] = longest[t].max(depth[offset]);
    }
    (0..len)
        .filter(|&t| votes[t] > 0)
        .max_by(|&a, &b| {
            (votes[a], longest[a])
                .cmp(&(votes[b], longest[b]))
                .then(b.cmp(&a))
        })
        .map(|t| (t, want))
}
