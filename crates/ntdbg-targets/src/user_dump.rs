//! The user-mode minidump target.

use crate::cut_dump::{read_list, CutDump, ListLayout};
use crate::error::TargetError;
use crate::memory::{MemoryRegion, MemoryView, SharedOwner};
use crate::model::{Arch, ExceptionEvent, MemoryInfo, SystemFacts, TargetKind, ThreadInfo};
use crate::process_facts::{self, HandleInfo, ThreadTimes, UnloadedModule};
use crate::Target;
use minidump::format::MINIDUMP_STREAM_TYPE;
use minidump::system_info::Cpu;
use minidump::{
    Minidump, MinidumpException, MinidumpHandleDataStream, MinidumpMemoryInfoList,
    MinidumpMiscInfo, MinidumpModuleList, MinidumpSystemInfo, MinidumpThreadInfoList,
    MinidumpThreadList, MinidumpThreadNames, MinidumpUnloadedModuleList,
};
use minidump_common::format::MINIDUMP_STREAM_TYPE as Stream;
use ntdbg_files::{FileChanged, FileMap};
use std::borrow::Cow;
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

/// Where one captured memory range lives in the file.
#[derive(Debug, Clone, Copy)]
struct MappedRange {
    region: MemoryRegion,
    file_offset: usize,
}

/// A Windows user-mode minidump opened for debugging.
#[derive(Debug)]
pub struct UserDump {
    origin: String,
    map: Arc<FileMap>,
    ranges: Vec<MappedRange>,
    arch: Arch,
    system: SystemFacts,
    threads: Vec<ThreadInfo>,
    modules: MinidumpModuleList,
    event: Option<ExceptionEvent>,
    handles: Option<Vec<HandleInfo>>,
    thread_times: Option<Vec<ThreadTimes>>,
    unloaded: Vec<UnloadedModule>,
    memory_info: Option<Vec<MemoryInfo>>,
    commit: crate::CommitFacts,
    /// What could not be read: the file is cut short.
    losses: Vec<String>,
    /// Whether captured memory lies past the end of the file.
    memory_cut_short: bool,
}

impl UserDump {
    /// Opens and indexes a minidump file.
    pub fn open(path: &Path) -> Result<UserDump, TargetError> {
        let io_err = |cause| TargetError::Io {
            path: path.to_path_buf(),
            cause,
        };
        // A regular file only; mapped so that a truncation while it is open reads zeros and
        // is reported by `check_source`, never a signal.
        let map = FileMap::open(path).map_err(io_err)?;
        if map.is_empty() {
            return Err(TargetError::NotADump {
                path: path.to_path_buf(),
                signature: "empty file".into(),
            });
        }
        check_signature(path, &map)?;
        Self::from_map(path, map)
    }

    fn from_map(path: &Path, map: FileMap) -> Result<UserDump, TargetError> {
        let corrupt = |reason: String| TargetError::Corrupt {
            path: path.to_path_buf(),
            reason,
        };
        let dump = Minidump::read(&map[..]).map_err(|e| corrupt(e.to_string()))?;
        let mut cut = CutDump::new(&dump, &map);
        let system_info = dump
            .get_stream::<MinidumpSystemInfo>()
            .map_err(|e| corrupt(format!("system info stream: {e}")))?;
        let misc = dump.get_stream::<MinidumpMiscInfo>().ok();
        let arch = match system_info.cpu {
            Cpu::X86 => Arch::X86,
            Cpu::X86_64 => Arch::X64,
            Cpu::Arm64 => Arch::Arm64,
            _ => Arch::Other(system_info.raw.processor_architecture),
        };
        let mask = if arch == Arch::X86 {
            u64::from(u32::MAX)
        } else {
            u64::MAX
        };

        let mut ranges = Vec::new();
        for (base, bytes) in cut.memory() {
            push_range(&mut ranges, &map, base, bytes);
        }

        let names = dump.get_stream::<MinidumpThreadNames>().ok();
        cut.lost_if_cut(Stream::ThreadNamesStream, "the thread names stream");
        let mut threads = Vec::new();
        // A thread list cut short, or longer than its count needs (Wine sizes it for every
        // thread of the process but writes only those a callback kept), is read by its whole
        // entries.
        let listed = dump.get_stream::<MinidumpThreadList>();
        let whole_entries = match listed {
            Ok(_) => None,
            Err(_) => {
                cut.whole_entries(Stream::ThreadListStream, ListLayout::Counted(48), "threads")
            }
        };
        let thread_list = listed
            .ok()
            .or_else(|| read_list(whole_entries.as_deref()?, &map, &system_info));
        if let Some(list) = thread_list {
            let (mut without_context, mut short_stacks) = (0, 0);
            for t in &list.threads {
                let region = t.raw.stack.memory;
                // RVA 0 is the file's header, never stack bytes: full-memory dumps (Wine's
                // `MiniDumpWriteDump` with full memory) leave it 0 and keep the stack in the
                // Memory64List read above. A stack cut by the end of the file keeps the part
                // before it (the innermost frames: stacks grow down).
                let rva = u64::from(region.rva);
                let bytes = (rva != 0)
                    .then(|| cut.file_slice(rva, rva + u64::from(region.data_size)))
                    .flatten();
                let captured = match bytes {
                    Some(b) => b.len() as u64,
                    None if rva != 0 => 0,
                    None => u64::from(region.data_size),
                };
                if captured < u64::from(region.data_size) {
                    short_stacks += 1;
                }
                let stack_region = (captured > 0).then_some(MemoryRegion {
                    base: t.raw.stack.start_of_memory_range,
                    size: captured,
                });
                if let (Some(r), Some(bytes)) = (stack_region, bytes) {
                    push_range(&mut ranges, &map, r.base, bytes);
                }
                let context = t.context(&system_info, misc.as_ref()).map(Cow::into_owned);
                if context.is_none() && t.raw.thread_context.data_size > 0 {
                    without_context += 1;
                }
                threads.push(ThreadInfo {
                    id: t.raw.thread_id,
                    name: names
                        .as_ref()
                        .and_then(|n| n.get_name(t.raw.thread_id))
                        .map(|n| n.into_owned()),
                    suspend_count: t.raw.suspend_count,
                    priority: t.raw.priority,
                    teb: t.raw.teb & mask,
                    context,
                    stack: stack_region,
                });
            }
            if without_context > 0 {
                cut.lost(format!(
                    "threads: the register context of {without_context} lies past the end of the file"
                ));
            }
            if short_stacks > 0 {
                cut.lost_memory(format!(
                    "threads: the stack memory of {short_stacks} is cut by the end of the file \
                     (the part before it is read)"
                ));
            }
        }
        ranges.sort_by_key(|r| r.region.base);
        ranges.dedup_by_key(|r| r.region.base);

        let modules = cut.modules(&dump, &system_info);
        cut.lost_if_cut(Stream::ExceptionStream, "the exception record");
        let exception = dump.get_stream::<MinidumpException>().ok();
        if let Some(e) = &exception {
            let at = e.raw.thread_context;
            if at.data_size > 0
                && cut
                    .file_slice(
                        u64::from(at.rva),
                        u64::from(at.rva) + u64::from(at.data_size),
                    )
                    .is_none_or(|b| b.len() < at.data_size as usize)
            {
                cut.lost("the exception's register context lies past the end of the file".into());
            }
        }
        let event = exception.map(|e| {
            let rec = &e.raw.exception_record;
            let count = (rec.number_parameters as usize).min(rec.exception_information.len());
            ExceptionEvent {
                thread_id: e.thread_id,
                code: rec.exception_code,
                flags: rec.exception_flags,
                address: rec.exception_address & mask,
                parameters: rec.exception_information[..count]
                    .iter()
                    .map(|p| p & mask)
                    .collect(),
                nested_record: rec.exception_record & mask,
                context: e.context(&system_info, misc.as_ref()).map(Cow::into_owned),
            }
        });

        let memory_info = read_memory_info(&dump, &mut cut, &map, &system_info, mask);
        let commit = crate::CommitFacts {
            system: dump
                .get_raw_stream(MINIDUMP_STREAM_TYPE::SystemMemoryInfoStream as u32)
                .ok()
                .and_then(crate::memory_streams::system_commit),
            process: dump
                .get_raw_stream(MINIDUMP_STREAM_TYPE::ProcessVmCountersStream as u32)
                .ok()
                .and_then(crate::memory_streams::process_commit),
        };
        cut.lost_if_cut(
            Stream::MiscInfoStream,
            "the misc info stream (process id and times)",
        );
        cut.lost_if_cut(Stream::HandleDataStream, "the handle data stream");
        cut.lost_if_cut(
            Stream::ThreadInfoListStream,
            "the thread info stream (thread times)",
        );
        cut.lost_if_cut(Stream::UnloadedModuleListStream, "the unloaded module list");

        let raw = &system_info.raw;
        let misc_raw = misc.as_ref().map(|m| &m.raw);
        let system = SystemFacts {
            os_version: format!(
                "{}.{}.{}",
                raw.major_version, raw.minor_version, raw.build_number
            ),
            os_build: raw.build_number,
            csd_version: system_info
                .csd_version()
                .map(|s| s.into_owned())
                .filter(|s| !s.is_empty()),
            product_type: raw.product_type,
            cpu_count: u32::from(raw.number_of_processors),
            cpu_info: system_info.cpu_info().map(|s| s.into_owned()),
            process_id: misc_raw.and_then(|m| m.process_id().copied()),
            dump_time: Some(dump.header.time_date_stamp).filter(|&t| t != 0),
            process_create_time: misc_raw.and_then(|m| m.process_create_time().copied()),
            process_user_time: misc_raw.and_then(|m| m.process_user_time().copied()),
            process_kernel_time: misc_raw.and_then(|m| m.process_kernel_time().copied()),
        };

        let handles = dump
            .get_stream::<MinidumpHandleDataStream>()
            .ok()
            .map(|s| process_facts::handles_from(&s));
        let thread_times = dump
            .get_stream::<MinidumpThreadInfoList>()
            .ok()
            .map(|s| process_facts::thread_times_from(&s));
        let unloaded = dump
            .get_stream::<MinidumpUnloadedModuleList>()
            .map(|s| process_facts::unloaded_from(&s))
            .unwrap_or_default();

        let memory_cut_short = cut.memory_lost();
        let losses = cut.into_losses();
        drop(dump);
        Ok(UserDump {
            origin: path.display().to_string(),
            map: Arc::new(map),
            ranges,
            arch,
            system,
            threads,
            modules,
            event,
            handles,
            thread_times,
            unloaded,
            memory_info,
            commit,
            losses,
            memory_cut_short,
        })
    }

    fn range_at(&self, addr: u64) -> Option<&MappedRange> {
        self.ranges.get(self.range_index(addr)?)
    }

    /// The index of the captured range holding `addr`.
    fn range_index(&self, addr: u64) -> Option<usize> {
        let idx = self.ranges.partition_point(|r| r.region.base <= addr);
        let candidate = idx.checked_sub(1)?;
        let range = self.ranges.get(candidate)?;
        range.region.contains(addr).then_some(candidate)
    }
}

/// The MemoryInfoList stream as owned regions sorted by base, if the dump has one (of a list
/// cut short, the regions before the cut).
fn read_memory_info(
    dump: &Minidump<'_, &[u8]>,
    cut: &mut CutDump<'_>,
    all: &[u8],
    system_info: &MinidumpSystemInfo,
    mask: u64,
) -> Option<Vec<MemoryInfo>> {
    let listed = dump.get_stream::<MinidumpMemoryInfoList>();
    let whole_entries = match listed {
        Ok(_) => None,
        Err(_) => cut.whole_entries(
            Stream::MemoryInfoListStream,
            ListLayout::Extended,
            "memory regions (MemoryInfoList)",
        ),
    };
    let list = listed
        .ok()
        .or_else(|| read_list(whole_entries.as_deref()?, all, system_info))?;
    let mut regions: Vec<MemoryInfo> = list
        .iter()
        .map(|m| MemoryInfo {
            base: m.raw.base_address & mask,
            allocation_base: m.raw.allocation_base & mask,
            allocation_protect: m.raw.allocation_protection,
            size: m.raw.region_size,
            state: m.raw.state,
            protect: m.raw.protection,
            kind: m.raw._type,
        })
        .collect();
    regions.sort_by_key(|r| r.base);
    Some(regions)
}

/// Records a captured range, given the slice of the mapping that holds it.
fn push_range(ranges: &mut Vec<MappedRange>, map: &[u8], base: u64, bytes: &[u8]) {
    let start = map.as_ptr() as usize;
    let Some(file_offset) = (bytes.as_ptr() as usize).checked_sub(start) else {
        return;
    };
    if bytes.is_empty() || file_offset.saturating_add(bytes.len()) > map.len() {
        return;
    }
    ranges.push(MappedRange {
        region: MemoryRegion {
            base,
            size: bytes.len() as u64,
        },
        file_offset,
    });
}

fn check_signature(path: &Path, map: &[u8]) -> Result<(), TargetError> {
    let head = map.get(..8).unwrap_or(map);
    if head.starts_with(b"MDMP") {
        return Ok(());
    }
    if head.starts_with(b"PAGEDU64") || head.starts_with(b"PAGEDUMP") {
        return Err(TargetError::Unsupported {
            path: path.to_path_buf(),
            what: "kernel dumps (PAGEDU64/PAGEDUMP)".into(),
        });
    }
    let signature = head
        .iter()
        .map(|&b| if b.is_ascii_graphic() { b as char } else { '.' })
        .collect();
    Err(TargetError::NotADump {
        path: path.to_path_buf(),
        signature,
    })
}

impl MemoryView for UserDump {
    fn read_chunk(&self, addr: u64, max: usize) -> Option<Cow<'_, [u8]>> {
        let range = self.range_at(addr)?;
        let skip = usize::try_from(addr - range.region.base).ok()?;
        let len = usize::try_from(range.region.size)
            .ok()?
            .checked_sub(skip)?
            .min(max);
        let start = range.file_offset.checked_add(skip)?;
        self.map
            .get(start..start.checked_add(len)?)
            .map(Cow::Borrowed)
    }

    fn regions(&self) -> Vec<MemoryRegion> {
        self.ranges.iter().map(|r| r.region).collect()
    }

    fn shared_bytes(&self, addr: u64, len: usize) -> Option<(SharedOwner, Range<usize>)> {
        // A full-memory dump splits an image into several ranges (one per protection) that
        // follow each other in the file too: lend the run while both stay contiguous.
        let index = self.range_index(addr)?;
        let first = self.ranges.get(index)?;
        let skip = usize::try_from(addr - first.region.base).ok()?;
        let start = first.file_offset.checked_add(skip)?;
        let end = start.checked_add(len)?;
        let mut covered = first
            .file_offset
            .checked_add(usize::try_from(first.region.size).ok()?)?;
        let mut next_base = first.region.base.checked_add(first.region.size)?;
        for r in self.ranges.get(index + 1..)? {
            if covered >= end {
                break;
            }
            if r.region.base != next_base || r.file_offset != covered {
                return None;
            }
            covered = covered.checked_add(usize::try_from(r.region.size).ok()?)?;
            next_base = next_base.checked_add(r.region.size)?;
        }
        let owner: SharedOwner = self.map.clone();
        (covered >= end && end <= self.map.len()).then_some((owner, start..end))
    }
}

impl Target for UserDump {
    fn kind(&self) -> TargetKind {
        TargetKind::UserDump
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
    fn handles(&self) -> Option<&[HandleInfo]> {
        self.handles.as_deref()
    }
    fn thread_times(&self) -> Option<&[ThreadTimes]> {
        self.thread_times.as_deref()
    }
    fn unloaded_modules(&self) -> &[UnloadedModule] {
        &self.unloaded
    }
    fn memory_info(&self) -> Option<&[MemoryInfo]> {
        self.memory_info.as_deref()
    }
    fn commit_facts(&self) -> crate::CommitFacts {
        self.commit
    }
    fn check_source(&self) -> Result<(), FileChanged> {
        self.map.check()
    }
    fn file_losses(&self) -> &[String] {
        &self.losses
    }
    fn memory_cut_short(&self) -> bool {
        self.memory_cut_short
    }
    fn stack_region_at(&self, sp: u64) -> Option<MemoryRegion> {
        // The first captured range holding `sp`, as the default finds it, without copying
        // every region first (a walk asks once per thread): ranges are sorted by base, so
        // only those before the first base above `sp` can hold it.
        let above = self.ranges.partition_point(|r| r.region.base <= sp);
        self.ranges[..above]
            .iter()
            .map(|r| r.region)
            .find(|r| r.contains(sp))
    }
}
