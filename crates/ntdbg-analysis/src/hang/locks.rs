//! The critical sections of a process, for `!locks`: with ntdll's symbols and the memory of a
//! full dump, the process-wide list (`ntdll!RtlCriticalSectionList`, each debug record's
//! `ProcessLocksList` entry); otherwise those reachable from the threads: the ones they wait
//! for (found through recovered registers), then held sections lying in the captured thread
//! stacks whose fields check out (found by scanning, and said so).

use super::critical_section::{
    check, parse_raw, read_raw, size, with_debug_counts, CriticalSection,
};
use super::wait_chain::ThreadWait;
use ntdbg_engine::Session;

/// How many bytes of one thread's stack are scanned.
const MAX_STACK_SCAN: u64 = 1 << 20;
/// How many sections a scan reports at most.
const MAX_SECTIONS: usize = 256;
/// The most recursions a section found by scanning may have: a scan is weaker evidence than a
/// register or the process list, so implausible counts are not taken.
const MAX_SCANNED_RECURSION: i32 = 64;
/// How many entries of the process-wide list are followed at most.
const MAX_LIST_ENTRIES: usize = 4096;
/// The head of the process-wide list of critical section debug records.
const LIST_HEAD: &str = "ntdll!RtlCriticalSectionList";

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

/// The process-wide list as far as it could be walked.
#[derive(Debug, Clone)]
pub struct ProcessList {
    /// The sections whose fields check out, in list order.
    pub sections: Vec<CriticalSection>,
    /// Entries whose section could not be read or did not check out.
    pub skipped: usize,
    /// Why the walk stopped before coming back to the head, when it did.
    pub stopped: Option<String>,
}

/// Walks `ntdll!RtlCriticalSectionList` (at most 4096 entries, each once). `Err` says why
/// the list cannot be walked at all: ntdll's symbols do not name its head, or the dump does
/// not hold it (a normal minidump has no ntdll data).
pub fn process_list(session: &Session) -> Result<ProcessList, String> {
    let ptr = session.arch().pointer_size();
    let head = session
        .resolve_symbol(LIST_HEAD)
        .ok_or_else(|| format!("ntdll's symbols do not name {LIST_HEAD}"))?;
    let word = |at: u64| -> Option<u64> {
        let bytes: Vec<u8> = session
            .read_virtual(at, ptr)
            .into_iter()
            .collect::<Option<_>>()?;
        let mut w = [0u8; 8];
        w[..ptr].copy_from_slice(&bytes);
        Some(u64::from_le_bytes(w))
    };
    let mut entry = word(head).ok_or_else(|| {
        format!("{LIST_HEAD} at {head:#x} is not in the dump (a full-memory dump holds it)")
    })?;
    let ids: Vec<u32> = session.target().threads().iter().map(|t| t.id).collect();
    let mut list = ProcessList {
        sections: Vec::new(),
        skipped: 0,
        stopped: None,
    };
    let mut seen = std::collections::HashSet::new();
    while entry != head {
        if seen.len() >= MAX_LIST_ENTRIES {
            list.stopped = Some(format!("stopped after {MAX_LIST_ENTRIES} entries"));
            break;
        }
        if !seen.insert(entry) {
            list.stopped = Some(format!(
                "the list loops back to {entry:#x} without reaching its head"
            ));
            break;
        }
        // ProcessLocksList follows Type, CreatorBackTraceIndex and CriticalSection.
        let debug = entry.wrapping_sub(2 * ptr as u64);
        let section = word(debug + ptr as u64)
            .and_then(|address| read_raw(session, address))
            .and_then(|raw| check(&raw, ptr, &ids).ok());
        match section {
            Some(cs) => list.sections.push(with_debug_counts(session, cs)),
            None => list.skipped += 1,
        }
        match word(entry) {
            Some(next) => entry = next,
            None => {
                list.stopped = Some(format!("entry {entry:#x} is not in the dump"));
                break;
            }
        }
    }
    Ok(list)
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
        let read = session.read_virtual(region.base, len);
        // Missing bytes read as zero and are tracked apart, so no window allocates.
        let bytes: Vec<u8> = read.iter().map(|b| b.unwrap_or(0)).collect();
        let mut missing_before = Vec::with_capacity(read.len() + 1);
        missing_before.push(0usize);
        for b in &read {
            let last = missing_before.last().copied().unwrap_or(0);
            missing_before.push(last + usize::from(b.is_none()));
        }
        let mut offset = 0;
        while offset + size(ptr) <= bytes.len() && out.len() < MAX_SECTIONS {
            let end = offset + size(ptr);
            let address = region.base + offset as u64;
            let section = (missing_before[end] == missing_before[offset])
                .then(|| parse_raw(&bytes[offset..end], address, ptr))
                .flatten()
                .and_then(|raw| check(&raw, ptr, &ids).ok())
                .filter(|cs| cs.locked && cs.recursion_count <= MAX_SCANNED_RECURSION);
            match section {
                Some(cs) => {
                    out.push(Reachable {
                        section: with_debug_counts(session, cs),
                        found: Found::StackScan { thread_id: t.id },
                    });
                    offset = end;
                }
                None => offset += ptr,
            }
        }
    }
    out
}
