//! Locks: `!cs [ADDR]` and `!locks [-v]` decode `RTL_CRITICAL_SECTION`s, and `!waits` shows
//! what every thread waits on (critical sections with their owners, kernel objects, sleeps)
//! and the deadlock cycles among them.

use super::util::eval;
use crate::error::{excerpt, CommandError, ErrorCode};
use crate::output::{CommandOutput, TypedResult};
use crate::rows::CriticalSectionRow;
use crate::spec::{CommandSpec, Invocation};
use ntdbg_analysis::hang::critical_section::{
    check, read_raw, with_debug_counts, CriticalSection, LockEncoding, RawCriticalSection,
};
use ntdbg_analysis::hang::locks::{process_list, reachable_sections, Found, Reachable};
use ntdbg_analysis::hang::wait_chain::thread_waits;
use ntdbg_analysis::hang::{hang_inferences, wait_facts, WaitFacts};
use ntdbg_analysis::Inference;
use ntdbg_engine::text::{pointer_hex, prefixed_pointer_hex};
use ntdbg_engine::Session;
use std::fmt::Write;

pub(crate) const COMMANDS: &[CommandSpec] = &[
    CommandSpec::inspect(
        &["!cs"],
        "!cs [ADDR]",
        "decode an RTL_CRITICAL_SECTION: owner, recursion and lock counts, waiters",
        "With ADDR, reads the critical section there and says whether its fields check out \
         (owner a thread of the dump, counts consistent). Without, lists the critical \
         sections as `!locks -v` finds them. LockCount is decoded \
         in both encodings: Windows since Server 2003 SP1 (bit field) and Windows XP / Wine \
         (counted). EntryCount and ContentionCount come from DebugInfo when the dump holds it.",
        cs,
    ),
    CommandSpec::inspect(
        &["!locks"],
        "!locks [-v]",
        "the held critical sections reachable from the threads",
        "With ntdll's symbols and a full-memory dump, walks the process-wide list \
         (ntdll!RtlCriticalSectionList); -v adds the free sections. Otherwise (a normal \
         minidump holds no ntdll data) the sections are those the threads wait for (read from \
         registers the unwinder recovered in the critical section frames) and held sections \
         lying in the captured thread stacks whose fields check out (found by scanning). \
         Each says how it was found.",
        locks,
    ),
    CommandSpec::inspect(
        &["!waits"],
        "!waits",
        "what every thread waits on, with critical section owners and deadlock cycles",
        "For each thread: the outermost wait function on top of its stack (critical section, \
         SRW lock, condition variable, kernel object, sleep, …), the caller, and for a \
         critical section the section and its owning thread, with how each fact was found. \
         Then every cycle of threads waiting for each other's critical sections.",
        waits,
    ),
];

/// What `!locks` says about where its sections come from without the process-wide list.
const LOCKS_NOTE: &str = "the critical sections the threads wait for and the held ones in the captured thread stacks; the process-wide list was not walked";

fn cs(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    let args = inv.args.trim();
    if args.is_empty() {
        return listing(session, Shape::Cs, true);
    }
    if args.split_whitespace().count() > 1 || args.starts_with('-') {
        return Err(CommandError::syntax(format!(
            "Syntax error in '!cs {}': expected [ADDR]",
            excerpt(args)
        )));
    }
    let address = eval(session, args)?;
    let raw = read_raw(session, address).ok_or_else(|| {
        CommandError::new(
            ErrorCode::MemoryUnavailable,
            format!(
                "Cannot read the critical section at {}: its memory is {}",
                pointer_hex(address, session.arch().pointer_size()),
                session.target().kind().missing_memory()
            ),
        )
        .with_hint(format!(
            "`!locks` lists the critical sections {} does hold",
            session.target().kind().noun()
        ))
    })?;
    let ids: Vec<u32> = session.target().threads().iter().map(|t| t.id).collect();
    let ptr = session.arch().pointer_size();
    let row = match check(&raw, ptr, &ids) {
        Ok(section) => {
            let section = with_debug_counts(session, section);
            section_row(session, &section, "address", None)
        }
        Err(problem) => raw_row(session, &raw, problem),
    };
    let mut text = String::new();
    render_cs(&mut text, &row, ptr);
    Ok(CommandOutput::with(
        text,
        TypedResult::CriticalSections {
            sections: vec![row],
            note: None,
        },
    ))
}

fn locks(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    match inv.args.trim() {
        "" => listing(session, Shape::Locks, false),
        "-v" => listing(session, Shape::Locks, true),
        other => Err(CommandError::syntax(format!(
            "Syntax error in '!locks {}': expected [-v]",
            excerpt(other)
        ))),
    }
}

/// Which of WinDbg's two layouts a listing uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    Cs,
    Locks,
}

/// The sections of the process-wide list when it can be walked, else those reachable from
/// the threads; `all` keeps the free ones too (the list's; the threads give only held ones).
fn listing(session: &Session, shape: Shape, all: bool) -> Result<CommandOutput, CommandError> {
    let ptr = session.arch().pointer_size();
    let (rows, note) = match process_list(session) {
        Ok(list) => {
            let rows: Vec<CriticalSectionRow> = list
                .sections
                .iter()
                .filter(|cs| all || cs.locked)
                .map(|cs| section_row(session, cs, "process_list", None))
                .collect();
            let mut note = format!(
                "the process-wide list (ntdll!RtlCriticalSectionList): {} sections whose fields check out",
                list.sections.len()
            );
            if list.skipped > 0 {
                note.push_str(&format!(
                    ", {} entries skipped (not in the dump or not checking out)",
                    list.skipped
                ));
            }
            if let Some(why) = &list.stopped {
                note.push_str(&format!("; the walk stopped: {why}"));
            }
            (rows, note)
        }
        Err(why) => {
            let waits = thread_waits(session);
            let rows = reachable_sections(session, &waits)
                .iter()
                .map(|r| reachable_row(session, r))
                .collect();
            (rows, format!("{LOCKS_NOTE}: {why}"))
        }
    };
    let mut text = String::new();
    for row in &rows {
        match shape {
            Shape::Cs => render_cs(&mut text, row, ptr),
            Shape::Locks => render_locks(&mut text, row, ptr),
        }
    }
    if shape == Shape::Locks {
        let _ = writeln!(text, "Scanned {} critical sections", rows.len());
    }
    if rows.iter().any(|r| r.entry_count.is_none()) {
        let _ = writeln!(
            text,
            "EntryCount and ContentionCount are in each section's DebugInfo, which this dump does not hold (??)"
        );
    }
    let _ = writeln!(text, "Note: {note}");
    Ok(CommandOutput::with(
        text,
        TypedResult::CriticalSections {
            sections: rows,
            note: Some(note),
        },
    ))
}

fn reachable_row(session: &Session, r: &Reachable) -> CriticalSectionRow {
    let (found_by, thread) = match r.found {
        Found::WaitedFor { thread_id } => ("waited_for", thread_id),
        Found::StackScan { thread_id } => ("stack_scan", thread_id),
    };
    section_row(session, &r.section, found_by, Some(thread))
}

fn section_row(
    session: &Session,
    cs: &CriticalSection,
    found_by: &'static str,
    thread: Option<u32>,
) -> CriticalSectionRow {
    let ptr = session.arch().pointer_size();
    CriticalSectionRow {
        address: prefixed_pointer_hex(cs.address, ptr),
        symbol: symbol(session, cs.address),
        debug_info: prefixed_pointer_hex(cs.debug_info, ptr),
        lock_count: cs.lock_count,
        recursion_count: cs.recursion_count,
        owning_thread: format!("{:#x}", cs.owning_thread),
        lock_semaphore: format!("{:#x}", cs.lock_semaphore),
        spin_count: format!("{:#x}", cs.spin_count),
        locked: Some(cs.locked),
        waiters: Some(cs.waiters),
        waiter_woken: cs.waiter_woken,
        encoding: cs.encoding,
        entry_count: cs.debug.map(|d| d.entry_count),
        contention_count: cs.debug.map(|d| d.contention_count),
        found_by,
        thread_id: thread.map(|t| format!("{t:#x}")),
        problem: None,
    }
}

fn raw_row(session: &Session, raw: &RawCriticalSection, problem: String) -> CriticalSectionRow {
    let ptr = session.arch().pointer_size();
    CriticalSectionRow {
        address: prefixed_pointer_hex(raw.address, ptr),
        symbol: symbol(session, raw.address),
        debug_info: prefixed_pointer_hex(raw.debug_info, ptr),
        lock_count: raw.lock_count,
        recursion_count: raw.recursion_count,
        owning_thread: format!("{:#x}", raw.owning_thread),
        lock_semaphore: format!("{:#x}", raw.lock_semaphore),
        spin_count: format!("{:#x}", raw.spin_count),
        locked: None,
        waiters: None,
        waiter_woken: None,
        encoding: None,
        entry_count: None,
        contention_count: None,
        found_by: "address",
        thread_id: None,
        problem: Some(problem),
    }
}

/// `module!symbol+0x10` when the address is inside a named symbol.
fn symbol(session: &Session, address: u64) -> Option<String> {
    let s = session.symbolize(address);
    s.function.as_ref()?;
    Some(s.display())
}

fn parse_hex(text: &str) -> u64 {
    u64::from_str_radix(text.trim_start_matches("0x"), 16).unwrap_or(0)
}

/// `!cs ADDR` in WinDbg's layout, with the waiter count and any problem added.
fn render_cs(text: &mut String, row: &CriticalSectionRow, ptr: usize) {
    let address = parse_hex(&row.address);
    let symbol = row
        .symbol
        .as_ref()
        .map(|s| format!(" ({s})"))
        .unwrap_or_default();
    let _ = writeln!(text, "-----------------------------------------");
    let _ = writeln!(
        text,
        "Critical section   = 0x{}{symbol}",
        pointer_hex(address, ptr)
    );
    let _ = writeln!(
        text,
        "DebugInfo          = 0x{}",
        pointer_hex(parse_hex(&row.debug_info), ptr)
    );
    match row.locked {
        Some(true) => {
            let _ = writeln!(text, "LOCKED");
        }
        Some(false) => {
            let _ = writeln!(text, "NOT LOCKED");
        }
        None => {}
    }
    let _ = writeln!(
        text,
        "LockCount          = {}",
        signed_hex(shown_lock_count(row))
    );
    if let Some(woken) = row.waiter_woken {
        let _ = writeln!(text, "WaiterWoken        = {}", yes_no(woken));
    }
    let _ = writeln!(
        text,
        "OwningThread       = 0x{}",
        pointer_hex(parse_hex(&row.owning_thread), ptr)
    );
    let _ = writeln!(
        text,
        "RecursionCount     = {}",
        signed_hex(row.recursion_count)
    );
    let _ = writeln!(
        text,
        "LockSemaphore      = 0x{:X}",
        parse_hex(&row.lock_semaphore)
    );
    let _ = writeln!(
        text,
        "SpinCount          = 0x{}",
        pointer_hex(parse_hex(&row.spin_count), ptr)
    );
    if let (Some(waiters), Some(LockEncoding::Counted)) = (row.waiters, row.encoding) {
        let _ = writeln!(text, "Waiters            = {waiters} ({COUNTED_NOTE})");
    }
    if let Some(problem) = &row.problem {
        let _ = writeln!(text, "*** Not taken for a critical section: {problem}");
    }
    found_line(text, row);
}

/// One section as `!locks` shows it.
fn render_locks(text: &mut String, row: &CriticalSectionRow, ptr: usize) {
    let address = parse_hex(&row.address);
    let name = row
        .symbol
        .clone()
        .unwrap_or_else(|| format!("+{address:x}"));
    let _ = writeln!(text, "CritSec {name} at {}", pointer_hex(address, ptr));
    if let Some(woken) = row.waiter_woken {
        let _ = writeln!(text, "WaiterWoken        {}", yes_no(woken));
    }
    let _ = writeln!(text, "LockCount          {}", shown_lock_count(row));
    let _ = writeln!(text, "RecursionCount     {}", row.recursion_count);
    let _ = writeln!(
        text,
        "OwningThread       {:x}",
        parse_hex(&row.owning_thread)
    );
    let count = |c: Option<u32>| c.map_or_else(|| "??".to_string(), |c| c.to_string());
    let _ = writeln!(text, "EntryCount         {}", count(row.entry_count));
    let _ = writeln!(text, "ContentionCount    {}", count(row.contention_count));
    if let (Some(waiters), Some(LockEncoding::Counted)) = (row.waiters, row.encoding) {
        let _ = writeln!(text, "Waiters            {waiters} ({COUNTED_NOTE})");
    }
    found_line(text, row);
    if row.locked == Some(true) {
        let _ = writeln!(text, "*** Locked");
    }
    let _ = writeln!(text);
}

/// How a listed section was found.
fn found_line(text: &mut String, row: &CriticalSectionRow) {
    let thread = row
        .thread_id
        .as_deref()
        .map(|t| t.trim_start_matches("0x"))
        .unwrap_or("?");
    let how = match row.found_by {
        "waited_for" => format!(
            "waited for by thread {thread} (a register recovered in its critical section frames)"
        ),
        "stack_scan" => {
            format!("on the stack of thread {thread} (found by scanning; its fields check out)")
        }
        _ => return,
    };
    let _ = writeln!(text, "Found              {how}");
}

/// Why a counted `LockCount` gets a `Waiters` line of its own.
const COUNTED_NOTE: &str = "LockCount counts Enter calls: Wine / Windows XP encoding";

/// The `LockCount` the text shows: as stored, except that the bit-field encoding shows its
/// waiter count, as WinDbg does (the stored value is in the typed result).
fn shown_lock_count(row: &CriticalSectionRow) -> i32 {
    match (row.encoding, row.waiters) {
        (Some(LockEncoding::BitField), Some(waiters)) => waiters as i32,
        _ => row.lock_count,
    }
}

fn yes_no(b: bool) -> &'static str {
    if b {
        "Yes"
    } else {
        "No"
    }
}

/// `0x1`, `-0x2`: a signed count in hex, as `!cs` prints it.
fn signed_hex(v: i32) -> String {
    if v < 0 {
        format!("-{:#x}", -(i64::from(v)))
    } else {
        format!("{v:#x}")
    }
}

fn waits(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    if !inv.args.trim().is_empty() {
        return Err(CommandError::syntax(format!(
            "Syntax error in '!waits {}': takes no arguments",
            excerpt(inv.args)
        )));
    }
    let found = thread_waits(session);
    let threads = wait_facts(&found);
    let deadlocks: Vec<Inference> = hang_inferences(&found)
        .into_iter()
        .filter(|i| i.text.starts_with("deadlock"))
        .collect();
    let mut text = String::new();
    for w in &threads {
        render_wait(&mut text, w);
    }
    for d in &deadlocks {
        let _ = writeln!(text, "{}", d.text);
        let _ = writeln!(text, "  basis: {}", d.basis);
    }
    if deadlocks.is_empty() {
        let _ = writeln!(text, "No deadlock cycle among the critical sections found.");
    }
    Ok(CommandOutput::with(
        text,
        TypedResult::Waits { threads, deadlocks },
    ))
}

fn render_wait(text: &mut String, w: &WaitFacts) {
    let _ = writeln!(text, "{}", w.text);
    if !w.basis.is_empty() {
        let _ = writeln!(text, "  basis: {}", w.basis);
    }
}
