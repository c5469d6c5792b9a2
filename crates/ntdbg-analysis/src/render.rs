//! Text renderings: `.exr`-style exception records and the `!analyze -v`-style report.

use crate::exception::{decode, Access, ExceptionKind};
use crate::report::Report;
use ntdbg_engine::text::pointer_hex;
use ntdbg_engine::Session;
use ntdbg_targets::ExceptionEvent;
use std::fmt::Write;

/// An exception record as WinDbg's `.exr -1` prints it.
pub fn render_exception_record(session: &Session, event: &ExceptionEvent) -> String {
    let ptr = session.arch().pointer_size();
    let d = decode(event, ptr);
    let sym = session.symbolize(event.address);
    let mut out = String::new();
    let location = match (&sym.module, &sym.function) {
        (Some(m), Some(f)) => format!(
            " ({m}!{}+0x{})",
            ntdbg_symbols::strip_parameters(f),
            pointer_hex(sym.function_offset.unwrap_or(0), ptr)
        ),
        (Some(m), None) => format!(
            " ({m}+0x{})",
            pointer_hex(
                event.address.wrapping_sub(sym.module_base.unwrap_or(0)),
                ptr
            )
        ),
        _ => String::new(),
    };
    let _ = writeln!(
        out,
        "ExceptionAddress: {}{location}",
        pointer_hex(event.address, ptr)
    );
    let _ = writeln!(out, "   ExceptionCode: {:08x} ({})", event.code, d.short);
    let _ = writeln!(out, "  ExceptionFlags: {:08x}", event.flags);
    let _ = writeln!(out, "NumberParameters: {}", event.parameters.len());
    for (i, p) in event.parameters.iter().enumerate() {
        let _ = writeln!(out, "   Parameter[{i}]: {}", pointer_hex(*p, ptr));
    }
    match d.kind {
        ExceptionKind::AccessViolation {
            access: Some(a),
            address: Some(addr),
            ..
        } => {
            let verb = match a {
                Access::Read => "read from",
                Access::Write => "write to",
                Access::Execute => "execute",
            };
            let _ = writeln!(out, "Attempt to {verb} address {}", pointer_hex(addr, ptr));
        }
        ExceptionKind::FastFail { code: Some(code) } => {
            let name = crate::ntstatus::fast_fail_name(code).unwrap_or("unknown");
            let _ = writeln!(out, "   Subcode: 0x{code:x} {name}");
        }
        _ => {}
    }
    out
}

/// The report as text for people, in the spirit of `!analyze -v`.
pub fn render_report(report: &Report) -> String {
    let mut out = String::new();
    let line = "*".repeat(79);
    let bugcheck = report.event.kind == "bugcheck";
    let title = if bugcheck {
        "Bugcheck Analysis"
    } else {
        "Exception Analysis"
    };
    let _ = writeln!(out, "{line}");
    let _ = writeln!(out, "*{title:^77}*");
    let _ = writeln!(out, "{line}");
    let _ = writeln!(out);
    let d = &report.dump;
    let (file, kind) = if d.kind == "live" {
        ("TARGET:       ", "TARGET_KIND:  ")
    } else {
        ("DUMP_FILE:    ", "DUMP_KIND:    ")
    };
    let os = if d.os_build.is_empty() {
        String::new()
    } else {
        format!(", Windows {}", d.os_build)
    };
    let _ = writeln!(out, "{file}  {}", d.path);
    let _ = writeln!(
        out,
        "{kind}  {} ({}{os}), {} threads, {} modules",
        d.kind, d.arch, d.threads, d.modules
    );
    if let Some(p) = &d.process_name {
        let _ = writeln!(out, "PROCESS_NAME:   {p}");
    }
    let _ = writeln!(out);
    let e = &report.event;
    match (&e.code, &e.name) {
        (Some(code), Some(name)) if bugcheck => render_bugcheck(&mut out, code, name, e, &d.arch),
        (Some(code), Some(name)) => {
            let _ = writeln!(out, "EXCEPTION_CODE: {code} ({name})");
            if let Some(a) = &e.address {
                let _ = writeln!(out, "EXCEPTION_ADDR: {a}");
            }
            if !e.parameters.is_empty() {
                let _ = writeln!(out, "EXCEPTION_PARAMETERS: {}", e.parameters.join(" "));
            }
            if let Some(t) = &e.thread_id {
                let _ = writeln!(out, "FAULTING_THREAD: {t}");
            }
        }
        _ => {
            let _ = writeln!(out, "EXCEPTION_CODE: none");
        }
    }
    let _ = writeln!(out, "DESCRIPTION:    {}", e.description);
    if let Some(m) = &report.faulting_module {
        let _ = writeln!(
            out,
            "FAULTING_MODULE: {} base {} size {} timestamp {}{}",
            m.name,
            m.base,
            m.size,
            m.timestamp,
            m.version
                .as_ref()
                .map(|v| format!(" version {v}"))
                .unwrap_or_default()
        );
    }
    let _ = writeln!(out);
    let _ = writeln!(out, "STACK_TEXT:");
    for f in &report.stack {
        let site = match (&f.module, &f.function, &f.offset) {
            (Some(m), Some(func), Some(off)) if off != "0x0" => {
                format!("{m}!{}+{off}", ntdbg_symbols::strip_parameters(func))
            }
            (Some(m), Some(func), _) => {
                format!("{m}!{}", ntdbg_symbols::strip_parameters(func))
            }
            (Some(m), None, Some(off)) => format!("{m}+{off}"),
            _ => f.address.clone(),
        };
        let source = f
            .source
            .as_ref()
            .map(|s| format!(" [{s}]"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "{:02x} {:>18} {site}{source}  ({})",
            f.frame, f.address, f.found_by
        );
    }
    if !report.frame_locals.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(out, "FRAME_LOCALS:");
        for l in &report.frame_locals {
            let function = l
                .function
                .as_deref()
                .map_or("?", ntdbg_symbols::strip_parameters);
            let found = match l.found_by {
                ntdbg_engine::stack::FoundBy::Scan => {
                    "  (frame found by stack scanning: if its return address is a stale one, so are these)"
                }
                _ => "",
            };
            let _ = writeln!(out, "{:02x} {function}{found}", l.frame);
            for v in &l.variables {
                let _ = writeln!(out, "    {} {} = {}", v.type_name, v.name, v.value);
            }
            if l.omitted > 0 {
                let _ = writeln!(out, "    ({} more: .frame {:x}; dv)", l.omitted, l.frame);
            }
        }
    }
    let _ = writeln!(out);
    let _ = writeln!(out, "SIGNATURE:      {}", report.signature);
    if !report.signature_frames.is_empty() {
        let _ = writeln!(out, "SIGNATURE_FRAMES:");
        for f in &report.signature_frames {
            let _ = writeln!(
                out,
                "  {:02x} {}  {} ({}, {}): {}",
                f.frame,
                f.name,
                f.role.name(),
                f.found_by,
                f.trust,
                f.reason
            );
        }
    }
    if !report.waits.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(out, "WAIT_CHAINS:");
        for w in &report.waits {
            let _ = writeln!(out, "  - {}", w.text);
            let _ = writeln!(out, "    basis: {}", w.basis);
        }
    }
    if !report.pointed_to.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(out, "POINTED_TO:");
        for p in &report.pointed_to {
            let _ = writeln!(out, "  {} = {} -> {}", p.place, p.value, p.target);
        }
    }
    if !report.inferences.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(out, "INFERENCES:");
        for i in &report.inferences {
            let _ = writeln!(out, "  - {}", i.text);
            let _ = writeln!(out, "    basis: {}", i.basis);
        }
    }
    if !report.limitations.is_empty() {
        let _ = writeln!(out);
        let _ = writeln!(out, "LIMITATIONS:");
        for l in &report.limitations {
            let _ = writeln!(out, "  - {l}");
        }
    }
    let _ = writeln!(out);
    let _ = writeln!(out, "NEXT_COMMANDS:  {}", report.next_commands.join("; "));
    out
}

/// The kernel form of `!analyze -v`'s head: the bugcheck name, code and its arguments with the
/// meaning of each.
fn render_bugcheck(
    out: &mut String,
    code: &str,
    name: &str,
    e: &crate::report::EventFacts,
    arch: &str,
) {
    let parse = |t: &str| u64::from_str_radix(t.trim_start_matches("0x"), 16).ok();
    let code_value = parse(code).unwrap_or(0) as u32;
    let mut params = [0u64; 4];
    for (slot, text) in params.iter_mut().zip(&e.parameters) {
        *slot = parse(text).unwrap_or(0);
    }
    let decoded = crate::bugcheck::decode_bugcheck(code_value, params);
    let _ = writeln!(out, "{name} ({code_value:x})");
    let _ = writeln!(out, "Arguments:");
    // Arguments print at the dump's pointer width; one without a documented meaning prints
    // bare, as WinDbg does.
    let width = if matches!(arch, "x86" | "arm") { 4 } else { 8 };
    for (i, (value, meaning)) in params.iter().zip(&decoded.arguments).enumerate() {
        let value = pointer_hex(*value, width);
        if meaning.is_empty() {
            let _ = writeln!(out, "Arg{}: {value}", i + 1);
        } else {
            let _ = writeln!(out, "Arg{}: {value}, {meaning}", i + 1);
        }
    }
    let _ = writeln!(out);
    let _ = writeln!(out, "BUGCHECK_CODE:  {code}");
    let _ = writeln!(out, "BUGCHECK_P1..4: {}", e.parameters.join(" "));
    if let Some(a) = &e.address {
        let _ = writeln!(out, "FAULTING_IP:    {a}");
    }
    if let Some(t) = &e.thread_id {
        let _ = writeln!(out, "FAULTING_THREAD: {t}");
    }
    // Records the parameters point to, with the command that selects each (as WinDbg does).
    for (label, value, command) in [
        ("CONTEXT:", decoded.context_record, ".cxr"),
        ("EXCEPTION_RECORD:", decoded.exception_record, ".exr"),
        ("TRAP_FRAME:", decoded.trap_frame, ".trap"),
    ] {
        if let Some(a) = value {
            let _ = writeln!(
                out,
                "{label}  {} -- ({command} {a:#x})",
                pointer_hex(a, width)
            );
        }
    }
}
