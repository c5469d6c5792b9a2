//! Registers: `r`, `r NAME[, NAME…]`.

use crate::error::{excerpt, CommandError, ErrorCode};
use crate::output::{CommandOutput, NamedValue, TypedResult};
use crate::render::registers::{current_context, show_current};
use crate::spec::{CommandSpec, Invocation};
use ntdbg_engine::registers::register;
use ntdbg_engine::Session;

pub(crate) const COMMANDS: &[CommandSpec] = &[CommandSpec::inspect(
    &["r"],
    "r [REG[, REG…]]",
    "show the registers of the current context (after .ecxr: the exception context)",
    "Register writes (`r rax=1`) are refused: dumps are read-only.",
    r,
)];

fn r(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    let args = inv.args.trim();
    if args.is_empty() {
        return show_current(session);
    }
    if args.contains('=') {
        return Err(CommandError::new(
            ErrorCode::ReadOnly,
            "Cannot change registers: the target is a dump",
        )
        .with_hint("registers of a dump are read-only"));
    }
    let ctx = current_context(session)?;
    let ptr = session.arch().pointer_size();
    let mut lines = Vec::new();
    let mut values = Vec::new();
    for name in args
        .split([',', ' '])
        .map(str::trim)
        .filter(|s| !s.is_empty())
    {
        let clean = name.trim_start_matches('@').to_ascii_lowercase();
        let value = register(&ctx, &clean).ok_or_else(|| {
            CommandError::syntax(format!("Bad register error in 'r {}'", excerpt(name)))
                .with_hint("`r` lists the registers of this architecture")
        })?;
        lines.push(format!("{clean}={}", padded(&clean, value, ptr)));
        values.push(NamedValue {
            name: clean,
            value: format!("{value:#x}"),
        });
    }
    Ok(CommandOutput::with(
        lines.join("\n") + "\n",
        TypedResult::Registers { registers: values },
    ))
}

/// Width of a register's value as WinDbg prints it.
fn padded(name: &str, value: u64, pointer_size: usize) -> String {
    let width = match name {
        "cs" | "ds" | "es" | "fs" | "gs" | "ss" => 4,
        "efl" | "eflags" => 8,
        n if n.starts_with('e') && n.len() == 3 => 8,
        _ if pointer_size == 4 => 8,
        _ => 16,
    };
    format!("{value:0width$x}")
}
