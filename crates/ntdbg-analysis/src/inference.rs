//! Inferences: what the facts of a crash suggest, each with the facts it rests on.

use crate::exception::{Access, DecodedException, ExceptionKind};
use crate::fault::{classify_address, faulting_instruction, AddressClass};
use crate::report::Inference;
use ntdbg_engine::stack::Frame;
use ntdbg_engine::Session;
use ntdbg_targets::ExceptionEvent;

/// Inferences for one exception.
pub fn infer(
    session: &Session,
    event: &ExceptionEvent,
    decoded: &DecodedException,
    frames: &[Frame],
) -> Vec<Inference> {
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
        } => out.extend(access_violation(session, event, *access, *target, &site)),
        ExceptionKind::StackOverflow => {
            let runs = collapse(frames);
            let text = match runs.iter().filter(|r| r.count > 2).max_by_key(|r| r.count) {
                Some(r) if r.first + r.count >= frames.len() => format!(
                    "unbounded recursion: {} repeats {} times (frames {}-{}) and the walk ended inside the recursion, so it is at least that deep",
                    r.name,
                    r.count,
                    r.first,
                    r.first + r.count - 1
                ),
                Some(r) => format!(
                    "unbounded recursion: {} repeats {} times (frames {}-{})",
                    r.name,
                    r.count,
                    r.first,
                    r.first + r.count - 1
                ),
                None => "stack overflow: the thread exhausted its stack".into(),
            };
            let shape = runs
                .iter()
                .take(6)
                .map(|r| if r.count > 1 { format!("{} x{}", r.name, r.count) } else { r.name.clone() })
                .collect::<Vec<_>>()
                .join(" <- ");
            out.push(Inference {
                text,
                basis: format!(
                    "exception code 0xC00000FD (stack overflow); {} frames walked, collapsed: {shape}",
                    frames.len()
                ),
            });
        }
        ExceptionKind::DivideByZero => out.push(Inference {
            text: format!("division by zero in {site}"),
            basis: format!("exception code {:#010x}", event.code),
        }),
        ExceptionKind::Breakpoint => out.push(match find_function(frames, ASSERT_FUNCTIONS) {
            Some(f) => Inference {
                text: "an assertion failed and broke into the (absent) debugger".into(),
                basis: format!("exception code {:#010x}; {f} is on the stack", event.code),
            },
            None => Inference {
                text: "a breakpoint instruction (int 3 / __debugbreak / brk) executed with no debugger attached".into(),
                basis: format!("exception code {:#010x} at {site}", event.code),
            },
        }),
        ExceptionKind::FastFail { code } => {
            let name = code.and_then(crate::ntstatus::fast_fail_name);
            let text = match (code, name) {
                (Some(7), _) => "the process terminated itself with __fastfail(FAST_FAIL_FATAL_APP_EXIT): an explicit fatal exit (abort-like), not memory corruption".to_string(),
                (_, Some(n)) => format!("the process terminated itself with __fastfail({n}): a security or integrity check failed"),
                _ => "the process terminated itself with __fastfail: a security or integrity check failed".to_string(),
            };
            out.push(Inference {
                text,
                basis: format!(
                    "exception code 0xC0000409, fast-fail code {}",
                    code.map(|c| c.to_string()).unwrap_or_else(|| "unknown".into())
                ),
            })
        }
        ExceptionKind::Abort => out.push(match find_function(frames, ASSERT_FUNCTIONS) {
            Some(f) => Inference {
                text: "an assertion failed and called abort()".into(),
                basis: format!("exception code 0x40000015 (STATUS_FATAL_APP_EXIT); {f} is on the stack"),
            },
            None => Inference {
                text: "abort() was called (an assertion, std::terminate or an explicit abort)".into(),
                basis: "exception code 0x40000015 (STATUS_FATAL_APP_EXIT)".into(),
            },
        }),
        ExceptionKind::HeapCorruption => out.push(Inference {
            text: "heap corruption: a buffer overrun, double free or use after free damaged heap metadata; the bug is earlier than this stack".into(),
            basis: format!("exception code 0xC0000374 (STATUS_HEAP_CORRUPTION) raised at {site}; enable page heap (gflags /p /enable) to catch the first bad write"),
        }),
        ExceptionKind::InvalidParameter => out.push(Inference {
            text: match find_function(frames, &["_invalid_parameter", "_invalid_parameter_noinfo", "_invalid_parameter_noinfo_noreturn", "_invoke_watson"]) {
                Some(f) => format!("the C runtime rejected an invalid argument ({f} on the stack)"),
                None => "a system or C runtime function rejected an invalid argument".into(),
            },
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

/// Assertion entry points of the C runtimes.
const ASSERT_FUNCTIONS: &[&str] = &[
    "_assert",
    "_wassert",
    "__assert_fail",
    "_CrtDbgReport",
    "_CrtDbgReportW",
];

/// `module!function` of the first frame whose bare function name is in `names`.
fn find_function(frames: &[Frame], names: &[&str]) -> Option<String> {
    frames.iter().find_map(|f| {
        let function = f.function.as_deref()?;
        let bare = ntdbg_symbols::strip_parameters(function);
        names.contains(&bare).then(|| f.call_site())
    })
}

/// Inferences for an access violation at `target`: what the address is, and what the
/// faulting instruction says about it.
fn access_violation(
    session: &Session,
    event: &ExceptionEvent,
    access: Option<Access>,
    target: u64,
    site: &str,
) -> Vec<Inference> {
    let verb = access.map(Access::name).unwrap_or("access");
    let class = classify_address(session, target, Some(event.thread_id));
    let instruction = faulting_instruction(session, event);
    let instr_basis = instruction
        .as_ref()
        .map(|i| format!("; faulting instruction {}", i.summary()))
        .unwrap_or_default();
    let mut out = Vec::new();
    let params = format!("access violation parameters: {verb} at {target:#x}");
    let (text, basis) = match (&class, access) {
        (AddressClass::Null, _) => (
            format!("null pointer dereference: {verb} through a NULL pointer"),
            format!("{params}, inside the never-mapped first 64 KiB; at {site}{instr_basis}"),
        ),
        (AddressClass::NearNull { offset }, _)
            if instruction
                .as_ref()
                .and_then(|i| i.memory.as_ref())
                .is_some_and(|m| m.base.is_none() && m.index.is_none()) =>
        {
            (
                format!("{verb} of the constant address {offset:#x} in the never-mapped NULL page: a deliberate crash or a hard-coded bad pointer"),
                format!("{params}; the instruction addresses it directly (no base register); at {site}{instr_basis}"),
            )
        }
        (AddressClass::NearNull { offset }, _) => (
            format!("null pointer dereference: {verb} at {offset:#x} = struct offset {offset:#x} from a NULL base"),
            format!("{params}, inside the never-mapped first 64 KiB; at {site}{instr_basis}"),
        ),
        (_, Some(Access::Execute)) => (
            format!("execution of non-executable memory (DEP) at {}: a corrupted function pointer or return address", class.describe()),
            format!("access violation parameter 0 = 8 (execute) at {target:#x}{instr_basis}"),
        ),
        (AddressClass::NonCanonical, _) => (
            format!("{verb} of a non-canonical address: a corrupted or uninitialised pointer"),
            format!("{target:#x} is outside the canonical x64 address space{instr_basis}"),
        ),
        (AddressClass::Ascii { text }, _) => (
            format!("{verb} through a pointer made of ASCII bytes \"{text}\": memory overwritten by string data (buffer overflow); likely exploitable"),
            format!("every byte of {target:#x} is a printable character{instr_basis}"),
        ),
        (AddressClass::Stack { .. }, _) => (
            format!("invalid {verb} of {}: a stack guard page or a pointer to a dead stack frame", class.describe()),
            format!("{target:#x} lies in a thread's stack range{instr_basis}"),
        ),
        (AddressClass::Image { .. }, Some(Access::Write)) => (
            format!("write into {}: a write to read-only data or code", class.describe()),
            format!("{target:#x} lies inside a loaded module{instr_basis}"),
        ),
        (AddressClass::Image { .. }, _) => (
            format!("invalid {verb} inside {}", class.describe()),
            format!("{target:#x} lies inside a loaded module{instr_basis}"),
        ),
        (AddressClass::Kernel, _) => (
            format!("{verb} of kernel address space from user mode: a corrupted pointer"),
            format!("{target:#x} is in the kernel half of the address space{instr_basis}"),
        ),
        (AddressClass::Unknown, _) => (
            format!("invalid {verb} of {target:#x}: a dangling, freed or corrupted pointer is likely"),
            format!("the address is not NULL-relative and no module or thread stack in the dump contains it{instr_basis}"),
        ),
    };
    out.push(Inference { text, basis });
    out
}

/// A run of consecutive frames with the same function.
#[derive(Debug, Clone)]
pub(crate) struct Run {
    /// `module!function` (or `module+0x…` without symbols).
    pub name: String,
    /// Index of the first frame of the run.
    pub first: usize,
    /// How many frames in a row.
    pub count: usize,
}

/// The stack with consecutive repeats collapsed.
pub(crate) fn collapse(frames: &[Frame]) -> Vec<Run> {
    let mut runs: Vec<Run> = Vec::new();
    for (i, f) in frames.iter().enumerate() {
        let site = f.call_site();
        let name = match &f.function {
            Some(_) => site.split('+').next().unwrap_or(&site).to_string(),
            None => site,
        };
        match runs.last_mut() {
            Some(r) if r.name == name => r.count += 1,
            _ => runs.push(Run {
                name,
                first: i,
                count: 1,
            }),
        }
    }
    runs
}
