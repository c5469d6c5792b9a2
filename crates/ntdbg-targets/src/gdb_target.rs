//! A live target over the GDB remote protocol, seen while it is stopped.
//!
//! [`GdbTarget`] wraps a [`GdbClient`] and answers the [`Target`] contract for a stopped
//! target: threads and their register contexts are read once when the target is opened (and
//! again by [`GdbTarget::refresh`] after it ran), memory is read on demand page by page and
//! cached until the next refresh. Unreadable bytes are holes. Modules of a Windows process
//! (`winedbg --gdb`) come from the PEB loader list in memory, found through each thread's TEB.
//!
//! x86-64 register contexts become `CONTEXT_AMD64` records (integer, control, segment and
//! FXSAVE state); other architectures have threads without contexts for now.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use minidump::format::CONTEXT_AMD64;
use minidump::{MinidumpContext, MinidumpModuleList, MinidumpRawContext};
use ntdbg_gdbremote::{ClientOptions, GdbClient, GdbError, RegisterLayout, StopReply, ThreadId};

use crate::error::TargetError;
use crate::loader_list;
use crate::memory::{MemoryRegion, MemoryView};
use crate::model::{Arch, ExceptionEvent, MemoryInfo, SystemFacts, TargetKind, ThreadInfo};
use crate::Target;

const PAGE: u64 = 0x1000;
/// How much of a thread's stack, from its stack pointer's page up, stack walks read.
const STACK_WINDOW: u64 = 256 * 1024;
/// Pages kept in the memory cache before it is emptied.
const CACHE_PAGES: usize = 4096;

/// A stopped live target behind a GDB remote stub (gdbserver, `winedbg --gdb`, QEMU).
#[derive(Debug)]
pub struct GdbTarget {
    client: Arc<Mutex<GdbClient>>,
    origin: String,
    layout: RegisterLayout,
    arch: Arch,
    system: SystemFacts,
    threads: Vec<ThreadInfo>,
    thread_ids: Vec<ThreadId>,
    numbers: ThreadNumbers,
    modules: MinidumpModuleList,
    event: Option<ExceptionEvent>,
    /// The stub's memory map, read on first use after each refresh.
    memory_map: OnceLock<Option<(Vec<MemoryInfo>, &'static str)>>,
    stop: Option<StopReply>,
    teb_source: Option<&'static str>,
    pages: Mutex<HashMap<u64, Option<Vec<Option<u8>>>>>,
}

impl GdbTarget {
    /// Connects to `addr` (`host:port`) and reads the stopped target's threads and registers.
    pub fn connect(addr: &str, opts: ClientOptions) -> Result<GdbTarget, TargetError> {
        let client = GdbClient::connect(addr, opts).map_err(|e| live(addr, e))?;
        GdbTarget::from_client(client, format!("gdb:{addr}"))
    }

    /// Wraps a connected client. `origin` is what [`Target::origin`] reports.
    pub fn from_client(mut client: GdbClient, origin: String) -> Result<GdbTarget, TargetError> {
        let layout = client.register_layout().map_err(|e| live(&origin, e))?;
        let arch = match layout.architecture.as_deref() {
            Some("i386:x86-64") => Arch::X64,
            Some(a) if a.starts_with("i386") => Arch::X86,
            Some("aarch64") => Arch::Arm64,
            _ => Arch::Other(0xffff),
        };
        let stop = client.initial_stop().cloned();
        let mut t = GdbTarget {
            client: Arc::new(Mutex::new(client)),
            origin,
            layout,
            arch,
            system: SystemFacts::default(),
            threads: Vec::new(),
            thread_ids: Vec::new(),
            numbers: ThreadNumbers::default(),
            modules: MinidumpModuleList::new(),
            event: None,
            memory_map: OnceLock::new(),
            stop,
            teb_source: None,
            pages: Mutex::new(HashMap::new()),
        };
        t.refresh()?;
        Ok(t)
    }

    /// Re-reads threads and registers and empties the memory cache (call after the target
    /// ran and stopped again).
    pub fn refresh(&mut self) -> Result<(), TargetError> {
        let origin = self.origin.clone();
        let client = self.client.clone();
        let mut client = client.lock().unwrap_or_else(|p| p.into_inner());
        self.stop = client.last_stop().cloned();
        let ids = match client.threads() {
            Ok(ids) if !ids.is_empty() => ids,
            Ok(_) | Err(GdbError::Unsupported(_)) => vec![ThreadId::ANY],
            Err(e) => return Err(live(&origin, e)),
        };
        let ids = self.numbers.order(ids);
        let mut threads = Vec::with_capacity(ids.len());
        let mut teb_source = None;
        for &id in &ids {
            if id != ThreadId::ANY {
                client.set_thread(id).map_err(|e| live(&origin, e))?;
            }
            let regs = client.read_registers().map_err(|e| live(&origin, e))?;
            // The TEB: the GS base on x64 Windows when the stub gives it, else qGetTIBAddr.
            let gs = (self.arch == Arch::X64)
                .then(|| self.layout.value_u64("gs_base", &regs))
                .flatten()
                .filter(|&gs| gs != 0);
            let teb = match gs {
                Some(gs) => {
                    teb_source.get_or_insert("gs_base");
                    gs
                }
                None => match client.tib_address(id).ok().flatten() {
                    Some(tib) => {
                        teb_source.get_or_insert("qGetTIBAddr");
                        tib
                    }
                    None => 0,
                },
            };
            let context = match self.arch {
                Arch::X64 => amd64_context(&self.layout, &regs),
                _ => None,
            };
            threads.push(ThreadInfo {
                id: id.tid().and_then(|t| u32::try_from(t).ok()).unwrap_or(0),
                name: None,
                suspend_count: 0,
                priority: 0,
                teb,
                context,
                stack: None,
            });
        }
        if self.system.process_id.is_none() {
            self.system.process_id = client
                .process_id()
                .ok()
                .flatten()
                .and_then(|p| u32::try_from(p).ok());
        }
        drop(client);
        self.system.cpu_info = self.layout.architecture.clone();
        self.threads = threads;
        self.thread_ids = ids;
        self.teb_source = teb_source;
        self.pages
            .get_mut()
            .map_err(|_| live(&origin, GdbError::Protocol("cache lock poisoned".into())))?
            .clear();
        self.modules = self.read_modules();
        self.memory_map = OnceLock::new();
        if self.system.process_id.is_none() {
            self.system.process_id = self.process_id_from_teb();
        }
        Ok(())
    }

    /// The process id from a thread's TEB (`ClientId.UniqueProcess`), for stubs that do not
    /// say it (winedbg): taken only when the TEB's `ClientId.UniqueThread` is that thread.
    fn process_id_from_teb(&self) -> Option<u32> {
        let (pid_at, width) = match self.arch {
            Arch::X64 => (0x40, 8),
            Arch::X86 => (0x20, 4),
            _ => return None,
        };
        self.threads.iter().filter(|t| t.teb != 0).find_map(|t| {
            let pid = self.read_uint(t.teb.checked_add(pid_at)?, width)?;
            let tid = self.read_uint(t.teb.checked_add(pid_at + width as u64)?, width)?;
            (tid == u64::from(t.id) && pid != 0)
                .then(|| u32::try_from(pid).ok())
                .flatten()
        })
    }

    /// The modules from the PEB loader list (Windows processes, x64), or none.
    fn read_modules(&self) -> MinidumpModuleList {
        if self.arch != Arch::X64 {
            return MinidumpModuleList::new();
        }
        let found = self
            .threads
            .iter()
            .filter(|t| t.teb != 0)
            .find_map(|t| loader_list::modules_from_teb(self, t.teb));
        MinidumpModuleList::from_modules(found.unwrap_or_default())
    }

    /// Where the threads' TEB addresses came from: `gs_base` (the stub's target description)
    /// or `qGetTIBAddr`; `None` when the stub gives neither (no Windows modules then).
    pub fn teb_source(&self) -> Option<&'static str> {
        self.teb_source
    }

    /// The stop reply that explains why the target is stopped, when known.
    pub fn stop_reply(&self) -> Option<&StopReply> {
        self.stop.as_ref()
    }

    /// The stub's memory map (see [`crate::stub_memory_map`]) and where it came from;
    /// `None` when the stub gives none.
    pub fn memory_map(&self) -> Option<(&[MemoryInfo], &'static str)> {
        self.memory_map
            .get_or_init(|| {
                let pid = self.system.process_id.map(u64::from);
                crate::stub_memory_map::read(&mut self.client(), pid)
            })
            .as_ref()
            .map(|(regions, source)| (regions.as_slice(), *source))
    }

    /// The register layout from the stub's target description.
    pub fn layout(&self) -> &RegisterLayout {
        &self.layout
    }

    /// The protocol thread ids, parallel to [`Target::threads`].
    pub fn thread_ids(&self) -> &[ThreadId] {
        &self.thread_ids
    }

    /// The client, for run control. Holding the guard blocks memory reads.
    pub fn client(&self) -> MutexGuard<'_, GdbClient> {
        self.client.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The client shared with run control, which resumes and waits on it while the target
    /// object is owned by a session.
    pub fn shared_client(&self) -> Arc<Mutex<GdbClient>> {
        self.client.clone()
    }

    /// The bytes of the page at `base` (`None` when the stub cannot read any of it).
    fn page(&self, base: u64) -> Option<Vec<Option<u8>>> {
        let mut pages = self.pages.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(p) = pages.get(&base) {
            return p.clone();
        }
        let read = {
            let mut client = self.client();
            let mut read = client.read_memory(base, PAGE as usize).ok();
            // Show the program's own bytes under the int3s the debugger wrote, as WinDbg does.
            if let Some(bytes) = read.as_mut() {
                for (addr, orig) in client.int3_sites() {
                    if let Some(slot) = addr
                        .checked_sub(base)
                        .filter(|&o| o < PAGE)
                        .and_then(|o| bytes.get_mut(o as usize))
                    {
                        if slot.is_some() {
                            *slot = Some(orig);
                        }
                    }
                }
            }
            read.filter(|bytes| bytes.iter().any(Option::is_some))
        };
        if pages.len() >= CACHE_PAGES {
            pages.clear();
        }
        pages.insert(base, read.clone());
        read
    }
}

/// WinDbg's thread numbers for the life of a session: each thread id gets the next number
/// the first time it is seen and keeps it; the number of a thread that ended is not given
/// again (a new thread that reuses its id is a new thread).
#[derive(Debug, Default)]
struct ThreadNumbers {
    by_tid: HashMap<u64, usize>,
    next: usize,
}

impl ThreadNumbers {
    /// Numbers the threads of a listing (forgetting the ones that ended) and returns them in
    /// number order.
    fn order(&mut self, mut ids: Vec<ThreadId>) -> Vec<ThreadId> {
        let present: std::collections::HashSet<u64> = ids.iter().filter_map(|t| t.tid()).collect();
        self.by_tid.retain(|tid, _| present.contains(tid));
        for tid in ids.iter().filter_map(|t| t.tid()) {
            if let std::collections::hash_map::Entry::Vacant(e) = self.by_tid.entry(tid) {
                e.insert(self.next);
                self.next += 1;
            }
        }
        ids.sort_by_key(|t| t.tid().and_then(|tid| self.by_tid.get(&tid)).copied());
        ids
    }

    /// The number of a thread.
    fn number(&self, id: Option<ThreadId>) -> Option<usize> {
        self.by_tid.get(&id?.tid()?).copied()
    }
}

fn live(origin: &str, source: GdbError) -> TargetError {
    TargetError::Live {
        origin: origin.to_string(),
        source,
    }
}

impl MemoryView for GdbTarget {
    /// The readable bytes from `addr` up to the first hole (at most `max`).
    fn read_chunk(&self, addr: u64, max: usize) -> Option<Cow<'_, [u8]>> {
        let mut bytes = Vec::new();
        while bytes.len() < max {
            let cursor = addr.wrapping_add(bytes.len() as u64);
            let base = cursor & !(PAGE - 1);
            let Some(page) = self.page(base) else { break };
            let start = (cursor - base) as usize;
            let end = (start + (max - bytes.len())).min(PAGE as usize);
            let before = bytes.len();
            bytes.extend(page[start..end].iter().map_while(|b| *b));
            if bytes.len() - before < end - start {
                break;
            }
        }
        if bytes.is_empty() {
            None
        } else {
            Some(Cow::Owned(bytes))
        }
    }

    /// A live target does not list its memory map; each thread's stack, from its stack
    /// pointer up, is offered so that stacks can be walked.
    fn regions(&self) -> Vec<MemoryRegion> {
        self.threads
            .iter()
            .filter_map(|t| t.context.as_ref())
            .map(|c| MemoryRegion {
                base: c.get_stack_pointer() & !(PAGE - 1),
                size: STACK_WINDOW,
            })
            .collect()
    }

    fn read_virtual(&self, addr: u64, len: usize) -> Vec<Option<u8>> {
        let mut out = Vec::with_capacity(len.min(1 << 24));
        while out.len() < len {
            let cursor = addr.wrapping_add(out.len() as u64);
            let base = cursor & !(PAGE - 1);
            let start = (cursor - base) as usize;
            let take = (PAGE as usize - start).min(len - out.len());
            match self.page(base) {
                Some(page) => out.extend_from_slice(&page[start..start + take]),
                None => out.extend(std::iter::repeat_n(None, take)),
            }
        }
        out
    }
}

impl Target for GdbTarget {
    fn kind(&self) -> TargetKind {
        TargetKind::Live
    }
    fn arch(&self) -> Arch {
        self.arch
    }
    fn system(&self) -> &SystemFacts {
        &self.system
    }
    fn threads(&self) -> &[ThreadInfo] {
        &self.threads
    }
    fn thread_number(&self, index: usize) -> usize {
        self.numbers
            .number(self.thread_ids.get(index).copied())
            .unwrap_or(index)
    }
    fn modules(&self) -> &MinidumpModuleList {
        &self.modules
    }
    fn event(&self) -> Option<&ExceptionEvent> {
        self.event.as_ref()
    }
    fn set_live_event(&mut self, event: Option<ExceptionEvent>) {
        self.event = event;
    }
    fn memory_info(&self) -> Option<&[MemoryInfo]> {
        self.memory_map().map(|(regions, _)| regions)
    }
    fn origin(&self) -> &str {
        &self.origin
    }
    fn refresh(&mut self) -> Result<(), TargetError> {
        GdbTarget::refresh(self)
    }
}

/// Builds a `CONTEXT_AMD64` from a `g` reply; `None` when rip or rsp is unavailable.
pub fn amd64_context(layout: &RegisterLayout, g: &[Option<u8>]) -> Option<MinidumpContext> {
    let r = |name: &str| layout.value_u64(name, g).unwrap_or(0);
    let seg = |name: &str| r(name) as u16;
    let mut c = CONTEXT_AMD64 {
        // CONTROL | INTEGER | SEGMENTS | FLOATING_POINT
        context_flags: 0x0010_000f,
        rax: r("rax"),
        rbx: r("rbx"),
        rcx: r("rcx"),
        rdx: r("rdx"),
        rsi: r("rsi"),
        rdi: r("rdi"),
        rbp: r("rbp"),
        rsp: layout.value_u64("rsp", g)?,
        r8: r("r8"),
        r9: r("r9"),
        r10: r("r10"),
        r11: r("r11"),
        r12: r("r12"),
        r13: r("r13"),
        r14: r("r14"),
        r15: r("r15"),
        rip: layout.value_u64("rip", g)?,
        eflags: r("eflags") as u32,
        cs: seg("cs"),
        ss: seg("ss"),
        ds: seg("ds"),
        es: seg("es"),
        fs: seg("fs"),
        gs: seg("gs"),
        mx_csr: r("mxcsr") as u32,
        ..Default::default()
    };
    // FXSAVE (XMM_SAVE_AREA32) layout inside float_save.
    let fs = &mut c.float_save;
    fs[0..2].copy_from_slice(&(r("fctrl") as u16).to_le_bytes());
    fs[2..4].copy_from_slice(&(r("fstat") as u16).to_le_bytes());
    // GDB gives the full tag word (2 bits a register, 3 = empty); FXSAVE keeps one bit a
    // register (1 = valid).
    let tag = r("ftag") as u16;
    fs[4] = (0..8).fold(0u8, |acc, i| {
        if (tag >> (2 * i)) & 3 != 3 {
            acc | (1 << i)
        } else {
            acc
        }
    });
    fs[6..8].copy_from_slice(&(r("fop") as u16).to_le_bytes());
    fs[8..12].copy_from_slice(&(r("fioff") as u32).to_le_bytes());
    fs[12..14].copy_from_slice(&(r("fiseg") as u16).to_le_bytes());
    fs[16..20].copy_from_slice(&(r("fooff") as u32).to_le_bytes());
    fs[20..22].copy_from_slice(&(r("foseg") as u16).to_le_bytes());
    fs[24..28].copy_from_slice(&(r("mxcsr") as u32).to_le_bytes());
    for i in 0..8 {
        if let Some(st) = layout.value(&format!("st{i}"), g) {
            let n = st.len().min(16);
            fs[32 + i * 16..32 + i * 16 + n].copy_from_slice(&st[..n]);
        }
    }
    for i in 0..16 {
        if let Some(x) = layout.value(&format!("xmm{i}"), g) {
            let n = x.len().min(16);
            fs[160 + i * 16..160 + i * 16 + n].copy_from_slice(&x[..n]);
        }
    }
    Some(MinidumpContext::from_raw(MinidumpRawContext::Amd64(c)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_numbers_last_the_session() {
        let mut n = ThreadNumbers::default();
        let ids = |tids: &[u64]| tids.iter().map(|&t| ThreadId::new(t)).collect::<Vec<_>>();
        // winedbg lists the newest thread first: the first listing fixes the numbers.
        assert_eq!(n.order(ids(&[0x20, 0x10])), ids(&[0x20, 0x10]));
        assert_eq!(n.order(ids(&[0x30, 0x10, 0x20])), ids(&[0x20, 0x10, 0x30]));
        assert_eq!(n.number(Some(ThreadId::new(0x30))), Some(2));
        // 0x10 ends: the others keep their numbers; an id used again is a new thread.
        assert_eq!(n.order(ids(&[0x30, 0x20])), ids(&[0x20, 0x30]));
        assert_eq!(n.number(Some(ThreadId::new(0x30))), Some(2));
        n.order(ids(&[0x10, 0x30, 0x20]));
        assert_eq!(n.number(Some(ThreadId::new(0x10))), Some(3));
    }

    #[test]
    fn amd64_context_from_g_bytes() {
        let layout = RegisterLayout::amd64_core();
        let size = layout
            .registers
            .last()
            .map(|r| r.offset + (r.bitsize as usize).div_ceil(8))
            .unwrap();
        let mut g = vec![Some(0u8); size];
        let put = |g: &mut Vec<Option<u8>>, name: &str, v: u64| {
            let r = layout.by_name(name).unwrap();
            let n = (r.bitsize as usize).div_ceil(8).min(8);
            for (i, b) in v.to_le_bytes()[..n].iter().enumerate() {
                g[r.offset + i] = Some(*b);
            }
        };
        put(&mut g, "rip", 0x401000);
        put(&mut g, "rsp", 0x7ffe_0000);
        put(&mut g, "r15", 15);
        put(&mut g, "eflags", 0x246);
        put(&mut g, "cs", 0x33);
        put(&mut g, "xmm1", 0x1122);
        put(&mut g, "ftag", 0xfffc); // st0 valid, the rest empty
        let ctx = amd64_context(&layout, &g).unwrap();
        let MinidumpRawContext::Amd64(c) = &ctx.raw else {
            panic!()
        };
        assert_eq!(
            (c.rip, c.rsp, c.r15, c.eflags, c.cs),
            (0x401000, 0x7ffe_0000, 15, 0x246, 0x33)
        );
        assert_eq!(c.float_save[176], 0x22);
        assert_eq!(c.float_save[4], 1);
        // rip unavailable → no context.
        let off = layout.by_name("rip").unwrap().offset;
        g[off] = None;
        assert!(amd64_context(&layout, &g).is_none());
    }
}
