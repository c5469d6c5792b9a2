//! Inferences: what the facts of a crash suggest, each with the facts it rests on.

use crate::exception::{Access, DecodedException, ExceptionKind};
use crate::report::Inference;
use ntdbg_engine::stack::Frame;
use ntdbg_engine::Session;
use ntdbg_targets::ExceptionEvent;

/// Addresses below this are the null page region Windows never maps.
const NULL_REGION: u64 = 0x1_0000;

/// Inferences for one exception.
pub fn infer(
    session: &Session,
    event: &ExceptionEvent,
    decoded: &DecodedException,
    frames: &[Frame],
) -> Vec<Inference> {
    let mut out = Vec::new();
    let site = frames
        .first()
        .map(|f| f.call_site())
        .unwrap_or_else(|| format!("{:#x}", event.address));
    match &decoded.kind {
        ExceptionKind::AccessViolation { access, address: Some(target), in_page: false } => {
            let verb = access.map(Access::name).unwrap_or("access");
            if *target < NULL_REGION {
                let what = if *target == 0 {
                    "a NULL pointer".to_string()
                } else {
                    format!("a NULL base pointer plus offset {target:#x} (a field of a struct reached through NULL)")
                };
                out.push(Inference {
                    text: format!("null pointer dereference: {verb} through {what}"),
                    basis: format!(
                        "access violation parameters: {verb} at {target:#x}, inside the never-mapped first 64 KiB; faulting instruction at {site}"
                    ),
                });
            } else if *access == Some(Access::Execute) {
                out.push(Inference {
                    text: "execution of non-executable memory (DEP): a corrupted function pointer or return address".into(),
                    basis: format!("access violation parameter 0 = 8 (execute) at {target:#x}"),
                });
            } else if session.module_at(*target).is_some() && *access == Some(Access::Write) {
                out.push(Inference {
                    text: "write into a module image: a write to read-only data or code".into(),
                    basis: format!("{target:#x} lies inside a loaded module"),
                });
            } else if is_noncanonical(session, *target) {
                out.push(Inference {
                    text: "non-canonical address: a corrupted or uninitialised pointer".into(),
                    basis: format!("{target:#x} is outside the canonical x64 address space"),
                });
            } else {
                out.push(Inference {
                    text: format!("invalid {verb} of {target:#x}: a dangling, freed or corrupted pointer is likely"),
                    basis: "the address is not NULL-relative and no module contains it".into(),
                });
            }
        }
        ExceptionKind::StackOverflow => {
            let repeated = most_repeated_function(frames);
            let text = match &repeated {
                Some((name, n)) => format!("unbounded recursion: {name} appears {n} times on the stack"),
                None => "stack overflow: the thread exhausted its stack".into(),
            };
            out.push(Inference { text, basis: "exception code 0xC00000FD (stack overflow)".into() });
        }
        ExceptionKind::DivideByZero => out.push(Inference {
            text: format!("division by zero in {site}"),
            basis: format!("exception code {:#010x}", event.code),
        }),
        ExceptionKind::Breakpoint => out.push(Inference {
            text: "a breakpoint instruction (int 3 / __debugbreak / brk) executed with no debugger attached".into(),
            basis: format!("exception code {:#010x} at {site}", event.code),
        }),
        ExceptionKind::FastFail { code } => out.push(Inference {
            text: "the process terminated itself with __fastfail: a security or integrity check failed".into(),
            basis: format!("exception code 0xC0000409, fast-fail code {}", code.map(|c| c.to_string()).unwrap_or_else(|| "unknown".into())),
        }),
        ExceptionKind::Abort => out.push(Inference {
            text: "abort() was called (an assertion, std::terminate or an explicit abort)".into(),
            basis: "exception code 0x40000015 (STATUS_FATAL_APP_EXIT)".into(),
        }),
        ExceptionKind::CppException => out.push(Inference {
            text: "an unhandled C++ exception".into(),
            basis: format!("exception code {:#010x}", event.code),
        }),
        ExceptionKind::Custom => out.push(Inference {
            text: format!("the application raised its own exception code {:#010x} with RaiseException", event.code),
            basis: "the code is not a known NTSTATUS or runtime exception code".into(),
        }),
        _ => {}
    }
    out
}

fn is_noncanonical(session: &Session, addr: u64) -> bool {
    session.arch() == ntdbg_targets::Arch::X64
        && addr > 0x0000_7FFF_FFFF_FFFF
        && addr < 0xFFFF_8000_0000_0000
}

/// The function that appears most often on the stack, when it appears more than twice.
fn most_repeated_function(frames: &[Frame]) -> Option<(String, usize)> {
    let mut counts: Vec<(String, usize)> = Vec::new();
    for f in frames {
        let name = f.call_site();
        let name = name.split('+').next().unwrap_or(&name).to_string();
        match counts.iter_mut().find(|(n, _)| *n == name) {
            Some((_, c)) => *c += 1,
            None => counts.push((name, 1)),
        }
    }
    counts
        .into_iter()
        .filter(|(_, c)| *c > 2)
        .max_by_key(|(_, c)| *c)
}
