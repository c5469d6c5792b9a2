//! What each thread waits on, read from its innermost frames: the outermost wait function of
//! the run of system frames at the top of the stack names the kind of wait (a critical
//! section, a kernel object, a sleep, an SRW lock, …), and for a critical section the section
//! itself comes from a callee-saved register the unwinder recovered in one of the critical
//! section frames, accepted only when its fields check out and another thread owns it. Frames
//! found by scanning are used for neither.

use super::critical_section::{read_critical_section, CriticalSection};
use crate::signature::is_system_module;
use ntdbg_engine::stack::{FoundBy, Frame};
use ntdbg_engine::Session;
use ntdbg_symbols::SymbolStatus;
use ntdbg_targets::Arch;

/// How many innermost frames are looked at for a wait function.
const WAIT_FRAMES: usize = 16;

/// What a thread is blocked in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WaitKind {
    /// `EnterCriticalSection`.
    CriticalSection,
    /// `AcquireSRWLockExclusive` / `Shared`.
    SrwLock,
    /// `SleepConditionVariableCS` / `SRW`.
    ConditionVariable,
    /// `WaitForSingleObject` and its relatives.
    Object,
    /// `WaitForMultipleObjects` and its relatives.
    Objects,
    /// `Sleep`, `SleepEx`, `NtDelayExecution`.
    Sleep,
    /// `WaitOnAddress`, `NtWaitForAlertByThreadId`.
    Address,
    /// `NtWaitForKeyedEvent`.
    KeyedEvent,
    /// `GetMessage`, `MsgWaitForMultipleObjects`.
    Message,
    /// `GetQueuedCompletionStatus`, `NtRemoveIoCompletion`.
    IoCompletion,
    /// `NtWaitForWorkViaWorkerFactory`: an idle thread-pool worker.
    ThreadPool,
}

impl WaitKind {
    /// The stable name used in typed results.
    pub fn name(self) -> &'static str {
        match self {
            WaitKind::CriticalSection => "critical_section",
            WaitKind::SrwLock => "srw_lock",
            WaitKind::ConditionVariable => "condition_variable",
            WaitKind::Object => "object",
            WaitKind::Objects => "objects",
            WaitKind::Sleep => "sleep",
            WaitKind::Address => "address",
            WaitKind::KeyedEvent => "keyed_event",
            WaitKind::Message => "message",
            WaitKind::IoCompletion => "io_completion",
            WaitKind::ThreadPool => "thread_pool",
        }
    }

    /// What the thread does, for people.
    pub fn describe(self) -> &'static str {
        match self {
            WaitKind::CriticalSection => "waits to enter a critical section",
            WaitKind::SrwLock => "waits to acquire an SRW lock",
            WaitKind::ConditionVariable => "sleeps on a condition variable",
            WaitKind::Object => {
                "waits on a kernel object (event, mutex, semaphore, thread, process, …)"
            }
            WaitKind::Objects => "waits on several kernel objects",
            WaitKind::Sleep => "sleeps",
            WaitKind::Address => "waits on an address (WaitOnAddress / alert by thread id)",
            WaitKind::KeyedEvent => "waits on a keyed event",
            WaitKind::Message => "waits for a window message",
            WaitKind::IoCompletion => "waits on an I/O completion port",
            WaitKind::ThreadPool => "is an idle thread-pool worker waiting for work",
        }
    }
}

/// Wait functions by bare name (without `Nt`/`Zw` told apart: both are listed).
const WAIT_FUNCTIONS: &[(&str, WaitKind)] = &[
    ("EnterCriticalSection", WaitKind::CriticalSection),
    ("RtlEnterCriticalSection", WaitKind::CriticalSection),
    ("RtlpWaitForCriticalSection", WaitKind::CriticalSection),
    (
        "RtlpEnterCriticalSectionContended",
        WaitKind::CriticalSection,
    ),
    ("AcquireSRWLockExclusive", WaitKind::SrwLock),
    ("AcquireSRWLockShared", WaitKind::SrwLock),
    ("RtlAcquireSRWLockExclusive", WaitKind::SrwLock),
    ("RtlAcquireSRWLockShared", WaitKind::SrwLock),
    ("RtlpWaitCouldDeadlock", WaitKind::SrwLock),
    ("SleepConditionVariableCS", WaitKind::ConditionVariable),
    ("SleepConditionVariableSRW", WaitKind::ConditionVariable),
    ("RtlSleepConditionVariableCS", WaitKind::ConditionVariable),
    ("RtlSleepConditionVariableSRW", WaitKind::ConditionVariable),
    ("WaitForSingleObject", WaitKind::Object),
    ("WaitForSingleObjectEx", WaitKind::Object),
    ("SignalObjectAndWait", WaitKind::Object),
    ("NtWaitForSingleObject", WaitKind::Object),
    ("ZwWaitForSingleObject", WaitKind::Object),
    ("NtSignalAndWaitForSingleObject", WaitKind::Object),
    ("ZwSignalAndWaitForSingleObject", WaitKind::Object),
    ("WaitForMultipleObjects", WaitKind::Objects),
    ("WaitForMultipleObjectsEx", WaitKind::Objects),
    ("NtWaitForMultipleObjects", WaitKind::Objects),
    ("ZwWaitForMultipleObjects", WaitKind::Objects),
    ("Sleep", WaitKind::Sleep),
    ("SleepEx", WaitKind::Sleep),
    ("NtDelayExecution", WaitKind::Sleep),
    ("ZwDelayExecution", WaitKind::Sleep),
    ("WaitOnAddress", WaitKind::Address),
    ("RtlWaitOnAddress", WaitKind::Address),
    ("NtWaitForAlertByThreadId", WaitKind::Address),
    ("ZwWaitForAlertByThreadId", WaitKind::Address),
    ("NtWaitForKeyedEvent", WaitKind::KeyedEvent),
    ("ZwWaitForKeyedEvent", WaitKind::KeyedEvent),
    ("GetMessageA", WaitKind::Message),
    ("GetMessageW", WaitKind::Message),
    ("NtUserGetMessage", WaitKind::Message),
    ("MsgWaitForMultipleObjects", WaitKind::Message),
    ("MsgWaitForMultipleObjectsEx", WaitKind::Message),
    ("NtUserMsgWaitForMultipleObjectsEx", WaitKind::Message),
    ("GetQueuedCompletionStatus", WaitKind::IoCompletion),
    ("GetQueuedCompletionStatusEx", WaitKind::IoCompletion),
    ("NtRemoveIoCompletion", WaitKind::IoCompletion),
    ("ZwRemoveIoCompletion", WaitKind::IoCompletion),
    ("NtRemoveIoCompletionEx", WaitKind::IoCompletion),
    ("ZwRemoveIoCompletionEx", WaitKind::IoCompletion),
    ("NtWaitForWorkViaWorkerFactory", WaitKind::ThreadPool),
    ("ZwWaitForWorkViaWorkerFactory", WaitKind::ThreadPool),
];

/// Functions inside which a critical section's address is held in a callee-saved register.
const CRITICAL_SECTION_FRAMES: &[&str] = &[
    "RtlEnterCriticalSection",
    "RtlpWaitForCriticalSection",
    "RtlpEnterCriticalSectionContended",
];

/// Callee-saved registers, whose values the unwinder recovers for caller frames.
fn callee_saved(arch: Arch) -> &'static [&'static str] {
    match arch {
        Arch::X86 => &["ebx", "esi", "edi", "ebp"],
        Arch::Arm64 => &[
            "x19", "x20", "x21", "x22", "x23", "x24", "x25", "x26", "x27", "x28",
        ],
        _ => &["rbx", "rbp", "rsi", "rdi", "r12", "r13", "r14", "r15"],
    }
}

/// How a critical section a thread waits for was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FoundSection {
    /// The section.
    pub section: CriticalSection,
    /// The frame whose register held it.
    pub frame: usize,
    /// That register.
    pub register: &'static str,
}

/// One thread's wait, as far as the dump tells it.
#[derive(Debug, Clone)]
pub struct ThreadWait {
    /// The thread's index (`~N`).
    pub thread: usize,
    /// Its id.
    pub thread_id: u32,
    /// The wait, when a wait function is on top of the stack.
    pub kind: Option<WaitKind>,
    /// The frame of the outermost wait function.
    pub frame: Option<usize>,
    /// That frame's call site (`ntdll!RtlEnterCriticalSection+0x91`).
    pub function: Option<String>,
    /// Whether that name comes from the module's export table (the nearest export before the
    /// address) rather than from a symbol file.
    pub named_by_exports: bool,
    /// The first frame outside system modules: who waits.
    pub caller: Option<String>,
    /// For a critical section wait: the section, when a register gave it.
    pub section: Option<FoundSection>,
    /// Why nothing more is known, when something is missing.
    pub unknown: Option<String>,
}

/// The wait of every thread in the dump, in `~` order. `threads_ids` are passed to the
/// critical section checks (an owner must be one of them).
pub fn thread_waits(session: &Session) -> Vec<ThreadWait> {
    let ids: Vec<u32> = session.target().threads().iter().map(|t| t.id).collect();
    (0..ids.len())
        .map(|index| match session.thread_stack(index) {
            Ok(stack) => thread_wait(session, index, ids[index], &stack.frames, &ids),
            Err(e) => ThreadWait {
                thread: index,
                thread_id: ids[index],
                kind: None,
                frame: None,
                function: None,
                named_by_exports: false,
                caller: None,
                section: None,
                unknown: Some(format!("no stack: {e}")),
            },
        })
        .collect()
}

/// The wait of one thread from its walked frames.
pub fn thread_wait(
    session: &Session,
    index: usize,
    thread_id: u32,
    frames: &[Frame],
    thread_ids: &[u32],
) -> ThreadWait {
    let mut wait = ThreadWait {
        thread: index,
        thread_id,
        kind: None,
        frame: None,
        function: None,
        named_by_exports: false,
        caller: None,
        section: None,
        unknown: None,
    };
    let top: Vec<&Frame> = frames
        .iter()
        .take(WAIT_FRAMES)
        .take_while(|f| f.module.as_deref().is_some_and(is_system_module))
        .take_while(|f| f.is_trusted())
        .collect();
    wait.caller = frames
        .iter()
        .take(WAIT_FRAMES)
        .find(|f| f.module.as_deref().is_some_and(|m| !is_system_module(m)))
        .map(Frame::call_site);
    let outermost = top.iter().rev().find_map(|f| wait_kind(f).map(|k| (*f, k)));
    let Some((frame, kind)) = outermost else {
        wait.unknown = Some(match frames.first() {
            None => "the stack could not be walked".into(),
            Some(f) if f.function.is_none() => format!(
                "frame 0 ({}) has no symbol: whether it waits, and on what, is unknown",
                f.call_site()
            ),
            Some(f) => format!(
                "no wait function on top of the stack (frame 0 is {})",
                f.call_site()
            ),
        });
        return wait;
    };
    wait.kind = Some(kind);
    wait.frame = Some(frame.index);
    wait.function = Some(frame.call_site());
    wait.named_by_exports = named_by_exports(session, frame);
    match kind {
        WaitKind::CriticalSection => match waited_section(session, thread_id, &top, thread_ids) {
            Ok(found) => wait.section = Some(found),
            Err(why) => wait.unknown = Some(why),
        },
        WaitKind::Message => {
            wait.unknown = Some(
                "any handles waited on with the message queue are not recovered".into(),
            )
        }
        WaitKind::Object | WaitKind::Objects | WaitKind::IoCompletion => {
            wait.unknown = Some(
                "the handles waited on are not recovered: argument registers are not kept at the system call".into(),
            )
        }
        WaitKind::SrwLock => {
            wait.unknown = Some("an SRW lock does not record its owner: who holds it is unknown".into())
        }
        WaitKind::ConditionVariable | WaitKind::Address | WaitKind::KeyedEvent => {
            wait.unknown = Some("the object waited on records no owner: who would wake the thread is unknown".into())
        }
        WaitKind::Sleep | WaitKind::ThreadPool => {}
    }
    wait
}

/// Whether the frame's module has only export symbols.
fn named_by_exports(session: &Session, frame: &Frame) -> bool {
    frame
        .module_base
        .and_then(|base| session.module_at(base))
        .is_some_and(|m| session.module_symbols(m).status() == SymbolStatus::ExportSymbols)
}

/// The wait kind of a frame's function, by its bare name.
fn wait_kind(frame: &Frame) -> Option<WaitKind> {
    let name = bare_name(frame)?;
    WAIT_FUNCTIONS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, k)| *k)
}

/// A frame's function without module, parameters or offset.
fn bare_name(frame: &Frame) -> Option<&str> {
    frame
        .function
        .as_deref()
        .map(ntdbg_symbols::strip_parameters)
}

/// The critical section a thread waits for: the values of callee-saved registers recovered in
/// the critical section frames, kept when they read as a held section owned by another thread
/// with at least one waiter. Exactly one distinct section must remain.
fn waited_section(
    session: &Session,
    thread_id: u32,
    top: &[&Frame],
    thread_ids: &[u32],
) -> Result<FoundSection, String> {
    let registers = callee_saved(session.arch());
    let mut found: Vec<FoundSection> = Vec::new();
    let mut looked = 0;
    // Registers are trusted only while every frame from the context was unwound by unwind
    // data or by the leaf rule with a checked return address (a leaf function leaves them
    // untouched): a frame-pointer or scanned step does not restore callee-saved registers.
    for frame in top
        .iter()
        .take_while(|f| {
            f.is_trusted() && matches!(f.found_by, FoundBy::Context | FoundBy::Cfi | FoundBy::Leaf)
        })
        .filter(|f| bare_name(f).is_some_and(|n| CRITICAL_SECTION_FRAMES.contains(&n)))
    {
        for &register in registers {
            let Some(value) = frame.register(register) else {
                continue;
            };
            looked += 1;
            let Ok(section) = read_critical_section(session, value, thread_ids) else {
                continue;
            };
            // The waiter counts itself in LockCount, and does not own what it waits for.
            if !section.locked
                || section.waiters == 0
                || section.owning_thread == u64::from(thread_id)
            {
                continue;
            }
            if !found.iter().any(|f| f.section.address == section.address) {
                found.push(FoundSection {
                    section,
                    frame: frame.index,
                    register,
                });
            }
        }
    }
    match found.len() {
        1 => Ok(found.remove(0)),
        0 if looked == 0 => Err(
            "no callee-saved register was recovered by unwind data in the critical section frames: the section is unknown"
                .into(),
        ),
        0 => Err(format!(
            "none of the {looked} callee-saved register values recovered in the critical section frames reads as a critical section held by another thread: the section is unknown"
        )),
        n => Err(format!(
            "{n} different held critical sections are in the recovered registers: which one is waited for is unknown ({})",
            found
                .iter()
                .map(|f| format!("{:#x}", f.section.address))
                .collect::<Vec<_>>()
                .join(", ")
        )),
    }
}
