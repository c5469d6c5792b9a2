//! minidump-stackwalk's plain-text layout (`--human`, its default) of a [`Stackwalk`].

use super::{FrameDetail, Stackwalk, Thread};
use minidump::{MinidumpContext, MinidumpModule};
use minidump_unwind::FrameSymbolizer;
use ntdbg_engine::Session;
use std::fmt::Write as _;

/// The report as minidump-stackwalk prints it: system, crash reason and address, process
/// uptime, the crashing thread's frames with their registers and how each was found, then
/// (unless `brief`) every other thread, the loaded and the unloaded modules.
pub fn render_human(walk: &Stackwalk, brief: bool) -> String {
    let r = &walk.report;
    let mut out = String::new();
    let sys = &r.system_info;
    let _ = writeln!(out, "Operating system: {}", sys.os);
    if let Some(ver) = &sys.os_ver {
        let _ = writeln!(out, "                  {ver}");
    }
    let _ = writeln!(out, "CPU: {}", sys.cpu_arch);
    if let Some(info) = &sys.cpu_info {
        let _ = writeln!(out, "     {info}");
    }
    let plural = if sys.cpu_count > 1 { "s" } else { "" };
    let _ = writeln!(out, "     {} CPU{plural}\n", sys.cpu_count);

    match (&r.crash_info.kind, &r.crash_info.address) {
        (Some(kind), Some(address)) => {
            let _ = writeln!(out, "Crash reason:  {kind}");
            let _ = writeln!(out, "Crash address: {address}");
        }
        _ => out.push_str("No crash\n"),
    }
    match r.process_uptime {
        Some(secs) => {
            let _ = writeln!(out, "Process uptime: {secs} seconds\n");
        }
        None => out.push_str("Process uptime: not available\n\n"),
    }

    let crashing = r.crash_info.crashing_thread;
    if let Some(index) = crashing {
        let thread = &r.threads[index];
        let _ = writeln!(
            out,
            "Thread {index} {} (crashed) - tid: {}",
            thread.thread_name.as_deref().unwrap_or(""),
            thread.thread_id
        );
        print_stack(&mut out, thread, &walk.details[index]);
        out.push('\n');
    }
    if brief {
        return out;
    }
    for (index, thread) in r.threads.iter().enumerate() {
        if crashing == Some(index) {
            continue;
        }
        let _ = writeln!(
            out,
            "Thread {index} {} - tid: {}",
            thread.thread_name.as_deref().unwrap_or(""),
            thread.thread_id
        );
        print_stack(&mut out, thread, &walk.details[index]);
    }

    out.push_str("\nLoaded modules:\n");
    let mut by_addr: Vec<usize> = (0..r.modules.len()).collect();
    by_addr.sort_by_key(|&i| walk.module_ranges[i].0);
    for i in by_addr {
        let (base, size) = walk.module_ranges[i];
        let m = &r.modules[i];
        let _ = write!(
            out,
            "{base:#010x} - {:#010x}  {}  {}",
            (base + size).saturating_sub(1),
            m.filename,
            m.version.as_deref().unwrap_or("???")
        );
        if i == r.main_module {
            out.push_str("  (main)");
        }
        out.push('\n');
    }
    out.push_str("\nUnloaded modules:\n");
    let mut unloaded: Vec<_> = r.unloaded_modules.iter().collect();
    unloaded.sort_by_key(|u| parse_hex(&u.base_addr));
    for u in unloaded {
        let base = parse_hex(&u.base_addr);
        let end = parse_hex(&u.end_addr);
        let _ = writeln!(
            out,
            "{base:#010x} - {:#010x}  {}",
            end.saturating_sub(1),
            u.filename
        );
    }
    out
}

/// A `0x…` string of the report back as a number (the report wrote it).
fn parse_hex(text: &str) -> u64 {
    u64::from_str_radix(text.trim_start_matches("0x"), 16).unwrap_or(0)
}

/// One thread's frames: inlined calls first (numbered as frames of their own), then the
/// frame, its valid registers and how it was found.
fn print_stack(out: &mut String, thread: &Thread, details: &[FrameDetail]) {
    if thread.frames.is_empty() {
        out.push_str("<no frames>\n");
    }
    let mut number = 0;
    for (frame, detail) in thread.frames.iter().zip(details) {
        let module = frame.module.as_deref();
        for inline in frame.inlines.iter().flatten() {
            let _ = write!(
                out,
                "{number:2}  {}!{}",
                module.unwrap_or(""),
                inline.function
            );
            if let (Some(file), Some(line)) = (&inline.file, inline.line) {
                let _ = write!(out, " [{} : {line}]", file_name(file));
            }
            out.push_str("\n    Found by: inlining\n");
            number += 1;
        }
        let addr = detail.instruction;
        let _ = write!(out, "{number:2}  ");
        number += 1;
        match (module, detail.module_base) {
            (Some(name), Some(base)) => {
                out.push_str(name);
                match (&frame.function, detail.function_base) {
                    (Some(function), Some(function_base)) => {
                        let _ = write!(out, "!{function}");
                        match (&frame.file, frame.line, detail.line_base) {
                            (Some(file), Some(line), Some(line_base)) => {
                                let _ = write!(
                                    out,
                                    " [{} : {line} + {:#x}]",
                                    file_name(file),
                                    addr.wrapping_sub(line_base)
                                );
                            }
                            _ => {
                                let _ = write!(out, " + {:#x}", addr.wrapping_sub(function_base));
                            }
                        }
                    }
                    _ => {
                        let _ = write!(out, " + {:#x}", addr.wrapping_sub(base));
                    }
                }
            }
            _ => {
                let _ = write!(out, "{addr:#x}");
                for hit in frame.unloaded_modules.iter().flatten() {
                    let offsets: Vec<String> = hit
                        .offsets
                        .iter()
                        .map(|o| format!("{:#x}", parse_hex(o)))
                        .collect();
                    let _ = write!(out, " (unloaded {}@{})", hit.module, offsets.join("|"));
                }
            }
        }
        out.push('\n');
        print_registers(out, &detail.context);
        let _ = writeln!(out, "    Found by: {}", detail.trust.description());
    }
}

/// The valid general-purpose registers, ` name = value` in columns, lines under 80
/// characters (minidump-stackwalk's layout).
fn print_registers(out: &mut String, context: &MinidumpContext) {
    let mut line = String::new();
    for reg in context.general_purpose_registers() {
        if context.get_register(reg).is_none() {
            continue;
        }
        let next = format!(" {reg: >6} = {}", context.format_register(reg));
        if line.chars().count() + next.chars().count() > 80 {
            let _ = writeln!(out, " {line}");
            line.clear();
        }
        line.push_str(&next);
    }
    if !line.is_empty() {
        let _ = writeln!(out, " {line}");
    }
}

/// The file name of a source path (either separator).
fn file_name(path: &str) -> &str {
    minidump_common::utils::basename(path)
}

/// Where the source line holding `instruction` starts, from the module's loaded symbols.
pub(super) fn line_base(
    session: &Session,
    module: &MinidumpModule,
    instruction: u64,
) -> Option<u64> {
    let symbols = session
        .symbols()
        .loaded(minidump::Module::base_address(module))?;
    let mut probe = LineBase {
        instruction,
        base: None,
    };
    symbols.fill_symbol(module, &mut probe);
    probe.base
}

/// Keeps only where the source line of one address starts.
struct LineBase {
    instruction: u64,
    base: Option<u64>,
}

impl FrameSymbolizer for LineBase {
    fn get_instruction(&self) -> u64 {
        self.instruction
    }
    fn set_function(&mut self, _name: &str, _base: u64, _parameter_size: u32) {}
    fn set_source_file(&mut self, _file: &str, _line: u32, base: u64) {
        self.base = Some(base);
    }
}
