//! `.dump` of a live target: ntdbg's Win32 stub writes it itself (dbghelp); behind any other
//! stub ntdbg writes the minidump from what the stub can read.
//!
//! A minidump (`/m`) holds the threads with their registers, the modules (with their
//! CodeView records, read from each image's debug directory in memory), the exception of the
//! current stop, and memory: each thread's stack (from its stack pointer up to the stack
//! base its TEB gives), 256 bytes around each thread's program counter, and the TEBs and the
//! PEB. A full dump (`/ma`) adds every readable page of the memory map the stub gives
//! (winedbg's `monitor mem`, `/proc/PID/maps` through gdbserver's host I/O: the target's
//! memory info), or, without one, the whole images of the modules. Pages the stub cannot
//! read are left out, never filled.

use std::path::Path;

use ntdbg_formats::pe::{PeInfo, PeLayout};
use ntdbg_targets::minidump_writer::{write_minidump, DumpContents, DumpModule, DumpThread};
use ntdbg_targets::Target;

use super::control::{DumpKind, RunState};
use crate::{EngineError, ErrorCode, Session};

const PAGE: u64 = 0x1000;
/// How far up from its stack pointer a thread's stack is read when its TEB does not say.
const STACK_FALLBACK: u64 = 256 * 1024;
/// The bytes kept on each side of a thread's program counter.
const AROUND_PC: u64 = 128;
/// The largest dump ntdbg writes (minidump offsets are 32-bit for stacks and records).
const MAX_MEMORY: u64 = 3 << 30;
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
        let live = self.live().cloned().ok_or_else(|| {
            EngineError::live(
                ErrorCode::NotLive,
                "`.dump` writes a dump of a live target; this session is already a dump",
            )
        })?;
        let text = path.to_str().ok_or_else(|| {
            EngineError::live(
                ErrorCode::InvalidArgument,
                format!("{} is not valid UTF-8", path.display()),
            )
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
        let (regions, memory_from) = self.dump_regions(full);
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
        write().map_err(|e| {
            let message = format!("writing {}: {e}", path.display());
            EngineError::live_from(ErrorCode::IoError, message, e)
        })?;
        Ok(DumpSummary {
            writer: "ntdbg",
            ranges,
            bytes,
            memory_from,
        })
    }

    /// The address ranges a dump holds (merged, sorted) and where they came from.
    fn dump_regions(&self, full: bool) -> (Vec<(u64, u64)>, String) {
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
            let committed = target.memory_info().map(|map| {
                map.iter()
                    .filter(|r| r.is_readable())
                    .map(|r| (r.base, r.end()))
                    .collect::<Vec<_>>()
            });
            match committed.filter(|c| !c.is_empty()) {
                Some(map) => {
                    ranges.extend(map);
                    from = "every readable page of the stub's memory map".into();
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
                self.interrupt().check().map_err(|e| {
                    let message = format!("cancelled after {total} bytes of memory");
                    EngineError::live_from(ErrorCode::Cancelled, message, e)
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
                    return Err(EngineError::live(
                        ErrorCode::RangeTooLarge,
                        format!(
                            "the process's readable memory passes {} GiB: too big for a minidump; \
                             use /m",
                            MAX_MEMORY >> 30
                        ),
                    ));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_merge() {
        assert_eq!(
            merge(vec![(5, 9), (0, 3), (3, 4), (8, 12), (20, 20)]),
            vec![(0, 4), (5, 12)]
        );
    }
}
