//! Kernel processes and threads read from a dump's memory: the `_EPROCESS` list from
//! `PsActiveProcessHead`, each process's `_ETHREAD` list, and the register state a waiting
//! thread saved when it was switched out.
//!
//! Every offset comes from a [`KernelLayout`]: from the kernel's PDB
//! ([`KernelLayout::from_types`], through [`kernel_layout`]) or from a table the caller
//! supplies. Nothing here assumes a Windows build, so nothing is printed from a guessed
//! structure.

use minidump::format as md;
use minidump::{MinidumpContext, MinidumpRawContext};
use ntdbg_engine::Session;
use ntdbg_symbols::TypeDb;
use ntdbg_targets::{Arch, Target};
use std::collections::HashSet;
use std::fmt;

/// Most entries followed in one kernel list (a real system has a few thousand threads).
pub const MAX_LIST_ENTRIES: usize = 65_536;
/// Bytes of `_EPROCESS.ImageFileName`.
const IMAGE_FILE_NAME_LEN: usize = 15;

/// `_EPROCESS` field offsets (from the start of the `_EPROCESS`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessLayout {
    /// `Pcb.DirectoryTableBase`: the process's page-table root.
    pub directory_table_base: u64,
    /// `ActiveProcessLinks`: the entry in the `PsActiveProcessHead` list.
    pub active_process_links: u64,
    /// `UniqueProcessId`.
    pub unique_process_id: u64,
    /// `InheritedFromUniqueProcessId` (the parent's id), when the layout has it.
    pub parent_process_id: Option<u64>,
    /// `Peb`, when the layout has it.
    pub peb: Option<u64>,
    /// `ImageFileName` (15 bytes).
    pub image_file_name: u64,
    /// `ThreadListHead`: the list of `_ETHREAD.ThreadListEntry`.
    pub thread_list_head: u64,
}

/// `_ETHREAD` field offsets (from the start of the `_ETHREAD`; `Tcb` fields included).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadLayout {
    /// `ThreadListEntry`: the entry in the process's `ThreadListHead` list.
    pub thread_list_entry: u64,
    /// `Cid` (`UniqueProcess`, `UniqueThread`).
    pub cid: u64,
    /// `Tcb.Teb`.
    pub teb: Option<u64>,
    /// `Win32StartAddress`.
    pub win32_start_address: Option<u64>,
    /// `Tcb.State` (a byte: `KTHREAD_STATE`).
    pub state: Option<u64>,
    /// `Tcb.WaitReason` (a byte: `KWAIT_REASON`).
    pub wait_reason: Option<u64>,
    /// `Tcb.InitialStack`.
    pub initial_stack: Option<u64>,
    /// `Tcb.StackBase`.
    pub stack_base: Option<u64>,
    /// `Tcb.StackLimit`.
    pub stack_limit: Option<u64>,
    /// `Tcb.KernelStack`: the stack pointer saved at the last context switch.
    pub kernel_stack: Option<u64>,
    /// `Tcb.Process`: the owning `_EPROCESS`.
    pub process: Option<u64>,
}

/// `_KSWITCH_FRAME` (x64): what a thread leaves at `KernelStack` when it is switched out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwitchFrameLayout {
    /// `Rbp`.
    pub rbp: u64,
    /// `Return`: where the thread resumes.
    pub return_address: u64,
    /// Size of the frame: the caller's stack pointer is `KernelStack` plus this.
    pub size: u64,
}

/// Where the process and thread commands find each field of the kernel's structures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelLayout {
    /// Pointer size of the kernel (4 or 8).
    pub pointer_size: u8,
    /// `_EPROCESS`.
    pub process: ProcessLayout,
    /// `_ETHREAD`.
    pub thread: ThreadLayout,
    /// `_KSWITCH_FRAME`, when the kernel has one (x64).
    pub switch_frame: Option<SwitchFrameLayout>,
}

/// Offsets of the named fields of one structure of a PDB.
struct Fields<'a> {
    types: &'a TypeDb,
    name: &'static str,
}

impl Fields<'_> {
    fn get(&self, field: &str) -> Option<u64> {
        let fields = self.types.fields(self.name)?;
        fields.iter().find(|f| f.name == field).map(|f| f.offset)
    }

    fn require(&self, field: &str) -> Result<u64, String> {
        self.get(field)
            .ok_or_else(|| format!("the kernel's PDB has no {}.{field}", self.name))
    }
}

impl KernelLayout {
    /// The offsets from the kernel's PDB types (`_EPROCESS`, `_KPROCESS`, `_ETHREAD`,
    /// `_KTHREAD`, `_KSWITCH_FRAME`). An error names the first required field it lacks.
    pub fn from_types(types: &TypeDb) -> Result<KernelLayout, String> {
        let eprocess = Fields {
            types,
            name: "_EPROCESS",
        };
        let kprocess = Fields {
            types,
            name: "_KPROCESS",
        };
        let ethread = Fields {
            types,
            name: "_ETHREAD",
        };
        let kthread = Fields {
            types,
            name: "_KTHREAD",
        };
        let pcb = eprocess.require("Pcb")?;
        let tcb = ethread.require("Tcb")?;
        let in_tcb = |field: &str| kthread.get(field).map(|o| tcb + o);
        let process = ProcessLayout {
            directory_table_base: pcb + kprocess.require("DirectoryTableBase")?,
            active_process_links: eprocess.require("ActiveProcessLinks")?,
            unique_process_id: eprocess.require("UniqueProcessId")?,
            parent_process_id: eprocess.get("InheritedFromUniqueProcessId"),
            peb: eprocess.get("Peb"),
            image_file_name: eprocess.require("ImageFileName")?,
            thread_list_head: eprocess.require("ThreadListHead")?,
        };
        let thread = ThreadLayout {
            thread_list_entry: ethread.require("ThreadListEntry")?,
            cid: ethread.require("Cid")?,
            teb: in_tcb("Teb"),
            win32_start_address: ethread.get("Win32StartAddress"),
            state: in_tcb("State"),
            wait_reason: in_tcb("WaitReason"),
            initial_stack: in_tcb("InitialStack"),
            stack_base: in_tcb("StackBase"),
            stack_limit: in_tcb("StackLimit"),
            kernel_stack: in_tcb("KernelStack"),
            process: in_tcb("Process"),
        };
        let frame = Fields {
            types,
            name: "_KSWITCH_FRAME",
        };
        let switch_frame = match (frame.get("Rbp"), frame.get("Return")) {
            (Some(rbp), Some(ret)) => Some(SwitchFrameLayout {
                rbp,
                return_address: ret,
                size: ret + 8,
            }),
            _ => None,
        };
        Ok(KernelLayout {
            pointer_size: types.pointer_size(),
            process,
            thread,
            switch_frame,
        })
    }
}

/// Why a kernel object could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KernelObjectError {
    /// Bytes the answer needs are not in the dump.
    Unreadable {
        /// What was being read (`the process list head`, `_EPROCESS.UniqueProcessId`, …).
        what: String,
        /// Where.
        address: u64,
    },
    /// A list that does not come back to its head (corrupt, or longer than
    /// [`MAX_LIST_ENTRIES`]).
    Endless {
        /// Which list.
        list: &'static str,
    },
}

impl fmt::Display for KernelObjectError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KernelObjectError::Unreadable { what, address } => {
                write!(f, "{what} at {address:#x} is not in the dump")
            }
            KernelObjectError::Endless { list } => write!(
                f,
                "the {list} list loops or does not return to its head within {MAX_LIST_ENTRIES} entries (corrupt memory)"
            ),
        }
    }
}

impl std::error::Error for KernelObjectError {}

/// A process (`_EPROCESS`) as `!process` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelProcess {
    /// Address of the `_EPROCESS`.
    pub address: u64,
    /// `UniqueProcessId`.
    pub pid: u64,
    /// `InheritedFromUniqueProcessId`.
    pub parent_pid: Option<u64>,
    /// `Peb`.
    pub peb: Option<u64>,
    /// `Pcb.DirectoryTableBase`.
    pub directory_table_base: u64,
    /// `ImageFileName`.
    pub image: String,
}

/// A thread (`_ETHREAD`) as `!thread` shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KernelThread {
    /// Address of the `_ETHREAD`.
    pub address: u64,
    /// `Cid.UniqueProcess`.
    pub pid: u64,
    /// `Cid.UniqueThread`.
    pub tid: u64,
    /// `Tcb.Teb`.
    pub teb: Option<u64>,
    /// `Win32StartAddress`.
    pub start_address: Option<u64>,
    /// `Tcb.State`.
    pub state: Option<u8>,
    /// `Tcb.WaitReason`.
    pub wait_reason: Option<u8>,
    /// `Tcb.InitialStack`.
    pub initial_stack: Option<u64>,
    /// `Tcb.StackBase`.
    pub stack_base: Option<u64>,
    /// `Tcb.StackLimit`.
    pub stack_limit: Option<u64>,
    /// `Tcb.KernelStack`.
    pub kernel_stack: Option<u64>,
    /// `Tcb.Process`.
    pub process: Option<u64>,
}

/// Where a thread's registers came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RegisterSource {
    /// The `_KSWITCH_FRAME` a switched-out thread left: rip, rsp and rbp only.
    SwitchFrame,
    /// The dump's context of the processor the thread was running on: every register.
    Processor,
}

/// `KTHREAD_STATE` 2: the thread was on a processor when the dump was written.
pub const THREAD_RUNNING: u8 = 2;
/// `KTHREAD_STATE` 5: the thread was waiting (its `WaitReason` says for what).
pub const THREAD_WAITING: u8 = 5;

/// The `KTHREAD_STATE` name of a state value.
pub fn thread_state_name(state: u8) -> Option<&'static str> {
    const NAMES: &[&str] = &[
        "Initialized",
        "Ready",
        "Running",
        "Standby",
        "Terminated",
        "Waiting",
        "Transition",
        "DeferredReady",
        "GateWaitObsolete",
        "WaitingForProcessInSwap",
    ];
    NAMES.get(usize::from(state)).copied()
}

/// The `KWAIT_REASON` name of a wait reason value.
pub fn wait_reason_name(reason: u8) -> Option<&'static str> {
    const NAMES: &[&str] = &[
        "Executive",
        "FreePage",
        "PageIn",
        "PoolAllocation",
        "DelayExecution",
        "Suspended",
        "UserRequest",
        "WrExecutive",
        "WrFreePage",
        "WrPageIn",
        "WrPoolAllocation",
        "WrDelayExecution",
        "WrSuspended",
        "WrUserRequest",
        "WrSpare0",
        "WrQueue",
        "WrLpcReceive",
        "WrLpcReply",
        "WrVirtualMemory",
        "WrPageOut",
        "WrRendezvous",
        "WrKeyedEvent",
        "WrTerminated",
        "WrProcessInSwap",
        "WrCpuRateControl",
        "WrCalloutStack",
        "WrKernel",
        "WrResource",
        "WrPushLock",
        "WrMutex",
        "WrQuantumEnd",
        "WrDispatchInt",
        "WrPreempted",
        "WrYieldExecution",
        "WrFastMutex",
        "WrGuardedMutex",
        "WrRundown",
        "WrAlertByThreadId",
        "WrDeferredPreempt",
        "WrPhysicalFault",
    ];
    NAMES.get(usize::from(reason)).copied()
}

/// Reads kernel objects from a target's memory with one layout.
#[derive(Debug, Clone, Copy)]
pub struct KernelObjects<'a> {
    memory: &'a dyn Target,
    layout: &'a KernelLayout,
}

impl<'a> KernelObjects<'a> {
    /// A reader over `memory` with `layout`.
    pub fn new(memory: &'a dyn Target, layout: &'a KernelLayout) -> KernelObjects<'a> {
        KernelObjects { memory, layout }
    }

    fn pointer(&self, address: u64, what: impl Fn() -> String) -> Result<u64, KernelObjectError> {
        self.memory
            .read_uint(address, usize::from(self.layout.pointer_size))
            .ok_or_else(|| KernelObjectError::Unreadable {
                what: what(),
                address,
            })
    }

    fn optional(&self, base: u64, offset: Option<u64>, size: usize) -> Option<u64> {
        self.memory.read_uint(base.checked_add(offset?)?, size)
    }

    /// The entries (`Flink` values) of the list whose head is at `head`, head excluded.
    fn list(&self, head: u64, list: &'static str) -> Result<Vec<u64>, KernelObjectError> {
        let mut out = Vec::new();
        let mut seen = HashSet::new();
        let mut next = self.pointer(head, || format!("the head of the {list} list"))?;
        while next != head {
            if out.len() >= MAX_LIST_ENTRIES || !seen.insert(next) {
                return Err(KernelObjectError::Endless { list });
            }
            out.push(next);
            next = self.pointer(next, || format!("an entry of the {list} list"))?;
        }
        Ok(out)
    }

    /// Every process on the `PsActiveProcessHead` list at `head`, in list order.
    pub fn processes(&self, head: u64) -> Result<Vec<KernelProcess>, KernelObjectError> {
        let links = self.layout.process.active_process_links;
        self.list(head, "active process")?
            .into_iter()
            .map(|entry| self.process(entry.wrapping_sub(links)))
            .collect()
    }

    /// The process whose `_EPROCESS` is at `address`.
    pub fn process(&self, address: u64) -> Result<KernelProcess, KernelObjectError> {
        let p = &self.layout.process;
        let field = |offset: u64, name: &'static str| {
            self.pointer(address.wrapping_add(offset), || format!("_EPROCESS.{name}"))
        };
        let name_at = address.wrapping_add(p.image_file_name);
        let name = self
            .memory
            .read_exact(name_at, IMAGE_FILE_NAME_LEN)
            .ok_or_else(|| KernelObjectError::Unreadable {
                what: "_EPROCESS.ImageFileName".into(),
                address: name_at,
            })?;
        let end = name.iter().position(|&b| b == 0).unwrap_or(name.len());
        let ptr = usize::from(self.layout.pointer_size);
        Ok(KernelProcess {
            address,
            pid: field(p.unique_process_id, "UniqueProcessId")?,
            parent_pid: self.optional(address, p.parent_process_id, ptr),
            peb: self.optional(address, p.peb, ptr),
            directory_table_base: field(p.directory_table_base, "Pcb.DirectoryTableBase")?,
            image: String::from_utf8_lossy(&name[..end]).into_owned(),
        })
    }

    /// The threads of `process`, in list order.
    pub fn threads(&self, process: &KernelProcess) -> Result<Vec<KernelThread>, KernelObjectError> {
        let head = process
            .address
            .wrapping_add(self.layout.process.thread_list_head);
        let entry = self.layout.thread.thread_list_entry;
        self.list(head, "thread")?
            .into_iter()
            .map(|e| self.thread(e.wrapping_sub(entry)))
            .collect()
    }

    /// The thread whose `_ETHREAD` is at `address`.
    pub fn thread(&self, address: u64) -> Result<KernelThread, KernelObjectError> {
        let t = &self.layout.thread;
        let ptr = usize::from(self.layout.pointer_size);
        let cid = address.wrapping_add(t.cid);
        let pid = self.pointer(cid, || "_ETHREAD.Cid".into())?;
        let tid = self.pointer(cid.wrapping_add(ptr as u64), || "_ETHREAD.Cid".into())?;
        let byte = |offset| self.optional(address, offset, 1).map(|v| v as u8);
        Ok(KernelThread {
            address,
            pid,
            tid,
            teb: self.optional(address, t.teb, ptr),
            start_address: self.optional(address, t.win32_start_address, ptr),
            state: byte(t.state),
            wait_reason: byte(t.wait_reason),
            initial_stack: self.optional(address, t.initial_stack, ptr),
            stack_base: self.optional(address, t.stack_base, ptr),
            stack_limit: self.optional(address, t.stack_limit, ptr),
            kernel_stack: self.optional(address, t.kernel_stack, ptr),
            process: self.optional(address, t.process, ptr),
        })
    }

    /// The registers of `thread` and where they came from: a running thread's are the dump's
    /// context of its processor (found by its stack pointer lying in the thread's stack), a
    /// switched-out one's its `_KSWITCH_FRAME`. An error says why there are none.
    pub fn thread_context(
        &self,
        arch: Arch,
        thread: &KernelThread,
    ) -> Result<(MinidumpContext, RegisterSource), String> {
        if thread.state != Some(THREAD_RUNNING) {
            return self
                .switch_frame_context(arch, thread)
                .map(|c| (c, RegisterSource::SwitchFrame));
        }
        self.processor_context(thread)
            .map(|c| (c, RegisterSource::Processor))
            .ok_or_else(|| {
                format!(
                    "thread {:#x} was running on a processor whose registers the dump does not hold (no processor context in the dump has its stack pointer in this thread's stack)",
                    thread.address
                )
            })
    }

    /// The dump's processor context whose stack pointer lies in `thread`'s kernel stack.
    fn processor_context(&self, thread: &KernelThread) -> Option<MinidumpContext> {
        let low = thread.stack_limit?;
        let high = thread.stack_base.or(thread.initial_stack)?;
        self.memory
            .threads()
            .iter()
            .filter_map(|t| t.context.as_ref())
            .find(|c| (low..high).contains(&c.get_stack_pointer()))
            .cloned()
    }

    /// The registers a switched-out x64 thread saved: rip from its `_KSWITCH_FRAME`'s
    /// return address, rbp from the frame, rsp just above it. The other registers were not
    /// saved there.
    fn switch_frame_context(
        &self,
        arch: Arch,
        thread: &KernelThread,
    ) -> Result<MinidumpContext, String> {
        let frame = match (arch, &self.layout.switch_frame) {
            (Arch::X64, Some(frame)) => frame,
            (Arch::X64, None) => return Err("the kernel layout has no _KSWITCH_FRAME".into()),
            (other, _) => {
                return Err(format!(
                    "saved thread state is read for x64 kernels only (this one is {})",
                    other.name()
                ))
            }
        };
        let sp = thread.kernel_stack.ok_or_else(|| {
            format!(
                "_KTHREAD.KernelStack of thread {:#x} is not in the dump",
                thread.address
            )
        })?;
        let read = |offset: u64, name: &str| {
            self.memory
                .read_uint(sp.wrapping_add(offset), 8)
                .ok_or_else(|| {
                    format!(
                        "the saved {name} at {:#x} (KernelStack + {offset:#x}) is not in the dump",
                        sp.wrapping_add(offset)
                    )
                })
        };
        let c = md::CONTEXT_AMD64 {
            // CONTEXT_AMD64 | CONTROL | INTEGER.
            context_flags: 0x0010_0003,
            rip: read(frame.return_address, "return address")?,
            rbp: read(frame.rbp, "rbp")?,
            rsp: sp.wrapping_add(frame.size),
            ..Default::default()
        };
        Ok(MinidumpContext::from_raw(MinidumpRawContext::Amd64(c)))
    }
}

/// The kernel module of a session: `ntoskrnl.exe` (or `ntkrnlmp.exe`, `ntkrnlpa.exe`, …).
pub fn kernel_module(session: &Session) -> Option<minidump::MinidumpModule> {
    session
        .target()
        .modules()
        .by_addr()
        .find(|m| {
            let file = ntdbg_engine::module_name(&m.name).to_ascii_lowercase();
            file.starts_with("ntoskrnl") || file.starts_with("ntkrnl")
        })
        .cloned()
}

/// The kernel's structure layout from its PDB on the symbol path. The error says which PDB
/// is needed (name, GUID, age) and where it was looked for.
pub fn kernel_layout(session: &Session) -> Result<KernelLayout, String> {
    let Some(module) = kernel_module(session) else {
        return Err(
            "the dump lists no kernel module (ntoskrnl.exe), so the kernel's PDB cannot be found"
                .into(),
        );
    };
    let symbols = session.module_symbols(&module);
    let types = symbols.types().map_err(|why| {
        if let Some(path) = symbols.symbol_file_path() {
            return format!(
                "the kernel's PDB with its types; {} has none readable ({why})",
                path.display()
            );
        }
        let tried = symbols.tried().join("; ");
        match symbols.pdb_identity() {
            Some((name, id)) if id.len() > 32 => format!(
                "the kernel's PDB {name} (GUID {} age {}) on the symbol path; it was not found (tried: {tried})",
                &id[..32],
                &id[32..]
            ),
            Some((name, id)) => format!(
                "the kernel's PDB {name} ({id}) on the symbol path; it was not found (tried: {tried})"
            ),
            None => format!(
                "the kernel's PDB (ntkrnlmp.pdb) on the symbol path; it was not found, and its GUID and age are unknown because neither the dump nor the symbol path holds {}'s headers (tried: {tried})",
                ntdbg_engine::module_name(&module.name)
            ),
        }
    })?;
    KernelLayout::from_types(&types)
}
