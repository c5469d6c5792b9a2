//! Kernel-dump commands: `.bugcheck`.

use super::no_args;
use crate::error::CommandError;
use crate::output::{CommandOutput, TypedResult};
use crate::spec::{CommandSpec, Invocation};
use ntdbg_analysis::bugcheck::decode_bugcheck;
use ntdbg_engine::Session;

pub(crate) const COMMANDS: &[CommandSpec] = &[CommandSpec::inspect(
    &[".bugcheck"],
    ".bugcheck",
    "show the bugcheck code and its four arguments (kernel dumps)",
    "`!analyze -v` decodes what each argument means.",
    bugcheck,
)];

/// A 64-bit value as WinDbg prints pointers: `fffff804`8b58334c`.
fn windbg_u64(v: u64) -> String {
    format!("{:08x}`{:08x}", v >> 32, v & 0xffff_ffff)
}

fn bugcheck(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    no_args(".bugcheck", inv.args)?;
    let Some(bc) = session.target().bugcheck() else {
        return Err(CommandError::new(
            "no_bugcheck",
            "There is no bugcheck in this target (it is not a kernel crash dump)",
        )
        .with_hint("`.lastevent` shows the last event of a user-mode dump"));
    };
    let ptr = session.arch().pointer_size();
    let arg = |v: u64| {
        if ptr == 8 {
            windbg_u64(v)
        } else {
            format!("{:08x}", v & 0xffff_ffff)
        }
    };
    let args: Vec<String> = bc.parameters.iter().map(|p| arg(*p)).collect();
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
