//! Registers: `r`, `r NAME[, NAME…]`.

use crate::error::{excerpt, CommandError};
use crate::output::{CommandOutput, NamedValue, TypedResult};
use crate::spec::{CommandSpec, Invocation};
use minidump::{MinidumpContext, MinidumpRawContext};
use ntdbg_engine::registers::{flags_text, general_registers, known_register, register};
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
            "read_only",
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

fn current_context(session: &Session) -> Result<MinidumpContext, CommandError> {
    session.context().ok_or_else(|| {
        CommandError::new(
            "no_context",
            "No register context for the current thread in this dump",
        )
    })
}

/// The full register display followed by the current instruction (what `r`, `.ecxr`, `.cxr`
/// and `~Ns` print).
pub(crate) fn show_current(session: &mut Session) -> Result<CommandOutput, CommandError> {
    let ctx = current_context(session)?;
    let mut text = render_known_registers(&ctx, &|name| known_register(&ctx, name).is_some());
    let ip = ctx.get_instruction_pointer();
    text.push_str(&super::disasm::current_instruction(session, ip));
    let registers = general_registers(&ctx)
        .into_iter()
        .map(|(n, v)| NamedValue {
            name: n.to_string(),
            value: format!("{v:#x}"),
        })
        .collect();
    Ok(CommandOutput::with(
        text,
        TypedResult::Registers { registers },
    ))
}

/// Registers in WinDbg's `r` layout for the context's architecture, those `known` rejects as `?` (a caller frame's lost volatile
/// registers); the flags and segments only when the flags are known.
pub(crate) fn render_known_registers(
    ctx: &MinidumpContext,
    known: &dyn Fn(&str) -> bool,
) -> String {
    let regs = general_registers(ctx);
    let show = |name: &str, value: u64, width: usize| {
        if known(name) {
            format!("{value:0width$x}")
        } else {
            "?".repeat(width)
        }
    };
    let mut out = String::new();
    match &ctx.raw {
        MinidumpRawContext::X86(_) => {
            // Six per line, then eip/esp/ebp with the flags on the same line.
            for (i, (name, value)) in regs.iter().enumerate() {
                out.push_str(&format!("{name}={}", show(name, *value, 8)));
                out.push(if i == 5 { '\n' } else { ' ' });
            }
            if known("efl") {
                out.push_str(&flags_and_segments(ctx));
            } else {
                out.push('\n');
            }
        }
        raw => {
            for (i, (name, value)) in regs.iter().enumerate() {
                out.push_str(&format!("{name:>3}={}", show(name, *value, 16)));
                out.push(if i % 3 == 2 || i + 1 == regs.len() {
                    '\n'
                } else {
                    ' '
                });
            }
            match raw {
                MinidumpRawContext::Amd64(_) if known("efl") => {
                    out.push_str(&flags_and_segments(ctx))
                }
                MinidumpRawContext::Amd64(_) => {}
                _ => {
                    if let Some(cpsr) = register(ctx, "cpsr").filter(|_| known("cpsr")) {
                        out.push_str(&format!("cpsr={cpsr:08x}\n"));
                    }
                }
            }
        }
    }
    out
}

/// `iopl=0 nv up ei …` and the segment line that close an x86/x64 register display.
fn flags_and_segments(ctx: &MinidumpContext) -> String {
    let get = |n: &str| register(ctx, n).unwrap_or(0);
    let efl = get("efl");
    format!(
        "iopl={:<9} {}\ncs={:04x}  ss={:04x}  ds={:04x}  es={:04x}  fs={:04x}  gs={:04x}             efl={efl:08x}\n",
        (efl >> 12) & 3,
        flags_text(efl),
        get("cs"),
        get("ss"),
        get("ds"),
        get("es"),
        get("fs"),
        get("gs")
    )
}
