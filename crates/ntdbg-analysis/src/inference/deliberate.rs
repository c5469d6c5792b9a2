//! Deliberate stops: a trap instruction (`ud2`, `int 3`) right after a store of a reason code to
//! a global, and breakpoints — a runtime check that reported and broke (`_CrtDbgReport`,
//! `_RTC_CheckStackVars` → `failwithmessage`), `DebugBreak()`, the break-in thread a debugger
//! creates when it attaches, or a bare `int 3` — each said only as far as the dump shows it.
//! (A pointer that is a constant of the code is [`crate::evidence::Evidence::constant_address`].)

use crate::conclusion::Inference;
use crate::evidence::calls::{call_before, Call};
use crate::evidence::code::code_before;
use crate::evidence::Evidence;
use crate::fault::read_pointer;
use crate::signature::is_system_module;
use ntdbg_engine::disasm::{instruction_effects, Bitness, ControlFlow};
use ntdbg_engine::stack::Frame;
use ntdbg_engine::Session;
use ntdbg_targets::ExceptionEvent;

/// How many instructions before the fault are looked at.
const LOOK_BACK: usize = 8;

/// A store to a global right before the trap at the exception address, of an immediate or of
/// a register the context still holds: `(the store's text, the global's name or address, the
/// value, how the value is known)`.
fn reason_store(
    session: &Session,
    event: &ExceptionEvent,
) -> Option<(String, String, u64, String)> {
    let before = code_before(session, event.address, LOOK_BACK)?;
    let store_at = before.previous()?;
    let store = store_at.store.as_ref()?;
    if store.operand.base.is_some() || store.operand.index.is_some() {
        return None;
    }
    let target = store.operand.displacement as u64;
    let module = session.module_at(target)?;
    let (value, how) = match (store.immediate, &store.register) {
        (Some(v), _) => (
            v,
            "a store of an immediate to a global of the image".to_string(),
        ),
        // The trap follows the store at once, so the register still holds what was stored.
        (None, Some(r)) => {
            let v = ntdbg_engine::registers::register(event.context.as_ref()?, r)?;
            let bits = 8 * store.operand.size.clamp(1, 8) as u32;
            let v = if bits == 64 {
                v
            } else {
                v & ((1u64 << bits) - 1)
            };
            (
                v,
                format!("a store of {r} to a global of the image; {r} still holds it at the trap"),
            )
        }
        _ => return None,
    };
    let symbol = session.symbolize(target);
    let name = match (&symbol.function, symbol.function_offset) {
        (Some(f), Some(0)) => format!("{}!{f}", symbol.module.as_deref().unwrap_or("?")),
        _ => format!(
            "{target:#x} (in {})",
            ntdbg_engine::module_name(&module.name)
        ),
    };
    Some((store_at.text.clone(), name, value, how))
}

/// The trap instruction at the exception address, decoded: `ud2`, `int 3`, ….
fn trap_instruction(session: &Session, event: &ExceptionEvent) -> Option<String> {
    let bitness = Bitness::of_arch(session.arch())?;
    let bytes = session.read_code(event.address, 16)?;
    let i = instruction_effects(bitness, &bytes, event.address)?;
    (i.flow == ControlFlow::Trap).then_some(i.text)
}

/// The deliberate-crash inference when the trap follows a store of a reason code.
fn deliberate_trap(
    session: &Session,
    event: &ExceptionEvent,
    trap: &str,
    site: &str,
) -> Option<Inference> {
    let (store, global, value, how) = reason_store(session, event)?;
    Some(Inference::new(
        "deliberate",
        format!("a deliberate crash: the code stored the reason code {value:#x} to {global} and then executed `{trap}`"),
        format!("exception code {:#010x} at {site}; the instruction before the trap is `{store}` ({how})", event.code),
    ))
}

/// Inferences for `EXCEPTION_ILLEGAL_INSTRUCTION`: a `ud2` is a deliberate trap
/// (`__builtin_trap`, `__ud2`, a compiler's unreachable code).
pub(super) fn illegal_instruction(
    session: &Session,
    event: &ExceptionEvent,
    site: &str,
) -> Vec<Inference> {
    let Some(trap) = trap_instruction(session, event) else {
        return Vec::new();
    };
    if let Some(i) = deliberate_trap(session, event, &trap, site) {
        return vec![i];
    }
    vec![Inference::new(
        "deliberate",
        format!("a deliberate trap: `{trap}` executed (__builtin_trap, __ud2 or code the compiler marked unreachable)"),
        format!("exception code {:#010x} at {site}; the instruction there is `{trap}`", event.code),
    )]
}

/// The C runtime's reporting and run-time-check functions: a breakpoint right after a call to
/// one of them, or with one of them on the stack, is a check that failed and broke.
const CHECK_FUNCTIONS: &[&str] = &[
    "_CrtDbgReport",
    "_CrtDbgReportW",
    "_CrtDbgBreak",
    "_VCrtDbgReportA",
    "_VCrtDbgReportW",
    "_RTC_CheckStackVars",
    "_RTC_CheckStackVars2",
    "_RTC_CheckEsp",
    "_RTC_UninitUse",
    "_RTC_Failure",
    "_RTC_StackFailure",
    "_RTC_AllocaFailure",
    "failwithmessage",
    "_RTC_Check_2_to_1",
    "_RTC_Check_4_to_1",
    "_RTC_Check_4_to_2",
    "_RTC_Check_8_to_1",
    "_RTC_Check_8_to_2",
    "_RTC_Check_8_to_4",
    "_invalid_parameter",
    "std::_Debug_message",
];
/// Functions that only execute `int 3` for their caller.
const BREAK_FUNCTIONS: &[&str] = &[
    "DebugBreak",
    "__debugbreak",
    "DbgBreakPoint",
    "DbgUserBreakPoint",
];
/// Instructions before a trap searched for the call whose report led to it.
const REPORT_WINDOW: usize = 12;

fn is_check(name: &str) -> bool {
    CHECK_FUNCTIONS.contains(&name) || name.starts_with("_RTC_")
}

/// What the run-time checks mean, by the check function's name.
fn check_meaning(name: &str) -> &'static str {
    match name {
        "_RTC_CheckStackVars" | "_RTC_CheckStackVars2" | "_RTC_StackFailure" => "the /RTC stack check found the guard bytes around a local variable overwritten: a stack buffer overrun in that function",
        "_RTC_CheckEsp" => "the /RTC check found the stack pointer changed across a call: a calling-convention mismatch (a function pointer of the wrong type)",
        "_RTC_UninitUse" => "the /RTC check found a local variable used before it was set",
        "_RTC_AllocaFailure" => "the /RTC check found the guard bytes of an _alloca block overwritten",
        n if n.starts_with("_RTC_Check_") => "the /RTC check found a value truncated by a cast that lost data",
        "_invalid_parameter" => "the debug C runtime rejected an invalid argument to a library function",
        _ => "a debug-runtime assertion or check failed and reported (an _ASSERT, an assert() in a debug build, or a checked-iterator or bounds check of the debug C++ library)",
    }
}

/// Inferences for a breakpoint exception: an assertion or runtime check that reported and
/// broke, a reason code stored just before, `DebugBreak()`, a debugger's break-in, or a bare
/// breakpoint instruction.
pub(super) fn breakpoint(evidence: &Evidence, frames: &[Frame], site: &str) -> Vec<Inference> {
    let (session, event) = (evidence.session, evidence.event);
    if session.target().as_kernel_dump().is_some() {
        // A kernel dump without a bugcheck (code 0) that stopped at a breakpoint.
        return vec![Inference::new(
            "debugger_break",
            "no bugcheck: the system was stopped at a breakpoint, as the kernel debugger stops it to write a dump (.dump), not by a crash",
            format!(
                "the dump header's bugcheck code is 0 and its exception record holds {:#010x} (a breakpoint) at {site}",
                event.code
            ),
        )];
    }
    if let Some(f) = super::assertion::find_function(frames, super::assertion::ASSERT_FUNCTIONS) {
        return vec![Inference::new(
            "assertion",
            "an assertion failed, reported and broke with a breakpoint",
            format!("exception code {:#010x}; {f} is on the stack", event.code),
        )];
    }
    if let Some(i) = runtime_check(evidence, frames, site) {
        return vec![i];
    }
    let trap = trap_instruction(session, event);
    if let Some(i) = trap
        .as_deref()
        .and_then(|t| deliberate_trap(session, event, t, site))
    {
        return vec![i];
    }
    let debugger = debugger_attached(session, event);
    if let Some(i) = break_function(evidence, frames, site, trap.as_deref(), debugger.as_deref()) {
        return vec![i];
    }
    let what = match &trap {
        Some(t) => format!("; the instruction there is `{t}`"),
        None => String::new(),
    };
    let (attached, basis_note) = match &debugger {
        Some(d) => (format!("; {d}"), String::new()),
        None => (
            String::new(),
            "; whether a debugger was attached is not recorded in the dump".to_string(),
        ),
    };
    vec![Inference::new(
        "breakpoint",
        format!("a breakpoint instruction (int 3 / __debugbreak / brk) executed at {site}: a breakpoint compiled into the code{attached}"),
        format!("exception code {:#010x} at {site}{what}{basis_note}", event.code),
    )]
}

/// A check of the C runtime that reported and broke: the call just before the trap, a call of
/// the chain, or a frame names a reporting or `/RTC` function.
fn runtime_check(evidence: &Evidence, frames: &[Frame], site: &str) -> Option<Inference> {
    let event = evidence.event;
    let before_trap =
        last_call_before(evidence, event.address).filter(|c| c.function().is_some_and(is_check));
    let (name, how) = if let Some(call) = &before_trap {
        (
            call.function()?.to_string(),
            format!(
                "the code before the trap calls {} (`{}` at {:#x}, {})",
                call.callee.as_deref()?,
                call.text,
                call.at,
                call.how
            ),
        )
    } else if let Some((frame, call)) = evidence.called(&is_check) {
        (
            call.function()?.to_string(),
            format!(
                "frame {frame:02x} called {} (`{}` at {:#x}, {})",
                call.callee.as_deref()?,
                call.text,
                call.at,
                call.how
            ),
        )
    } else {
        let f = frames.iter().take(8).find(|f| {
            f.function
                .as_deref()
                .is_some_and(|n| is_check(ntdbg_symbols::strip_parameters(n)))
        })?;
        (
            ntdbg_symbols::strip_parameters(f.function.as_deref()?).to_string(),
            format!("frame {:02x} is {}", f.index, f.call_site()),
        )
    };
    Some(Inference::new(
        if name.starts_with("_RTC_") || name == "failwithmessage" {
            "runtime_check"
        } else {
            "assertion"
        },
        format!(
            "{} ({name}), then broke with a breakpoint at {site}",
            check_meaning(&name)
        ),
        format!("exception code {:#010x}; {how}", event.code),
    ))
}

/// The last call instruction among the few before `at`, in the same function, with its callee.
fn last_call_before(evidence: &Evidence, at: u64) -> Option<Call> {
    let code = code_before(evidence.session, at, REPORT_WINDOW)?;
    let call = code
        .instructions
        .iter()
        .rev()
        .find(|i| matches!(i.flow, ControlFlow::Call { .. }))?;
    call_before(
        evidence.session,
        &evidence.imports,
        call.address + call.len as u64,
    )
}

/// `DebugBreak()` called by the program, or the break-in thread of a debugger: the trap is the
/// `int 3` of a system function that only breaks.
fn break_function(
    evidence: &Evidence,
    frames: &[Frame],
    site: &str,
    trap: Option<&str>,
    debugger: Option<&str>,
) -> Option<Inference> {
    let (session, event) = (evidence.session, evidence.event);
    let first = frames.first()?;
    let attached = debugger.map(|d| format!("; {d}")).unwrap_or_default();
    let in_system = first.module.as_deref().is_some_and(is_system_module);
    let system_break = in_system && trap == Some("int 3");
    // The caller's call names the break function, when its code and imports are known: the
    // call before frame 1's return address, or, when the break function is `int 3; ret` (no
    // prologue), before the return address at the stack pointer.
    let is_break = |c: &Call| c.function().is_some_and(|n| BREAK_FUNCTIONS.contains(&n));
    let by_frame = evidence
        .calls
        .first()
        .filter(|(f, c)| system_break && *f == 1 && is_break(c))
        .map(|(f, c)| {
            (
                frames.get(*f).map(|f| f.call_site()).unwrap_or_default(),
                c.clone(),
            )
        });
    let caller = by_frame.or_else(|| {
        if !system_break {
            return None;
        }
        let ra = return_address_of_leaf(session, event)?;
        let call = call_before(session, &evidence.imports, ra).filter(is_break)?;
        Some((session.symbolize(ra).display(), call))
    });
    if let Some((caller_site, call)) = caller {
        let callee = call.callee.as_deref()?;
        return Some(Inference::new(
            "breakpoint",
            format!("a deliberate breakpoint: {caller_site} called {callee}{attached}"),
            format!(
                "exception code {:#010x} at {site}, the `int 3` of the break function; {caller_site} called {callee} (`{}` at {:#x}, {})",
                event.code, call.text, call.at, call.how
            ),
        ));
    }
    // By name: the symbols call frame 0 a break function.
    let named = first
        .function
        .as_deref()
        .map(ntdbg_symbols::strip_parameters)
        .filter(|n| BREAK_FUNCTIONS.contains(n));
    if let (Some(name), Some(caller)) = (named, frames.get(1)) {
        return Some(Inference::new(
            "breakpoint",
            format!(
                "a deliberate breakpoint: {} called {name}{attached}",
                caller.call_site()
            ),
            format!(
                "exception code {:#010x} at {site}; frame 00 is {}, called by frame 01",
                event.code,
                first.call_site()
            ),
        ));
    }
    let system_only = frames
        .iter()
        .all(|f| f.module.as_deref().is_none_or(is_system_module));
    let in_ntdll = first
        .module
        .as_deref()
        .is_some_and(|m| m.eq_ignore_ascii_case("ntdll"));
    if system_break && in_ntdll && system_only && frames.len() > 1 {
        return Some(Inference::new(
            "debugger_break",
            format!(
                "a breakpoint in ntdll on a thread that runs no application code: most likely the thread a debugger creates when it attaches or breaks in (DbgUiRemoteBreakin -> DbgBreakPoint), so the dump was taken from a debugger rather than by a crash{attached}"
            ),
            format!(
                "exception code {:#010x} at {site}, an `int 3` in ntdll; all {} frames of the thread are in system modules",
                event.code,
                frames.len()
            ),
        ));
    }
    None
}

/// The return address at the stack pointer, when the trap is followed by `ret` (a function
/// that only breaks has no prologue: its caller's return address is on top of the stack).
fn return_address_of_leaf(session: &Session, event: &ExceptionEvent) -> Option<u64> {
    let bitness = Bitness::of_arch(session.arch())?;
    let bytes = session.read_code(event.address, 16)?;
    let trap = instruction_effects(bitness, &bytes, event.address)?;
    let next = instruction_effects(
        bitness,
        bytes.get(trap.len..)?,
        event.address + trap.len as u64,
    )?;
    if next.flow != ControlFlow::Return {
        return None;
    }
    let sp = ntdbg_engine::registers::register(
        event.context.as_ref()?,
        if bitness == Bitness::Bits64 {
            "rsp"
        } else {
            "esp"
        },
    )?;
    read_pointer(session, sp, bitness.pointer_size())
}

/// `PEB.BeingDebugged` of the process, when the dump holds the thread's TEB and the PEB.
fn debugger_attached(session: &Session, event: &ExceptionEvent) -> Option<String> {
    let index = session
        .target()
        .threads()
        .iter()
        .position(|t| t.id == event.thread_id)?;
    let peb = session.teb(index).ok()?.peb.filter(|p| *p != 0)?;
    // Every thread's TEB names the one PEB; read it only when it is that one.
    let block = session.peb().ok().filter(|b| b.address == peb)?;
    Some(match block.being_debugged? {
        false => format!("no debugger was attached (PEB {peb:#x} BeingDebugged = 0)"),
        true => format!("a debugger was attached (PEB {peb:#x} BeingDebugged = 1)"),
    })
}
