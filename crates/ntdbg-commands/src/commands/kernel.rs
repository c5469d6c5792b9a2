//! Kernel-dump commands: `.bugcheck`, `.trap`.

use super::util::eval;
use crate::error::{CommandError, ErrorCode};
use crate::output::{CommandOutput, TypedResult};
use crate::spec::{CommandSpec, Invocation};
use ntdbg_analysis::bugcheck::decode_bugcheck;
use ntdbg_engine::Session;
use ntdbg_targets::context::{context_from_trap_frame, KTRAP_FRAME_AMD64_SIZE};
use ntdbg_targets::Arch;

pub(crate) const COMMANDS: &[CommandSpec] = &[
    CommandSpec::inspect(
        &[".bugcheck"],
        ".bugcheck",
        "show the bugcheck code and its four arguments (kernel dumps)",
        "`!analyze -v` decodes what each argument means.",
        bugcheck,
    )
    .no_args(),
    CommandSpec::inspect(
        &[".trap"],
        ".trap [ADDR]",
        "use the KTRAP_FRAME at ADDR as the register context; no ADDR: back to the thread's",
        "x64 trap frames. A trap frame does not save rbx, rsi, rdi and r12-r15: they show as \
         zero, as in WinDbg. `r`, `k` and `u` use the frame's context until `.trap` or `.cxr` \
         without an address.",
        trap,
    ),
];

/// What WinDbg says before the registers of a trap frame.
const TRAP_NOTE: &str =
    "NOTE: The trap frame does not contain all registers.\nSome register values may be zeroed or incorrect.\n";

fn trap(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    let arg = inv.args.trim();
    if arg.is_empty() {
        return Ok(super::util::reset_scope(session));
    }
    let address = eval(session, arg)?;
    let arch = session.arch();
    if arch != Arch::X64 {
        return Err(CommandError::new(
            ErrorCode::Unsupported,
            format!(
                ".trap reads x64 KTRAP_FRAMEs; this target is {}",
                arch.name()
            ),
        )
        .with_hint("`.cxr ADDR` takes a CONTEXT record on any architecture"));
    }
    let shown = crate::render::addr(session, address);
    let bytes = session
        .target()
        .read_exact(address, KTRAP_FRAME_AMD64_SIZE)
        .ok_or_else(|| {
            CommandError::new(
            ErrorCode::MemoryUnavailable,
                format!(
                    "Unable to read trap frame at {shown}: the dump does not hold its {KTRAP_FRAME_AMD64_SIZE:#x} bytes"
                ),
            )
        })?;
    let context = context_from_trap_frame(arch, &bytes).ok_or_else(|| {
        CommandError::new(ErrorCode::BadTrapFrame, format!("No trap frame at {shown}"))
    })?;
    session.select_context(context, format!("trap frame @ {shown}"));
    let mut out = crate::render::registers::show_current(session)?;
    out.text.insert_str(0, TRAP_NOTE);
    Ok(out)
}

fn bugcheck(session: &mut Session, _inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    let Some(bc) = session.target().bugcheck() else {
        return Err(CommandError::new(
            ErrorCode::NoBugcheck,
            "There is no bugcheck in this target (it is not a kernel crash dump)",
        )
        .with_hint("`.lastevent` shows the last event of a user-mode dump"));
    };
    let ptr = session.arch().pointer_size();
    let args: Vec<String> = bc
        .parameters
        .iter()
        .map(|p| ntdbg_engine::text::address(*p, ptr))
        .collect();
    let text = format!(
        "Bugcheck code {:08X}\nArguments {}\n",
        bc.code,
        args.join(" ")
    );
    let d = decode_bugcheck(bc.code, bc.parameters);
    Ok(CommandOutput::with(
        text,
        TypedResult::Event {
            code: format!("{:#010x}", bc.code),
            name: d.name,
            address: d
                .faulting_address
                .map(|a| format!("{a:#x}"))
                .unwrap_or_default(),
            thread_id: format!("{:#x}", bc.thread_id),
            parameters: bc.parameters.iter().map(|p| format!("{p:#x}")).collect(),
            description: d.description,
        },
    ))
}
