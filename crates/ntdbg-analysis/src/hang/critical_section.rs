//! `RTL_CRITICAL_SECTION`: reading one from the dump and deciding whether the bytes really are
//! one. The layout is the public one (`winnt.h`): `DebugInfo`, `LockCount`, `RecursionCount`,
//! `OwningThread`, `LockSemaphore`, `SpinCount`, pointer-sized except the two counts; the
//! debug record (`RTL_CRITICAL_SECTION_DEBUG`) holds `EntryCount` and `ContentionCount`.
//!
//! `LockCount` has two encodings. Windows XP and Wine count: -1 free, otherwise the number of
//! `Enter` calls outstanding minus one (recursions included), so the waiters are
//! `LockCount + 1 - RecursionCount`. Windows since Server 2003 SP1 keeps a bit field: bit 0
//! clear when locked, bit 1 clear when a waiter has been woken, `(-1 - LockCount) >> 2`
//! waiters. A locked section is `>= 0` in the first and `< -1` in the second, so the value
//! itself says which one the dump holds.

use ntdbg_engine::Session;
use serde::Serialize;

/// The most recursions or waiters a real critical section is taken to have.
const MAX_COUNT: i64 = 0x10000;

/// Field offsets of `RTL_CRITICAL_SECTION` for one pointer size.
#[derive(Debug, Clone, Copy)]
struct Layout {
    ptr: usize,
}

impl Layout {
    fn lock_count(self) -> usize {
        self.ptr
    }
    fn recursion_count(self) -> usize {
        self.ptr + 4
    }
    fn owning_thread(self) -> usize {
        self.ptr + 8
    }
    fn lock_semaphore(self) -> usize {
        2 * self.ptr + 8
    }
    fn spin_count(self) -> usize {
        3 * self.ptr + 8
    }
    fn size(self) -> usize {
        4 * self.ptr + 8
    }
    /// `RTL_CRITICAL_SECTION_DEBUG`: `Type`, `CreatorBackTraceIndex` (2 × u16), then
    /// `CriticalSection`, `ProcessLocksList` (2 pointers), `EntryCount`, `ContentionCount`.
    fn debug_critical_section(self) -> usize {
        self.ptr
    }
    fn debug_entry_count(self) -> usize {
        4 * self.ptr
    }
    fn debug_size(self) -> usize {
        4 * self.ptr + 8
    }
}

/// How `LockCount` encodes the lock state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum LockEncoding {
    /// Windows XP and Wine: -1 free, else outstanding `Enter` calls minus one.
    Counted,
    /// Windows since Server 2003 SP1: bit 0 clear when locked, bit 1 clear when a waiter was
    /// woken, the rest counts waiters.
    BitField,
}

/// The debug record's counters, when its memory is in the dump and points back at the section.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct DebugCounts {
    /// How many times the section was entered after contention (`EntryCount`).
    pub entry_count: u32,
    /// How many times a thread found it owned (`ContentionCount`).
    pub contention_count: u32,
}

/// A critical section read from the dump whose fields check out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CriticalSection {
    /// Its address.
    pub address: u64,
    /// `DebugInfo`.
    pub debug_info: u64,
    /// `LockCount`, as stored.
    pub lock_count: i32,
    /// `RecursionCount`.
    pub recursion_count: i32,
    /// `OwningThread` (a thread id).
    pub owning_thread: u64,
    /// `LockSemaphore`.
    pub lock_semaphore: u64,
    /// `SpinCount`.
    pub spin_count: u64,
    /// How `LockCount` is encoded; `None` for -1 (free in both encodings).
    pub encoding: Option<LockEncoding>,
    /// Whether it is held.
    pub locked: bool,
    /// Threads waiting for it, as `LockCount` counts them.
    pub waiters: u32,
    /// Bit-field encoding only: whether a waiter has been woken.
    pub waiter_woken: Option<bool>,
    /// The debug record's counters, when the dump holds it.
    pub debug: Option<DebugCounts>,
}

/// What was read at an address that is not taken for a critical section, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rejection {
    /// Some of its bytes are not in the dump.
    NotInDump,
    /// A field contradicts what a critical section holds.
    Inconsistent(String),
}

impl std::fmt::Display for Rejection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Rejection::NotInDump => f.write_str("its memory is not in the dump"),
            Rejection::Inconsistent(why) => f.write_str(why),
        }
    }
}

/// The raw fields at an address, before any check.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawCriticalSection {
    /// Its address.
    pub address: u64,
    /// `DebugInfo`.
    pub debug_info: u64,
    /// `LockCount`.
    pub lock_count: i32,
    /// `RecursionCount`.
    pub recursion_count: i32,
    /// `OwningThread`.
    pub owning_thread: u64,
    /// `LockSemaphore`.
    pub lock_semaphore: u64,
    /// `SpinCount`.
    pub spin_count: u64,
}

/// Reads the fields at `address`, or `None` when any byte is missing from the dump.
pub fn read_raw(session: &Session, address: u64) -> Option<RawCriticalSection> {
    let ptr = session.arch().pointer_size();
    let bytes: Vec<u8> = session
        .read_virtual(address, size(ptr))
        .into_iter()
        .collect::<Option<_>>()?;
    parse_raw(&bytes, address, ptr)
}

/// The fields in `bytes` (at least [`size`] of them), read as a section at `address`.
pub fn parse_raw(bytes: &[u8], address: u64, pointer_size: usize) -> Option<RawCriticalSection> {
    let layout = Layout { ptr: pointer_size };
    let bytes = bytes.get(..layout.size())?;
    let word = |at: usize| read_word(bytes, at, layout.ptr);
    let int =
        |at: usize| i32::from_le_bytes([bytes[at], bytes[at + 1], bytes[at + 2], bytes[at + 3]]);
    Some(RawCriticalSection {
        address,
        debug_info: word(0),
        lock_count: int(layout.lock_count()),
        recursion_count: int(layout.recursion_count()),
        owning_thread: word(layout.owning_thread()),
        lock_semaphore: word(layout.lock_semaphore()),
        spin_count: word(layout.spin_count()),
    })
}

/// Reads and checks the critical section at `address`. `thread_ids` are the dump's threads:
/// a held section must be owned by one of them. Checks: the address is aligned; a free section
/// has no owner and no recursion; a held one has an owner among `thread_ids`, a recursion
/// count of at least one and a waiter count that is not negative; no more waiters than the
/// dump has threads (every waiter is one); counts stay below 0x10000; `DebugInfo` is null, -1
/// or an aligned pointer.
pub fn read_critical_section(
    session: &Session,
    address: u64,
    thread_ids: &[u32],
) -> Result<CriticalSection, Rejection> {
    let ptr = session.arch().pointer_size();
    if !address.is_multiple_of(4) || address == 0 {
        return Err(Rejection::Inconsistent(format!(
            "{address:#x} is not an aligned address"
        )));
    }
    let raw = read_raw(session, address).ok_or(Rejection::NotInDump)?;
    let cs = check(&raw, ptr, thread_ids).map_err(Rejection::Inconsistent)?;
    Ok(with_debug_counts(session, cs))
}

/// The section with its debug record's counters, when the dump holds the record.
pub fn with_debug_counts(session: &Session, mut cs: CriticalSection) -> CriticalSection {
    cs.debug = debug_counts(session, &cs, session.arch().pointer_size());
    cs
}

/// The checks of [`read_critical_section`] on fields already read.
pub fn check(
    raw: &RawCriticalSection,
    pointer_size: usize,
    thread_ids: &[u32],
) -> Result<CriticalSection, String> {
    let all_ones = if pointer_size == 4 {
        u64::from(u32::MAX)
    } else {
        u64::MAX
    };
    let recursion = i64::from(raw.recursion_count);
    let lock = i64::from(raw.lock_count);
    if raw.debug_info != 0
        && raw.debug_info != all_ones
        && !raw.debug_info.is_multiple_of(pointer_size as u64)
    {
        return Err(format!(
            "DebugInfo {:#x} is not an aligned pointer",
            raw.debug_info
        ));
    }
    if pointer_size == 8 && raw.spin_count > u64::from(u32::MAX) {
        return Err(format!("SpinCount {:#x} is out of range", raw.spin_count));
    }
    if !(0..MAX_COUNT).contains(&recursion) {
        return Err(format!("RecursionCount {recursion} is out of range"));
    }
    let (encoding, locked, waiters, waiter_woken) = if lock >= 0 {
        let waiters = lock + 1 - recursion;
        if recursion == 0 || !(0..MAX_COUNT).contains(&waiters) {
            return Err(format!(
                "LockCount {lock} does not fit RecursionCount {recursion}"
            ));
        }
        (Some(LockEncoding::Counted), true, waiters, None)
    } else if lock == -1 {
        (None, false, 0, None)
    } else {
        let waiters = (-1 - lock) >> 2;
        if waiters >= MAX_COUNT {
            return Err(format!("LockCount {lock} counts too many waiters"));
        }
        (
            Some(LockEncoding::BitField),
            lock & 1 == 0,
            waiters,
            Some(lock & 2 == 0),
        )
    };
    // Every waiter is a thread of the process, which the dump lists.
    if waiters > thread_ids.len() as i64 {
        return Err(format!(
            "LockCount counts {waiters} waiters but the dump has {} threads",
            thread_ids.len()
        ));
    }
    if locked {
        if recursion == 0 {
            return Err("held (by LockCount) with RecursionCount 0".into());
        }
        if !thread_ids
            .iter()
            .any(|&t| u64::from(t) == raw.owning_thread)
        {
            return Err(format!(
                "OwningThread {:#x} is not a thread of the dump",
                raw.owning_thread
            ));
        }
    } else if raw.owning_thread != 0 || recursion != 0 {
        return Err(format!(
            "free (by LockCount) but OwningThread {:#x}, RecursionCount {recursion}",
            raw.owning_thread
        ));
    }
    Ok(CriticalSection {
        address: raw.address,
        debug_info: raw.debug_info,
        lock_count: raw.lock_count,
        recursion_count: raw.recursion_count,
        owning_thread: raw.owning_thread,
        lock_semaphore: raw.lock_semaphore,
        spin_count: raw.spin_count,
        encoding,
        locked,
        waiters: waiters as u32,
        waiter_woken,
        debug: None,
    })
}

/// `EntryCount` and `ContentionCount` from the debug record, when the dump holds it and its
/// `CriticalSection` field points back at the section.
fn debug_counts(session: &Session, raw: &CriticalSection, ptr: usize) -> Option<DebugCounts> {
    let layout = Layout { ptr };
    if raw.debug_info == 0 || raw.debug_info.count_ones() as usize == 8 * ptr {
        return None;
    }
    let bytes: Vec<u8> = session
        .read_virtual(raw.debug_info, layout.debug_size())
        .into_iter()
        .collect::<Option<_>>()?;
    if read_word(&bytes, layout.debug_critical_section(), ptr) != raw.address {
        return None;
    }
    let at = layout.debug_entry_count();
    let u32_at =
        |o: usize| u32::from_le_bytes([bytes[o], bytes[o + 1], bytes[o + 2], bytes[o + 3]]);
    Some(DebugCounts {
        entry_count: u32_at(at),
        contention_count: u32_at(at + 4),
    })
}

/// A little-endian pointer-sized word of `bytes` at `at`.
fn read_word(bytes: &[u8], at: usize, ptr: usize) -> u64 {
    let mut word = [0u8; 8];
    word[..ptr].copy_from_slice(&bytes[at..at + ptr]);
    u64::from_le_bytes(word)
}

/// The size of a critical section for a pointer size.
pub fn size(pointer_size: usize) -> usize {
    Layout { ptr: pointer_size }.size()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn raw(lock: i32, recursion: i32, owner: u64) -> RawCriticalSection {
        RawCriticalSection {
            address: 0x1000,
            debug_info: 0x2000,
            lock_count: lock,
            recursion_count: recursion,
            owning_thread: owner,
            lock_semaphore: 0,
            spin_count: 0,
        }
    }

    #[test]
    fn counted_encoding_counts_waiters() {
        let cs = check(&raw(1, 1, 0xd4), 8, &[0xd4, 0xd8]).unwrap();
        assert_eq!(
            (cs.encoding, cs.locked, cs.waiters),
            (Some(LockEncoding::Counted), true, 1)
        );
        let free = check(&raw(-1, 0, 0), 8, &[0xd4]).unwrap();
        assert!(!free.locked);
    }

    #[test]
    fn bit_field_encoding_counts_waiters() {
        // -6: locked (bit 0 clear), no waiter woken (bit 1 set), one waiter.
        let cs = check(&raw(-6, 1, 0xd4), 8, &[0xd4]).unwrap();
        assert_eq!(cs.encoding, Some(LockEncoding::BitField));
        assert!(cs.locked);
        assert_eq!(cs.waiters, 1);
        assert_eq!(cs.waiter_woken, Some(false));
    }

    #[test]
    fn x86_layout_is_six_dwords() {
        let mut bytes = Vec::new();
        for v in [0x0015_0a40u32, 0, 1, 0x1a4, 0x7f4, 0] {
            bytes.extend(v.to_le_bytes());
        }
        assert_eq!(size(4), bytes.len());
        let raw = parse_raw(&bytes, 0x40_3000, 4).expect("parses");
        assert_eq!(
            (
                raw.debug_info,
                raw.lock_count,
                raw.recursion_count,
                raw.owning_thread,
                raw.lock_semaphore
            ),
            (0x0015_0a40, 0, 1, 0x1a4, 0x7f4)
        );
        let cs = check(&raw, 4, &[0x1a4]).expect("checks out");
        assert!(cs.locked && cs.waiters == 0);
        assert!(parse_raw(&bytes[..20], 0x40_3000, 4).is_none());
        // x86 DebugInfo of -1 is 0xffffffff.
        let mut no_debug = raw;
        no_debug.debug_info = 0xffff_ffff;
        assert!(check(&no_debug, 4, &[0x1a4]).is_ok());
    }

    #[test]
    fn inconsistent_fields_are_rejected() {
        // Owner not a thread of the dump.
        assert!(check(&raw(0, 1, 0x1234), 8, &[0xd4]).is_err());
        // Held with no recursion.
        assert!(check(&raw(0, 0, 0xd4), 8, &[0xd4]).is_err());
        // More recursions than LockCount allows.
        assert!(check(&raw(0, 3, 0xd4), 8, &[0xd4]).is_err());
        // Free with an owner.
        assert!(check(&raw(-1, 0, 0xd4), 8, &[0xd4]).is_err());
        // Absurd counts.
        assert!(check(&raw(0x7fff_0000, 1, 0xd4), 8, &[0xd4]).is_err());
        // More waiters than threads.
        assert!(check(&raw(3, 1, 0xd4), 8, &[0xd4, 0xd8]).is_err());
        assert!(check(&raw(1, 1, 0xd4), 8, &[0xd4, 0xd8]).is_ok());
        let mut unaligned = raw(0, 1, 0xd4);
        unaligned.debug_info = 0x2003;
        assert!(check(&unaligned, 8, &[0xd4]).is_err());
    }
}
