//! Memory-region facts about an inaccessible address: what the address-space layout says of it
//! (committed, reserved, free, a guard page; image, mapped or private), whether the bytes just
//! before or after it were accessible (an access that ran over a page boundary out of a mapped
//! buffer), and whether the system or the process had run out of commit when the dump was
//! written.

use ntdbg_engine::Session;
use ntdbg_targets::memory_flags::{
    MEM_COMMIT, MEM_FREE, MEM_IMAGE, MEM_MAPPED, MEM_PRIVATE, MEM_RESERVE, PAGE_GUARD,
    PAGE_NOACCESS, PAGE_PROTECTION,
};
use ntdbg_targets::{memory_info_at, CommitFacts, MemoryInfo};
/// The x86/x64 page size.
pub(crate) const PAGE: u64 = 0x1000;
/// Free commit below which the system counts as out of commit (see `commit_exhaustion`).
const LOW_COMMIT_FLOOR: u64 = 64 << 20;

/// What the MemoryInfoList says of the region holding an address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RegionState {
    /// Committed and accessible (some protection other than no-access).
    Committed,
    /// Committed with `PAGE_GUARD` (a stack's or a guard-page allocator's tripwire).
    Guard,
    /// Committed with `PAGE_NOACCESS`.
    NoAccess,
    /// Reserved but never committed.
    Reserved,
    /// Free: nothing is allocated there.
    Free,
}

/// The region holding an address, as the dump's MemoryInfoList describes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Region {
    /// Its state.
    pub state: RegionState,
    /// The region (pages of the same state and protection).
    pub info: MemoryInfo,
}

impl Region {
    /// `reserved private memory 0x1230000..0x2230000 (allocation 0x1230000)`.
    pub fn describe(&self) -> String {
        let state = match self.state {
            RegionState::Committed => "committed",
            RegionState::Guard => "guard-page",
            RegionState::NoAccess => "no-access",
            RegionState::Reserved => "reserved (never committed)",
            RegionState::Free => "free",
        };
        let kind = match self.info.kind {
            MEM_IMAGE => " image",
            MEM_MAPPED => " mapped",
            MEM_PRIVATE => " private",
            _ => "",
        };
        let allocation = if self.state == RegionState::Free {
            String::new()
        } else {
            format!(" (allocation at {:#x})", self.info.allocation_base)
        };
        format!(
            "{state}{kind} memory {:#x}..{:#x}{allocation}",
            self.info.base,
            self.info.end()
        )
    }
}

/// The MemoryInfoList region holding `address`.
pub(crate) fn region_at(session: &Session, address: u64) -> Option<Region> {
    let r = memory_info_at(session.target().memory_info()?, address)?;
    let state = match r.state {
        MEM_FREE => RegionState::Free,
        MEM_RESERVE => RegionState::Reserved,
        MEM_COMMIT if r.protect & PAGE_GUARD != 0 => RegionState::Guard,
        MEM_COMMIT if r.protect & PAGE_PROTECTION == PAGE_NOACCESS => RegionState::NoAccess,
        MEM_COMMIT => RegionState::Committed,
        _ => return None,
    };
    Some(Region { state, info: *r })
}

/// How the dump shows `address` was readable, if it does: committed memory of the
/// MemoryInfoList, or bytes the dump writer captured (it reads only accessible memory).
pub(crate) fn accessible(session: &Session, address: u64) -> Option<&'static str> {
    match region_at(session, address) {
        Some(r) if r.state == RegionState::Committed => Some("committed memory (MemoryInfoList)"),
        Some(_) => None,
        None => session.target().read_virtual(address, 1)[0]
            .is_some()
            .then_some("memory the dump captured"),
    }
}

/// An access that crossed a page boundary from accessible memory into the inaccessible page at
/// the faulting address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Overrun {
    /// `true` when it ran forward off the end of the accessible memory below; `false` when it
    /// ran backward below the start of the accessible memory above.
    pub forward: bool,
    /// The accessible neighbour's address and how it is known to be accessible.
    pub neighbour: (u64, &'static str),
}

/// Whether the access at `effective` (`size` bytes, when the instruction says) that faulted at
/// `fault` ran over a page boundary out of accessible memory: forward when `fault` starts its
/// page (or the access straddles into it) and the byte below is accessible; backward when the
/// access ends its page and the byte above is accessible.
pub(crate) fn page_boundary(
    session: &Session,
    fault: u64,
    effective: Option<u64>,
    size: usize,
) -> Option<Overrun> {
    let size = (size as u64).max(1);
    let page_start = fault & !(PAGE - 1);
    let straddles_up = effective.is_some_and(|e| e < page_start && e + size > page_start);
    if fault == page_start || straddles_up {
        let below = page_start.checked_sub(1)?;
        if let Some(how) = accessible(session, below) {
            return Some(Overrun {
                forward: true,
                neighbour: (below, how),
            });
        }
    }
    let end = effective.unwrap_or(fault).saturating_add(size);
    let next_page = page_start + PAGE;
    if end >= next_page && end <= next_page + size {
        if let Some(how) = accessible(session, next_page) {
            return Some(Overrun {
                forward: false,
                neighbour: (next_page, how),
            });
        }
    }
    None
}

/// The system or the process at (or near) its commit limit, in words, with the figures.
pub(crate) fn commit_exhaustion(facts: &CommitFacts) -> Option<String> {
    // Free commit at most 1% of the limit, or 64 MiB when that is under 5% of it.
    let low = |used: u64, limit: u64| {
        let margin = (limit / 100).max(LOW_COMMIT_FLOOR.min(limit / 20));
        limit > 0 && limit.saturating_sub(used) <= margin
    };
    if let Some(s) = facts.system {
        if low(s.committed, s.limit) {
            return Some(format!(
                "the system's commit charge was {} of its {} limit when the dump was written (SystemMemoryInfo stream)",
                mib(s.committed),
                mib(s.limit)
            ));
        }
        if low(s.peak, s.limit) {
            return Some(format!(
                "the system's commit charge had peaked at {} of its {} limit (SystemMemoryInfo stream)",
                mib(s.peak),
                mib(s.limit)
            ));
        }
    }
    if let Some(p) = facts.process {
        if let Some(limit) = p.job_limit.filter(|l| low(p.private, *l)) {
            return Some(format!(
                "the process had {} committed against its job's {} limit (ProcessVmCounters stream)",
                mib(p.private),
                mib(limit)
            ));
        }
    }
    None
}

/// The commit figures in one clause, for a basis that says they were looked at.
pub(crate) fn commit_summary(facts: &CommitFacts) -> Option<String> {
    let s = facts.system?;
    Some(format!(
        "system commit {} of {} (peak {})",
        mib(s.committed),
        mib(s.limit),
        mib(s.peak)
    ))
}

fn mib(bytes: u64) -> String {
    format!("{} MiB", bytes >> 20)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ntdbg_targets::{ProcessCommit, SystemCommit};

    #[test]
    fn commit_exhaustion_needs_a_near_limit_charge() {
        let system = |committed, limit, peak| CommitFacts {
            system: Some(SystemCommit {
                committed,
                limit,
                peak,
            }),
            process: None,
        };
        const G: u64 = 1 << 30;
        assert!(commit_exhaustion(&system(8 * G - (10 << 20), 8 * G, 8 * G)).is_some());
        assert!(commit_exhaustion(&system(4 * G, 8 * G, 8 * G - (1 << 20))).is_some());
        assert!(commit_exhaustion(&system(4 * G, 8 * G, 5 * G)).is_none());
        let job = CommitFacts {
            system: None,
            process: Some(ProcessCommit {
                private: 511 << 20,
                peak_private: 511 << 20,
                virtual_size: None,
                job_limit: Some(512 << 20),
            }),
        };
        assert!(commit_exhaustion(&job).unwrap().contains("job"));
        assert!(commit_exhaustion(&CommitFacts::default()).is_none());
    }
}
