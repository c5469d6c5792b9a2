//! The critical sections reachable from the threads, for `!locks` on a dump without the
//! process-wide list: those the threads wait for (found through recovered registers), then
//! held sections lying in the captured thread stacks whose fields check out (found by
//! scanning, and said so).

use super::critical_section::{check, parse_raw, size, with_debug_counts, CriticalSection};
use super::wait_chain::ThreadWait;
use ntdbg_engine::Session;

/// How many bytes of one thread's stack are scanned.
const MAX_STACK_SCAN: u64 = 1 << 20;
/// How many sections a scan reports at most.
const MAX_SECTIONS: usize = 256;

/// How a reachable section was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// A thread waits for it (a register recovered in its critical section frames).
    WaitedFor {
        /// The waiting thread's id.
        thread_id: u32,
    },
    /// It lies in a thread's captured stack and its fields check out.
    StackScan {
        /// The id of the thread whose stack holds it.
        thread_id: u32,
    },
}

/// One critical section and how it was found.
#[derive(Debug, Clone)]
pub struct Reachable {
    /// The section.
    pub section: CriticalSection,
    /// How it was found.
    pub found: Found,
}

/// The sections the threads wait for, then the held sections found in the thread stacks
/// (each address once, at most 256).
pub fn reachable_sections(session: &Session, waits: &[ThreadWait]) -> Vec<Reachable> {
    let mut out: Vec<Reachable> = waits
        .iter()
        .filter_map(|w| {
            Some(Reachable {
                section: w.section.as_ref()?.section.clone(),
                found: Found::WaitedFor {
                    thread_id: w.thread_id,
                },
            })
        })
        .fold(Vec::new(), |mut acc: Vec<Reachable>, r| {
            if !acc.iter().any(|a| a.section.address == r.section.address) {
                acc.push(r);
            }
            acc
        });
    for s in stack_sections(session) {
        if out.len() >= MAX_SECTIONS {
            break;
        }
        if !out.iter().any(|a| a.section.address == s.section.address) {
            out.push(s);
        }
    }
    out
}

/// Held critical sections in the captured stacks of the threads, in stack order.
fn stack_sections(session: &Session) -> Vec<Reachable> {
    let ptr = session.arch().pointer_size();
    let threads = session.target().threads();
    let ids: Vec<u32> = threads.iter().map(|t| t.id).collect();
    let mut out = Vec::new();
    for t in threads {
        let Some(region) = t.stack else { continue };
        let len = region.size.min(MAX_STACK_SCAN) as usize;
        let bytes = session.read_virtual(region.base, len);
        let mut offset = 0;
        while offset + size(ptr) <= bytes.len() && out.len() < MAX_SECTIONS {
            let window: Option<Vec<u8>> =
                bytes[offset..offset + size(ptr)].iter().copied().collect();
            let address = region.base + offset as u64;
            let section = window
                .and_then(|w| parse_raw(&w, address, ptr))
                .and_then(|raw| check(&raw, ptr, &ids).ok())
                .filter(|cs| cs.locked);
            match section {
                Some(cs) => {
                    out.push(Reachable {
                        section: with_debug_counts(session, cs),
                        found: Found::StackScan { thread_id: t.id },
                    });
                    offset += size(ptr);
                }
                None => offset += ptr,
            }
        }
    }
    out
}
