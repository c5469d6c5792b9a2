//! Event filters on live targets, WinDbg's `sx` family: `sx` lists them, `sxe`/`sxd`/`sxn`/
//! `sxi` set what the debugger does when an exception or a debug event happens.

use crate::error::{CommandError, ErrorCode};
use crate::output::{CommandOutput, TypedResult};
use crate::rows::EventFilterRow;
use crate::spec::{CommandSpec, Invocation, Needs};
use ntdbg_engine::live::{FilterAction, FilterSetting, LiveControl};
use ntdbg_engine::Session;
use std::sync::Arc;

const SX_DETAILS: &str = "sxe: break (exceptions on first chance); sxd: exceptions break on \
second chance only, the first chance prints a line and is passed on; sxn: print a line and go \
on; sxi: go on silently. FILTER is an abbreviation (av dz ii sov sbo bpe sse eh clr ld ud ct et \
out ibp epr …, `sx` lists them), an exception code in hex (`sxe c0000409`), `*` (every other \
exception) or `ld:NAME` (sxe only: break when module NAME loads, wildcards allowed). Defaults \
are WinDbg's: exceptions break on first chance, C++ EH (e06d7363) and unknown codes on second \
chance only; ld and out print and go on; ct, et and ud are ignored. An event passed over is \
kept in the event log (replayed when a front end waits for events) and does not end a `g`. On ntdbg's Windows \
targets every filter applies. GDB stubs (gdbserver, winedbg --gdb) report only signals: av, dz \
and ii apply to SIGSEGV, SIGFPE and SIGILL as first-chance exceptions (passing one on usually \
ends the process); the other filters have no effect there. epr: the process's exit is always \
shown. The -c, -c2 and -h options are not supported.";

pub(crate) const COMMANDS: &[CommandSpec] = &[
    CommandSpec {
        needs: Needs::Any,
        ..CommandSpec::inspect(
            &["sx"],
            "sx",
            "list the event filters (live targets)",
            SX_DETAILS,
            list,
        )
        .no_args()
    },
    CommandSpec {
        needs: Needs::Any,
        ..CommandSpec::inspect(
            &["sxe", "sxd", "sxn", "sxi"],
            "sxe|sxd|sxn|sxi FILTER",
            "break on, break on second chance, print, or ignore an exception or event",
            SX_DETAILS,
            set,
        )
    },
];

fn live_of(session: &Session, what: &str) -> Result<Arc<LiveControl>, CommandError> {
    session.live().cloned().ok_or_else(|| {
        CommandError::new(
            ErrorCode::NotLive,
            format!("{what}: event filters apply to live targets (this session is a dump)"),
        )
    })
}

fn list(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    let live = live_of(session, inv.name)?;
    let filters = live.filters().list();
    let mut text = String::new();
    let mut in_exceptions = false;
    for f in &filters {
        if (f.code.is_some() || f.abbrev == "*") && !in_exceptions {
            text.push('\n');
            in_exceptions = true;
        }
        if f.abbrev == "*" {
            text.push('\n');
        }
        text.push_str(&line(f));
    }
    Ok(CommandOutput::with(text, typed(&filters)))
}

fn set(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    let live = live_of(session, inv.name)?;
    let action = FilterAction::from_command(inv.name)
        .ok_or_else(|| CommandError::syntax(format!("unknown command {}", inv.name)))?;
    let what = inv.args.trim();
    if what.is_empty() {
        return Err(CommandError::syntax(format!(
            "{} needs a filter: an abbreviation (av, ld, out …), a code (c0000409), * or ld:NAME",
            inv.name
        ))
        .with_hint("`sx` lists the filters"));
    }
    if what.starts_with('-') {
        return Err(CommandError::syntax(format!(
            "{}: the -c, -c2 and -h options are not supported",
            inv.name
        )));
    }
    let setting = live.set_filter(what, action)?;
    Ok(CommandOutput::with(
        line(&setting),
        typed(std::slice::from_ref(&setting)),
    ))
}

/// One filter in `sx`'s shape: `  av - Access violation - break - not handled`.
fn line(f: &FilterSetting) -> String {
    // Exceptions also say how the debugger resumes from them when it goes on by itself:
    // breakpoints and single steps as handled, the others passed on to the program.
    let handling = match f.code {
        Some(code) if ntdbg_engine::live::stop_text::is_debug_trap(code) => " - handled",
        Some(_) => " - not handled",
        None if f.abbrev == "*" => " - not handled",
        None => "",
    };
    let mut out = format!(
        "{:>4} - {} - {}{handling}\n",
        f.abbrev,
        f.name,
        f.action.name()
    );
    if let Some(names) = &f.argument {
        out.push_str(&format!("       (break for {names})\n"));
    }
    out
}

fn typed(filters: &[FilterSetting]) -> TypedResult {
    TypedResult::EventFilters {
        filters: filters
            .iter()
            .map(|f| EventFilterRow {
                abbrev: f.abbrev.clone(),
                name: f.name.clone(),
                code: f.code.map(|c| format!("{c:#010x}")),
                action: f.action.name(),
                argument: f.argument.clone(),
            })
            .collect(),
    }
}
