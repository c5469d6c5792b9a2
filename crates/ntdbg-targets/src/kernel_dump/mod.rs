//! Kernel crash dumps (`PAGEDU64` / `PAGEDUMP`): small/triage, kernel, complete (full) and
//! bitmap dumps.
//!
//! The file is memory-mapped and never read whole: opening parses the header (and, for small
//! dumps, the triage header, driver list and data-block table); physical pages are located on
//! demand (full dumps: the header's runs; bitmap dumps: the bitmap, ranked on first use), and
//! virtual addresses are translated with the architecture's page-table walk (x64, ARM64, x86
//! PAE or not) from `DirectoryTableBase`, or from the process selected with
//! [`KernelDump::set_process_directory`] (`.process`).

mod header;
mod paging;
mod physical;
mod triage;

pub use header::{filetime_to_unix, HeaderException, KernelHeader, PhysicalRun};
pub use paging::Paging;
pub use physical::PAGE_SIZE;
pub use triage::{DriverEntry, TriageHeader};

use crate::error::TargetError;
use crate::memory::{MemoryRegion, MemoryView};
use crate::model::{
    Arch, Bugcheck, ExceptionEvent, SystemFacts, TargetKind, ThreadInfo, PROCESSOR_ARCHITECTURE_ARM,
};
use crate::Target;
use header::{u32_at, u64_at};
use minidump::{MinidumpContext, MinidumpModule, MinidumpModuleList};
use ntdbg_files::{FileChanged, FileMap};
use physical::PhysicalMemory;
use std::borrow::Cow;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

/// Most modules read from `PsLoadedModuleList` (a real system has a few hundred).
const MAX_LOADED_MODULES: usize = 4096;
/// How much stack above a thread's stack pointer is offered to the stack walker.
const MAX_STACK_BYTES: u64 = 0x20000;

/// A captured virtual range of a small dump.
#[derive(Debug, Clone, Copy)]
struct MappedRange {
    region: MemoryRegion,
    file_offset: usize,
}

/// A Windows kernel crash dump opened for debugging.
#[derive(Debug)]
pub struct KernelDump {
    origin: String,
    map: FileMap,
    header: KernelHeader,
    triage: Option<TriageHeader>,
    drivers: Vec<DriverEntry>,
    kind: TargetKind,
    arch: Arch,
    system: SystemFacts,
    threads: Vec<ThreadInfo>,
    modules: MinidumpModuleList,
    event: Option<ExceptionEvent>,
    bugcheck: Option<Bugcheck>,
    ranges: Vec<MappedRange>,
    physical: PhysicalMemory,
    paging: Option<Paging>,
    /// The page-table root virtual reads use: the header's, or a process's after `.process`.
    directory: AtomicU64,
    stack_regions: Vec<MemoryRegion>,
}

impl KernelDump {
    /// Opens and indexes a kernel dump file.
    pub fn open(path: &Path) -> Result<KernelDump, TargetError> {
        let io_err = |cause| TargetError::Io {
            path: path.to_path_buf(),
            cause,
        };
        // A regular file only; mapped so that a truncation while it is open reads zeros and
        // is reported by `check_source`, never a signal.
        let map = FileMap::open(path).map_err(io_err)?;
        Self::from_map(path, map)
    }

    fn from_map(path: &Path, map: FileMap) -> Result<KernelDump, TargetError> {
        let corrupt = |reason: String| TargetError::Corrupt {
            path: path.to_path_buf(),
            reason,
        };
        let header = match KernelHeader::parse(&map) {
            Some(Ok(h)) => h,
            Some(Err(reason)) => return Err(corrupt(reason)),
            None => {
                return Err(TargetError::NotADump {
                    path: path.to_path_buf(),
                    signature: signature_text(&map),
                })
            }
        };
        let arch = match header.machine_image_type {
            0x8664 => Arch::X64,
            0x14c => Arch::X86,
            0xaa64 => Arch::Arm64,
            0x1c4 => Arch::Other(PROCESSOR_ARCHITECTURE_ARM),
            other => Arch::Other(other as u16),
        };
        let Some(kind) = header.kind() else {
            return Err(TargetError::Unsupported {
                path: path.to_path_buf(),
                what: format!("kernel dump type {}", header.dump_type),
            });
        };

        let mut triage = None;
        let mut drivers = Vec::new();
        let mut ranges = Vec::new();
        let physical = match header.dump_type {
            1 => {
                if header.run_count_raw as usize > header.runs.len() {
                    return Err(corrupt(format!(
                        "the header lists {} physical memory runs; at most {} fit",
                        header.run_count_raw,
                        if header.is64 {
                            header::MAX_RUNS64
                        } else {
                            header::MAX_RUNS32
                        }
                    )));
                }
                PhysicalMemory::from_runs(&header.runs, header.size() as u64).map_err(corrupt)?
            }
            2 | 5 | 6 if header.is64 => {
                PhysicalMemory::from_bitmap(&map, header.size()).map_err(corrupt)?
            }
            8..=10 if header.is64 => {
                PhysicalMemory::from_rdmp(&map, header.size(), header.dump_type == 10)
                    .map_err(corrupt)?
            }
            4 if header.is64 => {
                let t = TriageHeader::parse64(&map, header.size())
                    .ok_or_else(|| corrupt("the triage header is cut short".into()))?;
                drivers = triage::drivers64(&map, &t);
                for (va, file_offset, size) in triage::memory_blocks64(&map, &t) {
                    ranges.push(MappedRange {
                        region: MemoryRegion {
                            base: va,
                            size: size as u64,
                        },
                        file_offset,
                    });
                }
                triage = Some(t);
                PhysicalMemory::None
            }
            // 32-bit small dumps: the header facts and the driver list.
            4 => {
                if let Some(t) = TriageHeader::parse32(&map, header.size()) {
                    drivers = triage::drivers32(&map, &t);
                }
                PhysicalMemory::None
            }
            // 32-bit kernel and bitmap dumps: header facts only.
            _ => PhysicalMemory::None,
        };
        let paging = match arch {
            Arch::X64 => Some(Paging::X64),
            Arch::Arm64 => Some(Paging::Arm64),
            Arch::X86 if header.pae_enabled => Some(Paging::X86Pae),
            Arch::X86 => Some(Paging::X86),
            Arch::Other(_) => None,
        }
        .filter(|_| !matches!(physical, PhysicalMemory::None));
        ranges.sort_by_key(|r| r.region.base);
        ranges.dedup_by_key(|r| r.region.base);

        let context = crate::context::context_from_bytes(
            arch,
            map.get(header.context_offset..).unwrap_or_default(),
        );
        let directory = AtomicU64::new(header.directory_table_base);
        let mut dump = KernelDump {
            origin: path.display().to_string(),
            map,
            header,
            triage,
            drivers,
            kind,
            arch,
            system: SystemFacts::default(),
            threads: Vec::new(),
            modules: MinidumpModuleList::default(),
            event: None,
            bugcheck: None,
            ranges,
            physical,
            paging,
            directory,
            stack_regions: Vec::new(),
        };
        dump.fill_facts(context);
        Ok(dump)
    }

    /// Threads, modules, event, bugcheck and system facts, once memory is indexed.
    fn fill_facts(&mut self, context: Option<MinidumpContext>) {
        let h = &self.header;
        let (processor, cid) = self.current_thread_facts();
        let thread_id = cid.map(|(_, t)| t).unwrap_or(processor.unwrap_or(0));
        let stack = match &self.triage {
            Some(t) if t.size_of_call_stack > 0 => Some(MemoryRegion {
                base: t.top_of_stack,
                size: u64::from(t.size_of_call_stack),
            }),
            _ => context
                .as_ref()
                .and_then(|c| self.stack_region(c.get_stack_pointer())),
        };
        if self.triage.is_none() {
            self.stack_regions.extend(stack);
        }
        // A small dump's header context is the trap frame of the original fault on some
        // bugchecks; the bugcheck caller's own context is the captured CONTEXT whose stack
        // pointer is the triage TopOfStack (`KeBugCheckEx`'s frame), when the dump holds one.
        let thread_context = self.bugcheck_context().or_else(|| context.clone());
        if let Some(ctx) = &thread_context {
            self.threads.push(ThreadInfo {
                id: thread_id,
                name: processor.map(|p| format!("processor {p}")),
                suspend_count: 0,
                priority: 0,
                teb: 0,
                context: Some(ctx.clone()),
                stack,
            });
        }
        self.event = h.exception.as_ref().map(|e| ExceptionEvent {
            thread_id,
            code: e.code,
            flags: e.flags,
            address: e.address,
            parameters: e.parameters.clone(),
            nested_record: e.record,
            context: context.clone(),
        });
        self.bugcheck = (h.bugcheck_code != 0).then_some(Bugcheck {
            code: h.bugcheck_code,
            parameters: h.bugcheck_parameters,
            thread_id,
            processor,
        });
        let build = h.minor_version;
        self.system = SystemFacts {
            os_version: format!("{}.{build}", os_major_minor(build)),
            os_build: build,
            csd_version: None,
            product_type: u8::try_from(h.product_type).unwrap_or(0),
            cpu_count: h.number_processors,
            cpu_info: None,
            process_id: cid.and_then(|(p, _)| u32::try_from(p).ok()),
            dump_time: h
                .system_time
                .and_then(filetime_to_unix)
                .and_then(|t| u32::try_from(t).ok()),
            process_create_time: None,
            process_user_time: None,
            process_kernel_time: None,
        };
        let modules = if self.triage.is_some() || !self.drivers.is_empty() {
            self.drivers
                .iter()
                .map(|d| module(&d.name, d.base, d.size, d.timestamp, d.checksum))
                .collect()
        } else {
            self.loaded_modules()
        };
        self.modules = MinidumpModuleList::from_modules(modules);
    }

    /// The CONTEXT captured by `KeBugCheckEx` in a small dump: a data block holding an x64
    /// CONTEXT (flags say so) whose stack pointer is the triage `TopOfStack`.
    fn bugcheck_context(&self) -> Option<MinidumpContext> {
        let t = self.triage.as_ref()?;
        if self.arch != Arch::X64 || t.top_of_stack == 0 {
            return None;
        }
        const CONTEXT_AMD64_SIZE: usize = 1232;
        self.ranges
            .iter()
            .filter(|r| r.region.size >= CONTEXT_AMD64_SIZE as u64)
            .filter_map(|r| {
                let bytes = self.map.get(r.file_offset..)?.get(..CONTEXT_AMD64_SIZE)?;
                let flags = u32_at(bytes, 0x30)?;
                let rsp = u64_at(bytes, 0x98)?;
                (flags & 0x0010_0000 != 0 && rsp == t.top_of_stack)
                    .then(|| crate::context::context_from_bytes(Arch::X64, bytes))
                    .flatten()
            })
            .next()
    }

    /// The processor number and `(process id, thread id)` of the crashing thread, from the
    /// triage KPRCB and ETHREAD copies (only for builds whose ETHREAD layout is known).
    fn current_thread_facts(&self) -> (Option<u32>, Option<(u64, u32)>) {
        let Some(t) = &self.triage else {
            return (None, None);
        };
        let processor = (t.prcb_offset != 0)
            .then(|| u32_at(&self.map, (t.prcb_offset as usize).checked_add(0x24)?))
            .flatten()
            .filter(|&p| p < 4096);
        let cid_offset = match self.header.minor_version {
            19041..=19045 => Some(0x478usize),
            _ => None,
        };
        let cid = cid_offset.filter(|_| t.thread_offset != 0).and_then(|off| {
            let at = (t.thread_offset as usize).checked_add(off)?;
            let pid = u64_at(&self.map, at)?;
            let tid = u32::try_from(u64_at(&self.map, at.checked_add(8)?)?).ok()?;
            Some((pid, tid))
        });
        (processor, cid)
    }

    /// The mapped pages from `sp`'s page upwards (at most [`MAX_STACK_BYTES`]).
    fn stack_region(&self, sp: u64) -> Option<MemoryRegion> {
        let base = sp & !(PAGE_SIZE - 1);
        let mut size = 0;
        while size < MAX_STACK_BYTES && self.translate(base.wrapping_add(size)).is_some() {
            size += PAGE_SIZE;
        }
        (size > 0).then_some(MemoryRegion { base, size })
    }

    /// The loaded-module list from `PsLoadedModuleList` (`KLDR_DATA_TABLE_ENTRY`s: `DllBase`
    /// after three `LIST_ENTRY`s, then `EntryPoint`, `SizeOfImage`, `FullDllName`,
    /// `BaseDllName`, laid out by pointer size).
    fn loaded_modules(&self) -> Vec<MinidumpModule> {
        let head = self.header.ps_loaded_module_list;
        if matches!(self.arch, Arch::Other(_)) || head == 0 {
            return Vec::new();
        }
        let ptr = self.arch.pointer_size() as u64;
        let (base_at, size_at, full_name_at) = (6 * ptr, 8 * ptr, 9 * ptr);
        let base_name_at = full_name_at + 2 * ptr;
        let mut out = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut entry = self.read_uint(head, ptr as usize).unwrap_or(head);
        while entry != head && out.len() < MAX_LOADED_MODULES && seen.insert(entry) {
            let (Some(base), Some(size)) = (
                self.read_uint(entry.wrapping_add(base_at), ptr as usize),
                self.read_uint(entry.wrapping_add(size_at), 4),
            ) else {
                break;
            };
            let name = self
                .unicode_string(entry.wrapping_add(full_name_at))
                .or_else(|| self.unicode_string(entry.wrapping_add(base_name_at)))
                .unwrap_or_else(|| format!("module_{base:x}"));
            let (timestamp, checksum) = self.pe_identity(base);
            out.push(module(&name, base, size as u32, timestamp, checksum));
            let Some(next) = self.read_uint(entry, ptr as usize) else {
                break;
            };
            entry = next;
        }
        out
    }

    /// A `UNICODE_STRING` (of the dump's pointer size) at `addr`, when its characters are in
    /// the dump.
    fn unicode_string(&self, addr: u64) -> Option<String> {
        let ptr = self.arch.pointer_size();
        let len = self.read_uint(addr, 2)? as usize;
        let buffer = self.read_uint(addr.wrapping_add(ptr as u64), ptr)?;
        if len == 0 || len > 2048 {
            return None;
        }
        let bytes = self.read_exact(buffer, len & !1)?;
        let units: Vec<u16> = bytes
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect();
        Some(String::from_utf16_lossy(&units))
    }

    /// `(TimeDateStamp, CheckSum)` from the PE header at `base`, zero when absent.
    fn pe_identity(&self, base: u64) -> (u32, u32) {
        let read = || {
            if self.read_uint(base, 2)? != 0x5a4d {
                return None;
            }
            let pe = base.checked_add(self.read_uint(base.wrapping_add(0x3c), 4)?)?;
            if self.read_uint(pe, 4)? != 0x4550 {
                return None;
            }
            let ts = self.read_uint(pe.wrapping_add(8), 4)? as u32;
            let ck = self.read_uint(pe.wrapping_add(0x58), 4).unwrap_or(0) as u32;
            Some((ts, ck))
        };
        read().unwrap_or((0, 0))
    }

    /// The parsed dump header.
    pub fn header(&self) -> &KernelHeader {
        &self.header
    }

    /// The triage header of a small dump.
    pub fn triage(&self) -> Option<&TriageHeader> {
        self.triage.as_ref()
    }

    /// The current process's image name in a small dump (WinDbg's `PROCESS_NAME`) and the
    /// offset of `ImageFileName` in the dump's copy of its EPROCESS, found without symbols
    /// (`ImageFileName`, the one zero-padded image name in the EPROCESS copy).
    pub fn current_process_name(&self) -> Option<(String, usize)> {
        triage::process_image_name(&self.map, self.triage.as_ref()?)
    }

    /// The driver list of a small dump.
    pub fn drivers(&self) -> &[DriverEntry] {
        &self.drivers
    }

    /// Number of physical pages the dump holds (0 for small dumps).
    pub fn physical_pages(&self) -> u64 {
        self.physical.page_count(&self.map)
    }

    /// The bytes of physical page `pfn`, when the dump holds all of them.
    pub fn physical_page(&self, pfn: u64) -> Option<&[u8]> {
        let off = usize::try_from(self.physical.page_offset(&self.map, pfn)?).ok()?;
        self.map.get(off..off.checked_add(PAGE_SIZE as usize)?)
    }

    /// Reads a little-endian `u64` at physical address `pa`.
    fn read_phys_u64(&self, pa: u64) -> Option<u64> {
        let page = self.physical_page(pa / PAGE_SIZE)?;
        u64_at(page, (pa % PAGE_SIZE) as usize)
    }

    /// The physical address of `va` (the page-table walk from the current page-table root),
    /// `None` when a table or the page is not present or not in the dump.
    pub fn translate(&self, va: u64) -> Option<u64> {
        self.translate_span(va).map(|(pa, _)| pa)
    }

    /// The page-table format virtual reads use; `None` when the dump holds no physical memory
    /// (small dumps) or the architecture is unknown.
    pub fn paging(&self) -> Option<Paging> {
        self.paging
    }

    /// The page-table root virtual reads use now.
    pub fn process_directory(&self) -> u64 {
        self.directory.load(Ordering::Relaxed)
    }

    /// Makes virtual reads use the page tables rooted at `directory` (a process's
    /// `DirectoryTableBase`, as `.process` selects it); `None` returns to the header's.
    pub fn set_process_directory(&self, directory: Option<u64>) {
        let root = directory.unwrap_or(self.header.directory_table_base);
        self.directory.store(root, Ordering::Relaxed);
    }

    fn translate_span(&self, va: u64) -> Option<(u64, u64)> {
        paging::translate(self.paging?, self.process_directory(), va, |pa| {
            self.read_phys_u64(pa)
        })
    }

    /// Present bytes at `va` within one 4 KiB physical page.
    fn paged_chunk(&self, va: u64, max: usize) -> Option<&[u8]> {
        let (pa, _) = self.translate_span(va)?;
        let page = self.physical_page(pa / PAGE_SIZE)?;
        let skip = (pa % PAGE_SIZE) as usize;
        let bytes = page.get(skip..)?;
        Some(&bytes[..bytes.len().min(max)])
    }

    fn range_at(&self, addr: u64) -> Option<&MappedRange> {
        let idx = self.ranges.partition_point(|r| r.region.base <= addr);
        let candidate = self.ranges.get(idx.checked_sub(1)?)?;
        candidate.region.contains(addr).then_some(candidate)
    }
}

fn module(name: &str, base: u64, size: u32, timestamp: u32, checksum: u32) -> MinidumpModule {
    let mut m = MinidumpModule::new(base, size, name);
    m.raw.time_date_stamp = timestamp;
    m.raw.checksum = checksum;
    m
}

/// `major.minor` of the Windows release a build number belongs to.
fn os_major_minor(build: u32) -> &'static str {
    match build {
        10240.. => "10.0",
        9600..=9999 => "6.3",
        9200..=9599 => "6.2",
        7600..=9199 => "6.1",
        6000..=7599 => "6.0",
        3790..=5999 => "5.2",
        2600..=3789 => "5.1",
        _ => "5.0",
    }
}

fn signature_text(map: &[u8]) -> String {
    map.get(..8)
        .unwrap_or(map)
        .iter()
        .map(|&b| if b.is_ascii_graphic() { b as char } else { '.' })
        .collect()
}

impl MemoryView for KernelDump {
    fn read_chunk(&self, addr: u64, max: usize) -> Option<Cow<'_, [u8]>> {
        if max == 0 {
            return None;
        }
        if let Some(range) = self.range_at(addr) {
            let skip = usize::try_from(addr - range.region.base).ok()?;
            let len = usize::try_from(range.region.size)
                .ok()?
                .checked_sub(skip)?
                .min(max);
            let start = range.file_offset.checked_add(skip)?;
            return self
                .map
                .get(start..start.checked_add(len)?)
                .map(Cow::Borrowed);
        }
        let first = self.paged_chunk(addr, max)?;
        if first.len() >= max {
            return Some(Cow::Borrowed(first));
        }
        let mut out = first.to_vec();
        while out.len() < max {
            let next = addr.checked_add(out.len() as u64)?;
            match self.paged_chunk(next, max - out.len()) {
                Some(bytes) if !bytes.is_empty() => out.extend_from_slice(bytes),
                _ => break,
            }
        }
        Some(Cow::Owned(out))
    }

    fn regions(&self) -> Vec<MemoryRegion> {
        let mut out: Vec<MemoryRegion> = self.ranges.iter().map(|r| r.region).collect();
        out.extend(self.stack_regions.iter().copied());
        out.sort_by_key(|r| r.base);
        out
    }

    fn read_virtual(&self, addr: u64, len: usize) -> Vec<Option<u8>> {
        let mut out = Vec::with_capacity(len);
        let mut cursor = addr;
        let region_starts: Vec<u64> = self.ranges.iter().map(|r| r.region.base).collect();
        while out.len() < len {
            let want = len - out.len();
            match self.read_chunk(cursor, want) {
                Some(chunk) if !chunk.is_empty() => {
                    out.extend(chunk.iter().map(|b| Some(*b)));
                    cursor = cursor.wrapping_add(chunk.len() as u64);
                }
                _ => {
                    // A hole: up to the next page boundary or the next captured range.
                    let to_page = PAGE_SIZE - (cursor % PAGE_SIZE);
                    let idx = region_starts.partition_point(|&b| b <= cursor);
                    let to_region = region_starts
                        .get(idx)
                        .map(|b| b - cursor)
                        .unwrap_or(u64::MAX);
                    let gap = usize::try_from(to_page.min(to_region))
                        .unwrap_or(usize::MAX)
                        .min(want);
                    out.extend(std::iter::repeat_n(None, gap));
                    cursor = cursor.wrapping_add(gap as u64);
                }
            }
        }
        out
    }
}

impl Target for KernelDump {
    fn kind(&self) -> TargetKind {
        self.kind
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
    fn modules(&self) -> &MinidumpModuleList {
        &self.modules
    }
    fn event(&self) -> Option<&ExceptionEvent> {
        self.event.as_ref()
    }
    fn origin(&self) -> &str {
        &self.origin
    }
    fn bugcheck(&self) -> Option<&Bugcheck> {
        self.bugcheck.as_ref()
    }
    fn stack_region_at(&self, sp: u64) -> Option<MemoryRegion> {
        self.regions()
            .into_iter()
            .find(|r| r.contains(sp))
            .or_else(|| self.stack_region(sp))
    }
    fn as_kernel_dump(&self) -> Option<&KernelDump> {
        Some(self)
    }
    fn check_source(&self) -> Result<(), FileChanged> {
        self.map.check()
    }
}
