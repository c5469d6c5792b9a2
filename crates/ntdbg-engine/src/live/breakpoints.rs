//! The breakpoint table of a live session: what `bp`, `ba` and `bl` show, and what is
//! inserted in the target.

use ntdbg_gdbremote::BreakpointKind;

/// What a `ba` breakpoint watches, as WinDbg spells it (`e`, `w`, `r`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Access {
    /// `e`: execution (a hardware breakpoint).
    Execute,
    /// `w`: writes.
    Write,
    /// `r`: reads or writes.
    ReadWrite,
}

impl Access {
    /// The WinDbg letter.
    pub fn letter(self) -> char {
        match self {
            Access::Execute => 'e',
            Access::Write => 'w',
            Access::ReadWrite => 'r',
        }
    }
}

/// How a breakpoint stops the target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakKind {
    /// `bp`/`bu`: a software breakpoint (`Z0`, or an `int3` written when the stub refuses it).
    Software,
    /// `ba ACCESS SIZE`: a hardware breakpoint or watchpoint.
    Hardware {
        /// What it watches.
        access: Access,
        /// How many bytes (1, 2, 4 or 8).
        size: u8,
    },
}

impl BreakKind {
    /// The `Z` packet kind and length that insert it.
    pub(crate) fn packet(self) -> (BreakpointKind, usize) {
        match self {
            BreakKind::Software => (BreakpointKind::Software, 1),
            BreakKind::Hardware { access, size } => match access {
                Access::Execute => (BreakpointKind::Hardware, 1),
                Access::Write => (BreakpointKind::WriteWatch, size.into()),
                Access::ReadWrite => (BreakpointKind::AccessWatch, size.into()),
            },
        }
    }

    /// Whether it stops when the instruction at its address is about to run.
    pub fn is_execution(self) -> bool {
        matches!(
            self,
            BreakKind::Software
                | BreakKind::Hardware {
                    access: Access::Execute,
                    ..
                }
        )
    }
}

/// The thread and frame a temporary breakpoint of a step stops (`p` over a call, `gu`,
/// `pa`): that thread only, and only once its stack pointer is back at or above `sp` (a
/// recursive call that reaches the same address deeper in the stack goes on).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FrameOwner {
    /// The thread id.
    pub thread: u64,
    /// The stack pointer when the step began.
    pub sp: u64,
}

/// What a stop at an execution breakpoint's address means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Hit {
    /// User breakpoint `N` (its hit count is incremented).
    User(u32),
    /// A temporary breakpoint for this thread and frame: the step or `g ADDR` is done.
    Temporary,
    /// Only a temporary breakpoint of another thread, or of this thread deeper in its
    /// stack: the thread goes on.
    Foreign,
    /// No enabled execution breakpoint is there.
    None,
}

/// One breakpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Breakpoint {
    /// The number `bl` shows and `bc`/`bd`/`be` take; `None` for the debugger's own
    /// temporary breakpoints (`p` over a call, `gu`, `pa`, `g ADDR`).
    pub id: Option<u32>,
    /// Where it is.
    pub address: u64,
    /// Software or hardware.
    pub kind: BreakKind,
    /// Whether it is enabled (inserted in the target).
    pub enabled: bool,
    /// How many times it was hit.
    pub hits: u64,
    /// For a temporary breakpoint of a step: the thread and frame it stops.
    pub owner: Option<FrameOwner>,
}

/// Every breakpoint of a session.
#[derive(Debug, Default)]
pub struct Breakpoints {
    list: Vec<Breakpoint>,
    next_id: u32,
}

/// Most breakpoints one session keeps.
pub const MAX_BREAKPOINTS: usize = 1024;

impl Breakpoints {
    /// The breakpoints, by number (temporary ones last).
    pub fn list(&self) -> &[Breakpoint] {
        &self.list
    }

    /// The user breakpoint at `address` of `kind`, if one exists.
    pub fn find(&self, address: u64, kind: BreakKind) -> Option<&Breakpoint> {
        self.list
            .iter()
            .find(|b| b.id.is_some() && b.address == address && b.kind == kind)
    }

    /// Adds a breakpoint and returns it; `temporary` ones get no number, and stop only
    /// `owner` when one is given.
    pub(crate) fn add(
        &mut self,
        address: u64,
        kind: BreakKind,
        temporary: bool,
        owner: Option<FrameOwner>,
    ) -> &Breakpoint {
        let id = (!temporary).then(|| {
            let id = self.next_id;
            self.next_id += 1;
            id
        });
        self.list.push(Breakpoint {
            id,
            address,
            kind,
            enabled: true,
            hits: 0,
            owner: owner.filter(|_| temporary),
        });
        self.list.sort_by_key(|b| b.id.unwrap_or(u32::MAX));
        self.list
            .iter()
            .find(|b| b.id == id && b.address == address)
            .unwrap_or(&self.list[0])
    }

    /// Whether an enabled breakpoint other than `except` uses the same slot in the target.
    pub(crate) fn shares_slot(&self, address: u64, kind: BreakKind, except: Option<u32>) -> bool {
        self.list.iter().any(|b| {
            b.enabled && b.address == address && b.kind.packet() == kind.packet() && b.id != except
        })
    }

    /// The distinct `Z` slots of the enabled execution breakpoints at `pc`.
    /// Where the enabled software breakpoints are, each address once.
    pub(crate) fn software_sites(&self) -> Vec<u64> {
        let mut sites: Vec<u64> = self
            .list
            .iter()
            .filter(|b| b.enabled && b.kind == BreakKind::Software)
            .map(|b| b.address)
            .collect();
        sites.sort_unstable();
        sites.dedup();
        sites
    }

    pub(crate) fn execution_slots_at(&self, pc: u64) -> Vec<(BreakpointKind, usize)> {
        let mut slots = Vec::new();
        for b in &self.list {
            if b.enabled && b.address == pc && b.kind.is_execution() {
                let slot = b.kind.packet();
                if !slots.contains(&slot) {
                    slots.push(slot);
                }
            }
        }
        slots
    }

    /// Mutable access to one user breakpoint.
    pub(crate) fn get_mut(&mut self, id: u32) -> Option<&mut Breakpoint> {
        self.list.iter_mut().find(|b| b.id == Some(id))
    }

    /// Removes one user breakpoint.
    pub(crate) fn remove(&mut self, id: u32) -> Option<Breakpoint> {
        let at = self.list.iter().position(|b| b.id == Some(id))?;
        Some(self.list.remove(at))
    }

    /// Removes the temporary breakpoints and returns them.
    pub(crate) fn take_temporary(&mut self) -> Vec<Breakpoint> {
        let (temp, keep) = std::mem::take(&mut self.list)
            .into_iter()
            .partition(|b| b.id.is_none());
        self.list = keep;
        temp
    }

    /// What thread `thread`, with stack pointer `sp`, stopping at `pc` hit: a user
    /// breakpoint (counted), a temporary one it stops at, or only breakpoints that let it go.
    pub(crate) fn hit_at(&mut self, pc: u64, thread: u64, sp: Option<u64>) -> Hit {
        let mut seen = false;
        let mut temporary = false;
        for b in self.list.iter_mut() {
            if !(b.enabled && b.address == pc && b.kind.is_execution()) {
                continue;
            }
            seen = true;
            match (b.id, b.owner) {
                (Some(id), _) => {
                    b.hits += 1;
                    return Hit::User(id);
                }
                (None, None) => temporary = true,
                (None, Some(o)) => {
                    temporary |= o.thread == thread && sp.is_none_or(|sp| sp >= o.sp);
                }
            }
        }
        match (temporary, seen) {
            (true, _) => Hit::Temporary,
            (false, true) => Hit::Foreign,
            (false, false) => Hit::None,
        }
    }

    /// Counts a hit on the enabled watchpoint covering `addr` and returns its number.
    pub(crate) fn watch_hit(&mut self, addr: u64) -> Option<u32> {
        let b = self.list.iter_mut().find(|b| {
            b.enabled
                && !b.kind.is_execution()
                && match b.kind {
                    BreakKind::Hardware { size, .. } => {
                        addr >= b.address && addr < b.address + u64::from(size)
                    }
                    BreakKind::Software => false,
                }
        })?;
        b.hits += 1;
        b.id
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_hits_and_temporaries() {
        let mut t = Breakpoints::default();
        assert_eq!(t.add(0x10, BreakKind::Software, false, None).id, Some(0));
        assert_eq!(t.add(0x20, BreakKind::Software, true, None).id, None);
        let watch = BreakKind::Hardware {
            access: Access::Write,
            size: 4,
        };
        assert_eq!(t.add(0x30, watch, false, None).id, Some(1));
        assert_eq!(t.hit_at(0x10, 7, None), Hit::User(0));
        assert_eq!(t.hit_at(0x20, 7, None), Hit::Temporary);
        assert_eq!(t.hit_at(0x40, 7, None), Hit::None);
        assert_eq!(t.watch_hit(0x33), Some(1));
        assert_eq!(t.watch_hit(0x34), None);
        assert_eq!(t.take_temporary().len(), 1);
        assert_eq!(t.list().len(), 2);
        assert!(t.shares_slot(0x10, BreakKind::Software, None));
        assert!(!t.shares_slot(0x10, BreakKind::Software, Some(0)));
        assert_eq!(t.remove(0).map(|b| b.address), Some(0x10));
        assert_eq!(watch.packet(), (BreakpointKind::WriteWatch, 4));
    }

    #[test]
    fn a_steps_breakpoint_stops_its_thread_in_its_frame_only() {
        let mut t = Breakpoints::default();
        let owner = FrameOwner {
            thread: 7,
            sp: 0x1000,
        };
        t.add(0x50, BreakKind::Software, true, Some(owner));
        assert_eq!(t.hit_at(0x50, 8, Some(0x2000)), Hit::Foreign);
        assert_eq!(
            t.hit_at(0x50, 7, Some(0x0f00)),
            Hit::Foreign,
            "deeper: recursion"
        );
        assert_eq!(t.hit_at(0x50, 7, Some(0x1008)), Hit::Temporary);
        // A user breakpoint at the same place stops every thread.
        t.add(0x50, BreakKind::Software, false, None);
        assert_eq!(t.hit_at(0x50, 8, None), Hit::User(0));
        assert_eq!(t.list()[0].hits, 1);
    }
}
