//! Breakpoints on live targets: `bp`, `bu`, `ba`, `bl`, `bc`, `bd`, `be`.

use super::util::eval;
use crate::error::{CommandError, ErrorCode};
use crate::output::CommandOutput;
use crate::render::addr;
use crate::spec::{CommandSpec, Effect, Invocation, Needs};
use ntdbg_engine::live::{Access, BreakKind, Breakpoint, LiveControl};
use ntdbg_engine::Session;
use std::sync::Arc;

pub(crate) const COMMANDS: &[CommandSpec] = &[
    CommandSpec::acting(
        &["bp", "bu"],
        "bp ADDR",
        "set a software breakpoint",
        "ADDR is an expression (`crashy!main`, `0x401000`, `@rip+5`). `bu` resolves the \
         symbol now, like `bp` (no deferred breakpoints). The stub's Z0 is used, or an int3 \
         written in memory when the stub refuses it (winedbg).",
        Effect::Breakpoint,
        set_software,
    ),
    CommandSpec::acting(
        &["ba"],
        "ba ACCESS SIZE ADDR",
        "set a hardware breakpoint or watchpoint",
        "ACCESS is e (execute), w (write) or r (read/write); SIZE 1, 2, 4 or 8 (e needs 1); \
         `ba w4 ADDR` and `ba w 4 ADDR` both work.",
        Effect::Breakpoint,
        set_hardware,
    ),
    CommandSpec {
        needs: Needs::Any,
        ..CommandSpec::inspect(&["bl"], "bl", "list breakpoints", "", list).no_args()
    },
    CommandSpec::acting(
        &["bc"],
        "bc * | IDS",
        "clear breakpoints",
        IDS,
        Effect::Breakpoint,
        clear,
    ),
    CommandSpec::acting(
        &["bd"],
        "bd * | IDS",
        "disable breakpoints",
        IDS,
        Effect::Breakpoint,
        disable,
    ),
    CommandSpec::acting(
        &["be"],
        "be * | IDS",
        "enable breakpoints",
        IDS,
        Effect::Breakpoint,
        enable,
    ),
];

const IDS: &str = "IDS is a list of numbers and ranges (`0 2-4`, `1,3`) or `*` for all.";

fn control(session: &Session) -> Result<Arc<LiveControl>, CommandError> {
    session.live().cloned().ok_or_else(|| {
        CommandError::new(
            ErrorCode::NotLive,
            "breakpoints need a live target (this is a dump)",
        )
    })
}

fn set_software(
    session: &mut Session,
    inv: &Invocation<'_>,
) -> Result<CommandOutput, CommandError> {
    let live = control(session)?;
    let args = inv.args.trim();
    if args.is_empty() {
        return Err(CommandError::syntax(format!(
            "{} needs an address",
            inv.name
        )));
    }
    let address = eval(session, args)?;
    live.add_breakpoint(address, BreakKind::Software, false)?;
    Ok(CommandOutput::text(""))
}

fn set_hardware(
    session: &mut Session,
    inv: &Invocation<'_>,
) -> Result<CommandOutput, CommandError> {
    let live = control(session)?;
    let args = inv.args.trim();
    let mut chars = args.chars();
    let access = match chars.next().map(|c| c.to_ascii_lowercase()) {
        Some('e') => Access::Execute,
        Some('w') => Access::Write,
        Some('r') => Access::ReadWrite,
        _ => {
            return Err(CommandError::syntax("ba needs an access: e, w or r")
                .with_hint("e.g. `ba w4 0x404028`"))
        }
    };
    let rest = chars.as_str().trim_start();
    let digits = rest.chars().take_while(char::is_ascii_digit).count();
    let size: u8 = rest[..digits]
        .parse()
        .ok()
        .filter(|s| matches!(s, 1 | 2 | 4 | 8))
        .ok_or_else(|| CommandError::syntax("ba needs a size of 1, 2, 4 or 8"))?;
    if access == Access::Execute && size != 1 {
        return Err(CommandError::syntax("ba e needs size 1"));
    }
    let expr = rest[digits..].trim();
    if expr.is_empty() {
        return Err(CommandError::syntax("ba needs an address"));
    }
    let address = eval(session, expr)?;
    if address % u64::from(size) != 0 {
        return Err(CommandError::new(
            ErrorCode::BadAlignment,
            format!("Data breakpoint must be aligned: {address:#x} is not a multiple of {size}"),
        ));
    }
    live.add_breakpoint(address, BreakKind::Hardware { access, size }, false)?;
    Ok(CommandOutput::text(""))
}

fn list(session: &mut Session, _inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    let live = control(session)?;
    let mut text = String::new();
    for b in live.breakpoints().iter().filter(|b| b.id.is_some()) {
        text.push_str(&bl_line(session, b));
        text.push('\n');
    }
    Ok(CommandOutput::text(text))
}

/// One `bl` line: ` 0 e Disable Clear  00000001`00401000     0001 (0001)  0:**** crashy!main`.
fn bl_line(session: &Session, b: &Breakpoint) -> String {
    let (flag, toggle) = if b.enabled {
        ('e', "Disable")
    } else {
        ('d', "Enable ")
    };
    let kind = match b.kind {
        BreakKind::Software => "    ".to_string(),
        BreakKind::Hardware { access, size } => format!("{} {size}", access.letter()),
    };
    let sym = session.symbolize(b.address);
    let name = if sym.module.is_some() {
        sym.display()
    } else {
        String::new()
    };
    format!(
        "{:>2} {flag} {toggle} Clear  {} {kind} 0001 (0001)  0:**** {name}",
        b.id.unwrap_or_default(),
        addr(session, b.address)
    )
    .trim_end()
    .to_string()
}

fn clear(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    let live = control(session)?;
    for id in ids(&live, inv)? {
        live.clear_breakpoint(id)?;
    }
    Ok(CommandOutput::text(""))
}

fn enable(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    set_enabled(session, inv, true)
}

fn disable(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    set_enabled(session, inv, false)
}

/// `be`/`bd`: turns the named breakpoints on or off.
fn set_enabled(
    session: &Session,
    inv: &Invocation<'_>,
    on: bool,
) -> Result<CommandOutput, CommandError> {
    let live = control(session)?;
    for id in ids(&live, inv)? {
        live.set_enabled(id, on)?;
    }
    Ok(CommandOutput::text(""))
}

/// The breakpoint numbers named by `*`, `0 2-4` or `1,3`.
fn ids(live: &LiveControl, inv: &Invocation<'_>) -> Result<Vec<u32>, CommandError> {
    let args = inv.args.trim();
    if args.is_empty() {
        return Err(CommandError::syntax(format!(
            "{} needs breakpoint numbers or *",
            inv.name
        )));
    }
    let existing: Vec<u32> = live.breakpoints().iter().filter_map(|b| b.id).collect();
    if args == "*" {
        return Ok(existing);
    }
    let bad = |part: &str| CommandError::syntax(format!("bad breakpoint number '{part}'"));
    let mut out = Vec::new();
    for part in args.split([' ', ',', '\t']).filter(|p| !p.is_empty()) {
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (a, b),
            None => (part, part),
        };
        let lo: u32 = lo.parse().map_err(|_| bad(part))?;
        let hi: u32 = hi.parse().map_err(|_| bad(part))?;
        if hi < lo || hi - lo > 10_000 {
            return Err(bad(part));
        }
        out.extend(existing.iter().copied().filter(|id| (lo..=hi).contains(id)));
        if lo == hi && !existing.contains(&lo) {
            return Err(CommandError::new(
                ErrorCode::NoSuchBreakpoint,
                format!("breakpoint {lo} does not exist (bl lists them)"),
            ));
        }
    }
    Ok(out)
}
