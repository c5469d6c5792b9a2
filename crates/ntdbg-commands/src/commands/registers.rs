//! Registers: `r`, `r NAME[, NAME…]`.

use crate::error::{excerpt, CommandError, ErrorCode};
use crate::output::{CommandOutput, NamedValue, TypedResult};
use crate::render::registers::{current_context, show_current};
use crate::spec::{CommandSpec, Invocation};
use ntdbg_engine::registers::register;
use ntdbg_engine::Session;

pub(crate) const COMMANDS: &[CommandSpec] = &[CommandSpec::inspect(
    &["r"],
    "r [REG[, REG…]] | r REG=VALUE[, REG=VALUE…]",
    "show the registers of the current context (after .ecxr: the exception context), or set one",
    "`r REG=VALUE` sets a register of the current thread of a halted live target (VALUE is an \
     expression; `eax`, `ax`, `ah` change their bits of `rax`); refused in a read-only session. \
     A dump's registers cannot be changed.",
    r,
)];

fn r(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    let args = inv.args.trim();
    if args.is_empty() {
        return show_current(session);
    }
    if args.contains('=') {
        return set_registers(session, args);
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

/// `r REG=VALUE[, REG=VALUE…]`: sets the registers in turn; prints nothing, as WinDbg does.
fn set_registers(session: &mut Session, args: &str) -> Result<CommandOutput, CommandError> {
    if session.live().is_none() {
        return Err(CommandError::new(
            ErrorCode::ReadOnly,
            "Cannot change registers: the target is a dump",
        )
        .with_hint("registers of a dump are read-only; attach to a live target to change them"));
    }
    for assignment in args.split(',').map(str::trim).filter(|a| !a.is_empty()) {
        let Some((name, value)) = assignment.split_once('=') else {
            return Err(CommandError::syntax(format!(
                "Syntax error in 'r {}': a register write is REG=VALUE",
                excerpt(assignment)
            )));
        };
        let name = name.trim().trim_start_matches('@').to_ascii_lowercase();
        if name.is_empty() {
            return Err(CommandError::syntax(
                "Syntax error: r =VALUE names no register",
            ));
        }
        let value = super::util::eval(session, value.trim())?;
        session.set_register(&name, value)?;
    }
    Ok(CommandOutput::text(String::new()))
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
