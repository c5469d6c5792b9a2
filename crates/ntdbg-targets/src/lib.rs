//! Debug targets for ntdbg.
//!
//! A [`Target`] answers what the engine needs from anything it debugs: the CPU architecture,
//! threads and their register contexts, loaded modules, the last event (exception), and
//! virtual memory that reports exactly which bytes are missing — a dump has holes, and nothing
//! here ever invents bytes.
//!
//! [`UserDump`] is the target for Windows user-mode minidumps (MDMP). The file is
//! memory-mapped; streams are parsed once at open time into owned facts, and memory reads
//! borrow straight from the mapping. [`KernelDump`] reads kernel crash dumps (`PAGEDU64` /
//! `PAGEDUMP`: small/triage, kernel, complete and bitmap). [`open`] picks one by signature.
//! [`listing`] finds the dumps in a folder and reads a header-only summary of each.
//!
//! ```no_run
//! use ntdbg_targets::{Target, UserDump};
//! let dump = UserDump::open("crash.dmp".as_ref())?;
//! println!("{} threads, {} modules", dump.threads().len(), dump.modules().iter().count());
//! # Ok::<(), ntdbg_targets::TargetError>(())
//! ```

pub mod context;
mod cut_dump;
mod error;
pub mod gdb_target;
pub mod kernel_dump;
pub mod listing;
mod loader_list;
mod memory;
mod memory_streams;
pub mod minidump_writer;
mod model;
mod process_facts;
mod stub_memory_map;
mod user_dump;
mod user_layout;

pub use error::TargetError;
pub use gdb_target::GdbTarget;
pub use kernel_dump::KernelDump;
pub use memory::{MemoryRegion, MemoryView, SharedOwner};
pub use memory_streams::{CommitFacts, ProcessCommit, SystemCommit};
pub use model::{
    memory_flags, memory_info_at, Arch, Bugcheck, ExceptionEvent, MemoryInfo, SystemFacts,
    TargetKind, ThreadInfo, PROCESSOR_ARCHITECTURE_ARM,
};
pub use process_facts::{HandleInfo, ThreadTimes, UnloadedModule};
pub use user_dump::UserDump;
pub use user_layout::{LdrLayout, ParamsLayout, PebLayout, TebLayout, UserLayout};

/// Opens a dump file of any kind this crate reads, chosen by its signature: `MDMP` gives a
/// [`UserDump`], `PAGEDU64`/`PAGEDUMP` a [`KernelDump`].
/// Only a regular file is opened: a directory, a FIFO or a device fails at once
/// ([`ntdbg_files::open_regular`]).
pub fn open(path: &std::path::Path) -> Result<Box<dyn Target>, TargetError> {
    use std::io::Read;
    let mut head = [0u8; 8];
    let read = ntdbg_files::open_regular(path)
        .and_then(|mut f| f.read(&mut head))
        .map_err(|cause| TargetError::Io {
            path: path.to_path_buf(),
            cause,
        })?;
    if read == 8 && (head == *b"PAGEDU64" || head == *b"PAGEDUMP") {
        return Ok(Box::new(KernelDump::open(path)?));
    }
    Ok(Box::new(UserDump::open(path)?))
}

/// Re-exported so that callers name the same register-context and module types.
pub use minidump::{MinidumpContext, MinidumpModule, MinidumpModuleList};

/// What the engine needs from a debug target (dump or live).
pub trait Target: MemoryView + Send + Sync + std::fmt::Debug {
    /// What sort of target this is.
    fn kind(&self) -> TargetKind;
    /// The CPU architecture of the debuggee.
    fn arch(&self) -> Arch;
    /// Operating system, CPU and process facts.
    fn system(&self) -> &SystemFacts;
    /// The threads, in the order the target lists them.
    fn threads(&self) -> &[ThreadInfo];
    /// The WinDbg number (`~N`) of the thread at `index` of [`Target::threads`]: the index
    /// itself for a dump; a live target keeps each thread's number for the whole session
    /// (a new thread gets the next number, the numbers of threads that ended are not reused).
    fn thread_number(&self, index: usize) -> usize {
        index
    }
    /// The loaded modules.
    fn modules(&self) -> &MinidumpModuleList;
    /// The last event (the exception that caused the dump), if any.
    fn event(&self) -> Option<&ExceptionEvent>;
    /// Where the target came from (a file path or a connection string), for people.
    fn origin(&self) -> &str;
    /// Makes `event` the exception of a live target's current stop (what
    /// [`Target::event`] returns until the next stop); dumps keep their own and ignore it.
    fn set_live_event(&mut self, _event: Option<ExceptionEvent>) {}
    /// The bugcheck that caused a kernel dump; `None` for user-mode targets.
    fn bugcheck(&self) -> Option<&Bugcheck> {
        None
    }
    /// The process's open handles (a minidump's HandleData stream); `None` when the target
    /// does not record them.
    fn handles(&self) -> Option<&[HandleInfo]> {
        None
    }
    /// Each thread's times (a minidump's ThreadInfoList stream); `None` when the target does
    /// not record them.
    fn thread_times(&self) -> Option<&[ThreadTimes]> {
        None
    }
    /// Modules unloaded before the dump was written (a minidump's UnloadedModuleList stream);
    /// empty when the target records none.
    fn unloaded_modules(&self) -> &[UnloadedModule] {
        &[]
    }
    /// The address-space layout at dump time (MemoryInfoList stream), sorted by base; `None`
    /// when the target does not record one.
    fn memory_info(&self) -> Option<&[MemoryInfo]> {
        None
    }
    /// System and process commit at dump time (a minidump's SystemMemoryInfo and
    /// ProcessVmCounters streams); empty when the target records neither.
    fn commit_facts(&self) -> CommitFacts {
        CommitFacts::default()
    }
    /// The stack memory around stack pointer `sp` that a stack walk may read: the captured
    /// region holding it, or (kernel dumps) the mapped pages from `sp` up, for a register
    /// context that did not come from a thread of the dump (`.cxr`, `.trap`).
    fn stack_region_at(&self, sp: u64) -> Option<MemoryRegion> {
        self.regions().into_iter().find(|r| r.contains(sp))
    }
    /// The kernel dump behind this target, for the kernel-only commands (`.process`,
    /// `!process`, …); `None` for every other target.
    fn as_kernel_dump(&self) -> Option<&KernelDump> {
        None
    }
    /// What could not be read from the target's file, one line each: a dump cut short keeps
    /// its streams' whole parts and says here what lies past the end. The analysis reports
    /// these as limitations.
    fn file_losses(&self) -> &[String] {
        &[]
    }
    /// Whether captured memory (a range, a thread's stack) lies past the end of the file:
    /// a guess that reads memory (a stack scan) may then miss what would have refuted it.
    fn memory_cut_short(&self) -> bool {
        false
    }
    /// `Ok` while the file the target reads (a dump) holds what it held when it was opened;
    /// the error says how it changed (truncated, copied over, written). What was read from it
    /// since may be wrong. Targets that are no file always answer `Ok`.
    fn check_source(&self) -> Result<(), ntdbg_files::FileChanged> {
        Ok(())
    }
    /// Re-reads what a live target may have changed while it ran (threads, registers,
    /// modules) and forgets cached memory. Dumps never change: the default does nothing.
    fn refresh(&mut self) -> Result<(), TargetError> {
        Ok(())
    }
}
