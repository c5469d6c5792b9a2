//! Inferences: what the facts of a crash suggest, each with the facts it rests on and the
//! family it belongs to (`Inference::kind`). One module per family; this dispatcher only
//! decides which families look at which exception.

mod access;
mod assertion;
mod bit_flip;
mod context_thread;
mod deliberate;
mod fail_fast;
mod fill_pattern;
mod heap;
mod jit;
mod stack_overflow;

use crate::conclusion::Inference;
use crate::evidence::Evidence;
use crate::exception::{DecodedException, ExceptionKind};
use ntdbg_engine::stack::Frame;
use ntdbg_engine::Session;
use ntdbg_targets::ExceptionEvent;

/// Inferences for one exception, the most specific first.
pub fn infer(
    session: &Session,
    event: &ExceptionEvent,
    decoded: &DecodedException,
    frames: &[Frame],
) -> Vec<Inference> {
    let evidence = Evidence::gather(session, event, frames);
    let mut out: Vec<Inference> = crate::cxx::inference(session, event, frames)
        .into_iter()
        .collect();
    let site = frames
        .first()
        .map(|f| f.call_site())
        .unwrap_or_else(|| format!("{:#x}", event.address));
    match &decoded.kind {
        ExceptionKind::AccessViolation {
            access,
            address: Some(target),
            in_page: false,
        } => out.extend(access::access_violation(
            &evidence, *access, *target, &site, frames,
        )),
        ExceptionKind::StackOverflow => {
            out.push(stack_overflow::stack_overflow(session, event, frames))
        }
        ExceptionKind::DivideByZero => out.push(Inference::new(
            "divide_by_zero",
            format!("division by zero in {site}"),
            format!("exception code {:#010x}", event.code),
        )),
        ExceptionKind::Breakpoint => out.extend(deliberate::breakpoint(&evidence, frames, &site)),
        ExceptionKind::FastFail { code } => out.push(fail_fast::fail_fast(*code)),
        ExceptionKind::Abort => out.push(assertion::abort(&evidence, frames)),
        ExceptionKind::HeapCorruption => out.push(heap::heap_corruption_status(&site)),
        ExceptionKind::InvalidParameter => out.push(Inference::new(
            "invalid_parameter",
            match assertion::find_function(frames, assertion::INVALID_PARAMETER_FUNCTIONS) {
                Some(f) => format!("the C runtime rejected an invalid argument ({f} on the stack)"),
                None => "a system or C runtime function rejected an invalid argument".into(),
            },
            format!("exception code {:#010x}", event.code),
        )),
        ExceptionKind::Custom => out.push(raised(&evidence, frames)),
        ExceptionKind::Other if event.code == ILLEGAL_INSTRUCTION => {
            out.extend(deliberate::illegal_instruction(session, event, &site))
        }
        _ => {}
    }
    if let Some(check) = assertion::stack_protector(&evidence, frames) {
        // The check names the bug; the trap or abort it ended in is only how it stopped.
        out.retain(|i| !matches!(i.kind.as_str(), "deliberate" | "abort" | "breakpoint"));
        out.insert(0, check);
    }
    if let Some(message) = assertion::assertion_message(session, event) {
        // The message explains the breakpoint better than "no debugger attached".
        out.retain(|i| i.kind != "breakpoint");
        out.insert(0, message);
    }
    out.extend(context_thread::context_thread(session));
    out.extend(jit::code_outside_modules(session, frames));
    out
}

/// An exception code of the application's own, with who raised it when the call chain shows
/// the call to `RaiseException`.
fn raised(evidence: &Evidence, frames: &[Frame]) -> Inference {
    let code = evidence.event.code;
    let raiser = evidence
        .called(&|n| n == "RaiseException" || n == "RtlRaiseException")
        .and_then(|(frame, call)| {
            let site = frames.iter().find(|f| f.index == *frame)?.call_site();
            Some(format!(" ({site} called {})", call.callee.as_deref()?))
        })
        .unwrap_or_default();
    Inference::new(
        "raised_exception",
        format!("the application raised its own exception code {code:#010x} with RaiseException{raiser}"),
        "the code is not a known NTSTATUS or runtime exception code",
    )
}

/// `EXCEPTION_ILLEGAL_INSTRUCTION`.
const ILLEGAL_INSTRUCTION: u32 = 0xC000_001D;
