//! `uf`: a whole function by following its control flow, as WinDbg lists it.
//!
//! Starting at the function start (from [`AddressNamer::function_range`], else the given
//! address), instructions are decoded block by block:
//! - a block ends at `ret`, an indirect `jmp`, `ud2`, `int 29h` (fast-fail), undecodable or
//!   unreadable bytes, a direct `jmp` or conditional jump, an `int 3` followed by more `int 3`
//!   padding, the end of the function range, or the start of another symbol;
//! - direct jump targets are followed when they lie in the function range or carry the
//!   function's own symbol name (split-off "cold" chunks such as `nt!KiEnableXSave+0x7456`);
//!   jumps to other symbols are tail calls and are not followed; without a range every direct
//!   jump is followed;
//! - the instruction after a conditional jump starts a new block.
//!
//! The listing is in address order. Every block start gets a label line (`crashy!main+0x1a:`,
//! or the bare address when nothing names it) and direct jumps end in `  Branch`, as in
//! WinDbg's output.

use std::collections::{BTreeMap, BTreeSet};

use super::forward::with_source_line;
use super::line::decode_at;
use super::types::{AddressNamer, CodeMemory, DisasmError, Instruction, Isa};
use super::types::{Decoded, Flow};
use crate::text::{has_offset, strip_offset};

/// Most instructions followed when no function range is known.
pub const MAX_FLOW_INSTRUCTIONS: usize = 2000;
/// Most instructions followed for a function with a known range, however large it claims to be.
const MAX_RANGE_INSTRUCTIONS: usize = 1 << 20;

/// `uf addr`: the function containing `addr`, block by block in address order.
///
/// # Errors
/// [`DisasmError::NoCode`] when the first instruction is unreadable or invalid;
/// [`DisasmError::NoFunctionBounds`] when no range is known and the flow from `addr` does not
/// end within [`MAX_FLOW_INSTRUCTIONS`]; [`DisasmError::FlowLimit`] when a known function has
/// more reachable instructions than its size in bytes (at least 2000, at most 2^20) allows.
pub fn disassemble_function(
    isa: impl Into<Isa>,
    memory: &dyn CodeMemory,
    namer: &dyn AddressNamer,
    addr: u64,
) -> Result<Vec<Instruction>, DisasmError> {
    let isa = isa.into();
    let addr = isa.mask(addr);
    let range = namer
        .function_range(addr)
        .map(|(start, end)| (isa.mask(start), isa.mask(end)))
        .filter(|(start, end)| start < end);
    let start = range.map_or(addr, |(start, _)| start);
    let limit = range.map_or(MAX_FLOW_INSTRUCTIONS, |(start, end)| {
        usize::try_from(end - start)
            .unwrap_or(usize::MAX)
            .clamp(MAX_FLOW_INSTRUCTIONS, MAX_RANGE_INSTRUCTIONS)
    });
    let scope = Scope {
        range,
        symbol: namer
            .name(start)
            .map(|name| strip_offset(&name).to_string()),
    };

    let first = decode_at(isa, memory, namer, start);
    if !first.line.readable || first.line.mnemonic == "???" {
        return Err(DisasmError::NoCode(start));
    }

    let mut decoded: BTreeMap<u64, Decoded> = BTreeMap::new();
    let mut block_starts = BTreeSet::from([start]);
    let mut work = vec![start];
    while let Some(block) = work.pop() {
        let mut at = block;
        while !decoded.contains_key(&at) {
            if decoded.len() >= limit {
                return Err(match range {
                    Some(_) => DisasmError::FlowLimit { addr: start, limit },
                    None => DisasmError::NoFunctionBounds(addr),
                });
            }
            let d = decode_at(isa, memory, namer, at);
            let next = isa.mask(at.wrapping_add(d.len));
            let ends = match d.flow {
                Flow::Next => false,
                Flow::Breakpoint => is_padding(isa, memory, next),
                Flow::Stop => true,
                Flow::Jump(target) => {
                    follow(&scope, namer, target, &mut block_starts, &mut work);
                    true
                }
                Flow::Conditional(target) => {
                    follow(&scope, namer, target, &mut block_starts, &mut work);
                    block_starts.insert(next);
                    work.push(next);
                    true
                }
            };
            decoded.insert(at, d);
            if ends || scope.leaves(namer, start, at, next) {
                break;
            }
            at = next;
        }
    }

    Ok(decoded
        .into_values()
        .map(|d| {
            let mut line = d.line;
            if matches!(d.flow, Flow::Jump(_) | Flow::Conditional(_)) {
                line.text.push_str("  Branch");
            }
            if block_starts.contains(&line.address) {
                let name = namer
                    .name(line.address)
                    .unwrap_or_else(|| isa.address_width().address(line.address));
                line.label = Some(with_source_line(namer, line.address, name));
            }
            line
        })
        .collect())
}

/// What belongs to the function being listed.
struct Scope {
    /// `[start, end)` when known.
    range: Option<(u64, u64)>,
    /// The function's symbol name (without offset), when known.
    symbol: Option<String>,
}

impl Scope {
    /// Whether a jump to `target` stays in the function.
    fn contains(&self, namer: &dyn AddressNamer, target: u64) -> bool {
        let Some((start, end)) = self.range else {
            return true;
        };
        if (start..end).contains(&target) {
            return true;
        }
        match (&self.symbol, namer.name(target)) {
            (Some(symbol), Some(name)) => has_offset(&name) && strip_offset(&name) == symbol,
            _ => false,
        }
    }

    /// Whether straight-line decoding from `at` to `next` has left the function: it crossed
    /// the range end, or `next` starts another symbol.
    fn leaves(&self, namer: &dyn AddressNamer, start: u64, at: u64, next: u64) -> bool {
        if let Some((range_start, end)) = self.range {
            if (range_start..end).contains(&at) && next >= end {
                return true;
            }
        }
        next != start && namer.name(next).is_some_and(|name| !has_offset(&name))
    }
}

fn follow(
    scope: &Scope,
    namer: &dyn AddressNamer,
    target: u64,
    block_starts: &mut BTreeSet<u64>,
    work: &mut Vec<u64>,
) {
    if scope.contains(namer, target) {
        block_starts.insert(target);
        work.push(target);
    }
}

/// Whether `addr` holds another `int 3` (alignment padding) or cannot be read.
fn is_padding(isa: Isa, memory: &dyn CodeMemory, addr: u64) -> bool {
    let mut byte = [0u8; 1];
    memory.read(isa.mask(addr), &mut byte) == 0 || byte[0] == 0xcc
}
