//! Error codes and numbers: `!gle [-all]`, `!error VALUE [1]`, `.formats EXPR`.

use super::util::eval;
use crate::error::{excerpt, CommandError, ErrorCode};
use crate::output::{CommandOutput, TypedResult};
use crate::render::{addr, c_hex};
use crate::rows::{ErrorCodeRow, FormatsRow, LastErrorRow};
use crate::spec::{CommandSpec, Invocation};
use ntdbg_analysis::error_text::{ntstatus_message, win32_message};
use ntdbg_engine::Session;

pub(crate) const COMMANDS: &[CommandSpec] = &[
    CommandSpec::inspect(
        &["!gle"],
        "!gle [-all]",
        "the current thread's last Win32 error and last NTSTATUS, read from its TEB",
        "Reads TEB.LastErrorValue and TEB.LastStatusValue (x64 and ARM64 offsets 0x68 and \
         0x1250, x86 0x34 and 0xbf4) and names them from a built-in table of common codes. \
         -all does it for every thread. A TEB whose memory is not in the dump says so.",
        gle,
    ),
    CommandSpec::inspect(
        &["!error"],
        "!error VALUE [1]",
        "the message of a Win32 error code, or with 1 of an NTSTATUS",
        "Without the flag, a value that is a known NTSTATUS (0xC…, 0x8…) is read as one, \
         anything else as a Win32 error. Messages come from a built-in table of the common \
         codes; others print `<Unable to get error code text>`.",
        error,
    ),
    CommandSpec::inspect(
        &[".formats"],
        ".formats EXPR",
        "a value in hex, decimal, octal, binary, characters, time, float and double",
        "Width follows the target's pointer size. Time reads the value as seconds since 1970 \
         (UTC) when it fits in 32 bits, else as a FILETIME.",
        formats,
    ),
];

impl ErrorCodeRow {
    fn win32(code: u32) -> ErrorCodeRow {
        ErrorCodeRow {
            kind: "win32",
            code: format!("{code:#x}"),
            message: win32_message(code).map(str::to_string),
        }
    }

    fn ntstatus(code: u32) -> ErrorCodeRow {
        ErrorCodeRow {
            kind: "ntstatus",
            code: format!("{code:#x}"),
            message: ntstatus_message(code).map(str::to_string),
        }
    }

    fn message_text(&self) -> &str {
        self.message
            .as_deref()
            .unwrap_or("<Unable to get error code text>")
    }
}

fn gle(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    let all = match inv.args.trim() {
        "" => false,
        "-all" => true,
        other => {
            return Err(CommandError::syntax(format!(
                "Syntax error in '!gle': unexpected '{}'",
                excerpt(other)
            ))
            .with_hint("use `!gle` or `!gle -all`"))
        }
    };
    let threads: Vec<usize> = if all {
        (0..session.target().threads().len()).collect()
    } else {
        vec![session.current_thread_index()]
    };
    if session.target().threads().is_empty() {
        return Err(CommandError::new(
            ErrorCode::NoSuchThread,
            "The dump has no thread list",
        ));
    }
    let mut text = String::new();
    let mut rows = Vec::new();
    for index in threads {
        let Some(thread) = session.target().threads().get(index) else {
            continue;
        };
        let teb = thread.teb;
        let block = session.teb(index).ok();
        let code = |v: Option<u64>| v.and_then(|v| u32::try_from(v).ok());
        let row = LastErrorRow {
            thread: index,
            teb: format!("{teb:#x}"),
            last_error: code(block.as_ref().and_then(|b| b.last_error)).map(ErrorCodeRow::win32),
            last_status: code(block.as_ref().and_then(|b| b.last_status))
                .map(ErrorCodeRow::ntstatus),
        };
        if all {
            text.push_str(&format!("Last error for thread {index:x}:\n"));
        }
        let teb_text = addr(session, teb);
        let missing = session.target().kind().missing_memory();
        match &row.last_error {
            Some(e) => text.push_str(&format!("LastErrorValue: {}\n", describe(e, true))),
            None => text.push_str(&format!(
                "LastErrorValue: <TEB at {teb_text} is {missing}>\n"
            )),
        }
        match &row.last_status {
            Some(s) => text.push_str(&format!("LastStatusValue: {}\n", describe(s, false))),
            None => text.push_str(&format!(
                "LastStatusValue: <TEB at {teb_text} is {missing}>\n"
            )),
        }
        if all {
            text.push('\n');
        }
        rows.push(row);
    }
    Ok(CommandOutput::with(
        text,
        TypedResult::LastErrors { threads: rows },
    ))
}

/// `(Win32) 0x2 (2) - The system cannot find the file specified.`; `with_decimal` false gives
/// `!gle`'s status form, `(NTSTATUS) 0xc0000034 - Object Name not found.`
fn describe(code: &ErrorCodeRow, with_decimal: bool) -> String {
    let value = u64::from_str_radix(code.code.trim_start_matches("0x"), 16).unwrap_or(0);
    let kind = if code.kind == "win32" {
        "Win32"
    } else {
        "NTSTATUS"
    };
    let decimal = if with_decimal {
        format!(" ({value})")
    } else {
        String::new()
    };
    format!(
        "({kind}) {}{decimal} - {}",
        c_hex(value),
        code.message_text()
    )
}

fn error(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    let words: Vec<&str> = inv.args.split_whitespace().collect();
    let (value, flag) = match words[..] {
        [v] => (v, None),
        [v, f] => (v, Some(f)),
        _ => {
            return Err(
                CommandError::syntax("!error needs a value: !error VALUE [1]")
                    .with_hint("e.g. `!error 5` or `!error c0000005 1`"),
            )
        }
    };
    let raw = eval(session, value)?;
    let code = u32::try_from(raw & 0xffff_ffff).unwrap_or(0);
    if raw > u64::from(u32::MAX) && raw >> 32 != 0xffff_ffff {
        return Err(CommandError::syntax(format!(
            "!error {}: an error code has 32 bits",
            excerpt(value)
        )));
    }
    let as_status = match flag {
        None => code >= 0x8000_0000 && ntstatus_message(code).is_some(),
        Some(f) => eval(session, f)? & 1 != 0,
    };
    let row = if as_status {
        ErrorCodeRow::ntstatus(code)
    } else {
        ErrorCodeRow::win32(code)
    };
    let text = format!("Error code: {}\n", describe(&row, true));
    Ok(CommandOutput::with(text, TypedResult::ErrorCode(row)))
}

fn formats(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    if inv.args.trim().is_empty() {
        return Err(
            CommandError::syntax(".formats needs an expression").with_hint("e.g. `.formats @rax`")
        );
    }
    let value = eval(session, inv.args)?;
    let row = formats_of(value, session.arch().pointer_size() * 8);
    let time = row
        .time
        .clone()
        .unwrap_or_else(|| "***** Invalid".to_string());
    let text = format!(
        "Evaluate expression:\n  Hex:     {}\n  Decimal: {}\n  Decimal (unsigned) : {}\n  \
         Octal:   {}\n  Binary:  {}\n  Chars:   {}\n  Time:    {time}\n  Float:   {}\n  \
         Double:  {}\n",
        addr(session, value),
        row.decimal,
        row.unsigned,
        row.octal,
        row.binary,
        row.chars,
        row.float,
        row.double
    );
    Ok(CommandOutput::with(text, TypedResult::Formats(row)))
}

/// `value` in every notation of `.formats`, for a `bits`-wide (32 or 64) target.
fn formats_of(value: u64, bits: usize) -> FormatsRow {
    let value = if bits == 32 {
        value & 0xffff_ffff
    } else {
        value
    };
    let bytes = bits / 8;
    let signed = if bits == 32 {
        i64::from(value as u32 as i32)
    } else {
        value as i64
    };
    let octal_digits = if bits == 32 { 11 } else { 22 };
    let binary = (0..bytes)
        .rev()
        .map(|i| format!("{:08b}", (value >> (i * 8)) & 0xff))
        .collect::<Vec<_>>()
        .join(" ");
    let chars = (0..bytes)
        .rev()
        .map(|i| {
            let b = ((value >> (i * 8)) & 0xff) as u8;
            if b.is_ascii_graphic() || b == b' ' {
                b as char
            } else {
                '.'
            }
        })
        .collect();
    FormatsRow {
        hex: format!("{value:#x}"),
        decimal: signed.to_string(),
        unsigned: value.to_string(),
        octal: format!("{value:0octal_digits$o}"),
        binary,
        chars,
        time: time_of(value),
        float: format!(
            "low {} high {}",
            c_general(f64::from(f32::from_bits(value as u32))),
            c_general(f64::from(f32::from_bits((value >> 32) as u32)))
        ),
        double: c_general(f64::from_bits(value)),
    }
}

/// The value as a time: seconds since 1970 when it fits in 32 bits, else a FILETIME.
fn time_of(value: u64) -> Option<String> {
    let seconds = match u32::try_from(value) {
        Ok(s) => i64::from(s),
        Err(_) => i64::try_from(ntdbg_targets::kernel_dump::filetime_to_unix(value)?).ok()?,
    };
    let t = time::OffsetDateTime::from_unix_timestamp(seconds).ok()?;
    let weekday = &format!("{}", t.weekday())[..3];
    let month = &format!("{}", t.month())[..3];
    Some(format!(
        "{weekday} {month} {:>2} {:02}:{:02}:{:02} {} (UTC)",
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.year()
    ))
}

/// C's `%g` as the Microsoft C runtime prints it: 6 significant digits, trailing zeros
/// dropped, exponent form (`6.52999e-042`, three exponent digits) outside 1e-5..1e6.
fn c_general(v: f64) -> String {
    if v == 0.0 {
        return if v.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    if v.is_nan() {
        return "-1.#IND".to_string();
    }
    if v.is_infinite() {
        return if v < 0.0 { "-1.#INF" } else { "1.#INF" }.to_string();
    }
    let sci = format!("{v:.5e}");
    let (mantissa, exponent) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    if (-5..6).contains(&exponent) {
        let decimals = usize::try_from(5 - exponent).unwrap_or(0);
        trim_zeros(format!("{v:.decimals$}"))
    } else {
        let sign = if exponent < 0 { '-' } else { '+' };
        format!(
            "{}e{sign}{:03}",
            trim_zeros(mantissa.to_string()),
            exponent.abs()
        )
    }
}

fn trim_zeros(s: String) -> String {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_of_a_small_value() {
        let f = formats_of(0x1234, 64);
        assert_eq!(f.decimal, "4660");
        assert_eq!(f.octal, "0000000000000000011064");
        assert_eq!(
            f.binary,
            "00000000 00000000 00000000 00000000 00000000 00000000 00010010 00110100"
        );
        assert_eq!(f.chars, ".......4");
        assert_eq!(f.time.as_deref(), Some("Thu Jan  1 01:17:40 1970 (UTC)"));
        assert_eq!(f.float, "low 6.53005e-042 high 0");
        assert_eq!(f.double, "2.30235e-320");
    }

    #[test]
    fn formats_of_a_negative_32_bit_value() {
        let f = formats_of(0xffff_ffff, 32);
        assert_eq!(f.decimal, "-1");
        assert_eq!(f.unsigned, "4294967295");
        assert_eq!(f.octal, "37777777777");
        assert_eq!(f.chars, "....");
    }

    #[test]
    fn general_format_matches_the_c_runtime() {
        assert_eq!(c_general(1.5), "1.5");
        assert_eq!(c_general(123456.0), "123456");
        assert_eq!(c_general(1234567.0), "1.23457e+006");
        assert_eq!(c_general(0.0001), "0.0001");
    }

    #[test]
    fn error_codes_are_described_as_windbg_does() {
        assert_eq!(
            describe(&ErrorCodeRow::win32(2), true),
            "(Win32) 0x2 (2) - The system cannot find the file specified."
        );
        assert_eq!(
            describe(&ErrorCodeRow::ntstatus(0xc000_0034), false),
            "(NTSTATUS) 0xc0000034 - Object Name not found."
        );
        assert_eq!(
            describe(&ErrorCodeRow::win32(0), true),
            "(Win32) 0 (0) - The operation completed successfully."
        );
    }
}
