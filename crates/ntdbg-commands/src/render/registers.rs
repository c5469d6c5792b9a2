//! The register display that `r`, `.ecxr`, `.cxr`, `.trap`, `~Ns` and a live stop print:
//! WinDbg's `r` layout for the context's architecture, then the current instruction.

use crate::error::{CommandError, ErrorCode};
use crate::output::{CommandOutput, NamedValue, TypedResult};
use minidump::{MinidumpContext, MinidumpRawContext};
use ntdbg_engine::registers::{flags_text, general_registers, known_register, register};
use ntdbg_engine::text::pointer_hex;
use ntdbg_engine::Session;

/// The full register display followed by the current instruction (what `r`, `.ecxr`, `.cxr`
/// and `~Ns` print).
pub(crate) fn show_current(session: &mut Session) -> Result<CommandOutput, CommandError> {
    let ctx = current_context(session)?;
    let mut text = render_known_registers(&ctx, &|name| known_register(&ctx, name).is_some());
    let ip = ctx.get_instruction_pointer();
    text.push_str(&super::code::current_instruction(session, ip));
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

/// The register context of the current thread (or the one `.ecxr`/`.cxr` selected).
pub(crate) fn current_context(session: &Session) -> Result<MinidumpContext, CommandError> {
    session.context().ok_or_else(|| {
        CommandError::new(
            ErrorCode::NoContext,
            "No register context for the current thread in this dump",
        )
    })
}

/// Registers in WinDbg's `r` layout for the context's architecture, those `known` rejects as
/// `?` (a caller frame's lost volatile registers); the flags and segments only when the flags
/// are known.
pub(crate) fn render_known_registers(
    ctx: &MinidumpContext,
    known: &dyn Fn(&str) -> bool,
) -> String {
    let regs = general_registers(ctx);
    let show = |name: &str, value: u64, bytes: usize| {
        if known(name) {
            pointer_hex(value, bytes)
        } else {
            "?".repeat(bytes * 2)
        }
    };
    let mut out = String::new();
    match &ctx.raw {
        MinidumpRawContext::X86(_) => {
            // Six per line, then eip/esp/ebp with the flags on the same line.
            for (i, (name, value)) in regs.iter().enumerate() {
                out.push_str(&format!("{name}={}", show(name, *value, 4)));
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
                out.push_str(&format!("{name:>3}={}", show(name, *value, 8)));
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
