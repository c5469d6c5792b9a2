//! The MSVC exception record of a throw still in flight when the process ended in
//! `std::terminate` (MSVC's runtime calls it from its unhandled-exception filter): the
//! dispatcher keeps the `EXCEPTION_RECORD` on the stack, between the frame that called
//! `_CxxThrowException` and the frames of the filter. Only that live part of the stack is
//! searched (up to the throw site's frame when the walk reached it; for an `abort()` whose
//! walk did not, the readable stack above the event), and a candidate counts only when its
//! flags and parameter count fit, its thrown object lies higher on the same stack, and its
//! magic and ThrowInfo walk to a named type.

use super::memory::Memory;
use super::msvc::from_parameters;
use super::site::{return_into_thrower, ThrowSite};
use super::{Abi, Message, UncaughtException, MSVC_CPP_CODE};
use ntdbg_engine::stack::Frame;
use ntdbg_engine::Session;

/// Most stack bytes searched.
const MAX_SEARCH: u64 = 1 << 20;
/// Bytes read at a time.
const CHUNK: usize = 4096;
/// Most candidates walked (each one a ThrowInfo walk).
const MAX_CANDIDATES: usize = 16;

/// The exception as a record on the event thread's stack tells it: searched from the event's
/// stack pointer up to the throw site's frame when there is one, else up to the end of the
/// readable stack (at most 1 MiB). A candidate counts when its ThrowInfo walks to a named type
/// and its thrown object lies on the same stack above it, in the frame that threw.
pub(super) fn msvc_on_stack(
    session: &Session,
    frames: &[Frame],
    site: Option<&ThrowSite>,
) -> Option<UncaughtException> {
    let memory = Memory::new(session);
    let low = frames.first()?.stack_pointer;
    let site_sp = site
        .and_then(|s| frames.iter().find(|f| f.index == s.frame))
        .map(|f| f.stack_pointer);
    let high = site_sp
        .unwrap_or(u64::MAX)
        .min(low.saturating_add(MAX_SEARCH));
    for record in candidates(&memory, low, high) {
        let Some(parameters) = parameters(&memory, record) else {
            continue;
        };
        let object = parameters.get(1).copied().unwrap_or(0);
        if object <= record
            || memory.bytes(object, 1).is_none()
            || object >= low.saturating_add(MAX_SEARCH)
        {
            continue;
        }
        let mut found = from_parameters(session, &parameters);
        if found.type_name.is_some() {
            let bound = match site {
                Some(_) => "between the event and the throw site",
                None => "above the event",
            };
            found.evidence.insert(
                0,
                format!("the 0xE06D7363 exception record at {record:#x}, on the event thread's stack {bound}, with its thrown object at {object:#x} higher on the same stack"),
            );
            if site.is_none() {
                if let Some((slot, name, target)) =
                    return_into_thrower(session, Abi::Msvc, record, object)
                {
                    found.evidence.push(format!(
                        "thrown at {name}: the return address at {slot:#x}, between the record and the object, follows a call to {target} (the frame walk did not reach it)"
                    ));
                    found.throw_site = Some(name);
                }
            }
            return Some(found);
        }
    }
    None
}

/// What is known when the record is not found: the ABI only.
pub(super) fn msvc_record_missing() -> UncaughtException {
    UncaughtException {
        abi: Abi::Msvc,
        type_name: None,
        message: Message::None,
        throw_site: None,
        evidence: vec![
            "no valid 0xE06D7363 exception record on the stack between the event and the throw site: thrown type unknown".into(),
        ],
    }
}

/// Aligned addresses in `[low, high)` holding the MSVC exception code.
fn candidates(memory: &Memory, low: u64, high: u64) -> Vec<u64> {
    let align = memory.pointer_size as u64;
    let mut out = Vec::new();
    let mut at = low - low % align;
    while at < high && out.len() < MAX_CANDIDATES {
        let len = (high - at).min(CHUNK as u64) as usize;
        let bytes = memory.readable_prefix(at, len);
        for (i, word) in bytes
            .chunks_exact(4)
            .enumerate()
            .step_by(align as usize / 4)
        {
            if word == MSVC_CPP_CODE.to_le_bytes() {
                out.push(at + 4 * i as u64);
            }
        }
        // The end of the readable stack ends the search.
        if bytes.len() < len {
            break;
        }
        at += len as u64;
    }
    out
}

/// The parameters of an `EXCEPTION_RECORD` (32- or 64-bit layout) at `record`, when its
/// flags and parameter count are those of an MSVC throw.
fn parameters(memory: &Memory, record: u64) -> Option<Vec<u64>> {
    let ptr = memory.pointer_size as u64;
    let flags = memory.u32(record + 4)?;
    // Code, flags, chained record, address, count (+ padding on 64-bit), then the parameters.
    let count_at = record + 8 + 2 * ptr;
    let count = memory.u32(count_at)?;
    if flags & !0x7f != 0 || !(3..=4).contains(&count) {
        return None;
    }
    let first = if ptr == 8 { count_at + 8 } else { count_at + 4 };
    (0..u64::from(count))
        .map(|i| memory.pointer(first + i * ptr))
        .collect()
}
