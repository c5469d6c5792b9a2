//! `.dump` of a live target: ntdbg's Win32 stub writes it itself (dbghelp); behind any other
//! stub ntdbg writes the minidump from what the stub can read.
//!
//! A minidump (`/m`) holds the threads with their registers, the modules (with their
//! CodeView records, read from each image's debug directory in memory), the exception of the
//! current stop, and memory: each thread's stack (from its stack pointer up to the stack
//! base its TEB gives), 256 bytes around each thread's program counter, and the TEBs and the
//! PEB. A full dump (`/ma`) adds every readable page of the memory map the stub gives
//! (winedbg's `monitor mem`, `/proc/PID/maps` through gdbserver's host I/O), or, without one,
//! the whole images of the modules. Pages the stub cannot read are left out, never filled.

use std::path::Path;

use ntdbg_formats::pe::{PeInfo, PeLayout};
use ntdbg_targets::minidump_writer::{write_minidump, DumpContents, DumpModule, DumpThread};
use ntdbg_targets::Target;

use super::control::{DumpKind, LiveControl, RunState};
use crate::{EngineError, ErrorCode, Session};

const PAGE: u64 = 0x1000;
/// How far up from its stack pointer a thread's stack is read when its TEB does not say.
const STACK_FALLBACK: u64 = 256 * 1024;
/// The bytes kept on each side of a thread's program counter.
const AROUND_PC: u64 = 128;
/// The largest dump ntdbg writes (minidump offsets are 32-bit for stacks and records).
const MAX_MEMORY: u64 = 3 << 30;
/// Most bytes of a memory map read from the stub's host.
const MAX_MAP_TEXT: usize = 4 << 20;
/// `IMAGE_DIRECTORY_ENTRY_DEBUG` and `IMAGE_DEBUG_TYPE_CODEVIEW`.
const DEBUG_DIRECTORY: usize = 6;
const DEBUG_TYPE_CODEVIEW: u32 = 2;

/// What a written dump holds, for the `.dump` line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DumpSummary {
    /// Who wrote it: `stub` (the stub's host) or `ntdbg`.
    pub writer: &'static str,
    /// Memory ranges and bytes (for a dump ntdbg wrote).
    pub ranges: usize,
    /// Bytes of memory.
    pub bytes: u64,
    /// Where the memory list came from, for people.
    pub memory_from: String,
}

impl LiveControl {
    /// The committed, readable regions of the process as the stub reports them: winedbg's
    /// `monitor mem`, or `/proc/PID/maps` through host I/O (gdbserver). `None` when the stub
    /// gives no map.
    pub fn memory_map(&self) -> Option<(Vec<(u64, u64)>, &'static str)> {
        let mut client = self.lock_client();
        if let Ok(Some(text)) = client.monitor("mem") {
            let regions = parse_wine_mem(&text);
            if !regions.is_empty() {
                return Some((regions, "winedbg's memory map (monitor mem)"));
            }
        }
        let pid = self.process_id?;
        let maps = client
            .read_host_file(&format!("/proc/{pid}/maps"), MAX_MAP_TEXT)
            .ok()??;
        let regions = parse_proc_maps(&String::from_utf8_lossy(&maps));
        (!regions.is_empty()).then_some((regions, "/proc/PID/maps through the stub"))
    }
}

impl Session {
    /// `.dump`: the stub writes the dump when it can (ntdbg's Win32 stub), else ntdbg writes
    /// it to `path` from the memory the stub can read.
    ///
    /// # Errors
    /// The run-state errors, the stub's refusal, `cancelled`, and the file's.
    pub fn write_live_dump(
        &mut self,
        kind: DumpKind,
        path: &Path,
    ) -> Result<DumpSummary, EngineError> {
        let live = self.live().cloned().ok_or_else(|| EngineError::Live {
            code: ErrorCode::NotLive,
            message: "`.dump` writes a dump of a live target; this session is already a dump"
                .into(),
        })?;
        let text = path.to_str().ok_or_else(|| EngineError::Live {
            code: ErrorCode::InvalidArgument,
            message: format!("{} is not valid UTF-8", path.display()),
        })?;
        match live.write_dump(kind, text) {
            Ok(()) => {
                return Ok(DumpSummary {
                    writer: "stub",
                    ranges: 0,
                    bytes: 0,
                    memory_from: "the stub's host (dbghelp)".into(),
                })
            }
            Err(e) if e.code() == ErrorCode::Unsupported => {}
            Err(e) => return Err(e),
        }
        if !matches!(live.state(), RunState::Halted(_)) {
            return Err(super::control::not_halted(&live.state()));
        }
        let full = kind == DumpKind::Full;
        let (regions, memory_from) = self.dump_regions(&live, full);
        let memory = self.read_regions(&regions)?;
        let bytes: u64 = memory.iter().map(|(_, b)| b.len() as u64).sum();
        let contents = DumpContents {
            arch: self.arch(),
            process_id: self.target().system().process_id,
            os_version: None,
            time: std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| u32::try_from(d.as_secs()).unwrap_or(u32::MAX)),
            threads: self.dump_threads(&memory),
            modules: self.dump_modules(),
            memory,
            full_memory: full,
            exception: self.target().event().cloned(),
        };
        let ranges = contents.memory.len();
        let write = || -> std::io::Result<()> {
            let mut file = std::io::BufWriter::new(std::fs::File::create(path)?);
            write_minidump(&contents, &mut file)?;
            std::io::Write::flush(&mut file)
        };
        write().map_err(|e| EngineError::Live {
            code: ErrorCode::IoError,
            message: format!("writing {}: {e}", path.display()),
        })?;
        Ok(DumpSummary {
            writer: "ntdbg",
            ranges,
            bytes,
            memory_from,
        })
    }

    /// The address ranges a dump holds (merged, sorted) and where they came from.
    fn dump_regions(&self, live: &LiveControl, full: bool) -> (Vec<(u64, u64)>, String) {
        let target = self.target();
        let ptr = target.arch().pointer_size() as u64;
        let mut ranges: Vec<(u64, u64)> = Vec::new();
        for t in target.threads() {
            let Some(c) = t.context.as_ref() else {
                continue;
            };
            let (sp, pc) = (c.get_stack_pointer(), c.get_instruction_pointer());
            let base = stack_base(target, t.teb, ptr)
                .filter(|&b| b > sp && b - sp <= 64 << 20)
                .unwrap_or(sp.saturating_add(STACK_FALLBACK));
            ranges.push((sp & !(PAGE - 1), base));
            ranges.push((pc.saturating_sub(AROUND_PC), pc.saturating_add(AROUND_PC)));
            if t.teb != 0 {
                ranges.push((t.teb, t.teb.saturating_add(2 * PAGE)));
            }
        }
        if let Some(peb) = self.peb_address() {
            ranges.push((peb, peb.saturating_add(PAGE)));
        }
        let mut from = "thread stacks, code around each pc, TEBs and the PEB".to_string();
        if full {
            match live.memory_map() {
                Some((map, source)) => {
                    ranges.extend(map);
                    from = format!("every readable page of {source}");
                }
                None => {
                    for m in target.modules().iter() {
                        ranges.push((
                            m.raw.base_of_image,
                            m.raw.base_of_image + u64::from(m.raw.size_of_image),
                        ));
                    }
                    from = format!(
                        "{from} and the module images (the stub gives no memory map, so heaps \
                         and other allocations are not in it)"
                    );
                }
            }
        }
        (merge(ranges), from)
    }

    /// The readable bytes of `ranges`, split where the stub cannot read; bounded by
    /// [`MAX_MEMORY`] and cancellable.
    fn read_regions(&self, ranges: &[(u64, u64)]) -> Result<Vec<(u64, Vec<u8>)>, EngineError> {
        const CHUNK: u64 = 1 << 20;
        let mut out: Vec<(u64, Vec<u8>)> = Vec::new();
        let mut total = 0u64;
        for &(start, end) in ranges {
            let mut at = start;
            while at < end {
                self.interrupt().check().map_err(|_| EngineError::Live {
                    code: ErrorCode::Cancelled,
                    message: format!("cancelled after {total} bytes of memory"),
                })?;
                let len = (end - at).min(CHUNK);
                let bytes = self.target().read_virtual(at, len as usize);
                for (i, b) in bytes.into_iter().enumerate() {
                    let addr = at + i as u64;
                    let Some(b) = b else { continue };
                    match out.last_mut() {
                        Some((base, data)) if *base + data.len() as u64 == addr => data.push(b),
                        _ => out.push((addr, vec![b])),
                    }
                    total += 1;
                }
                if total > MAX_MEMORY {
                    return Err(EngineError::Live {
                        code: ErrorCode::RangeTooLarge,
                        message: format!(
                            "the process's readable memory passes {} GiB: too big for a minidump; \
                             use /m",
                            MAX_MEMORY >> 30
                        ),
                    });
                }
                at += len;
            }
        }
        Ok(out)
    }

    /// The threads, each with the part of its stack the memory holds.
    fn dump_threads(&self, memory: &[(u64, Vec<u8>)]) -> Vec<DumpThread> {
        self.target()
            .threads()
            .iter()
            .map(|t| {
                let sp = t.context.as_ref().map(|c| c.get_stack_pointer());
                let stack = sp.and_then(|sp| {
                    memory
                        .iter()
                        .find(|(b, d)| *b <= sp && sp < b + d.len() as u64)
                        .map(|(b, d)| (sp, b + d.len() as u64))
                });
                DumpThread {
                    id: t.id,
                    teb: t.teb,
                    context: t.context.clone(),
                    stack,
                }
            })
            .collect()
    }

    /// The modules, with the CodeView record of each image's debug directory.
    fn dump_modules(&self) -> Vec<DumpModule> {
        let target = self.target();
        target
            .modules()
            .iter()
            .map(|m| DumpModule {
                name: minidump::Module::code_file(m).into_owned(),
                base: m.raw.base_of_image,
                size: m.raw.size_of_image,
                checksum: m.raw.checksum,
                time_date_stamp: m.raw.time_date_stamp,
                codeview: codeview_record(target, m.raw.base_of_image).unwrap_or_default(),
            })
            .collect()
    }
}

/// `NT_TIB.StackBase` of the TEB at `teb` (the second pointer of the TEB).
fn stack_base(target: &dyn Target, teb: u64, ptr: u64) -> Option<u64> {
    if teb == 0 {
        return None;
    }
    target.read_uint(teb.checked_add(ptr)?, ptr as usize)
}

/// The raw CodeView record of the image at `base`, read through its debug directory.
fn codeview_record(mem: &dyn Target, base: u64) -> Option<Vec<u8>> {
    let header = mem.read_chunk(base, PAGE as usize)?;
    let pe = PeInfo::parse(&header, PeLayout::Mapped).ok()?;
    let dir = pe.data_directory(DEBUG_DIRECTORY)?;
    const ENTRY: u64 = 28;
    for i in 0..u64::from(dir.size) / ENTRY {
        let at = base + u64::from(dir.rva) + i * ENTRY;
        let entry = mem.read_chunk(at, ENTRY as usize)?;
        let field = |o: usize| -> Option<u32> {
            Some(u32::from_le_bytes(entry.get(o..o + 4)?.try_into().ok()?))
        };
        if field(12) == Some(DEBUG_TYPE_CODEVIEW) {
            let (size, rva) = (u64::from(field(16)?), u64::from(field(20)?));
            if size == 0 || size > 0x1000 {
                return None;
            }
            let record = mem.read_chunk(base + rva, size as usize)?;
            return (record.len() == size as usize).then(|| record.into_owned());
        }
    }
    None
}

/// Sorted, merged ranges (empty ones dropped).
fn merge(mut ranges: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    ranges.retain(|(s, e)| s < e);
    ranges.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(ranges.len());
    for (s, e) in ranges {
        match out.last_mut() {
            Some(last) if s <= last.1 => last.1 = last.1.max(e),
            _ => out.push((s, e)),
        }
    }
    out
}

/// The committed regions of winedbg's `monitor mem` lines (`ADDRESS SIZE commit TYPE RWX`)
/// that may be read.
fn parse_wine_mem(text: &str) -> Vec<(u64, u64)> {
    text.lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let addr = u64::from_str_radix(words.next()?, 16).ok()?;
            let size = u64::from_str_radix(words.next()?, 16).ok()?;
            let state = words.next()?;
            let rest: Vec<&str> = words.collect();
            let readable = rest.last().is_some_and(|p| p.starts_with('R'));
            if state != "commit" || !readable {
                return None;
            }
            Some((addr, addr.checked_add(size)?))
        })
        .collect()
}

/// The readable regions of `/proc/PID/maps` (`START-END rwxp …`).
fn parse_proc_maps(text: &str) -> Vec<(u64, u64)> {
    text.lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace();
            let (start, end) = words.next()?.split_once('-')?;
            let perms = words.next()?;
            let (start, end) = (
                u64::from_str_radix(start, 16).ok()?,
                u64::from_str_radix(end, 16).ok()?,
            );
            // [vvar] and the like cannot be read through ptrace.
            let name = words.nth(3).unwrap_or("");
            (perms.starts_with('r') && name != "[vvar]" && name != "[vsyscall]")
                .then_some((start, end))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memory_maps_of_winedbg_and_linux() {
        let wine = "Address  Size     State   Type    RWX\n\
                    0000000000010000 0000000000010000 commit  mapped  RW \n\
                    0000000000020000 0000000000001000 reserve private    \n\
                    0000000140000000 0000000000001000 commit  image   R  \n\
                    0000000140001000 0000000000002000 commit  image    X \n";
        assert_eq!(
            parse_wine_mem(wine),
            vec![(0x10000, 0x20000), (0x1_4000_0000, 0x1_4000_1000)]
        );
        let linux = "00400000-00401000 r--p 00000000 08:01 12 /x\n\
                     00401000-00402000 r-xp 00001000 08:01 12 /x\n\
                     7ffff7fc1000-7ffff7fc5000 r--p 00000000 00:00 0 [vvar]\n\
                     7ffffffde000-7ffffffff000 rw-p 00000000 00:00 0 [stack]\n\
                     ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 [vsyscall]\n";
        assert_eq!(
            parse_proc_maps(linux),
            vec![
                (0x40_0000, 0x40_1000),
                (0x40_1000, 0x40_2000),
                (0x7fff_fffd_e000, 0x7fff_ffff_f000)
            ]
        );
        assert_eq!(
            merge(vec![(5, 9), (0, 3), (3, 4), (8, 12), (20, 20)]),
            vec![(0, 4), (5, 12)]
        );
    }
}
