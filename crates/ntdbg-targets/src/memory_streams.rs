//! The memory-pressure streams Windows 10's `MiniDumpWriteDump` adds to every minidump: the
//! system's commit charge and limit (SystemMemoryInfoStream, 21:
//! `MINIDUMP_SYSTEM_MEMORY_INFO_1`) and the process's own counters (ProcessVmCountersStream,
//! 22: `MINIDUMP_PROCESS_VM_COUNTERS_1`/`_2`). The minidump crate does not read them; both are
//! small fixed layouts (4-byte packed, as `minidumpapiset.h` declares them).

/// What the dump says about committed memory when it was written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CommitFacts {
    /// The system's commit charge and limit, when the dump has SystemMemoryInfoStream.
    pub system: Option<SystemCommit>,
    /// The process's counters, when the dump has ProcessVmCountersStream.
    pub process: Option<ProcessCommit>,
}

/// System-wide commit, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SystemCommit {
    /// Committed memory (the commit charge).
    pub committed: u64,
    /// The commit limit (physical memory plus page files).
    pub limit: u64,
    /// The highest commit charge since boot.
    pub peak: u64,
}

/// The process's memory counters, in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcessCommit {
    /// Private committed memory (PrivateUsage, else PagefileUsage).
    pub private: u64,
    /// The highest PagefileUsage (the process's peak private commit).
    pub peak_private: u64,
    /// Reserved address space (VirtualSize), when recorded.
    pub virtual_size: Option<u64>,
    /// The job's private commit limit, when the process runs in a job that sets one.
    pub job_limit: Option<u64>,
}

/// `MINIDUMP_SYSTEM_MEMORY_INFO_1`: offset of `BasicPerfInfo` (after the revision, flags,
/// `MINIDUMP_SYSTEM_BASIC_INFORMATION` and `MINIDUMP_SYSTEM_FILECACHE_INFORMATION`).
const BASIC_PERF_INFO: usize = 116;
/// `MINIDUMP_SYSTEM_BASIC_INFORMATION.PageSize`.
const PAGE_SIZE: usize = 8;
/// `MINIDUMP_PROCESS_VM_COUNTERS.Flags` bits.
const VM_VIRTUALSIZE: u16 = 0x2;
const VM_EX: u16 = 0x4;
const VM_JOB: u16 = 0x10;

fn u16_at(b: &[u8], at: usize) -> Option<u16> {
    Some(u16::from_le_bytes(b.get(at..at + 2)?.try_into().ok()?))
}

fn u32_at(b: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(b.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(b.get(at..at + 8)?.try_into().ok()?))
}

/// Reads SystemMemoryInfoStream. `None` when it is too short or holds no commit limit (some
/// writers zero it).
pub(crate) fn system_commit(stream: &[u8]) -> Option<SystemCommit> {
    let page = u64::from(u32_at(stream, PAGE_SIZE).filter(|p| p.is_power_of_two())?);
    let committed = u64_at(stream, BASIC_PERF_INFO + 8)?;
    let limit = u64_at(stream, BASIC_PERF_INFO + 16)?;
    let peak = u64_at(stream, BASIC_PERF_INFO + 24)?;
    (limit != 0).then(|| SystemCommit {
        committed: committed.saturating_mul(page),
        limit: limit.saturating_mul(page),
        peak: peak.saturating_mul(page),
    })
}

/// Reads ProcessVmCountersStream (either revision). `None` when it is too short or empty.
pub(crate) fn process_commit(stream: &[u8]) -> Option<ProcessCommit> {
    let revision = u16_at(stream, 0)?;
    let pagefile = u64_at(stream, 56)?;
    let peak_pagefile = u64_at(stream, 64)?;
    let counters = match revision {
        1 => ProcessCommit {
            private: u64_at(stream, 72).unwrap_or(pagefile),
            peak_private: peak_pagefile,
            virtual_size: None,
            job_limit: None,
        },
        2 => {
            let flags = u16_at(stream, 2)?;
            let has = |bit: u16| flags & bit != 0;
            ProcessCommit {
                private: has(VM_EX)
                    .then(|| u64_at(stream, 88))
                    .flatten()
                    .unwrap_or(pagefile),
                peak_private: peak_pagefile,
                virtual_size: has(VM_VIRTUALSIZE).then(|| u64_at(stream, 80)).flatten(),
                job_limit: has(VM_JOB)
                    .then(|| u64_at(stream, 136))
                    .flatten()
                    .filter(|l| *l != 0),
            }
        }
        _ => return None,
    };
    (counters.private != 0 || counters.peak_private != 0).then_some(counters)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn system_commit_in_pages_becomes_bytes() {
        let mut s = vec![0u8; 492];
        s[0] = 1;
        s[PAGE_SIZE..PAGE_SIZE + 4].copy_from_slice(&0x1000u32.to_le_bytes());
        s[BASIC_PERF_INFO + 8..BASIC_PERF_INFO + 16].copy_from_slice(&100u64.to_le_bytes());
        s[BASIC_PERF_INFO + 16..BASIC_PERF_INFO + 24].copy_from_slice(&200u64.to_le_bytes());
        s[BASIC_PERF_INFO + 24..BASIC_PERF_INFO + 32].copy_from_slice(&150u64.to_le_bytes());
        let c = system_commit(&s).expect("commit facts");
        assert_eq!((c.committed, c.limit, c.peak), (0x64000, 0xc8000, 0x96000));
        assert_eq!(system_commit(&s[..100]), None);
        s[BASIC_PERF_INFO + 16..BASIC_PERF_INFO + 24].fill(0);
        assert_eq!(system_commit(&s), None, "a zeroed stream says nothing");
    }

    #[test]
    fn process_counters_of_both_revisions() {
        let mut s = vec![0u8; 152];
        s[0] = 2;
        s[2] = (VM_VIRTUALSIZE | VM_EX) as u8;
        s[56..64].copy_from_slice(&5u64.to_le_bytes());
        s[64..72].copy_from_slice(&9u64.to_le_bytes());
        s[80..88].copy_from_slice(&0x8000_0000u64.to_le_bytes());
        s[88..96].copy_from_slice(&7u64.to_le_bytes());
        let c = process_commit(&s).expect("counters");
        assert_eq!(
            (c.private, c.peak_private, c.virtual_size, c.job_limit),
            (7, 9, Some(0x8000_0000), None)
        );
        assert_eq!(process_commit(&[0u8; 152]), None);
    }
}
