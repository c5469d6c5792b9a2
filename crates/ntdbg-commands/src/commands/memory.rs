//! Memory display: `db`, `dw`, `dd`, `dq`, `dp`, `dps`, `dds`, `dqs`, `da`, `du`, `dc`.
//! Bytes the dump does not hold come from the module's image file when they lie in a
//! read-only section (as WinDbg reads minidumps), else print as `??`, never as invented
//! values; a display with nothing readable at all is one line naming the nearest captured
//! ranges.

use crate::error::{CommandError, ErrorCode};
use crate::output::{CommandOutput, TypedResult};
use crate::render::addr;
use crate::spec::{CommandSpec, Invocation};
use ntdbg_engine::expr::{parse_range, Extent};
use ntdbg_engine::text::{address, unreadable_address, UNREADABLE};
use ntdbg_engine::Session;

/// Largest display without `L?` (WinDbg refuses large ranges the same way).
const MAX_PLAIN_BYTES: u64 = 0x8_0000;
/// Largest display even with `L?`: a few MiB of text, more than anyone reads.
const MAX_BYTES: u64 = 0x10_0000;
/// Most units a typed result carries; larger displays return text only.
const MAX_TYPED_UNITS: usize = 0x1_0000;
/// Longest string `da`/`du` follow without a terminator.
const MAX_STRING_CHARS: u64 = 0x1000;

const D_DETAILS: &str = "ADDR is a MASM expression (`@rsp`, `poi(@rcx+8)`, `crashy!main`). \
`L COUNT` counts units (bytes for db, dwords for dd…), `L? COUNT` lifts the size check, \
`ADDR1 ADDR2` gives an end address. Without ADDR the display continues where the last one ended. \
Memory the dump lacks inside a module is read from the module's image on the symbol path \
(read-only sections only; `.data` stays `??`); the typed result lists those ranges in `from_image`.";

pub(crate) const COMMANDS: &[CommandSpec] = &[
    CommandSpec::inspect(
        &["db"],
        "db [ADDR] [L COUNT]",
        "bytes and ASCII",
        D_DETAILS,
        display,
    ),
    CommandSpec::inspect(
        &["dc"],
        "dc [ADDR] [L COUNT]",
        "dwords and ASCII",
        D_DETAILS,
        display,
    ),
    CommandSpec::inspect(&["dw"], "dw [ADDR] [L COUNT]", "words", D_DETAILS, display),
    CommandSpec::inspect(&["dd"], "dd [ADDR] [L COUNT]", "dwords", D_DETAILS, display),
    CommandSpec::inspect(&["dq"], "dq [ADDR] [L COUNT]", "qwords", D_DETAILS, display),
    CommandSpec::inspect(
        &["dp"],
        "dp [ADDR] [L COUNT]",
        "pointer-sized values",
        D_DETAILS,
        display,
    ),
    CommandSpec::inspect(
        &["dps"],
        "dps [ADDR] [L COUNT]",
        "pointers with symbols",
        D_DETAILS,
        display,
    ),
    CommandSpec::inspect(
        &["dds"],
        "dds [ADDR] [L COUNT]",
        "dwords with symbols",
        D_DETAILS,
        display,
    ),
    CommandSpec::inspect(
        &["dqs"],
        "dqs [ADDR] [L COUNT]",
        "qwords with symbols",
        D_DETAILS,
        display,
    ),
    CommandSpec::inspect(
        &["da"],
        "da [ADDR] [L COUNT]",
        "ASCII string",
        D_DETAILS,
        display,
    ),
    CommandSpec::inspect(
        &["du"],
        "du [ADDR] [L COUNT]",
        "UTF-16 string",
        D_DETAILS,
        display,
    ),
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Bytes,
    DwordsAscii,
    Values { unit: usize, per_line: usize },
    Symbols { unit: usize },
    Ascii,
    Unicode,
}

fn shape(name: &str, ptr: usize) -> Shape {
    match name {
        "db" => Shape::Bytes,
        "dc" => Shape::DwordsAscii,
        "dw" => Shape::Values {
            unit: 2,
            per_line: 8,
        },
        "dd" => Shape::Values {
            unit: 4,
            per_line: 4,
        },
        "dq" => Shape::Values {
            unit: 8,
            per_line: 2,
        },
        "dp" => Shape::Values {
            unit: ptr,
            per_line: 16 / ptr,
        },
        "dps" => Shape::Symbols { unit: ptr },
        "dds" => Shape::Symbols { unit: 4 },
        "dqs" => Shape::Symbols { unit: 8 },
        "da" => Shape::Ascii,
        _ => Shape::Unicode,
    }
}

fn display(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    let name = inv.name.to_ascii_lowercase();
    let ptr = session.arch().pointer_size();
    let shape = shape(&name, ptr);
    let unit = match shape {
        Shape::Bytes | Shape::Ascii => 1,
        Shape::Unicode | Shape::Values { unit: 2, .. } => 2,
        Shape::DwordsAscii => 4,
        Shape::Values { unit, .. } | Shape::Symbols { unit } => unit,
    };
    let range = parse_range(inv.args, session)?;
    let start = match range.start {
        Some(a) => a,
        None => session.display_cursor().ok_or_else(|| {
            CommandError::syntax(format!(
                "{name}: no address given and no earlier display to continue"
            ))
            .with_hint(format!("e.g. `{name} @rsp`"))
        })?,
    };
    let default_units: u64 = match shape {
        Shape::Symbols { .. } => 16,
        Shape::Ascii | Shape::Unicode => MAX_STRING_CHARS,
        _ => 0x80 / unit as u64,
    };
    let units = match range.extent {
        None => default_units,
        Some(Extent::Count(n)) => n,
        Some(Extent::End(end)) => {
            let len = end.checked_sub(start).ok_or_else(|| {
                CommandError::syntax(format!(
                    "Range error: end {end:#x} is below start {start:#x}"
                ))
            })?;
            len.div_ceil(unit as u64)
        }
    };
    let bytes = units
        .checked_mul(unit as u64)
        .filter(|&b| b <= MAX_BYTES)
        .ok_or_else(|| {
            CommandError::new(
                ErrorCode::RangeTooLarge,
                format!("Range error: {units:#x} units is too large"),
            )
            .with_hint(format!("at most {MAX_BYTES:#x} bytes per display"))
        })?;
    if bytes > MAX_PLAIN_BYTES && !range.no_size_limit {
        return Err(CommandError::new(
            ErrorCode::RangeTooLarge,
            format!(
                "Range error: {bytes:#x} bytes; use L? to display more than {MAX_PLAIN_BYTES:#x}"
            ),
        ));
    }
    let len = usize::try_from(bytes).unwrap_or(0);
    let read = session.read_memory(start, len);
    let data = read.bytes;
    let text = if len > 0 && data.iter().all(Option::is_none) {
        missing_line(session, start, bytes)
    } else {
        match shape {
            Shape::Bytes => render_bytes(session, start, &data),
            Shape::DwordsAscii => render_values(session, start, &data, 4, 4, true),
            Shape::Values { unit, per_line } => {
                render_values(session, start, &data, unit, per_line, false)
            }
            Shape::Symbols { unit } => render_symbols(session, start, &data, unit),
            Shape::Ascii => render_string(session, start, &data, false),
            Shape::Unicode => render_string(session, start, &data, true),
        }
    };
    session.set_display_cursor(start.wrapping_add(bytes));
    // Strings: the typed value stops at the terminator, like the text.
    let typed_units = match shape {
        Shape::Ascii | Shape::Unicode => data
            .chunks(unit)
            .position(|c| value_of(c).is_none_or(|v| v == 0))
            .map_or(data.len() / unit, |i| i + 1),
        _ => data.len() / unit,
    };
    if typed_units > MAX_TYPED_UNITS {
        return Ok(CommandOutput::text(text));
    }
    let values = data
        .chunks(unit)
        .take(typed_units)
        .map(|c| value_of(c).map(|v| format!("{v:#x}")))
        .collect();
    Ok(CommandOutput::with(
        text,
        TypedResult::Memory {
            address: format!("{start:#x}"),
            unit,
            values,
            from_image: read
                .from_image
                .iter()
                .map(|r| [format!("{:#x}", r.start), format!("{:#x}", r.end)])
                .collect(),
        },
    ))
}

/// The one line for a display the dump holds nothing of, in WinDbg's `Memory access error`
/// wording, with the nearest ranges the dump does hold.
fn missing_line(session: &Session, start: u64, len: u64) -> String {
    let (before, after) = session.nearest_dump_regions(start);
    let show = |r: Option<ntdbg_targets::MemoryRegion>| {
        r.map_or("none".to_string(), |r| {
            format!(
                "{}-{}",
                addr(session, r.base),
                addr(session, r.end().saturating_sub(1))
            )
        })
    };
    let kind = session.target().kind();
    if kind == ntdbg_targets::TargetKind::Live {
        return format!(
            "Memory access error at '{}': {len:#x} bytes {}\n",
            addr(session, start),
            kind.missing_memory()
        );
    }
    format!(
        "Memory access error at '{}': {len:#x} bytes not in the dump (nearest captured ranges: {} below, {} above)\n",
        addr(session, start),
        show(before),
        show(after)
    )
}

/// Little-endian value of a unit, `None` if any byte is missing.
fn value_of(bytes: &[Option<u8>]) -> Option<u64> {
    let mut v = 0u64;
    for (i, b) in bytes.iter().enumerate() {
        v |= u64::from((*b)?) << (8 * i);
    }
    Some(v)
}

pub(crate) fn render_bytes(session: &Session, start: u64, data: &[Option<u8>]) -> String {
    let mut out = String::new();
    for (line_no, line) in data.chunks(16).enumerate() {
        let a = start.wrapping_add(16 * line_no as u64);
        out.push_str(&addr(session, a));
        out.push_str("  ");
        for i in 0..16 {
            let sep = if i == 8 { '-' } else { ' ' };
            if i > 0 {
                out.push(sep);
            }
            match line.get(i) {
                Some(Some(b)) => out.push_str(&format!("{b:02x}")),
                Some(None) => out.push_str(UNREADABLE),
                None => out.push_str("  "),
            }
        }
        out.push_str("  ");
        for b in line {
            out.push(printable(*b));
        }
        out.push('\n');
    }
    out
}

fn printable(b: Option<u8>) -> char {
    match b {
        Some(c @ 0x20..=0x7e) => c as char,
        Some(_) => '.',
        None => '?',
    }
}

pub(crate) fn render_values(
    session: &Session,
    start: u64,
    data: &[Option<u8>],
    unit: usize,
    per_line: usize,
    ascii: bool,
) -> String {
    let mut out = String::new();
    let line_bytes = unit * per_line;
    for (line_no, line) in data.chunks(line_bytes).enumerate() {
        out.push_str(&addr(
            session,
            start.wrapping_add((line_no * line_bytes) as u64),
        ));
        out.push(' ');
        for chunk in line.chunks(unit) {
            out.push(' ');
            out.push_str(&match value_of(chunk) {
                Some(v) if unit == 8 => address(v, unit),
                Some(v) => format!("{v:0w$x}", w = unit * 2),
                None if unit == 8 => unreadable_address(unit).to_string(),
                None => "?".repeat(unit * 2),
            });
        }
        if ascii {
            out.push_str("  ");
            for b in line {
                out.push(printable(*b));
            }
        }
        out.push('\n');
    }
    out
}

fn render_symbols(session: &Session, start: u64, data: &[Option<u8>], unit: usize) -> String {
    let mut out = String::new();
    for (i, chunk) in data.chunks(unit).enumerate() {
        out.push_str(&addr(session, start.wrapping_add((i * unit) as u64)));
        out.push_str("  ");
        match value_of(chunk) {
            Some(v) => {
                out.push_str(&address(v, unit));
                let sym = session.symbolize(v);
                if sym.module.is_some() {
                    out.push(' ');
                    out.push_str(&sym.display());
                }
            }
            None => out.push_str(unreadable_address(unit)),
        }
        out.push('\n');
    }
    out
}

fn render_string(session: &Session, start: u64, data: &[Option<u8>], wide: bool) -> String {
    let mut text = String::new();
    let step = if wide { 2 } else { 1 };
    for chunk in data.chunks(step) {
        let Some(v) = value_of(chunk) else { break };
        if v == 0 {
            break;
        }
        let c = char::from_u32(v as u32)
            .filter(|c| !c.is_control())
            .unwrap_or('.');
        text.push(c);
    }
    let first_missing = data.first().is_some_and(|b| b.is_none());
    if first_missing {
        return format!("{}  ????\n", addr(session, start));
    }
    format!("{}  \"{text}\"\n", addr(session, start))
}
