//! Process and system facts: `!peb`, `!teb`, `vertarget`, `.time`.

use crate::error::{CommandError, ErrorCode};
use crate::output::{CommandOutput, TypedResult};
use crate::render::{addr, windbg_duration, windbg_time};
use crate::spec::{CommandSpec, Invocation};
use ntdbg_engine::text::UNREADABLE;
use ntdbg_engine::{EngineError, Session};

pub(crate) const COMMANDS: &[CommandSpec] = &[
    CommandSpec::inspect(
        &["!peb"],
        "!peb",
        "the process environment block, when the dump holds it",
        "Read from memory with fixed Windows layouts (no ntdll symbols needed).",
        peb,
    )
    .no_args(),
    CommandSpec::inspect(
        &["!teb"],
        "!teb",
        "the current thread's environment block, when the dump holds it",
        "",
        teb,
    )
    .no_args(),
    CommandSpec::inspect(
        &["vertarget"],
        "vertarget",
        "the target's OS version, CPU and times",
        "",
        vertarget,
    )
    .no_args(),
    CommandSpec::inspect(
        &[".time"],
        ".time",
        "dump time, process uptime and CPU times",
        "",
        dot_time,
    )
    .no_args(),
];

fn peb(session: &mut Session, _inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    let peb = session.peb().map_err(|e| match e {
        EngineError::MemoryUnavailable { what: "TEB", .. } => CommandError::new(
            ErrorCode::MemoryUnavailable,
            format!(
                "PEB address not available: the current thread's TEB is {}",
                session.target().kind().missing_memory()
            ),
        )
        .with_hint("minidumps written without MiniDumpWithProcessThreadData rarely hold the PEB"),
        EngineError::MemoryUnavailable { address, .. } => CommandError::new(
            ErrorCode::MemoryUnavailable,
            format!(
                "PEB at {}: its memory is {}",
                addr(session, address),
                session.target().kind().missing_memory()
            ),
        ),
        other => other.into(),
    })?;
    let yes_no = |v: Option<bool>| match v {
        Some(false) => "No".to_string(),
        Some(true) => "Yes".to_string(),
        None => UNREADABLE.to_string(),
    };
    let show = |v: Option<u64>| {
        v.map(|v| addr(session, v))
            .unwrap_or_else(|| UNREADABLE.into())
    };
    let rows = [
        (
            "InheritedAddressSpace:   ",
            yes_no(peb.inherited_address_space),
        ),
        (
            "ReadImageFileExecOptions:",
            yes_no(peb.read_image_file_exec_options),
        ),
        ("BeingDebugged:           ", yes_no(peb.being_debugged)),
        ("ImageBaseAddress:        ", show(peb.image_base)),
        ("Ldr                      ", show(peb.ldr)),
        ("ProcessHeap:             ", show(peb.process_heap)),
        ("ProcessParameters:       ", show(peb.process_parameters)),
    ];
    let mut out = format!("PEB at {}\n", addr(session, peb.address));
    for (label, value) in rows {
        out.push_str(&format!("    {label} {value}\n"));
    }
    if peb.process_parameters.is_some() {
        let text = |s: &Option<String>| {
            s.as_ref()
                .map(|s| format!("'{s}'"))
                .unwrap_or_else(|| format!("?? ({})", session.target().kind().missing_memory()))
        };
        out.push_str(&format!(
            "    CurrentDirectory:  {}\n",
            text(&peb.current_directory)
        ));
        out.push_str(&format!("    ImageFile:    {}\n", text(&peb.image_path)));
        out.push_str(&format!("    CommandLine:  {}\n", text(&peb.command_line)));
    }
    Ok(CommandOutput::with(out, TypedResult::Peb(Box::new(peb))))
}

fn teb(session: &mut Session, _inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    let index = session.current_thread_index();
    let teb = session.teb(index).map_err(|e| match e {
        EngineError::MemoryUnavailable { address, .. } => CommandError::new(
            ErrorCode::MemoryUnavailable,
            format!(
                "TEB at {}: its memory is {}",
                addr(session, address),
                session.target().kind().missing_memory()
            ),
        ),
        EngineError::NoSuchThread(_) => {
            CommandError::new(ErrorCode::NoSuchThread, "no current thread")
        }
        other => other.into(),
    })?;
    let show = |v: Option<u64>| {
        v.map(|v| addr(session, v))
            .unwrap_or_else(|| UNREADABLE.into())
    };
    let fields = [
        ("ExceptionList:       ", teb.exception_list),
        ("StackBase:           ", teb.stack_base),
        ("StackLimit:          ", teb.stack_limit),
        ("SubSystemTib:        ", teb.sub_system_tib),
        ("FiberData:           ", teb.fiber_data),
        ("ArbitraryUserPointer:", teb.arbitrary_user_pointer),
        ("Self:                ", teb.self_pointer),
        ("EnvironmentPointer:  ", teb.environment_pointer),
    ];
    let mut out = format!("TEB at {}\n", addr(session, teb.address));
    for (name, value) in fields {
        out.push_str(&format!("    {name} {}\n", show(value)));
    }
    out.push_str(&format!(
        "    ClientId:             {} . {}\n",
        show(teb.process_id),
        show(teb.thread_id)
    ));
    out.push_str(&format!("    PEB Address:          {}\n", show(teb.peb)));
    out.push_str(&format!(
        "    LastErrorValue:       {}\n",
        teb.last_error
            .map(|v| v.to_string())
            .unwrap_or_else(|| UNREADABLE.into())
    ));
    Ok(CommandOutput::with(out, TypedResult::Teb(Box::new(teb))))
}

fn os_name(build: u32, major: &str) -> String {
    match (major, build) {
        ("10.0", b) if b >= 22000 => "Windows 11".into(),
        ("10.0", _) => "Windows 10".into(),
        ("6.3", _) => "Windows 8.1".into(),
        ("6.2", _) => "Windows 8".into(),
        ("6.1", _) => "Windows 7".into(),
        ("6.0", _) => "Windows Vista".into(),
        ("5.1", _) | ("5.2", _) => "Windows XP".into(),
        _ => "Windows".into(),
    }
}

fn vertarget(session: &mut Session, _inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    let s = session.target().system();
    let major: String = s
        .os_version
        .split('.')
        .take(2)
        .collect::<Vec<_>>()
        .join(".");
    let mp = if s.cpu_count > 1 {
        format!("MP ({} procs)", s.cpu_count)
    } else {
        "UP".into()
    };
    let product = match s.product_type {
        1 => "WinNt",
        2 => "LanManNt",
        3 => "ServerNt",
        _ => "unknown",
    };
    let mut out = format!(
        "{} Version {} {mp} Free {}\n",
        os_name(s.os_build, &major),
        s.os_build,
        session.arch().name()
    );
    out.push_str(&format!("Product: {product}, version {}", s.os_version));
    if let Some(csd) = &s.csd_version {
        out.push_str(&format!(", {csd}"));
    }
    out.push('\n');
    if let Some(cpu) = &s.cpu_info {
        out.push_str(&format!("Processor: {cpu}\n"));
    }
    out.push_str(&times(session));
    Ok(CommandOutput::text(out))
}

fn times(session: &Session) -> String {
    let s = session.target().system();
    let mut out = String::new();
    match s.dump_time {
        Some(t) => out.push_str(&format!("Debug session time: {}\n", windbg_time(t))),
        None => out.push_str("Debug session time: not recorded in the dump\n"),
    }
    out.push_str("System Uptime: not available\n");
    match (s.dump_time, s.process_create_time) {
        (Some(d), Some(c)) if d >= c => out.push_str(&format!(
            "Process Uptime: {}\n",
            windbg_duration(u64::from(d - c))
        )),
        _ => out.push_str("Process Uptime: not available\n"),
    }
    if let Some(k) = s.process_kernel_time {
        out.push_str(&format!(
            "  Kernel time: {}\n",
            windbg_duration(u64::from(k))
        ));
    }
    if let Some(u) = s.process_user_time {
        out.push_str(&format!("  User time: {}\n", windbg_duration(u64::from(u))));
    }
    out
}

fn dot_time(session: &mut Session, _inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    Ok(CommandOutput::text(times(session)))
}
