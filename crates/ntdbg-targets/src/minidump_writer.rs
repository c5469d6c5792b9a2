//! Writes a user-mode minidump (`MDMP`) from what a debugger knows of a process: threads
//! with their register contexts, modules (with their CodeView records, so the dump finds its
//! PDBs), memory ranges, the exception, the process id. ntdbg writes it for `.dump` on a live
//! target behind a GDB stub, from the memory the stub can read.
//!
//! The records are the documented Windows ones (`minidumpapiset.h`), through the structs of
//! `minidump-common` written with `scroll`. A normal dump keeps its ranges in a
//! `MemoryListStream`; a full-memory dump (`/ma`) in a `Memory64ListStream`, whose bytes follow
//! each other at the end of the file (a thread's stack descriptor points into them).

use std::io::Write;

use minidump::format as md;
use minidump::{MinidumpContext, MinidumpRawContext};
use scroll::ctx::{SizeWith, TryIntoCtx};
use scroll::{Pwrite, LE};

use crate::model::{Arch, ExceptionEvent};

/// `MINIDUMP_SIGNATURE` (`'MDMP'`) and `MINIDUMP_VERSION`.
const SIGNATURE: u32 = 0x504d_444d;
const VERSION: u32 = 0xa793;
/// `MiniDumpWithFullMemory`, in the header's flags of a `/ma` dump.
const WITH_FULL_MEMORY: u64 = 0x2;
/// `MINIDUMP_MISC1_PROCESS_ID`.
const MISC1_PROCESS_ID: u32 = 1;
/// `sizeof(MINIDUMP_MISC_INFO)`.
const MISC_INFO_SIZE: u32 = 24;
/// `VER_PLATFORM_WIN32_NT`.
const PLATFORM_NT: u32 = 2;

/// One thread of the dump.
#[derive(Debug, Clone)]
pub struct DumpThread {
    /// The OS thread id.
    pub id: u32,
    /// Its TEB.
    pub teb: u64,
    /// Its registers.
    pub context: Option<MinidumpContext>,
    /// The range of its stack the dump holds (it must be one of the memory ranges or lie
    /// inside one).
    pub stack: Option<(u64, u64)>,
}

/// One module of the dump.
#[derive(Debug, Clone)]
pub struct DumpModule {
    /// Its path.
    pub name: String,
    /// Where it is loaded.
    pub base: u64,
    /// `SizeOfImage`.
    pub size: u32,
    /// The PE header's checksum.
    pub checksum: u32,
    /// The PE header's `TimeDateStamp`.
    pub time_date_stamp: u32,
    /// The raw CodeView record of its debug directory (`RSDS…`), when it has one.
    pub codeview: Vec<u8>,
}

/// Everything a dump holds.
#[derive(Debug, Clone)]
pub struct DumpContents {
    /// The CPU.
    pub arch: Arch,
    /// The process id, when known.
    pub process_id: Option<u32>,
    /// The Windows version `(major, minor, build)`, when known.
    pub os_version: Option<(u32, u32, u32)>,
    /// When the dump was written (seconds since 1970).
    pub time: u32,
    /// The threads.
    pub threads: Vec<DumpThread>,
    /// The modules.
    pub modules: Vec<DumpModule>,
    /// The memory ranges: sorted by address, not overlapping.
    pub memory: Vec<(u64, Vec<u8>)>,
    /// Whether this is a full-memory dump (a `Memory64ListStream`).
    pub full_memory: bool,
    /// The exception the dump is about.
    pub exception: Option<ExceptionEvent>,
}

/// A stream's bytes while the file is laid out.
struct Streams {
    out: Vec<u8>,
    directory: Vec<md::MINIDUMP_DIRECTORY>,
}

impl Streams {
    /// Appends `bytes` (4-byte aligned) and returns where they are.
    fn put(&mut self, bytes: &[u8]) -> md::MINIDUMP_LOCATION_DESCRIPTOR {
        while !self.out.len().is_multiple_of(4) {
            self.out.push(0);
        }
        let rva = self.out.len() as u32;
        self.out.extend_from_slice(bytes);
        md::MINIDUMP_LOCATION_DESCRIPTOR {
            data_size: bytes.len() as u32,
            rva,
        }
    }

    fn stream(&mut self, kind: md::MINIDUMP_STREAM_TYPE, bytes: &[u8]) {
        let location = self.put(bytes);
        self.directory.push(md::MINIDUMP_DIRECTORY {
            stream_type: kind as u32,
            location,
        });
    }
}

/// Encodes one record with `scroll`.
fn encode<T>(value: T) -> Vec<u8>
where
    T: SizeWith<scroll::Endian> + TryIntoCtx<scroll::Endian, Error = scroll::Error>,
{
    let mut bytes = vec![0u8; T::size_with(&LE)];
    // A buffer of the record's own size always holds it.
    let _ = bytes.pwrite_with(value, 0, LE);
    bytes
}

/// The raw `CONTEXT` record of a context (x86 and x64; `None` for other CPUs).
fn context_bytes(context: &MinidumpContext) -> Option<Vec<u8>> {
    match &context.raw {
        MinidumpRawContext::Amd64(c) => Some(encode(c.clone())),
        MinidumpRawContext::X86(c) => Some(encode(c.clone())),
        _ => None,
    }
}

/// `MINIDUMP_STRING`: the byte length, then UTF-16 and a NUL.
fn minidump_string(text: &str) -> Vec<u8> {
    let units: Vec<u16> = text.encode_utf16().collect();
    let mut out = ((units.len() * 2) as u32).to_le_bytes().to_vec();
    out.extend(units.iter().flat_map(|u| u.to_le_bytes()));
    out.extend([0, 0]);
    out
}

/// Writes the dump of `contents` to `out`.
///
/// # Errors
/// The writer's.
pub fn write_minidump(contents: &DumpContents, out: &mut dyn Write) -> std::io::Result<()> {
    let header_size = md::MINIDUMP_HEADER::size_with(&LE);
    let stream_count = 4 + u32::from(contents.exception.is_some()) + 1;
    let dir_size = md::MINIDUMP_DIRECTORY::size_with(&LE) * stream_count as usize;
    let mut s = Streams {
        out: vec![0u8; header_size + dir_size],
        directory: Vec::new(),
    };
    s.stream(
        md::MINIDUMP_STREAM_TYPE::SystemInfoStream,
        &system_info(contents),
    );
    s.stream(
        md::MINIDUMP_STREAM_TYPE::MiscInfoStream,
        &misc_info(contents),
    );
    let modules = module_list(&mut s, contents);
    s.stream(md::MINIDUMP_STREAM_TYPE::ModuleListStream, &modules);
    let contexts: Vec<Option<md::MINIDUMP_LOCATION_DESCRIPTOR>> = contents
        .threads
        .iter()
        .map(|t| {
            t.context
                .as_ref()
                .and_then(context_bytes)
                .map(|b| s.put(&b))
        })
        .collect();
    if let Some(e) = &contents.exception {
        let exception = exception_stream(&mut s, contents, e);
        s.stream(md::MINIDUMP_STREAM_TYPE::ExceptionStream, &exception);
    }
    // The memory goes last: a full-memory dump's bytes follow its list.
    let ranges = if contents.full_memory {
        memory64_list(&mut s, &contents.memory)
    } else {
        memory_list(&mut s, &contents.memory)
    };
    let threads = thread_list(contents, &contexts, &ranges);
    // The thread list's place was not known before the memory: it goes after it.
    s.stream(md::MINIDUMP_STREAM_TYPE::ThreadListStream, &threads);
    let header = md::MINIDUMP_HEADER {
        signature: SIGNATURE,
        version: VERSION,
        stream_count: s.directory.len() as u32,
        stream_directory_rva: header_size as u32,
        checksum: 0,
        time_date_stamp: contents.time,
        flags: if contents.full_memory {
            WITH_FULL_MEMORY
        } else {
            0
        },
    };
    s.out[..header_size].copy_from_slice(&encode(header));
    let mut at = header_size;
    for entry in std::mem::take(&mut s.directory) {
        let bytes = encode(entry);
        s.out[at..at + bytes.len()].copy_from_slice(&bytes);
        at += bytes.len();
    }
    out.write_all(&s.out)
}

fn system_info(c: &DumpContents) -> Vec<u8> {
    let architecture = match c.arch {
        Arch::X86 => md::ProcessorArchitecture::PROCESSOR_ARCHITECTURE_INTEL as u16,
        Arch::X64 => md::ProcessorArchitecture::PROCESSOR_ARCHITECTURE_AMD64 as u16,
        Arch::Arm64 => md::ProcessorArchitecture::PROCESSOR_ARCHITECTURE_ARM64 as u16,
        Arch::Other(n) => n,
    };
    let (major, minor, build) = c.os_version.unwrap_or_default();
    encode(md::MINIDUMP_SYSTEM_INFO {
        processor_architecture: architecture,
        processor_level: 0,
        processor_revision: 0,
        number_of_processors: 1,
        product_type: 1,
        major_version: major,
        minor_version: minor,
        build_number: build,
        platform_id: PLATFORM_NT,
        csd_version_rva: 0,
        suite_mask: 0,
        reserved2: 0,
        cpu: md::CPU_INFORMATION { data: [0; 24] },
    })
}

/// `MINIDUMP_MISC_INFO` with the process id (version 1: 24 bytes).
fn misc_info(c: &DumpContents) -> Vec<u8> {
    let mut out = Vec::with_capacity(MISC_INFO_SIZE as usize);
    out.extend(MISC_INFO_SIZE.to_le_bytes());
    let flags = if c.process_id.is_some() {
        MISC1_PROCESS_ID
    } else {
        0
    };
    out.extend(flags.to_le_bytes());
    out.extend(c.process_id.unwrap_or(0).to_le_bytes());
    out.extend([0u8; 12]);
    out
}

fn module_list(s: &mut Streams, c: &DumpContents) -> Vec<u8> {
    let mut out = (c.modules.len() as u32).to_le_bytes().to_vec();
    for m in &c.modules {
        let name = s.put(&minidump_string(&m.name));
        let cv_record = if m.codeview.is_empty() {
            md::MINIDUMP_LOCATION_DESCRIPTOR::default()
        } else {
            s.put(&m.codeview)
        };
        out.extend(encode(md::MINIDUMP_MODULE {
            base_of_image: m.base,
            size_of_image: m.size,
            checksum: m.checksum,
            time_date_stamp: m.time_date_stamp,
            module_name_rva: name.rva,
            cv_record,
            ..md::MINIDUMP_MODULE::default()
        }));
    }
    out
}

fn exception_stream(s: &mut Streams, c: &DumpContents, e: &ExceptionEvent) -> Vec<u8> {
    let mut information = [0u64; 15];
    for (slot, p) in information.iter_mut().zip(&e.parameters) {
        *slot = *p;
    }
    let context = e
        .context
        .as_ref()
        .or_else(|| {
            c.threads
                .iter()
                .find(|t| t.id == e.thread_id)
                .and_then(|t| t.context.as_ref())
        })
        .and_then(context_bytes)
        .map(|b| s.put(&b))
        .unwrap_or_default();
    encode(md::MINIDUMP_EXCEPTION_STREAM {
        thread_id: e.thread_id,
        __align: 0,
        exception_record: md::MINIDUMP_EXCEPTION {
            exception_code: e.code,
            exception_flags: e.flags,
            exception_record: e.nested_record,
            exception_address: e.address,
            number_parameters: e.parameters.len().min(15) as u32,
            __align: 0,
            exception_information: information,
        },
        thread_context: context,
    })
}

/// Where each memory range's bytes went: `(start, end, rva)`.
type Placed = Vec<(u64, u64, u32)>;

fn memory_list(s: &mut Streams, memory: &[(u64, Vec<u8>)]) -> Placed {
    let mut placed = Vec::with_capacity(memory.len());
    let mut list = (memory.len() as u32).to_le_bytes().to_vec();
    for (base, bytes) in memory {
        let location = s.put(bytes);
        placed.push((*base, base + bytes.len() as u64, location.rva));
        list.extend(encode(md::MINIDUMP_MEMORY_DESCRIPTOR {
            start_of_memory_range: *base,
            memory: location,
        }));
    }
    s.stream(md::MINIDUMP_STREAM_TYPE::MemoryListStream, &list);
    placed
}

fn memory64_list(s: &mut Streams, memory: &[(u64, Vec<u8>)]) -> Placed {
    let entry = md::MINIDUMP_MEMORY_DESCRIPTOR64::size_with(&LE);
    let list_size = 16 + entry * memory.len();
    // The list, then every range's bytes one after another (BaseRva: where they start).
    while !s.out.len().is_multiple_of(4) {
        s.out.push(0);
    }
    let base_rva = (s.out.len() + list_size) as u64;
    let mut list = (memory.len() as u64).to_le_bytes().to_vec();
    list.extend(base_rva.to_le_bytes());
    let mut placed = Vec::with_capacity(memory.len());
    let mut rva = base_rva;
    for (base, bytes) in memory {
        list.extend(encode(md::MINIDUMP_MEMORY_DESCRIPTOR64 {
            start_of_memory_range: *base,
            data_size: bytes.len() as u64,
        }));
        placed.push((*base, base + bytes.len() as u64, rva as u32));
        rva += bytes.len() as u64;
    }
    s.stream(md::MINIDUMP_STREAM_TYPE::Memory64ListStream, &list);
    for (_, bytes) in memory {
        s.out.extend_from_slice(bytes);
    }
    placed
}

fn thread_list(
    c: &DumpContents,
    contexts: &[Option<md::MINIDUMP_LOCATION_DESCRIPTOR>],
    placed: &Placed,
) -> Vec<u8> {
    let mut out = (c.threads.len() as u32).to_le_bytes().to_vec();
    for (t, context) in c.threads.iter().zip(contexts) {
        let stack = t
            .stack
            .and_then(|(start, end)| {
                let (base, _, rva) = placed
                    .iter()
                    .find(|(s, e, _)| *s <= start && end <= *e && start < end)?;
                Some(md::MINIDUMP_MEMORY_DESCRIPTOR {
                    start_of_memory_range: start,
                    memory: md::MINIDUMP_LOCATION_DESCRIPTOR {
                        data_size: (end - start) as u32,
                        rva: rva + (start - base) as u32,
                    },
                })
            })
            .unwrap_or_default();
        out.extend(encode(md::MINIDUMP_THREAD {
            thread_id: t.id,
            suspend_count: 0,
            priority_class: 0,
            priority: 0,
            teb: t.teb,
            stack,
            thread_context: context.unwrap_or_default(),
        }));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{MemoryView, Target, UserDump};
    use minidump::format::CONTEXT_AMD64;

    fn contents(full_memory: bool) -> DumpContents {
        let context = MinidumpContext::from_raw(MinidumpRawContext::Amd64(CONTEXT_AMD64 {
            context_flags: 0x0010_000f,
            rip: 0x1_4000_1570,
            rsp: 0x11_fe00,
            rax: 0x10,
            ..Default::default()
        }));
        let mut rsds = b"RSDS".to_vec();
        rsds.extend([7u8; 16]);
        rsds.extend(1u32.to_le_bytes());
        rsds.extend(b"C:\\b\\app.pdb\0");
        DumpContents {
            arch: Arch::X64,
            process_id: Some(0x104),
            os_version: Some((10, 0, 19045)),
            time: 0x6000_0000,
            threads: vec![DumpThread {
                id: 0x110,
                teb: 0x67fe_0000,
                context: Some(context.clone()),
                stack: Some((0x11_fe00, 0x11_ff00)),
            }],
            modules: vec![DumpModule {
                name: r"C:\app\app.exe".into(),
                base: 0x1_4000_0000,
                size: 0x3c000,
                checksum: 0,
                time_date_stamp: 0x038d_5475,
                codeview: rsds,
            }],
            memory: vec![
                (0x11_f000, (0..0x1000u32).map(|i| i as u8).collect()),
                (
                    0x1_4000_1570,
                    vec![0xc7, 0x04, 0x25, 0x10, 0, 0, 0, 1, 0, 0, 0],
                ),
            ],
            full_memory,
            exception: Some(ExceptionEvent {
                thread_id: 0x110,
                code: 0xC000_0005,
                flags: 0,
                address: 0x1_4000_1570,
                parameters: vec![1, 0x10],
                nested_record: 0,
                context: Some(context),
            }),
        }
    }

    #[test]
    fn a_written_dump_reads_back_with_the_same_facts() {
        for full in [false, true] {
            let mut bytes = Vec::new();
            write_minidump(&contents(full), &mut bytes).unwrap();
            let dir = std::env::temp_dir().join(format!(
                "ntdbg-minidump-writer-{}-{full}",
                std::process::id()
            ));
            std::fs::create_dir_all(&dir).unwrap();
            let path = dir.join("x.dmp");
            std::fs::write(&path, &bytes).unwrap();
            let dump = UserDump::open(&path).unwrap_or_else(|e| panic!("full={full}: {e}"));
            assert_eq!(dump.system().process_id, Some(0x104));
            let t = &dump.threads()[0];
            assert_eq!((t.id, t.teb), (0x110, 0x67fe_0000));
            assert_eq!(
                t.context.as_ref().unwrap().get_instruction_pointer(),
                0x1_4000_1570
            );
            let e = dump.event().expect("exception");
            assert_eq!(
                (e.code, e.address, e.parameters.clone()),
                (0xC000_0005, 0x1_4000_1570, vec![1, 0x10])
            );
            let m = dump.modules().iter().next().unwrap();
            use minidump::Module;
            assert_eq!(m.code_file(), r"C:\app\app.exe");
            assert_eq!(m.debug_file().as_deref(), Some(r"C:\b\app.pdb"));
            assert_eq!(dump.read_virtual(0x11_fe00, 2), vec![Some(0), Some(1)]);
            assert_eq!(dump.read_virtual(0x1_4000_1573, 1), vec![Some(0x10)]);
            assert_eq!(
                dump.read_virtual(0x1_4000_1000, 1),
                vec![None],
                "no invented bytes"
            );
            drop(dump);
            std::fs::remove_dir_all(&dir).unwrap();
        }
    }
}
