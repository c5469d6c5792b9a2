//! A minidump cut short (a download stopped halfway, a disk that filled up while it was
//! written): the streams the file still holds whole are read as usual; of a list stream that
//! runs past the end of the file, the entries that lie whole before it are read (threads,
//! modules, memory ranges — a range cut in its middle keeps its first part —, memory
//! regions); everything else past the end is lost, and [`CutDump::into_losses`] says what, in
//! words, for the report's limitations. Nothing is ever read from past the end: every slice
//! is taken from the file's own bytes.
//!
//! A dump whose list streams are longer than their counts need (Wine sizes the thread list
//! for every thread but writes only some) is read by its counts the same way, with no loss.

use minidump::{Minidump, MinidumpModule, MinidumpModuleList, MinidumpStream, MinidumpSystemInfo};
use minidump_common::format::{self as md, MINIDUMP_STREAM_TYPE as Stream};
use scroll::Pread;
use std::borrow::Cow;

/// How a list stream lays out its entries.
#[derive(Debug, Clone, Copy)]
pub(crate) enum ListLayout {
    /// A `u32` count, then entries of this many bytes (thread, module and memory lists).
    Counted(usize),
    /// `size_of_header`, `size_of_entry` and a `u32` count, then the entries (memory info).
    Extended,
}

/// A minidump's streams as far as its file holds them.
#[derive(Debug)]
pub(crate) struct CutDump<'a> {
    all: &'a [u8],
    directory: Vec<md::MINIDUMP_DIRECTORY>,
    losses: Vec<String>,
    /// Whether captured memory lies past the end of the file.
    memory_lost: bool,
}

impl<'a> CutDump<'a> {
    /// The streams of `dump`, whose file's bytes are `all`.
    pub(crate) fn new(dump: &Minidump<'a, &'a [u8]>, all: &'a [u8]) -> CutDump<'a> {
        let directory: Vec<md::MINIDUMP_DIRECTORY> = dump.all_streams().cloned().collect();
        let mut cut = CutDump {
            all,
            directory,
            losses: Vec::new(),
            memory_lost: false,
        };
        let past = cut
            .directory
            .iter()
            .filter(|e| e.stream_type != 0 && cut.is_cut(e))
            .count();
        if past > 0 {
            let needed = cut.directory.iter().map(end_of).max().unwrap_or(0);
            cut.losses.push(format!(
                "the dump is cut short: the file ends at {:#x} bytes, {past} of its streams run \
                 past the end (they need {needed:#x} bytes); what lies past the end is missing",
                all.len()
            ));
        }
        cut
    }

    /// Whether a stream runs past the end of the file.
    fn is_cut(&self, entry: &md::MINIDUMP_DIRECTORY) -> bool {
        entry.location.data_size > 0 && end_of(entry) > self.all.len() as u64
    }

    /// The directory entry of the stream of `stream_type` that `Minidump::get_stream` reads.
    fn entry(&self, stream_type: Stream) -> Option<&md::MINIDUMP_DIRECTORY> {
        self.directory
            .iter()
            .find(|e| e.stream_type == stream_type as u32)
    }

    /// The bytes of a stream as far as the file holds them (none when it starts past the
    /// end), and whether it was cut.
    fn prefix(&self, stream_type: Stream) -> Option<(&'a [u8], bool)> {
        let entry = self.entry(stream_type)?;
        let start = u64::from(entry.location.rva);
        let bytes = self.file_slice(start, end_of(entry)).unwrap_or_default();
        Some((bytes, self.is_cut(entry)))
    }

    /// Notes that a stream, if it was cut, could not be read at all (`what`: `the exception
    /// record`).
    pub(crate) fn lost_if_cut(&mut self, stream_type: Stream, what: &str) {
        if self.prefix(stream_type).is_some_and(|(_, cut)| cut) {
            self.losses
                .push(format!("{what} lies past the end of the file: not read"));
        }
    }

    /// Notes a loss found by the caller.
    pub(crate) fn lost(&mut self, what: String) {
        self.losses.push(what);
    }

    /// Notes that captured memory the caller found (a thread's stack) lies past the end.
    pub(crate) fn lost_memory(&mut self, what: String) {
        self.memory_lost = true;
        self.losses.push(what);
    }

    /// Whether captured memory lies past the end of the file.
    pub(crate) fn memory_lost(&self) -> bool {
        self.memory_lost
    }

    /// The bytes of list stream `stream_type`, holding only the entries that lie whole in the
    /// file and no more than its count says, with the count set to match: what the
    /// `minidump` crate's reader of that stream then reads. `None` without the stream or
    /// without a readable header. Notes how many entries were lost (`what`: `threads`).
    pub(crate) fn whole_entries(
        &mut self,
        stream_type: Stream,
        layout: ListLayout,
        what: &str,
    ) -> Option<Cow<'a, [u8]>> {
        let (bytes, cut) = self.prefix(stream_type)?;
        if cut && bytes.len() < 4 {
            self.losses.push(format!(
                "{what}: none read, the list lies past the end of the file"
            ));
            return None;
        }
        let (header, entry, count_at) = match layout {
            ListLayout::Counted(entry) => (4, entry, 0),
            ListLayout::Extended => {
                let header = u32_at(bytes, 0)? as usize;
                let entry = u32_at(bytes, 4)? as usize;
                (header.max(12), entry, 8)
            }
        };
        let declared = u32_at(bytes, count_at)? as usize;
        let fit = bytes.len().checked_sub(header)? / entry.max(1);
        let kept = declared.min(fit);
        if cut && kept < declared {
            self.losses.push(format!(
                "{what}: {kept} of {declared} read, the others lie past the end of the file"
            ));
        }
        let len = header + kept * entry;
        if kept == declared && bytes.len() == len {
            return Some(Cow::Borrowed(bytes));
        }
        let mut out = bytes.get(..len)?.to_vec();
        out[count_at..count_at + 4].copy_from_slice(&(kept as u32).to_le_bytes());
        Some(Cow::Owned(out))
    }

    /// The module list: as the `minidump` crate reads it when it can; else module by module,
    /// keeping each whose entry and name lie in the file (without its debug id when only the
    /// CodeView record lies past the end). Empty without a module list.
    pub(crate) fn modules(
        &mut self,
        dump: &'a Minidump<'a, &'a [u8]>,
        system_info: &MinidumpSystemInfo,
    ) -> MinidumpModuleList {
        if let Ok(list) = dump.get_stream::<MinidumpModuleList>() {
            return list;
        }
        let entry_len = 108;
        let Some(bytes) = self.whole_entries(
            Stream::ModuleListStream,
            ListLayout::Counted(entry_len),
            "modules",
        ) else {
            return MinidumpModuleList::default();
        };
        let le = scroll::Endian::Little;
        let mut modules = Vec::new();
        let (mut nameless, mut without_id) = (0, 0);
        for at in (4..bytes.len()).step_by(entry_len) {
            let Ok(mut raw) = bytes.pread_with::<md::MINIDUMP_MODULE>(at, le) else {
                continue;
            };
            if raw.size_of_image == 0 || u64::from(raw.size_of_image) > u64::MAX - raw.base_of_image
            {
                continue; // as the crate's reader skips it
            }
            if let Ok(module) = MinidumpModule::read(raw.clone(), self.all, le, Some(system_info)) {
                modules.push(module);
                continue;
            }
            // The name or a debug record lies past the end: without the records, if the
            // name is there.
            raw.cv_record = md::MINIDUMP_LOCATION_DESCRIPTOR::default();
            raw.misc_record = md::MINIDUMP_LOCATION_DESCRIPTOR::default();
            match MinidumpModule::read(raw, self.all, le, Some(system_info)) {
                Ok(module) => {
                    without_id += 1;
                    modules.push(module);
                }
                Err(_) => nameless += 1,
            }
        }
        if nameless > 0 {
            self.losses.push(format!(
                "modules: {nameless} dropped, their names lie past the end of the file"
            ));
        }
        if without_id > 0 {
            self.losses.push(format!(
                "modules: {without_id} without a debug id (PDB name, GUID and age), their \
                 CodeView records lie past the end of the file"
            ));
        }
        MinidumpModuleList::from_modules(modules)
    }

    /// The captured memory ranges as (base address, bytes), from the Memory64List when there
    /// is one (full-memory dumps) and from the MemoryList otherwise — and also when the
    /// Memory64List is cut. A range cut by the end of the file keeps its first part.
    pub(crate) fn memory(&mut self) -> Vec<(u64, &'a [u8])> {
        let mut ranges = Vec::new();
        if self.memory64(&mut ranges) != Some(true) {
            self.memory32(&mut ranges);
        }
        ranges
    }

    /// The Memory64List's ranges into `out`; whether the stream was whole (`None`: none).
    fn memory64(&mut self, out: &mut Vec<(u64, &'a [u8])>) -> Option<bool> {
        let (bytes, cut) = self.prefix(Stream::Memory64ListStream)?;
        let header = (u64_at(bytes, 0), u64_at(bytes, 8));
        let (Some(declared), Some(mut rva)) = header else {
            if cut {
                self.memory_lost = true;
                self.losses
                    .push("memory (Memory64List): its list lies past the end of the file".into());
            }
            return Some(false);
        };
        let declared = usize::try_from(declared).ok()?;
        let (mut whole, mut partial) = (0, false);
        for i in 0..declared {
            let at = 16 + i * 16;
            let (Some(base), Some(size)) = (u64_at(bytes, at), u64_at(bytes, at + 8)) else {
                break;
            };
            if size == 0 {
                whole += 1;
                continue;
            }
            let end = rva.saturating_add(size);
            let kept = self.file_slice(rva, end);
            rva = end;
            match kept {
                Some(b) if b.len() as u64 == size => whole += 1,
                Some(_) => partial = true,
                None => {}
            }
            if let Some(b) = kept.filter(|b| !b.is_empty()) {
                out.push((base, b));
            }
        }
        let lost = whole < declared;
        if lost {
            self.memory_lost = true;
            self.losses.push(format!(
                "memory (Memory64List): {whole} of {declared} ranges read whole{}, the rest \
                 lies past the end of the file",
                if partial { " and one in part" } else { "" }
            ));
        }
        Some(!(cut || lost))
    }

    /// The MemoryList's ranges into `out`.
    fn memory32(&mut self, out: &mut Vec<(u64, &'a [u8])>) {
        if self
            .prefix(Stream::MemoryListStream)
            .is_some_and(|(_, cut)| cut)
        {
            self.memory_lost = true;
        }
        let Some(bytes) = self.whole_entries(
            Stream::MemoryListStream,
            ListLayout::Counted(16),
            "memory ranges (MemoryList)",
        ) else {
            return;
        };
        let (mut cut_ranges, mut missing, mut listed) = (0, 0, 0);
        for at in (4..bytes.len()).step_by(16) {
            listed += 1;
            let (Some(base), Some(size), Some(rva)) = (
                u64_at(&bytes, at),
                u32_at(&bytes, at + 8),
                u32_at(&bytes, at + 12),
            ) else {
                continue;
            };
            // RVA 0 or size 0: no bytes of its own (the crate's reader skips these too).
            if rva == 0 || size == 0 {
                continue;
            }
            let (start, end) = (u64::from(rva), u64::from(rva) + u64::from(size));
            match self.file_slice(start, end).filter(|b| !b.is_empty()) {
                Some(b) => {
                    if b.len() < size as usize {
                        cut_ranges += 1;
                    }
                    out.push((base, b));
                }
                None => missing += 1,
            }
        }
        if cut_ranges + missing > 0 {
            self.memory_lost = true;
            self.losses.push(format!(
                "memory (MemoryList): {missing} of {listed} ranges lie past the end of the \
                 file, {cut_ranges} more in part"
            ));
        }
    }

    /// The file's bytes `start..end`, as far as the file holds them (`None` when it holds
    /// none of them).
    pub(crate) fn file_slice(&self, start: u64, end: u64) -> Option<&'a [u8]> {
        let len = self.all.len() as u64;
        if start >= len || end <= start {
            return None;
        }
        self.all.get(start as usize..end.min(len) as usize)
    }

    /// What was lost, one line each.
    pub(crate) fn into_losses(self) -> Vec<String> {
        self.losses
    }
}

/// One past the last byte of a stream.
fn end_of(entry: &md::MINIDUMP_DIRECTORY) -> u64 {
    u64::from(entry.location.rva) + u64::from(entry.location.data_size)
}

fn u32_at(bytes: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
}

fn u64_at(bytes: &[u8], at: usize) -> Option<u64> {
    Some(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?))
}

/// The `minidump` crate's reader of list stream `S`, on bytes [`CutDump::whole_entries`]
/// gave.
pub(crate) fn read_list<'a, S: MinidumpStream<'a>>(
    bytes: &'a [u8],
    all: &'a [u8],
    system_info: &MinidumpSystemInfo,
) -> Option<S> {
    S::read(bytes, all, scroll::Endian::Little, Some(system_info)).ok()
}
