//! Kernel processes and threads: `!process`, `!thread`, `.process`, `.thread`.
//!
//! Every structure is read with field offsets from the kernel's PDB (`ntkrnlmp.pdb` on the
//! symbol path, see [`ntdbg_analysis::kernel_objects`]); without it these commands say which
//! PDB they need instead of guessing a layout. A [`KernelLayoutOverride`] kept with the
//! session supplies the offsets instead.

use super::util::eval;
use crate::error::{CommandError, ErrorCode};
use crate::output::{CommandOutput, KernelProcessRow, KernelThreadRow, TypedResult};
use crate::spec::{CommandSpec, Invocation};
use ntdbg_analysis::kernel_objects::{
    kernel_layout, thread_state_name, wait_reason_name, KernelLayout, KernelObjects, KernelProcess,
    KernelThread, RegisterSource, THREAD_RUNNING, THREAD_WAITING,
};
use ntdbg_engine::Session;
use ntdbg_targets::{KernelDump, TargetKind};

pub(crate) const COMMANDS: &[CommandSpec] = &[
    CommandSpec::inspect(
        &["!process"],
        "!process [ADDR|0 [FLAGS [IMAGE]]]",
        "kernel processes: `!process 0 0` lists them all, `!process ADDR 7` one with its threads and stacks",
        "FLAGS: 2 lists threads, 4 adds their stacks (7 = all). No ADDR: the current process \
         (the one whose page tables virtual reads use). Needs the kernel's PDB and a dump \
         holding the process list (not a small dump).",
        process,
    ),
    CommandSpec::inspect(
        &["!thread"],
        "!thread ADDR",
        "a kernel thread (_ETHREAD at ADDR): ids, state, stack bounds and its stack",
        "The stack starts from the registers the thread saved at its last context switch \
         (x64), or for a running thread from the dump's context of its processor (when the \
         dump holds it: the processor whose stack pointer is in the thread's stack).",
        thread,
    ),
    CommandSpec::inspect(
        &[".process"],
        ".process [ADDR]",
        "read virtual memory through the page tables of the process at ADDR; no ADDR: the dump's own",
        "Sets the page-table root (Pcb.DirectoryTableBase), like WinDbg's `.process /p` on a dump.",
        dot_process,
    ),
    CommandSpec::inspect(
        &[".thread"],
        ".thread [ADDR]",
        "use the registers the kernel thread at ADDR saved as the register context; no ADDR: back to the thread's",
        "Only rip, rsp and rbp are saved in the thread's context switch frame (x64); the other \
         registers read as zero. A running thread gets its processor's full context when the \
         dump holds it. `r`, `k` and `u` use the context until `.thread` or `.cxr`.",
        dot_thread,
    ),
];

/// A kernel structure layout to use instead of the one from the kernel's PDB: for a kernel
/// whose PDB is unavailable but whose layout is known, and for synthetic dumps in tests. Kept
/// with the session ([`Session::set_extension`]); `!process`, `!thread`, `.process` and
/// `.thread` use it while it is set.
#[derive(Debug, Clone)]
pub struct KernelLayoutOverride(pub KernelLayout);

fn process(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    let layout = layout_for(session, "!process")?;
    process_with(session, &layout, inv.args)
}

fn thread(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    let layout = layout_for(session, "!thread")?;
    thread_with(session, &layout, inv.args)
}

fn dot_process(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    if inv.args.trim().is_empty() {
        return reset_process(session);
    }
    let layout = layout_for(session, ".process")?;
    dot_process_with(session, &layout, inv.args)
}

fn dot_thread(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    if inv.args.trim().is_empty() {
        return Ok(super::util::reset_scope(session));
    }
    let layout = layout_for(session, ".thread")?;
    dot_thread_with(session, &layout, inv.args)
}

fn kernel_dump<'s>(session: &'s Session, command: &str) -> Result<&'s KernelDump, CommandError> {
    session.target().as_kernel_dump().ok_or_else(|| {
        CommandError::new(
            ErrorCode::NotKernelDump,
            format!("{command} reads kernel structures; this target is not a kernel dump"),
        )
        .with_hint("`~` and `!peb` show the threads and process of a user-mode dump")
    })
}

/// The layout kept with the session ([`KernelLayoutOverride`]) or else from the kernel's PDB,
/// or an error naming everything the answer needs: the PDB and, when the dump lacks it, the
/// memory of the process list.
fn layout_for(session: &Session, command: &str) -> Result<KernelLayout, CommandError> {
    let dump = kernel_dump(session, command)?;
    if let Some(KernelLayoutOverride(layout)) = session.extension() {
        return Ok(layout.clone());
    }
    kernel_layout(session).map_err(|need| {
        let head = dump.header().ps_active_process_head;
        let mut message = format!("{command} needs {need}");
        let target = session.target();
        let small = matches!(
            target.kind(),
            TargetKind::KernelSmall | TargetKind::KernelTriage
        );
        if small {
            message.push_str(&format!(
                "; and the process and thread lists from PsActiveProcessHead ({head:#x}), which a small dump does not hold (only the bugcheck thread's stack and a few data blocks)"
            ));
        } else if head != 0
            && target
                .read_uint(head, target.arch().pointer_size())
                .is_none()
        {
            message.push_str(&format!(
                "; and the process list at PsActiveProcessHead ({head:#x}), which this {} dump does not hold",
                target.kind().name()
            ));
        }
        CommandError::new(ErrorCode::KernelSymbolsMissing, message).with_hint(
            "put ntkrnlmp.pdb (matching GUID and age) on the symbol path (.sympath); \
             a small kernel dump never holds the process list: use a kernel or complete memory dump",
        )
    })
}

/// Hex as `!process` and `!thread` print pointers: pointer-sized, no backtick.
fn ptr(layout: &KernelLayout, value: u64) -> String {
    ntdbg_engine::text::pointer_hex(value, layout.pointer_size.into())
}

fn object_error(e: impl std::fmt::Display) -> CommandError {
    CommandError::new(ErrorCode::MemoryUnavailable, e.to_string())
}

fn process_list_head(session: &Session, dump: &KernelDump) -> Result<u64, CommandError> {
    let head = dump.header().ps_active_process_head;
    if head != 0 {
        return Ok(head);
    }
    session
        .resolve_symbol("nt!PsActiveProcessHead")
        .ok_or_else(|| {
            CommandError::new(
            ErrorCode::MemoryUnavailable,
                "the dump header gives no PsActiveProcessHead and the kernel's symbols do not name it",
            )
        })
}

/// The process whose page tables virtual reads use now.
fn current_process(
    session: &Session,
    layout: &KernelLayout,
) -> Result<KernelProcess, CommandError> {
    let dump = kernel_dump(session, "!process")?;
    let head = process_list_head(session, dump)?;
    let root = dump.process_directory() & !0xfff;
    KernelObjects::new(session.target(), layout)
        .processes(head)
        .map_err(object_error)?
        .into_iter()
        .find(|p| p.directory_table_base & !0xfff == root)
        .ok_or_else(|| {
            CommandError::new(
                ErrorCode::NoCurrentProcess,
                format!("no process on the active list uses the page tables at {root:#x}"),
            )
            .with_hint("`!process 0 0` lists the processes")
        })
}

fn process_with(
    session: &mut Session,
    layout: &KernelLayout,
    args: &str,
) -> Result<CommandOutput, CommandError> {
    let dump = kernel_dump(session, "!process")?;
    let words: Vec<&str> = args.split_whitespace().collect();
    if words.len() > 3 {
        return Err(CommandError::syntax(
            "Syntax error: !process [ADDR|0 [FLAGS [IMAGE]]]",
        ));
    }
    let address = match words.first() {
        Some(w) => Some(eval(session, w)?),
        None => None,
    };
    let flags = match words.get(1) {
        Some(w) => eval(session, w)?,
        None => 0,
    };
    let image = words.get(2).map(|w| w.to_ascii_lowercase());
    let objects = KernelObjects::new(session.target(), layout);
    let mut text = String::new();
    let processes = match address {
        Some(0) => {
            text.push_str("**** NT ACTIVE PROCESS DUMP ****\n");
            let head = process_list_head(session, dump)?;
            let mut all = objects.processes(head).map_err(object_error)?;
            if let Some(image) = &image {
                all.retain(|p| p.image.to_ascii_lowercase() == *image);
            }
            all
        }
        Some(a) => vec![objects.process(a).map_err(object_error)?],
        None => vec![current_process(session, layout)?],
    };
    let mut rows = Vec::new();
    for p in &processes {
        render_process(&mut text, layout, p);
        let mut row = process_row(p);
        if flags & 6 != 0 {
            let threads = objects.threads(p).map_err(object_error)?;
            for t in &threads {
                let shown = render_thread(
                    session,
                    layout,
                    &mut text,
                    t,
                    None,
                    flags & 4 != 0,
                    "        ",
                );
                row.threads.push(shown);
            }
        }
        rows.push(row);
        text.push('\n');
    }
    Ok(CommandOutput::with(
        text,
        TypedResult::Processes { processes: rows },
    ))
}

fn hex(v: u64) -> String {
    format!("{v:#x}")
}

fn process_row(p: &KernelProcess) -> KernelProcessRow {
    KernelProcessRow {
        address: hex(p.address),
        pid: hex(p.pid),
        parent_pid: p.parent_pid.map(hex),
        peb: p.peb.map(hex),
        directory_table_base: hex(p.directory_table_base),
        image: p.image.clone(),
        threads: Vec::new(),
    }
}

fn render_process(out: &mut String, layout: &KernelLayout, p: &KernelProcess) {
    out.push_str(&format!("PROCESS {}\n", ptr(layout, p.address)));
    let mut ids = format!("    Cid: {:04x}", p.pid);
    if let Some(peb) = p.peb {
        ids.push_str(&format!("    Peb: {peb:08x}"));
    }
    if let Some(parent) = p.parent_pid {
        ids.push_str(&format!("  ParentCid: {parent:04x}"));
    }
    out.push_str(&ids);
    out.push('\n');
    out.push_str(&format!("    DirBase: {:08x}\n", p.directory_table_base));
    out.push_str(&format!("    Image: {}\n", p.image));
}

/// `!thread`'s block for one thread (indented inside `!process`), with its stack when asked;
/// returns the thread's typed row.
fn render_thread(
    session: &Session,
    layout: &KernelLayout,
    out: &mut String,
    t: &KernelThread,
    owner: Option<&KernelProcess>,
    stack: bool,
    indent: &str,
) -> KernelThreadRow {
    let mut row = KernelThreadRow {
        address: hex(t.address),
        pid: hex(t.pid),
        tid: hex(t.tid),
        state: t.state.and_then(thread_state_name).map(str::to_string),
        wait_reason: t
            .wait_reason
            .filter(|_| t.state == Some(THREAD_WAITING))
            .and_then(wait_reason_name)
            .map(str::to_string),
        start_address: t.start_address.map(hex),
        stack: None,
        stack_unavailable: None,
    };
    let state = match t.state {
        Some(THREAD_RUNNING) => "RUNNING".to_string(),
        Some(THREAD_WAITING) => format!(
            "WAIT: ({})",
            t.wait_reason
                .map(|r| wait_reason_name(r)
                    .map(str::to_string)
                    .unwrap_or_else(|| format!("WaitReason {r}")))
                .unwrap_or_else(|| "?".into())
        ),
        Some(s) => thread_state_name(s)
            .map(str::to_ascii_uppercase)
            .unwrap_or_else(|| format!("STATE {s}")),
        None => "STATE ?".into(),
    };
    let teb = t
        .teb
        .map(|v| format!("  Teb: {}", ptr(layout, v)))
        .unwrap_or_default();
    out.push_str(&format!(
        "{indent}THREAD {}  Cid {:04x}.{:04x}{teb} {state}\n",
        ptr(layout, t.address),
        t.pid,
        t.tid
    ));
    let inner = format!("{indent}    ");
    if let Some(p) = owner {
        out.push_str(&format!(
            "{inner}Owning Process            {}       Image:         {}\n",
            ptr(layout, p.address),
            p.image
        ));
    }
    if let Some(start) = t.start_address {
        let name = session.symbolize(start);
        let site = if name.module.is_some() {
            format!("{} ", name.display())
        } else {
            String::new()
        };
        out.push_str(&format!(
            "{inner}Win32 Start Address {site}(0x{})\n",
            ptr(layout, start)
        ));
    }
    let show = |v: Option<u64>| v.map(|v| ptr(layout, v)).unwrap_or_else(|| "?".into());
    out.push_str(&format!(
        "{inner}Stack Init {} Current {}\n",
        show(t.initial_stack),
        show(t.kernel_stack)
    ));
    if t.stack_base.is_some() || t.stack_limit.is_some() {
        out.push_str(&format!(
            "{inner}Base {} Limit {}\n",
            show(t.stack_base),
            show(t.stack_limit)
        ));
    }
    if !stack {
        return row;
    }
    let objects = KernelObjects::new(session.target(), layout);
    match objects.thread_context(session.arch(), t) {
        Ok((context, _)) => {
            let walked = ntdbg_engine::stack::walk(
                session.target(),
                session.symbols(),
                t.tid as u32,
                &context,
            );
            for line in crate::render::stack::render_plain(session, &walked).lines() {
                out.push_str(&inner);
                out.push_str(line);
                out.push('\n');
            }
            row.stack = Some(walked);
        }
        Err(why) => {
            out.push_str(&format!("{inner}Unable to get the stack: {why}\n"));
            row.stack_unavailable = Some(why);
        }
    }
    row
}

fn one_address(session: &Session, command: &str, args: &str) -> Result<u64, CommandError> {
    let arg = args.trim();
    if arg.is_empty() || arg.split_whitespace().count() > 1 {
        return Err(CommandError::syntax(format!(
            "Syntax error: {command} takes one address"
        )));
    }
    eval(session, arg)
}

fn thread_with(
    session: &mut Session,
    layout: &KernelLayout,
    args: &str,
) -> Result<CommandOutput, CommandError> {
    kernel_dump(session, "!thread")?;
    let address = one_address(session, "!thread", args)?;
    let objects = KernelObjects::new(session.target(), layout);
    let t = objects.thread(address).map_err(object_error)?;
    let owner = t.process.and_then(|p| objects.process(p).ok());
    let mut text = String::new();
    let row = render_thread(session, layout, &mut text, &t, owner.as_ref(), true, "");
    Ok(CommandOutput::with(text, TypedResult::KernelThread(row)))
}

fn dot_process_with(
    session: &mut Session,
    layout: &KernelLayout,
    args: &str,
) -> Result<CommandOutput, CommandError> {
    if args.trim().is_empty() {
        return reset_process(session);
    }
    let dump = kernel_dump(session, ".process")?;
    let address = one_address(session, ".process", args)?;
    let p = KernelObjects::new(session.target(), layout)
        .process(address)
        .map_err(object_error)?;
    dump.set_process_directory(Some(p.directory_table_base));
    Ok(CommandOutput::text(format!(
        "Implicit process is now {}\n",
        crate::render::addr(session, address)
    )))
}

/// `.process` alone: virtual reads use the dump header's page tables again.
fn reset_process(session: &mut Session) -> Result<CommandOutput, CommandError> {
    let dump = kernel_dump(session, ".process")?;
    dump.set_process_directory(None);
    Ok(CommandOutput::text(format!(
        "Implicit process is now the dump's default (DirectoryTableBase {:#x})\n",
        dump.header().directory_table_base
    )))
}

fn dot_thread_with(
    session: &mut Session,
    layout: &KernelLayout,
    args: &str,
) -> Result<CommandOutput, CommandError> {
    if args.trim().is_empty() {
        return Ok(super::util::reset_scope(session));
    }
    kernel_dump(session, ".thread")?;
    let address = one_address(session, ".thread", args)?;
    let objects = KernelObjects::new(session.target(), layout);
    let t = objects.thread(address).map_err(object_error)?;
    let (context, source) = objects
        .thread_context(session.arch(), &t)
        .map_err(|why| CommandError::new(ErrorCode::NoSavedContext, why))?;
    let shown = crate::render::addr(session, address);
    session.select_context(context, format!("thread {shown}"));
    let note = match source {
        RegisterSource::SwitchFrame => {
            "NOTE: only rip, rsp and rbp come from the thread's saved context switch frame; the other registers read as zero.\n"
        }
        RegisterSource::Processor => {
            "The thread was running: its registers are its processor's context from the dump.\n"
        }
    };
    Ok(CommandOutput::text(format!(
        "Implicit thread is now {shown}\n{note}"
    )))
}
