//! Process and system facts: `!peb`, `!teb`, `vertarget`, `.time`.

use crate::error::{CommandError, ErrorCode};
use crate::output::CommandOutput;
use crate::render::{addr, windbg_duration, windbg_time};
use crate::spec::{CommandSpec, Invocation};
use ntdbg_engine::text::UNREADABLE;
use ntdbg_engine::Session;
use ntdbg_targets::Arch;

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

/// Field offsets that differ between 32- and 64-bit processes.
struct Layout {
    ptr: u64,
    peb_ldr: u64,
    peb_params: u64,
    peb_heap: u64,
    peb_image_base: u64,
    params_curdir: u64,
    params_image: u64,
    params_cmdline: u64,
    teb_client_id: u64,
    teb_peb: u64,
    teb_last_error: u64,
}

fn layout(arch: Arch) -> Layout {
    if arch == Arch::X86 {
        Layout {
            ptr: 4,
            peb_ldr: 0xc,
            peb_params: 0x10,
            peb_heap: 0x18,
            peb_image_base: 0x8,
            params_curdir: 0x24,
            params_image: 0x38,
            params_cmdline: 0x40,
            teb_client_id: 0x20,
            teb_peb: 0x30,
            teb_last_error: 0x34,
        }
    } else {
        Layout {
            ptr: 8,
            peb_ldr: 0x18,
            peb_params: 0x20,
            peb_heap: 0x30,
            peb_image_base: 0x10,
            params_curdir: 0x38,
            params_image: 0x60,
            params_cmdline: 0x70,
            teb_client_id: 0x40,
            teb_peb: 0x60,
            teb_last_error: 0x68,
        }
    }
}

fn read_ptr(session: &Session, at: u64) -> Option<u64> {
    session
        .target()
        .read_uint(at, session.arch().pointer_size())
}

/// Reads a UNICODE_STRING structure at `at` and its text.
fn unicode_string(session: &Session, at: u64) -> Option<String> {
    let t = session.target();
    let len = t.read_uint(at, 2)? as usize;
    let buffer_at = if session.arch() == Arch::X86 {
        at + 4
    } else {
        at + 8
    };
    let buffer = read_ptr(session, buffer_at)?;
    let bytes = t.read_exact(buffer, len.min(0x8000))?;
    let units: Vec<u16> = bytes
        .chunks_exact(2)
        .map(|c| u16::from_le_bytes([c[0], c[1]]))
        .collect();
    Some(String::from_utf16_lossy(&units))
}

fn peb(session: &mut Session, _inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    let l = layout(session.arch());
    let Some(peb) = session.peb_address() else {
        return Err(CommandError::new(
            ErrorCode::MemoryUnavailable,
            format!(
                "PEB address not available: the current thread's TEB is {}",
                session.target().kind().missing_memory()
            ),
        )
        .with_hint("minidumps written without MiniDumpWithProcessThreadData rarely hold the PEB"));
    };
    let t = session.target();
    let Some(being_debugged) = t.read_uint(peb + 2, 1) else {
        return Err(CommandError::new(
            ErrorCode::MemoryUnavailable,
            format!(
                "PEB at {}: its memory is {}",
                addr(session, peb),
                t.kind().missing_memory()
            ),
        ));
    };
    let yes_no = |v: Option<u64>| match v {
        Some(0) => "No".to_string(),
        Some(_) => "Yes".to_string(),
        None => UNREADABLE.to_string(),
    };
    let show = |v: Option<u64>| {
        v.map(|v| addr(session, v))
            .unwrap_or_else(|| UNREADABLE.into())
    };
    let mut out = format!("PEB at {}\n", addr(session, peb));
    out.push_str(&format!(
        "    InheritedAddressSpace:    {}\n",
        yes_no(t.read_uint(peb, 1))
    ));
    out.push_str(&format!(
        "    ReadImageFileExecOptions: {}\n",
        yes_no(t.read_uint(peb + 1, 1))
    ));
    out.push_str(&format!(
        "    BeingDebugged:            {}\n",
        yes_no(Some(being_debugged))
    ));
    out.push_str(&format!(
        "    ImageBaseAddress:         {}\n",
        show(read_ptr(session, peb + l.peb_image_base))
    ));
    out.push_str(&format!(
        "    Ldr                       {}\n",
        show(read_ptr(session, peb + l.peb_ldr))
    ));
    out.push_str(&format!(
        "    ProcessHeap:              {}\n",
        show(read_ptr(session, peb + l.peb_heap))
    ));
    let params = read_ptr(session, peb + l.peb_params);
    out.push_str(&format!("    ProcessParameters:        {}\n", show(params)));
    if let Some(p) = params {
        let text = |off: u64| {
            unicode_string(session, p + off)
                .map(|s| format!("'{s}'"))
                .unwrap_or_else(|| format!("?? ({})", session.target().kind().missing_memory()))
        };
        out.push_str(&format!(
            "    CurrentDirectory:  {}\n",
            text(l.params_curdir)
        ));
        out.push_str(&format!("    ImageFile:    {}\n", text(l.params_image)));
        out.push_str(&format!("    CommandLine:  {}\n", text(l.params_cmdline)));
    }
    Ok(CommandOutput::text(out))
}

fn teb(session: &mut Session, _inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    let l = layout(session.arch());
    let thread = session
        .current_thread()
        .ok_or_else(|| CommandError::new(ErrorCode::NoSuchThread, "no current thread"))?;
    let teb = thread.teb;
    if session.target().read_uint(teb, 1).is_none() {
        return Err(CommandError::new(
            ErrorCode::MemoryUnavailable,
            format!(
                "TEB at {}: its memory is {}",
                addr(session, teb),
                session.target().kind().missing_memory()
            ),
        ));
    }
    let p = l.ptr;
    let show = |at: u64| {
        read_ptr(session, at)
            .map(|v| addr(session, v))
            .unwrap_or_else(|| UNREADABLE.into())
    };
    let fields = [
        ("ExceptionList:       ", 0),
        ("StackBase:           ", p),
        ("StackLimit:          ", 2 * p),
        ("SubSystemTib:        ", 3 * p),
        ("FiberData:           ", 4 * p),
        ("ArbitraryUserPointer:", 5 * p),
        ("Self:                ", 6 * p),
        ("EnvironmentPointer:  ", 7 * p),
    ];
    let mut out = format!("TEB at {}\n", addr(session, teb));
    for (name, off) in fields {
        out.push_str(&format!("    {name} {}\n", show(teb + off)));
    }
    out.push_str(&format!(
        "    ClientId:             {} . {}\n",
        show(teb + l.teb_client_id),
        show(teb + l.teb_client_id + p)
    ));
    out.push_str(&format!(
        "    PEB Address:          {}\n",
        show(teb + l.teb_peb)
    ));
    let last_error = session.target().read_uint(teb + l.teb_last_error, 4);
    out.push_str(&format!(
        "    LastErrorValue:       {}\n",
        last_error
            .map(|v| v.to_string())
            .unwrap_or_else(|| UNREADABLE.into())
    ));
    Ok(CommandOutput::text(out))
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
