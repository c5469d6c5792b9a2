//! minidump-stackwalk's report from ntdbg's engine, so a pipeline built around
//! `minidump-stackwalk` can run `ntdbg stackwalk` instead.
//!
//! [`stackwalk`] walks every thread from its own context (the crashing thread from the
//! exception's context, as minidump-stackwalk does) with ntdbg's walker and symbols, and
//! fills [`StackwalkReport`]: the keys, types and meanings of `minidump-stackwalk --json`
//! (rust-minidump 0.27). [`render_human`] prints the same report in minidump-stackwalk's
//! plain-text layout. Where minidump-stackwalk runs analyses ntdbg does not (the crashing
//! instruction's memory accesses, bit flips), the keys are there and null.

mod human;
mod schema;

pub use human::render_human;
pub use schema::{
    CrashInfo, CrashingThread, Frame, Handle, InlineFrame, Module, StackwalkReport, SystemInfo,
    Thread, UnloadedHit, UnloadedModule,
};

use minidump::format::{
    MINIDUMP_EXCEPTION, MINIDUMP_EXCEPTION_STREAM, MINIDUMP_LOCATION_DESCRIPTOR,
};
use minidump::system_info::Cpu;
use minidump::{CrashReason, MinidumpContext, Module as _};
use minidump_common::utils::basename;
use minidump_unwind::FrameTrust;
use ntdbg_engine::stack::{FoundBy, Frame as EngineFrame, FrameContext};
use ntdbg_engine::Session;
use ntdbg_symbols::SymbolStatus;
use ntdbg_targets::{Arch, TargetKind};
use std::collections::BTreeMap;

/// Why no report could be made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StackwalkError(pub String);

impl std::fmt::Display for StackwalkError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for StackwalkError {}

/// What [`render_human`] needs beyond the JSON: per-frame facts minidump-stackwalk prints
/// in its text layout only.
#[derive(Debug, Clone)]
pub struct FrameDetail {
    /// The frame's instruction address (`offset` as a number).
    pub instruction: u64,
    /// The module's base, when the address is in one.
    pub module_base: Option<u64>,
    /// The function's start, when known.
    pub function_base: Option<u64>,
    /// The start of the source line's address range, when known.
    pub line_base: Option<u64>,
    /// The registers the walker recovered for the frame.
    pub context: FrameContext,
    /// How it was found, as minidump-stackwalk words it.
    pub trust: FrameTrust,
}

/// The report with the text layout's extra facts.
#[derive(Debug, Clone)]
pub struct Stackwalk {
    /// The JSON report.
    pub report: StackwalkReport,
    /// Per thread, per frame of `report.threads[i].frames`: what the text layout adds.
    pub details: Vec<Vec<FrameDetail>>,
    /// The module list's (base, size) in the dump's order, beside `report.modules`.
    pub module_ranges: Vec<(u64, u64)>,
}

/// Walks every thread of a user-mode minidump and builds minidump-stackwalk's report.
/// Kernel dumps and live targets are refused: minidump-stackwalk's schema describes one
/// process.
pub fn stackwalk(session: &Session) -> Result<Stackwalk, StackwalkError> {
    let target = session.target();
    if target.kind() != TargetKind::UserDump {
        return Err(StackwalkError(format!(
            "{}: stackwalk reads user-mode minidumps (MDMP) only; use `ntdbg analyze` for kernel dumps",
            target.origin()
        )));
    }
    let arch = target.arch();
    let hex = HexWidth::of(arch);
    let event = target.event();
    let infos = target.threads();
    let crashing = event.and_then(|e| infos.iter().position(|t| t.id == e.thread_id));

    let mut threads = Vec::with_capacity(infos.len());
    let mut details = Vec::with_capacity(infos.len());
    for (index, info) in infos.iter().enumerate() {
        let from_exception = crashing == Some(index) && event.is_some_and(|e| e.context.is_some());
        // In a dump cut short the crashing thread's exception context may be what was lost:
        // its own context is then not the one the report shows for it, so it gets no frames.
        let context_lost = crashing == Some(index) && !target.file_losses().is_empty();
        let stack = if from_exception {
            session.event_stack()
        } else if context_lost {
            Err(ntdbg_engine::EngineError::NoExceptionContext)
        } else {
            session.thread_stack(index)
        };
        // A thread without a context has no frames, as in minidump-stackwalk.
        let (frames, detail) = match stack {
            Ok(stack) => convert_frames(session, &stack.frames, hex),
            Err(_) => (Vec::new(), Vec::new()),
        };
        threads.push(Thread {
            frame_count: frames.len(),
            frames,
            last_error_value: last_error(session, info.teb),
            thread_id: info.id,
            thread_name: info.name.clone(),
        });
        details.push(detail);
    }

    let crashing_thread = crashing.and_then(|index| {
        let mut thread = threads[index].clone();
        let first = thread.frames.first_mut()?;
        first.registers = Some(registers(&details[index][0].context));
        Some(CrashingThread {
            thread,
            threads_index: index,
        })
    });

    let system = target.system();
    let cpu = cpu_of(arch);
    let crash_info = match event {
        Some(e) => CrashInfo {
            address: Some(hex.format(crash_address(e.code, &e.parameters, e.address, hex))),
            crashing_thread: crashing,
            kind: Some(crash_reason(e, cpu).to_string()),
            ..CrashInfo::default()
        },
        None => CrashInfo::default(),
    };

    let modules_list = target.modules();
    let modules = modules_list
        .iter()
        .map(|m| module_entry(session, m, hex))
        .collect();
    let module_ranges = modules_list
        .iter()
        .map(|m| (m.base_address(), m.size()))
        .collect();
    let unloaded_modules = target
        .unloaded_modules()
        .iter()
        .map(|u| UnloadedModule {
            base_addr: hex.format(u.base),
            cert_subject: None,
            code_id: code_id(u.time_date_stamp, u.size),
            end_addr: hex.format(u.end()),
            filename: u.name.clone(),
        })
        .collect();
    let handles = target.handles().map(|hs| {
        hs.iter()
            .map(|h| Handle {
                handle: h.handle,
                object_name: h.object_name.clone(),
                type_name: h.type_name.clone(),
            })
            .collect()
    });

    let report = StackwalkReport {
        crash_info,
        crashing_thread,
        handles,
        linux_memory_map_count: None,
        lsb_release: None,
        mac_boot_args: None,
        mac_crash_info: None,
        main_module: 0,
        modules,
        modules_contains_cert_info: false,
        pid: system.process_id,
        proc_limits: None,
        // minidump-stackwalk: dump time minus create time, 0 when that is negative.
        process_uptime: system
            .process_create_time
            .map(|created| u64::from(system.dump_time.unwrap_or(0).saturating_sub(created))),
        soft_errors: None,
        status: "OK",
        system_info: SystemInfo {
            cpu_arch: cpu.to_string(),
            cpu_count: system.cpu_count,
            cpu_info: system.cpu_info.clone(),
            cpu_microcode_version: None,
            os: minidump::system_info::Os::Windows.long_name().into_owned(),
            os_ver: Some(match &system.csd_version {
                Some(csd) => format!("{} {csd}", system.os_version),
                None => system.os_version.clone(),
            }),
        },
        thread_count: threads.len(),
        threads,
        unloaded_modules,
    };
    Ok(Stackwalk {
        report,
        details,
        module_ranges,
    })
}

/// Addresses as minidump-stackwalk writes them: `0x` and 8 digits on 32-bit CPUs, 16
/// otherwise.
#[derive(Debug, Clone, Copy)]
pub struct HexWidth(usize);

impl HexWidth {
    /// The width of `arch`'s pointers.
    pub fn of(arch: Arch) -> HexWidth {
        HexWidth(if arch.pointer_size() == 4 { 8 } else { 16 })
    }

    /// `value` as `0x` + zero-padded lower-case hex.
    pub fn format(self, value: u64) -> String {
        format!("0x{value:0width$x}", width = self.0)
    }

    /// Whether addresses are 32-bit.
    fn is_32(self) -> bool {
        self.0 == 8
    }
}

/// minidump's CPU for ntdbg's architecture.
fn cpu_of(arch: Arch) -> Cpu {
    match arch {
        Arch::X86 => Cpu::X86,
        Arch::X64 => Cpu::X86_64,
        Arch::Arm64 => Cpu::Arm64,
        Arch::Other(raw) => Cpu::from_processor_architecture(raw),
    }
}

/// The crash address minidump-stackwalk reports: the accessed address of an access
/// violation or in-page error, else the exception address; 32 bits on 32-bit CPUs.
fn crash_address(code: u32, parameters: &[u64], address: u64, hex: HexWidth) -> u64 {
    const ACCESS_VIOLATION: u32 = 0xc000_0005;
    const IN_PAGE_ERROR: u32 = 0xc000_0006;
    let addr = match parameters.get(1) {
        Some(&accessed) if code == ACCESS_VIOLATION || code == IN_PAGE_ERROR => accessed,
        _ => address,
    };
    if hex.is_32() {
        addr & 0xffff_ffff
    } else {
        addr
    }
}

/// The crash reason as the minidump crate names it from the exception record.
fn crash_reason(event: &ntdbg_targets::ExceptionEvent, cpu: Cpu) -> CrashReason {
    let mut information = [0u64; 15];
    for (slot, value) in information.iter_mut().zip(&event.parameters) {
        *slot = *value;
    }
    let raw = MINIDUMP_EXCEPTION_STREAM {
        thread_id: event.thread_id,
        __align: 0,
        exception_record: MINIDUMP_EXCEPTION {
            exception_code: event.code,
            exception_flags: event.flags,
            exception_record: event.nested_record,
            exception_address: event.address,
            number_parameters: event.parameters.len() as u32,
            __align: 0,
            exception_information: information,
        },
        thread_context: MINIDUMP_LOCATION_DESCRIPTOR {
            data_size: 0,
            rva: 0,
        },
    };
    CrashReason::from_windows_exception(&raw, cpu)
        .unwrap_or(CrashReason::WindowsUnknown(event.code))
}

/// `TIMESTAMPsizeofimage`, as minidump writes code ids.
fn code_id(time_date_stamp: u32, size: u32) -> String {
    format!("{time_date_stamp:08x}{size:x}")
}

/// The TEB's LastErrorValue (13 pointers into the TEB on every Windows architecture),
/// named as minidump names Windows errors; None when the TEB is not in the dump.
fn last_error(session: &Session, teb: u64) -> Option<String> {
    let target = session.target();
    let pointer = target.arch().pointer_size() as u64;
    let value = target.read_uint(teb.checked_add(pointer * 13)?, 4)?;
    Some(CrashReason::from_windows_error(value as u32).to_string())
}

/// The valid general-purpose registers, formatted as minidump formats them.
fn registers(context: &MinidumpContext) -> BTreeMap<String, String> {
    context
        .general_purpose_registers()
        .iter()
        .filter(|reg| context.get_register(reg).is_some())
        .map(|reg| (reg.to_string(), context.format_register(reg)))
        .collect()
}

/// minidump-stackwalk's trust for how ntdbg found a frame. The leaf rule (no unwind data,
/// return address at the stack top) is reported as `scan`: it is not the function's own
/// unwind data, and a consumer that keeps only CFI-trusted frames must not take it for one.
fn trust_of(found_by: FoundBy) -> FrameTrust {
    match found_by {
        FoundBy::Context => FrameTrust::Context,
        FoundBy::Cfi => FrameTrust::CallFrameInfo,
        FoundBy::FramePointer => FrameTrust::FramePointer,
        FoundBy::Leaf | FoundBy::Scan => FrameTrust::Scan,
    }
}

/// ntdbg's frames (inlined calls as frames of their own, innermost first) as
/// minidump-stackwalk's (inlined calls inside the frame they were inlined into).
fn convert_frames(
    session: &Session,
    frames: &[EngineFrame],
    hex: HexWidth,
) -> (Vec<Frame>, Vec<FrameDetail>) {
    let target = session.target();
    // Callers' addresses point into the call instruction, as minidump-stackwalk's do.
    let call_adjust = if target.arch() == Arch::Arm64 { 4 } else { 1 };
    let mut out = Vec::new();
    let mut details = Vec::new();
    let mut inlines = Vec::new();
    for f in frames {
        if f.inline {
            inlines.push(InlineFrame {
                file: f.source_file.clone(),
                function: f.function.clone().unwrap_or_default(),
                line: f.source_line,
            });
            continue;
        }
        let instruction = if f.found_by == FoundBy::Context {
            f.instruction
        } else {
            f.instruction.wrapping_sub(call_adjust)
        };
        let module = f
            .module_base
            .and_then(|base| target.modules().module_at_address(base));
        let function_base = f
            .function_offset
            .filter(|_| f.function.is_some())
            .map(|offset| f.instruction.wrapping_sub(offset));
        let trust = trust_of(f.found_by);
        out.push(Frame {
            file: f.source_file.clone(),
            frame: out.len(),
            function: f.function.clone(),
            function_offset: function_base.map(|b| hex.format(instruction.wrapping_sub(b))),
            // ntdbg lists inlined calls innermost first; minidump-stackwalk outermost first.
            inlines: (!inlines.is_empty()).then(|| {
                let mut outermost_first = std::mem::take(&mut inlines);
                outermost_first.reverse();
                outermost_first
            }),
            line: f.source_line,
            missing_symbols: f.function.is_none(),
            module: module.map(|m| basename(&m.code_file()).to_string()),
            module_offset: module.map(|m| hex.format(instruction.wrapping_sub(m.base_address()))),
            offset: hex.format(instruction),
            registers: None,
            trust: trust.as_str(),
            unloaded_modules: if module.is_none() {
                unloaded_hits(session, instruction, hex)
            } else {
                None
            },
        });
        details.push(FrameDetail {
            instruction,
            module_base: module.map(|m| m.base_address()),
            function_base,
            line_base: module
                .filter(|_| f.source_line.is_some())
                .and_then(|m| human::line_base(session, m, instruction)),
            context: f.context.clone(),
            trust,
        });
    }
    (out, details)
}

/// The unloaded modules that held `addr`, by name, with its offset in each load.
fn unloaded_hits(session: &Session, addr: u64, hex: HexWidth) -> Option<Vec<UnloadedHit>> {
    let mut hits: Vec<UnloadedHit> = Vec::new();
    for u in session.target().unloaded_modules() {
        if addr < u.base || addr >= u.end() {
            continue;
        }
        let offset = hex.format(addr - u.base);
        match hits.iter_mut().find(|h| h.module == u.name) {
            Some(hit) => hit.offsets.push(offset),
            None => hits.push(UnloadedHit {
                module: u.name.clone(),
                offsets: vec![offset],
            }),
        }
    }
    (!hits.is_empty()).then_some(hits)
}

/// One `modules` entry, with what ntdbg's symbol store knows of it.
fn module_entry(session: &Session, m: &minidump::MinidumpModule, hex: HexWidth) -> Module {
    let loaded = session.symbols().loaded(m.base_address());
    let has_symbols = loaded
        .as_ref()
        .is_some_and(|s| matches!(s.status(), SymbolStatus::Pdb | SymbolStatus::Breakpad));
    // Dumps without CodeView records (Wine) still name their PDB in the image's RSDS
    // record, which ntdbg reads when it loads the module's symbols.
    let image_identity = loaded.as_ref().and_then(|s| s.pdb_identity());
    let (debug_file, debug_id) = match (m.debug_file(), m.debug_identifier()) {
        (Some(file), Some(id)) => (basename(&file).to_string(), id.breakpad().to_string()),
        _ => match image_identity {
            Some((file, id)) => (basename(&file).to_string(), id),
            None => (
                basename(&m.debug_file().unwrap_or_default()).to_string(),
                m.debug_identifier()
                    .unwrap_or_default()
                    .breakpad()
                    .to_string(),
            ),
        },
    };
    Module {
        base_addr: hex.format(m.base_address()),
        cert_subject: None,
        code_id: m.code_identifier().unwrap_or_default().as_str().to_string(),
        corrupt_symbols: false,
        debug_file,
        debug_id,
        end_addr: hex.format(m.base_address().wrapping_add(m.size())),
        filename: basename(&m.code_file()).to_string(),
        loaded_symbols: has_symbols,
        missing_symbols: loaded.is_some() && !has_symbols,
        symbol_url: None,
        version: m.version().map(|v| v.into_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_padded_to_the_pointer_width() {
        assert_eq!(HexWidth::of(Arch::X86).format(0x45), "0x00000045");
        assert_eq!(HexWidth::of(Arch::X64).format(0x45), "0x0000000000000045");
        assert_eq!(
            HexWidth::of(Arch::Arm64).format(u64::MAX),
            "0xffffffffffffffff"
        );
    }

    #[test]
    fn the_crash_address_is_the_accessed_address_of_an_access_violation() {
        let x86 = HexWidth::of(Arch::X86);
        let x64 = HexWidth::of(Arch::X64);
        // Breakpad's minidump_32bit_crash_addr.dmp: a sign-extended accessed address.
        assert_eq!(
            crash_address(0xc000_0005, &[1, 0xffff_ffff_0000_0045], 0x40429e, x86),
            0x45
        );
        assert_eq!(
            crash_address(0xc000_0006, &[0, 0x1000, 0xc000_000e], 0x10, x64),
            0x1000
        );
        assert_eq!(
            crash_address(0x8000_0003, &[], 0x7ffa_c82d_b264, x64),
            0x7ffa_c82d_b264
        );
        assert_eq!(crash_address(0xc000_0005, &[1], 0x1234, x64), 0x1234);
    }

    #[test]
    fn code_ids_are_the_stamp_then_the_size_in_lower_case_hex() {
        assert_eq!(code_id(0x45d3_5f6c, 0x2d000), "45d35f6c2d000");
        assert_eq!(code_id(0x0569_dfa1, 0x5000), "0569dfa15000");
    }
}
