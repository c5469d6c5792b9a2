//! Memory writes on a halted live target: `eb`, `ew`, `ed`, `eq` (values of 1, 2, 4, 8
//! bytes), `ea` (ASCII text) and `eu` (UTF-16 text), as WinDbg's `e*` write them. Refused in
//! a read-only session; a dump's memory cannot be changed.

use super::util::eval;
use crate::error::{CommandError, ErrorCode};
use crate::output::CommandOutput;
use crate::spec::{CommandSpec, Effect, Invocation};
use ntdbg_engine::Session;

const VALUE_DETAILS: &str = "Writes the values, each an expression, one after another from ADDR \
(little-endian); prints nothing, as WinDbg does. Needs a halted live target; refused in a \
read-only session. A software breakpoint under the bytes stays: the write changes the byte it \
restores.";

const TEXT_DETAILS: &str = "Writes the quoted text from ADDR without a terminating NUL; prints \
nothing. Needs a halted live target; refused in a read-only session.";

pub(crate) const COMMANDS: &[CommandSpec] = &[
    CommandSpec::acting(
        &["eb"],
        "eb ADDR VALUE [VALUE…]",
        "write bytes to a live target's memory",
        VALUE_DETAILS,
        Effect::Write,
        edit_bytes,
    ),
    CommandSpec::acting(
        &["ew"],
        "ew ADDR VALUE [VALUE…]",
        "write words (2 bytes) to a live target's memory",
        VALUE_DETAILS,
        Effect::Write,
        edit_words,
    ),
    CommandSpec::acting(
        &["ed"],
        "ed ADDR VALUE [VALUE…]",
        "write double words (4 bytes) to a live target's memory",
        VALUE_DETAILS,
        Effect::Write,
        edit_dwords,
    ),
    CommandSpec::acting(
        &["eq"],
        "eq ADDR VALUE [VALUE…]",
        "write quad words (8 bytes) to a live target's memory",
        VALUE_DETAILS,
        Effect::Write,
        edit_qwords,
    ),
    CommandSpec::acting(
        &["ea"],
        "ea ADDR \"TEXT\"",
        "write ASCII text to a live target's memory",
        TEXT_DETAILS,
        Effect::Write,
        edit_ascii,
    ),
    CommandSpec::acting(
        &["eu"],
        "eu ADDR \"TEXT\"",
        "write UTF-16 text to a live target's memory",
        TEXT_DETAILS,
        Effect::Write,
        edit_unicode,
    ),
];

fn edit_bytes(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    edit_values(session, inv, 1)
}

fn edit_words(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    edit_values(session, inv, 2)
}

fn edit_dwords(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    edit_values(session, inv, 4)
}

fn edit_qwords(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    edit_values(session, inv, 8)
}

fn edit_ascii(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    let (addr, text) = address_and_text(session, inv)?;
    write(session, addr, text.as_bytes())
}

fn edit_unicode(
    session: &mut Session,
    inv: &Invocation<'_>,
) -> Result<CommandOutput, CommandError> {
    let (addr, text) = address_and_text(session, inv)?;
    let bytes: Vec<u8> = text.encode_utf16().flat_map(u16::to_le_bytes).collect();
    write(session, addr, &bytes)
}

/// `eX ADDR V1 V2…`: each value, `width` bytes little-endian; a value that does not fit is
/// refused, as WinDbg refuses it.
fn edit_values(
    session: &mut Session,
    inv: &Invocation<'_>,
    width: usize,
) -> Result<CommandOutput, CommandError> {
    let mut words = inv.args.split_whitespace();
    let (Some(addr), values) = (words.next(), words.collect::<Vec<_>>()) else {
        return Err(usage(inv));
    };
    if values.is_empty() {
        return Err(usage(inv));
    }
    let addr = eval(session, addr)?;
    let mut bytes = Vec::with_capacity(values.len() * width);
    for text in values {
        let value = eval(session, text)?;
        if width < 8 && value >> (width * 8) != 0 {
            return Err(CommandError::syntax(format!(
                "{}: {value:#x} does not fit in {width} byte(s)",
                inv.name
            )));
        }
        bytes.extend_from_slice(&value.to_le_bytes()[..width]);
    }
    write(session, addr, &bytes)
}

/// `ADDR "TEXT"` of `ea`/`eu`.
fn address_and_text(
    session: &Session,
    inv: &Invocation<'_>,
) -> Result<(u64, String), CommandError> {
    let args = inv.args.trim();
    let (addr, rest) = args
        .split_once(char::is_whitespace)
        .ok_or_else(|| usage(inv))?;
    let text = rest
        .trim()
        .strip_prefix('"')
        .and_then(|t| t.strip_suffix('"'))
        .ok_or_else(|| usage(inv))?;
    Ok((eval(session, addr)?, text.to_string()))
}

fn write(session: &mut Session, addr: u64, bytes: &[u8]) -> Result<CommandOutput, CommandError> {
    session.write_memory(addr, bytes).map_err(|e| {
        let error = CommandError::from(e);
        if error.code == ErrorCode::RemoteError {
            error.with_hint("the stub could not write there: `!address ADDR` shows what is mapped")
        } else {
            error
        }
    })?;
    Ok(CommandOutput::text(String::new()))
}

fn usage(inv: &Invocation<'_>) -> CommandError {
    CommandError::syntax(format!("Usage: {}", inv.spec.usage))
}
