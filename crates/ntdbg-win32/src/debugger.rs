//! The Win32 debug loop behind the stub: attach (`DebugActiveProcess`) or start
//! (`CreateProcessW` with `DEBUG_ONLY_THIS_PROCESS`), turn debug events into stops, and answer
//! the [`Backend`] requests with thread contexts, process memory, software breakpoints written
//! by the stub (hidden from memory reads), hardware breakpoints in DR0–DR3 of every thread,
//! single steps through the trap flag, `DebugBreakProcess` and `MiniDumpWriteDump`.
//!
//! Every call here runs on the thread that attached, as Win32 requires. x64 processes only:
//! a 32-bit (WOW64) process is refused with a clear error.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::c_void;
use std::time::{Duration, Instant};

use windows_sys::Win32::Foundation::{
    CloseHandle, GetLastError, DBG_CONTINUE, DBG_EXCEPTION_NOT_HANDLED, EXCEPTION_BREAKPOINT,
    EXCEPTION_SINGLE_STEP, GENERIC_WRITE, HANDLE, INVALID_HANDLE_VALUE, STATUS_WX86_BREAKPOINT,
};
use windows_sys::Win32::Storage::FileSystem::{
    CreateFileW, GetFinalPathNameByHandleW, CREATE_ALWAYS, FILE_ATTRIBUTE_NORMAL,
    FILE_NAME_NORMALIZED,
};
use windows_sys::Win32::System::Diagnostics::Debug::{
    ContinueDebugEvent, DebugActiveProcess, DebugActiveProcessStop, DebugBreakProcess,
    DebugSetProcessKillOnExit, FlushInstructionCache, GetThreadContext, MiniDumpNormal,
    MiniDumpWithFullMemory, MiniDumpWithFullMemoryInfo, MiniDumpWithHandleData,
    MiniDumpWithThreadInfo, MiniDumpWithUnloadedModules, MiniDumpWriteDump, ReadProcessMemory,
    SetThreadContext, WaitForDebugEvent, WriteProcessMemory, CONTEXT, CONTEXT_CONTROL_AMD64,
    CONTEXT_DEBUG_REGISTERS_AMD64, CONTEXT_INTEGER_AMD64, CONTEXT_SEGMENTS_AMD64,
    CREATE_PROCESS_DEBUG_EVENT, CREATE_THREAD_DEBUG_EVENT, DEBUG_EVENT, EXCEPTION_DEBUG_EVENT,
    EXCEPTION_POINTERS, EXCEPTION_RECORD, EXIT_PROCESS_DEBUG_EVENT, EXIT_THREAD_DEBUG_EVENT,
    LOAD_DLL_DEBUG_EVENT, MINIDUMP_EXCEPTION_INFORMATION, OUTPUT_DEBUG_STRING_EVENT,
    UNLOAD_DLL_DEBUG_EVENT,
};
use windows_sys::Win32::System::Memory::{VirtualProtectEx, PAGE_EXECUTE_READWRITE};
use windows_sys::Win32::System::Threading::{
    CreateProcessW, IsWow64Process, ResumeThread, SuspendThread, TerminateProcess,
    DEBUG_ONLY_THIS_PROCESS, PROCESS_INFORMATION, STARTF_USESTDHANDLES, STARTUPINFOW,
};

use crate::backend::{
    signal, signal_for, Backend, BreakType, DumpKind, EventKind, ExceptionInfo, Halt, Hit,
    Registers, Resume, Stop, EFLAGS, GS_BASE, RIP,
};
use crate::spec::TargetSpec;

const PAGE: u64 = 0x1000;
/// The x86 trap flag in EFLAGS.
const TRAP_FLAG: u32 = 0x100;
/// The registers the stub reads and writes.
const CONTEXT_REGS: u32 = CONTEXT_CONTROL_AMD64 | CONTEXT_INTEGER_AMD64 | CONTEXT_SEGMENTS_AMD64;
/// Longest debug string read.
const MAX_DEBUG_STRING: usize = 0x10000;
/// How long `kill` waits for the exit event.
const KILL_WAIT: Duration = Duration::from_secs(5);

/// `CONTEXT` must be 16-byte aligned for `GetThreadContext`.
#[repr(C, align(16))]
struct AlignedContext(CONTEXT);

impl AlignedContext {
    fn new(flags: u32) -> AlignedContext {
        // SAFETY: CONTEXT is plain data; all zeroes is a valid value.
        let mut c = AlignedContext(unsafe { std::mem::zeroed() });
        c.0.ContextFlags = flags;
        c
    }
}

#[derive(Debug)]
struct Thread {
    handle: HANDLE,
    teb: u64,
}

/// A hardware breakpoint or watchpoint in one of DR0–DR3.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct HwSlot {
    addr: u64,
    len: u64,
    kind: BreakType,
}

/// The debug event that `ContinueDebugEvent` has not answered yet.
#[derive(Debug, Clone, Copy)]
struct Pending {
    tid: u32,
    /// An exception of the program's own, which `gn` (and a detach) passes on; the
    /// debugger's breakpoints and single steps are always continued as handled.
    passable: bool,
    /// A breakpoint exception the program owns (an `int3` in its code): continuing as handled
    /// moves the thread past it, as WinDbg does.
    skip_int3_at: Option<u64>,
}

/// The debugger of one process.
pub(crate) struct Win32Debugger {
    pid: u32,
    process: HANDLE,
    threads: BTreeMap<u32, Thread>,
    modules: BTreeMap<u64, String>,
    software: BTreeMap<u64, u8>,
    /// Where a software breakpoint was removed (and not set again): a breakpoint exception
    /// there that was queued before the removal is stale.
    removed_software: BTreeSet<u64>,
    hardware: [Option<HwSlot>; 4],
    halt: Halt,
    pending: Option<Pending>,
    /// A thread that exited: dropped from the list when the target resumes.
    exiting: Option<u32>,
    last_exception: Option<(u32, EXCEPTION_RECORD)>,
    break_in_requested: bool,
    stepping: Option<u32>,
    /// The threads suspended while another one steps (a step runs its thread alone), resumed
    /// at the next event.
    held: Vec<u32>,
}

impl std::fmt::Debug for Win32Debugger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Win32Debugger")
            .field("pid", &self.pid)
            .field("threads", &self.threads.len())
            .field("modules", &self.modules.len())
            .field("halt", &self.halt)
            .finish_non_exhaustive()
    }
}

fn last_error(what: &str) -> String {
    // SAFETY: no preconditions.
    let code = unsafe { GetLastError() };
    format!("{what} failed (Windows error {code})")
}

fn wide(text: &str) -> Vec<u16> {
    text.encode_utf16().chain(std::iter::once(0)).collect()
}

impl Win32Debugger {
    /// Attaches to or starts the process and waits up to `timeout` for its first stop.
    pub fn open(spec: &TargetSpec, timeout: Duration) -> Result<Win32Debugger, String> {
        let pid = match spec {
            TargetSpec::Pid(pid) => {
                // SAFETY: plain call.
                if unsafe { DebugActiveProcess(*pid) } == 0 {
                    return Err(last_error(&format!("attaching to process {pid}")));
                }
                // A debugger that goes away must not take the process with it.
                // SAFETY: plain call.
                unsafe { DebugSetProcessKillOnExit(0) };
                *pid
            }
            TargetSpec::Exe { .. } => launch(spec)?,
        };
        let mut d = Win32Debugger {
            pid,
            process: std::ptr::null_mut(),
            threads: BTreeMap::new(),
            modules: BTreeMap::new(),
            software: BTreeMap::new(),
            removed_software: BTreeSet::new(),
            hardware: [None; 4],
            halt: Halt::Exited(0),
            pending: None,
            exiting: None,
            last_exception: None,
            break_in_requested: false,
            stepping: None,
            held: Vec::new(),
        };
        match d.first_stop(timeout) {
            Ok(()) => Ok(d),
            Err(e) => {
                d.abandon(matches!(spec, TargetSpec::Exe { .. }));
                Err(e)
            }
        }
    }

    /// Runs the events before the first breakpoint (process, threads, modules) and stops at
    /// it: the loader's breakpoint of a started process, the break-in of an attach.
    fn first_stop(&mut self, timeout: Duration) -> Result<(), String> {
        let deadline = Instant::now() + timeout;
        while Instant::now() < deadline {
            let Some(ev) = wait_event(Duration::from_millis(100)) else {
                continue;
            };
            if ev.dwProcessId != self.pid {
                // SAFETY: answering an event of this debugger.
                unsafe { ContinueDebugEvent(ev.dwProcessId, ev.dwThreadId, DBG_CONTINUE) };
                continue;
            }
            if ev.dwDebugEventCode == CREATE_PROCESS_DEBUG_EVENT {
                self.record_event(&ev);
                let mut wow64 = 0;
                // SAFETY: the handle comes from the event.
                if unsafe { IsWow64Process(self.process, &mut wow64) } != 0 && wow64 != 0 {
                    return Err(format!(
                        "process {} is a 32-bit (WOW64) process: ntdbg debugs 64-bit processes \
                         natively; use a gdb stub for this one",
                        self.pid
                    ));
                }
                self.continue_event(ev.dwThreadId, DBG_CONTINUE)?;
                continue;
            }
            if ev.dwDebugEventCode == EXCEPTION_DEBUG_EVENT {
                // SAFETY: the union member of an exception event.
                let info = unsafe { ev.u.Exception };
                let code = info.ExceptionRecord.ExceptionCode;
                if code == EXCEPTION_BREAKPOINT || code == STATUS_WX86_BREAKPOINT {
                    let mut stop = self.exception_stop(ev.dwThreadId, &info.ExceptionRecord, true);
                    stop.event = EventKind::InitialBreakpoint;
                    self.normalize_breakpoint_pc(ev.dwThreadId, &info.ExceptionRecord);
                    self.pending = Some(Pending {
                        tid: ev.dwThreadId,
                        passable: false,
                        skip_int3_at: Some(info.ExceptionRecord.ExceptionAddress as u64),
                    });
                    self.last_exception = Some((ev.dwThreadId, info.ExceptionRecord));
                    self.halt = Halt::Stopped(stop);
                    return Ok(());
                }
                self.continue_event(ev.dwThreadId, DBG_EXCEPTION_NOT_HANDLED)?;
                continue;
            }
            if ev.dwDebugEventCode == EXIT_PROCESS_DEBUG_EVENT {
                // SAFETY: answering an event of this debugger.
                unsafe { ContinueDebugEvent(ev.dwProcessId, ev.dwThreadId, DBG_CONTINUE) };
                return Err(format!("process {} ended before its first stop", self.pid));
            }
            self.record_event(&ev);
            self.continue_event(ev.dwThreadId, DBG_CONTINUE)?;
        }
        Err(format!(
            "process {} did not reach its first breakpoint within {} ms",
            self.pid,
            timeout.as_millis()
        ))
    }

    /// Gives up on a process whose first stop never came: kills a started one, detaches
    /// from an attached one.
    fn abandon(&mut self, started: bool) {
        if started && !self.process.is_null() {
            // SAFETY: the handle comes from the debug event.
            unsafe { TerminateProcess(self.process, 1) };
        }
        if let Some(p) = self.pending.take() {
            // SAFETY: answering the pending event.
            unsafe { ContinueDebugEvent(self.pid, p.tid, DBG_CONTINUE) };
        }
        // SAFETY: plain call.
        unsafe { DebugActiveProcessStop(self.pid) };
    }

    fn continue_event(&mut self, tid: u32, status: i32) -> Result<(), String> {
        // SAFETY: answering an event of this process.
        if unsafe { ContinueDebugEvent(self.pid, tid, status) } == 0 {
            return Err(last_error("ContinueDebugEvent"));
        }
        Ok(())
    }

    /// Keeps track of processes, threads and modules; closes file handles.
    fn record_event(&mut self, ev: &DEBUG_EVENT) -> Option<(u64, String)> {
        match ev.dwDebugEventCode {
            CREATE_PROCESS_DEBUG_EVENT => {
                // SAFETY: the union member of this event.
                let info = unsafe { ev.u.CreateProcessInfo };
                self.process = info.hProcess;
                self.threads.insert(
                    ev.dwThreadId,
                    Thread {
                        handle: info.hThread,
                        teb: info.lpThreadLocalBase as u64,
                    },
                );
                let base = info.lpBaseOfImage as u64;
                let name = file_name(info.hFile).unwrap_or_default();
                close(info.hFile);
                self.modules.insert(base, name.clone());
                Some((base, name))
            }
            CREATE_THREAD_DEBUG_EVENT => {
                // SAFETY: the union member of this event.
                let info = unsafe { ev.u.CreateThread };
                self.threads.insert(
                    ev.dwThreadId,
                    Thread {
                        handle: info.hThread,
                        teb: info.lpThreadLocalBase as u64,
                    },
                );
                // Watchpoints apply to threads created later too.
                let _ = self.apply_debug_registers(ev.dwThreadId);
                None
            }
            LOAD_DLL_DEBUG_EVENT => {
                // SAFETY: the union member of this event.
                let info = unsafe { ev.u.LoadDll };
                let base = info.lpBaseOfDll as u64;
                let name = file_name(info.hFile)
                    .or_else(|| self.image_name(info.lpImageName as u64, info.fUnicode != 0))
                    .unwrap_or_default();
                close(info.hFile);
                self.modules.insert(base, name.clone());
                Some((base, name))
            }
            UNLOAD_DLL_DEBUG_EVENT => {
                // SAFETY: the union member of this event.
                let base = unsafe { ev.u.UnloadDll.lpBaseOfDll } as u64;
                let name = self.modules.remove(&base).unwrap_or_default();
                Some((base, name))
            }
            _ => None,
        }
    }

    /// The name behind `LOAD_DLL_DEBUG_INFO.lpImageName`: a pointer, in the debuggee, to the
    /// string (which may be null).
    fn image_name(&mut self, ptr_addr: u64, unicode: bool) -> Option<String> {
        if ptr_addr == 0 {
            return None;
        }
        let p = self.read_raw(ptr_addr, 8);
        let at = u64::from_le_bytes(p.get(..8)?.try_into().ok()?);
        if at == 0 {
            return None;
        }
        let bytes = self.read_raw(at, 1024);
        let text = decode_string(&bytes, unicode);
        (!text.is_empty()).then_some(text)
    }

    fn thread_handle(&self, tid: u32) -> Result<HANDLE, String> {
        self.threads
            .get(&tid)
            .map(|t| t.handle)
            .ok_or_else(|| format!("no thread {tid}"))
    }

    fn context(&self, tid: u32, flags: u32) -> Result<AlignedContext, String> {
        let handle = self.thread_handle(tid)?;
        let mut c = AlignedContext::new(flags);
        // SAFETY: the handle is a thread of the debuggee; the context is aligned.
        if unsafe { GetThreadContext(handle, &mut c.0) } == 0 {
            return Err(last_error(&format!("GetThreadContext of thread {tid}")));
        }
        Ok(c)
    }

    fn set_context(&self, tid: u32, c: &AlignedContext) -> Result<(), String> {
        let handle = self.thread_handle(tid)?;
        // SAFETY: as above.
        if unsafe { SetThreadContext(handle, &c.0) } == 0 {
            return Err(last_error(&format!("SetThreadContext of thread {tid}")));
        }
        Ok(())
    }

    /// Puts a thread that stopped on an `int3` back onto it (WinDbg shows the breakpoint's
    /// address); a stub-inserted breakpoint is then stepped over by the client.
    fn normalize_breakpoint_pc(&self, tid: u32, record: &EXCEPTION_RECORD) {
        let addr = record.ExceptionAddress as u64;
        if let Ok(mut c) = self.context(tid, CONTEXT_REGS) {
            if c.0.Rip == addr.wrapping_add(1) {
                c.0.Rip = addr;
                let _ = self.set_context(tid, &c);
            }
        }
    }

    /// Reads up to `len` bytes, page by page, stopping at the first unreadable one.
    fn read_raw(&self, addr: u64, len: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(len.min(1 << 20));
        while out.len() < len {
            let at = addr.wrapping_add(out.len() as u64);
            let in_page = (PAGE - at % PAGE) as usize;
            let want = in_page.min(len - out.len());
            let mut buf = vec![0u8; want];
            let mut got = 0usize;
            // SAFETY: `buf` has `want` bytes; the process handle is valid.
            let ok = unsafe {
                ReadProcessMemory(
                    self.process,
                    at as *const c_void,
                    buf.as_mut_ptr().cast(),
                    want,
                    &mut got,
                )
            };
            if ok == 0 || got == 0 {
                break;
            }
            out.extend_from_slice(&buf[..got.min(want)]);
            if got < want {
                break;
            }
        }
        out
    }

    /// Writes bytes (making the page writable for a moment when it is not) and flushes the
    /// instruction cache.
    fn write_raw(&self, addr: u64, data: &[u8]) -> Result<(), String> {
        let write = || {
            let mut done = 0usize;
            // SAFETY: `data` is valid for its length; the process handle is valid.
            let ok = unsafe {
                WriteProcessMemory(
                    self.process,
                    addr as *const c_void,
                    data.as_ptr().cast(),
                    data.len(),
                    &mut done,
                )
            };
            ok != 0 && done == data.len()
        };
        if !write() {
            let mut old = 0;
            // SAFETY: changes the protection of the debuggee's pages, restored below.
            let changed = unsafe {
                VirtualProtectEx(
                    self.process,
                    addr as *const c_void,
                    data.len(),
                    PAGE_EXECUTE_READWRITE,
                    &mut old,
                )
            } != 0;
            let ok = changed && write();
            if changed {
                let mut ignored = 0;
                // SAFETY: restores the protection read above.
                unsafe {
                    VirtualProtectEx(
                        self.process,
                        addr as *const c_void,
                        data.len(),
                        old,
                        &mut ignored,
                    )
                };
            }
            if !ok {
                return Err(last_error(&format!("writing memory at {addr:#x}")));
            }
        }
        // SAFETY: plain call.
        unsafe { FlushInstructionCache(self.process, addr as *const c_void, data.len()) };
        Ok(())
    }

    /// DR7 for the current slots.
    fn dr7(&self) -> u64 {
        let mut dr7 = 0u64;
        for (i, slot) in self.hardware.iter().enumerate() {
            let Some(s) = slot else { continue };
            let rw: u64 = match s.kind {
                BreakType::Hardware | BreakType::Software => 0b00,
                BreakType::Write => 0b01,
                BreakType::Read | BreakType::Access => 0b11,
            };
            let len: u64 = match (s.kind, s.len) {
                (BreakType::Hardware, _) | (_, 1) => 0b00,
                (_, 2) => 0b01,
                (_, 8) => 0b10,
                _ => 0b11,
            };
            dr7 |= 1 << (2 * i);
            dr7 |= (rw | (len << 2)) << (16 + 4 * i);
        }
        dr7
    }

    /// Writes DR0–DR3 and DR7 of one thread.
    fn apply_debug_registers(&self, tid: u32) -> Result<(), String> {
        let mut c = self.context(tid, CONTEXT_DEBUG_REGISTERS_AMD64)?;
        let addr = |i: usize| self.hardware[i].map_or(0, |s| s.addr);
        c.0.Dr0 = addr(0);
        c.0.Dr1 = addr(1);
        c.0.Dr2 = addr(2);
        c.0.Dr3 = addr(3);
        c.0.Dr7 = self.dr7();
        self.set_context(tid, &c)
    }

    fn apply_debug_registers_everywhere(&self) -> Result<(), String> {
        let tids: Vec<u32> = self.threads.keys().copied().collect();
        tids.into_iter()
            .try_for_each(|t| self.apply_debug_registers(t))
    }

    /// Which hardware slot fired (DR6), clearing DR6.
    fn hardware_hit(&self, tid: u32) -> Option<Hit> {
        let mut c = self.context(tid, CONTEXT_DEBUG_REGISTERS_AMD64).ok()?;
        let dr6 = c.0.Dr6;
        let slot = (0..4).find(|&i| dr6 & (1 << i) != 0 && self.hardware[i].is_some())?;
        c.0.Dr6 = 0;
        let _ = self.set_context(tid, &c);
        let s = self.hardware[slot]?;
        Some(match s.kind {
            BreakType::Hardware | BreakType::Software => Hit::Hardware,
            BreakType::Write => Hit::Write(s.addr),
            BreakType::Read => Hit::Read(s.addr),
            BreakType::Access => Hit::Access(s.addr),
        })
    }

    fn exception_stop(&self, tid: u32, record: &EXCEPTION_RECORD, first_chance: bool) -> Stop {
        let code = record.ExceptionCode as u32;
        let n = (record.NumberParameters as usize).min(15);
        Stop {
            signal: signal_for(code),
            tid,
            event: EventKind::Exception,
            hit: None,
            exception: Some(ExceptionInfo {
                code,
                first_chance,
                address: record.ExceptionAddress as u64,
                params: record.ExceptionInformation[..n]
                    .iter()
                    .map(|&p| p as u64)
                    .collect(),
            }),
            module: None,
            text: None,
        }
    }

    /// Turns one debug event into a stop (answering `ContinueDebugEvent` later, on resume).
    fn stop_for(&mut self, ev: &DEBUG_EVENT) -> Halt {
        let tid = ev.dwThreadId;
        let mut pending = Pending {
            tid,
            passable: false,
            skip_int3_at: None,
        };
        let stop = match ev.dwDebugEventCode {
            EXCEPTION_DEBUG_EVENT => {
                // SAFETY: the union member of this event.
                let info = unsafe { ev.u.Exception };
                let record = info.ExceptionRecord;
                let first = info.dwFirstChance != 0;
                let mut stop = self.exception_stop(tid, &record, first);
                self.last_exception = Some((tid, record));
                let addr = record.ExceptionAddress as u64;
                if record.ExceptionCode == EXCEPTION_BREAKPOINT {
                    self.normalize_breakpoint_pc(tid, &record);
                    if self.software.contains_key(&addr) {
                        stop.hit = Some(Hit::Software);
                    } else {
                        pending.skip_int3_at = Some(addr);
                        if std::mem::take(&mut self.break_in_requested) {
                            stop.signal = signal::INT;
                        }
                    }
                } else if record.ExceptionCode == EXCEPTION_SINGLE_STEP {
                    stop.hit = self.hardware_hit(tid);
                    self.stepping = None;
                } else {
                    pending.passable = true;
                }
                stop
            }
            CREATE_THREAD_DEBUG_EVENT => {
                self.record_event(ev);
                Stop::event(tid, EventKind::CreateThread)
            }
            EXIT_THREAD_DEBUG_EVENT => {
                self.exiting = Some(tid);
                Stop::event(tid, EventKind::ExitThread)
            }
            LOAD_DLL_DEBUG_EVENT | UNLOAD_DLL_DEBUG_EVENT => {
                let kind = if ev.dwDebugEventCode == LOAD_DLL_DEBUG_EVENT {
                    EventKind::Load
                } else {
                    EventKind::Unload
                };
                let mut stop = Stop::event(tid, kind);
                stop.module = self.record_event(ev);
                stop
            }
            OUTPUT_DEBUG_STRING_EVENT => {
                // SAFETY: the union member of this event.
                let info = unsafe { ev.u.DebugString };
                let unicode = info.fUnicode != 0;
                let units = usize::from(info.nDebugStringLength);
                let bytes = if unicode { units * 2 } else { units };
                let raw = self.read_raw(info.lpDebugStringData as u64, bytes.min(MAX_DEBUG_STRING));
                let mut stop = Stop::event(tid, EventKind::Output);
                stop.text = Some(decode_string(&raw, unicode));
                stop
            }
            // RIP_EVENT and anything new: shown as a plain event on its thread.
            _ => Stop::event(tid, EventKind::Exception),
        };
        self.pending = Some(pending);
        Halt::Stopped(stop)
    }

    /// Detaches: breakpoints out, debug registers cleared, threads suspended when asked, the
    /// pending event answered, then `DebugActiveProcessStop`.
    fn detach_now(&mut self, leave_suspended: bool) -> Result<(), String> {
        self.release_held();
        let software: Vec<(u64, u8)> = std::mem::take(&mut self.software).into_iter().collect();
        for (addr, orig) in software {
            let _ = self.write_raw(addr, &[orig]);
        }
        self.hardware = [None; 4];
        let _ = self.apply_debug_registers_everywhere();
        if let Some(tid) = self.stepping.take() {
            if let Ok(mut c) = self.context(tid, CONTEXT_REGS) {
                c.0.EFlags &= !TRAP_FLAG;
                let _ = self.set_context(tid, &c);
            }
        }
        if leave_suspended {
            for t in self.threads.values() {
                // SAFETY: a thread handle of the debuggee.
                unsafe { SuspendThread(t.handle) };
            }
        }
        if let Some(p) = self.pending.take() {
            self.skip_owned_int3(&p);
            let status = if p.passable {
                DBG_EXCEPTION_NOT_HANDLED
            } else {
                DBG_CONTINUE
            };
            let _ = self.continue_event(p.tid, status);
        }
        // SAFETY: plain calls.
        unsafe { DebugSetProcessKillOnExit(0) };
        // SAFETY: plain call.
        if unsafe { DebugActiveProcessStop(self.pid) } == 0 {
            return Err(last_error("DebugActiveProcessStop"));
        }
        for t in std::mem::take(&mut self.threads).into_values() {
            close(t.handle);
        }
        close(std::mem::replace(&mut self.process, std::ptr::null_mut()));
        self.halt = Halt::Exited(0);
        Ok(())
    }

    /// The exception record of a breakpoint exception that a thread raised on a software
    /// breakpoint of the debugger's which has been removed since (lifted for another thread's
    /// step, or cleared): Windows queued it while another event was reported. `None` for any
    /// other event, and where a breakpoint instruction is in the code again.
    fn stale_breakpoint(&self, ev: &DEBUG_EVENT) -> Option<EXCEPTION_RECORD> {
        if ev.dwDebugEventCode != EXCEPTION_DEBUG_EVENT {
            return None;
        }
        // SAFETY: the union member of this event.
        let info = unsafe { ev.u.Exception };
        let record = info.ExceptionRecord;
        let addr = record.ExceptionAddress as u64;
        let stale = record.ExceptionCode == EXCEPTION_BREAKPOINT
            && info.dwFirstChance != 0
            && !self.software.contains_key(&addr)
            && self.removed_software.contains(&addr)
            && self.read_raw(addr, 1).first().is_some_and(|&b| b != 0xcc);
        stale.then_some(record)
    }

    /// Suspends every thread but `tid` until the next event (see [`Self::release_held`]).
    fn hold_all_but(&mut self, tid: u32) {
        for (&other, t) in &self.threads {
            // SAFETY: a thread handle of the debuggee.
            if other != tid && unsafe { SuspendThread(t.handle) } != u32::MAX {
                self.held.push(other);
            }
        }
    }

    /// Resumes the threads [`Self::hold_all_but`] suspended.
    fn release_held(&mut self) {
        for tid in std::mem::take(&mut self.held) {
            if let Some(t) = self.threads.get(&tid) {
                // SAFETY: a thread handle of the debuggee.
                unsafe { ResumeThread(t.handle) };
            }
        }
    }

    /// Moves a thread past an `int3` of the program's own before continuing it as handled.
    fn skip_owned_int3(&self, p: &Pending) {
        let Some(addr) = p.skip_int3_at else { return };
        if self.read_raw(addr, 1).first() != Some(&0xcc) {
            return;
        }
        if let Ok(mut c) = self.context(p.tid, CONTEXT_REGS) {
            if c.0.Rip == addr {
                c.0.Rip = addr + 1;
                let _ = self.set_context(p.tid, &c);
            }
        }
    }
}

/// Starts the program under the debugger; returns its process id.
fn launch(spec: &TargetSpec) -> Result<u32, String> {
    let TargetSpec::Exe { path, .. } = spec else {
        return Err("not a program".into());
    };
    let mut command_line = wide(&spec.command_line().unwrap_or_default());
    // SAFETY: zeroed STARTUPINFOW/PROCESS_INFORMATION are valid; sizes set below.
    let mut startup: STARTUPINFOW = unsafe { std::mem::zeroed() };
    startup.cb = std::mem::size_of::<STARTUPINFOW>() as u32;
    // No standard handles: the program must not write into ntdbg's own output (MCP over
    // stdio).
    startup.dwFlags = STARTF_USESTDHANDLES;
    // SAFETY: as above.
    let mut info: PROCESS_INFORMATION = unsafe { std::mem::zeroed() };
    // SAFETY: every pointer is valid for the call; the command line is mutable and
    // NUL-terminated as CreateProcessW requires.
    let ok = unsafe {
        CreateProcessW(
            std::ptr::null(),
            command_line.as_mut_ptr(),
            std::ptr::null(),
            std::ptr::null(),
            0,
            DEBUG_ONLY_THIS_PROCESS,
            std::ptr::null(),
            std::ptr::null(),
            &startup,
            &mut info,
        )
    };
    if ok == 0 {
        return Err(last_error(&format!("starting {path}")));
    }
    close(info.hThread);
    close(info.hProcess);
    Ok(info.dwProcessId)
}

fn wait_event(wait: Duration) -> Option<DEBUG_EVENT> {
    // SAFETY: a zeroed DEBUG_EVENT is valid and is filled in by the call.
    let mut ev: DEBUG_EVENT = unsafe { std::mem::zeroed() };
    let ms = u32::try_from(wait.as_millis()).unwrap_or(u32::MAX);
    // SAFETY: `ev` is valid for writing.
    (unsafe { WaitForDebugEvent(&mut ev, ms) } != 0).then_some(ev)
}

fn close(handle: HANDLE) {
    if !handle.is_null() && handle != INVALID_HANDLE_VALUE {
        // SAFETY: a handle this debugger owns.
        unsafe { CloseHandle(handle) };
    }
}

/// The path of an open file, without the `\\?\` prefix.
fn file_name(file: HANDLE) -> Option<String> {
    if file.is_null() || file == INVALID_HANDLE_VALUE {
        return None;
    }
    let mut buf = vec![0u16; 1024];
    // SAFETY: `buf` has room for the given number of characters.
    let n = unsafe {
        GetFinalPathNameByHandleW(
            file,
            buf.as_mut_ptr(),
            buf.len() as u32,
            FILE_NAME_NORMALIZED,
        )
    } as usize;
    if n == 0 || n >= buf.len() {
        return None;
    }
    let path = String::from_utf16_lossy(&buf[..n]);
    Some(match path.strip_prefix("\\\\?\\UNC\\") {
        Some(unc) => format!("\\\\{unc}"),
        None => path.strip_prefix("\\\\?\\").unwrap_or(&path).to_string(),
    })
}

/// A string from the debuggee: UTF-16 or the ANSI code page (read as UTF-8, lossily), up to
/// the first NUL.
fn decode_string(bytes: &[u8], unicode: bool) -> String {
    if unicode {
        let units: Vec<u16> = bytes
            .chunks_exact(2)
            .map(|p| u16::from_le_bytes([p[0], p[1]]))
            .take_while(|&u| u != 0)
            .collect();
        String::from_utf16_lossy(&units)
    } else {
        let end = bytes.iter().position(|&b| b == 0).unwrap_or(bytes.len());
        String::from_utf8_lossy(&bytes[..end]).into_owned()
    }
}

impl Backend for Win32Debugger {
    fn pid(&self) -> u32 {
        self.pid
    }

    fn halt(&self) -> &Halt {
        &self.halt
    }

    fn threads(&self) -> Vec<u32> {
        self.threads.keys().copied().collect()
    }

    fn read_registers(&mut self, tid: u32) -> Result<Registers, String> {
        let c = self.context(tid, CONTEXT_REGS)?.0;
        let mut regs = Registers([
            c.Rax,
            c.Rbx,
            c.Rcx,
            c.Rdx,
            c.Rsi,
            c.Rdi,
            c.Rbp,
            c.Rsp,
            c.R8,
            c.R9,
            c.R10,
            c.R11,
            c.R12,
            c.R13,
            c.R14,
            c.R15,
            c.Rip,
            u64::from(c.EFlags),
            u64::from(c.SegCs),
            u64::from(c.SegSs),
            u64::from(c.SegDs),
            u64::from(c.SegEs),
            u64::from(c.SegFs),
            u64::from(c.SegGs),
            0,
            0,
        ]);
        regs.0[GS_BASE] = self.threads.get(&tid).map_or(0, |t| t.teb);
        Ok(regs)
    }

    fn write_registers(&mut self, tid: u32, regs: &Registers) -> Result<(), String> {
        let mut c = self.context(tid, CONTEXT_REGS)?;
        let r = &regs.0;
        let x = &mut c.0;
        [
            x.Rax, x.Rbx, x.Rcx, x.Rdx, x.Rsi, x.Rdi, x.Rbp, x.Rsp, x.R8, x.R9, x.R10, x.R11,
            x.R12, x.R13, x.R14, x.R15,
        ] = [
            r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12], r[13],
            r[14], r[15],
        ];
        x.Rip = r[RIP];
        x.EFlags = r[EFLAGS] as u32;
        // Segment selectors, fs_base and gs_base (the TEB) are not writable here.
        self.set_context(tid, &c)
    }

    fn read_memory(&mut self, addr: u64, len: usize) -> Vec<u8> {
        let mut bytes = self.read_raw(addr, len);
        let end = addr.wrapping_add(bytes.len() as u64);
        for (&at, &orig) in self.software.range(addr..end) {
            bytes[(at - addr) as usize] = orig;
        }
        bytes
    }

    fn write_memory(&mut self, addr: u64, data: &[u8]) -> Result<(), String> {
        let mut data = data.to_vec();
        let end = addr.wrapping_add(data.len() as u64);
        // Under a breakpoint the program's byte changes; the `int3` stays.
        for (&at, orig) in self.software.range_mut(addr..end) {
            let i = (at - addr) as usize;
            *orig = data[i];
            data[i] = 0xcc;
        }
        self.write_raw(addr, &data)
    }

    fn insert_breakpoint(&mut self, kind: BreakType, addr: u64, len: u64) -> Result<(), String> {
        if kind == BreakType::Software {
            if self.software.contains_key(&addr) {
                return Ok(());
            }
            let orig = *self
                .read_raw(addr, 1)
                .first()
                .ok_or_else(|| format!("memory at {addr:#x} cannot be read"))?;
            self.write_raw(addr, &[0xcc])?;
            self.software.insert(addr, orig);
            self.removed_software.remove(&addr);
            return Ok(());
        }
        let len = if kind == BreakType::Hardware { 1 } else { len };
        if !matches!(len, 1 | 2 | 4 | 8) || addr % len != 0 {
            return Err(format!(
                "a hardware breakpoint covers 1, 2, 4 or 8 aligned bytes ({len} at {addr:#x})"
            ));
        }
        let slot = HwSlot { addr, len, kind };
        if self.hardware.contains(&Some(slot)) {
            return Ok(());
        }
        let free = self
            .hardware
            .iter()
            .position(Option::is_none)
            .ok_or("all four debug registers are in use")?;
        self.hardware[free] = Some(slot);
        if let Err(e) = self.apply_debug_registers_everywhere() {
            self.hardware[free] = None;
            let _ = self.apply_debug_registers_everywhere();
            return Err(e);
        }
        Ok(())
    }

    fn remove_breakpoint(&mut self, kind: BreakType, addr: u64, len: u64) -> Result<(), String> {
        if kind == BreakType::Software {
            let orig = self
                .software
                .remove(&addr)
                .ok_or_else(|| format!("no breakpoint at {addr:#x}"))?;
            self.removed_software.insert(addr);
            return self.write_raw(addr, &[orig]);
        }
        let len = if kind == BreakType::Hardware { 1 } else { len };
        let i = self
            .hardware
            .iter()
            .position(|s| *s == Some(HwSlot { addr, len, kind }))
            .ok_or_else(|| format!("no hardware breakpoint at {addr:#x}"))?;
        self.hardware[i] = None;
        self.apply_debug_registers_everywhere()
    }

    fn resume(&mut self, how: Resume) -> Result<(), String> {
        let p = self
            .pending
            .take()
            .ok_or("the target is not stopped at an event")?;
        if let Some(tid) = how.step {
            let mut c = self.context(tid, CONTEXT_REGS)?;
            c.0.EFlags |= TRAP_FLAG;
            self.set_context(tid, &c)?;
            self.stepping = Some(tid);
            self.hold_all_but(tid);
        }
        let pass = p.passable && how.pass_exception;
        if !pass {
            self.skip_owned_int3(&p);
        }
        let status = if pass {
            DBG_EXCEPTION_NOT_HANDLED
        } else {
            DBG_CONTINUE
        };
        if let Err(e) = self.continue_event(p.tid, status) {
            self.release_held();
            self.pending = Some(p);
            return Err(e);
        }
        if let Some(tid) = self.exiting.take() {
            self.threads.remove(&tid);
        }
        Ok(())
    }

    fn wait(&mut self, wait: Duration) -> Result<Option<Halt>, String> {
        let Some(ev) = wait_event(wait) else {
            return Ok(None);
        };
        if ev.dwProcessId != self.pid {
            self.continue_event(ev.dwThreadId, DBG_CONTINUE)?;
            return Ok(None);
        }
        if let Some(record) = self.stale_breakpoint(&ev) {
            // The thread goes back onto the breakpoint's address and, when it runs again,
            // executes what is there now; the threads held for a step stay held.
            self.normalize_breakpoint_pc(ev.dwThreadId, &record);
            self.continue_event(ev.dwThreadId, DBG_CONTINUE)?;
            return Ok(None);
        }
        // The process stops at this event: the threads held for a step wait for the next
        // resume with the others.
        self.release_held();
        if ev.dwDebugEventCode == EXIT_PROCESS_DEBUG_EVENT {
            // SAFETY: the union member of this event.
            let code = unsafe { ev.u.ExitProcess.dwExitCode };
            // The system closes the process and thread handles on this continue.
            let _ = self.continue_event(ev.dwThreadId, DBG_CONTINUE);
            self.threads.clear();
            self.process = std::ptr::null_mut();
            self.halt = Halt::Exited(code);
            return Ok(Some(self.halt.clone()));
        }
        self.halt = self.stop_for(&ev);
        Ok(Some(self.halt.clone()))
    }

    fn interrupt(&mut self) -> Result<(), String> {
        self.break_in_requested = true;
        // SAFETY: the process handle is valid while debugging.
        if unsafe { DebugBreakProcess(self.process) } == 0 {
            self.break_in_requested = false;
            return Err(last_error("DebugBreakProcess"));
        }
        Ok(())
    }

    fn detach(&mut self, leave_suspended: bool) -> Result<(), String> {
        if self.process.is_null() {
            return Ok(());
        }
        self.detach_now(leave_suspended)
    }

    fn kill(&mut self) -> Result<(), String> {
        if self.process.is_null() {
            return Ok(());
        }
        // SAFETY: the process handle is valid while debugging.
        let killed = unsafe { TerminateProcess(self.process, 1) } != 0;
        if let Some(p) = self.pending.take() {
            let _ = self.continue_event(p.tid, DBG_CONTINUE);
        }
        let deadline = Instant::now() + KILL_WAIT;
        while Instant::now() < deadline {
            let Some(ev) = wait_event(Duration::from_millis(100)) else {
                continue;
            };
            let _ = self.continue_event(ev.dwThreadId, DBG_CONTINUE);
            if ev.dwDebugEventCode == EXIT_PROCESS_DEBUG_EVENT && ev.dwProcessId == self.pid {
                self.process = std::ptr::null_mut();
                self.threads.clear();
                return Ok(());
            }
        }
        if killed {
            Ok(())
        } else {
            Err(last_error("TerminateProcess"))
        }
    }

    fn write_dump(&mut self, kind: DumpKind, path: &str) -> Result<(), String> {
        let wide_path = wide(path);
        // SAFETY: a NUL-terminated path; no security attributes or template.
        let file = unsafe {
            CreateFileW(
                wide_path.as_ptr(),
                GENERIC_WRITE,
                0,
                std::ptr::null(),
                CREATE_ALWAYS,
                FILE_ATTRIBUTE_NORMAL,
                std::ptr::null_mut(),
            )
        };
        if file == INVALID_HANDLE_VALUE {
            return Err(last_error(&format!("creating {path}")));
        }
        let dump_type = match kind {
            DumpKind::Full => {
                MiniDumpWithFullMemory
                    | MiniDumpWithHandleData
                    | MiniDumpWithUnloadedModules
                    | MiniDumpWithFullMemoryInfo
                    | MiniDumpWithThreadInfo
            }
            DumpKind::Mini => MiniDumpNormal,
        };
        // The dump shows the program's own bytes, not the stub's int3s.
        let software: Vec<(u64, u8)> = self.software.iter().map(|(&a, &b)| (a, b)).collect();
        for &(addr, orig) in &software {
            let _ = self.write_raw(addr, &[orig]);
        }
        // With the last exception when halted at one: the dump's exception stream.
        let at_exception = matches!(&self.halt, Halt::Stopped(s) if s.exception.is_some());
        let mut record = self.last_exception.filter(|_| at_exception);
        let mut context = record
            .as_ref()
            .and_then(|(tid, _)| self.context(*tid, CONTEXT_REGS).ok());
        let mut pointers = EXCEPTION_POINTERS {
            ExceptionRecord: std::ptr::null_mut(),
            ContextRecord: std::ptr::null_mut(),
        };
        let mut exception_info = None;
        if let (Some((tid, rec)), Some(ctx)) = (record.as_mut(), context.as_mut()) {
            pointers.ExceptionRecord = rec;
            pointers.ContextRecord = &mut ctx.0;
            exception_info = Some(MINIDUMP_EXCEPTION_INFORMATION {
                ThreadId: *tid,
                ExceptionPointers: &mut pointers,
                ClientPointers: 0,
            });
        }
        let info_ptr = exception_info
            .as_ref()
            .map_or(std::ptr::null(), |i| i as *const _);
        // SAFETY: valid handles; the exception information points at live locals.
        let ok = unsafe {
            MiniDumpWriteDump(
                self.process,
                self.pid,
                file,
                dump_type,
                info_ptr,
                std::ptr::null(),
                std::ptr::null(),
            )
        } != 0;
        let error = (!ok).then(|| last_error("MiniDumpWriteDump"));
        close(file);
        for &(addr, _) in &software {
            let _ = self.write_raw(addr, &[0xcc]);
        }
        match error {
            Some(e) => {
                let _ = std::fs::remove_file(path);
                Err(e)
            }
            None => Ok(()),
        }
    }

    fn teb(&self, tid: u32) -> Option<u64> {
        self.threads.get(&tid).map(|t| t.teb).filter(|&t| t != 0)
    }
}
