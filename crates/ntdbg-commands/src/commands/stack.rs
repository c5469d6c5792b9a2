//! Call stacks: `k`, `kb`, `kn`, `kv`, `kp`, `kP`, `kc` (with an optional frame count).

use super::eval;
use crate::error::CommandError;
use crate::output::{CommandOutput, TypedResult};
use crate::render::addr;
use crate::spec::{CommandSpec, Invocation};
use ntdbg_engine::stack::{Frame, Stack};
use ntdbg_engine::Session;
use ntdbg_symbols::strip_parameters;

/// WinDbg's default number of frames shown.
const DEFAULT_FRAMES: u64 = 256;

const K_DETAILS: &str =
    "A number after the command limits the frames (`kn 10`). `kb`/`kv` add the \
first stack words above the return address (\"Args to Child\"); `kp` shows each function's \
parameters with their types and values from the PDB (`int n = 0n5`; `<value unavailable>` where \
the parameter's location is not valid at the frame's instruction or its register was not \
recovered), `kP` one parameter per line; without PDB variables the parameter list the symbols \
give is shown. Frames are innermost first; each carries how it was found (context, cfi, \
frame_pointer, scan) in the typed result.";

pub(crate) const COMMANDS: &[CommandSpec] = &[
    CommandSpec::inspect(
        &["k"],
        "k [COUNT]",
        "call stack of the current thread",
        K_DETAILS,
        k,
    ),
    CommandSpec::inspect(
        &["kb"],
        "kb [COUNT]",
        "call stack with the first stack arguments",
        K_DETAILS,
        k,
    ),
    CommandSpec::inspect(
        &["kn"],
        "kn [COUNT]",
        "call stack with frame numbers",
        K_DETAILS,
        k,
    ),
    CommandSpec::inspect(
        &["kv"],
        "kv [COUNT]",
        "call stack with arguments (as kb)",
        K_DETAILS,
        k,
    ),
    CommandSpec::inspect(
        &["kp", "kP"],
        "kp [COUNT]",
        "call stack with parameter lists",
        K_DETAILS,
        k,
    ),
    CommandSpec::inspect(
        &["kc"],
        "kc [COUNT]",
        "call stack, call sites only",
        K_DETAILS,
        k,
    ),
];

#[derive(Debug, Clone, Copy)]
struct Style {
    numbers: bool,
    args: bool,
    params: Params,
    clean: bool,
}

/// How `k` shows a function's parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Params {
    /// Not at all (`k`, `kn`, `kb`).
    None,
    /// With values on the frame's line (`kp`).
    Inline,
    /// With values, one per line (`kP`).
    Lines,
}

fn k(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    let lower = inv.name.to_ascii_lowercase();
    let style = Style {
        numbers: lower.contains('n'),
        args: lower.contains('b') || lower.contains('v'),
        params: match (lower.contains('p'), inv.name.contains('P')) {
            (false, _) => Params::None,
            (true, false) => Params::Inline,
            (true, true) => Params::Lines,
        },
        clean: lower == "kc",
    };
    let count = match inv.args.trim() {
        "" => DEFAULT_FRAMES,
        a => eval(session, a.trim_start_matches("0n").trim()).map_err(|_| {
            CommandError::syntax(format!(
                "Syntax error in '{} {a}': expected a frame count",
                inv.name
            ))
        })?,
    };
    session.preload_current_stack_symbols();
    let mut stack = session.stack()?;
    stack
        .frames
        .truncate(usize::try_from(count).unwrap_or(usize::MAX));
    let text = render_stack(session, &stack, style);
    Ok(CommandOutput::with(text, TypedResult::Stack(stack)))
}

/// A stack in `k`'s plain layout (Child-SP, RetAddr, Call Site), for commands that show one.
pub(crate) fn render_plain(session: &Session, stack: &Stack) -> String {
    let style = Style {
        numbers: false,
        args: false,
        params: Params::None,
        clean: false,
    };
    render_stack(session, stack, style)
}

/// One frame as `kn` prints it, without the header (what `.frame` shows).
pub(crate) fn numbered_line(session: &Session, frame: &Frame) -> String {
    let style = Style {
        numbers: true,
        args: false,
        params: Params::None,
        clean: false,
    };
    let stack = Stack {
        thread_id: 0,
        frames: vec![frame.clone()],
        note: None,
    };
    let text = render_stack(session, &stack, style);
    text.split_once('\n')
        .map_or(text.clone(), |(_, line)| line.to_string())
}

fn render_stack(session: &Session, stack: &Stack, style: Style) -> String {
    let ptr = session.arch().pointer_size();
    let x86 = ptr == 4;
    let mut out = String::new();
    if !style.clean {
        let num = if style.numbers { " # " } else { "" };
        let header = match (x86, style.args) {
            (true, false) => "ChildEBP RetAddr  ".to_string(),
            (true, true) => format!("ChildEBP RetAddr  {:<27}", "Args to Child"),
            (false, false) => format!("{:<17} {:<22}", "Child-SP", "RetAddr"),
            (false, true) => format!(
                "{:<17} {:<17} : {:<71} : ",
                "Child-SP", "RetAddr", "Args to Child"
            ),
        };
        out.push_str(&format!("{num}{header}Call Site\n"));
    } else {
        out.push_str("Call Site\n");
    }
    for f in &stack.frames {
        if style.clean {
            out.push_str(&call_site(session, stack, f, style.params));
            out.push('\n');
            continue;
        }
        if style.numbers {
            out.push_str(&format!("{:02x} ", f.index));
        }
        if f.inline {
            let dashes = if x86 { "--------" } else { "--------`--------" };
            out.push_str(&format!("(Inline Function) {dashes}"));
            if style.args {
                out.push_str(if x86 { " " } else { " : " });
                out.push_str(&vec![dashes; if x86 { 3 } else { 4 }].join(" "));
                out.push_str(if x86 { " " } else { " : " });
            } else {
                out.push_str(if x86 { " " } else { "     " });
            }
        } else {
            let child = if x86 {
                f.frame_pointer.unwrap_or(f.stack_pointer)
            } else {
                f.stack_pointer
            };
            let ret = f
                .return_address
                .map(|r| addr(session, r))
                .unwrap_or_else(|| addr(session, 0));
            out.push_str(&format!("{} {ret}", addr(session, child)));
            if style.args {
                let words: Vec<String> = (0..if x86 { 3 } else { 4 })
                    .map(|i| match f.args.get(i) {
                        Some(v) => addr(session, *v),
                        None => crate::render::unreadable_addr(ptr).to_string(),
                    })
                    .collect();
                if x86 {
                    out.push_str(&format!(" {} ", words.join(" ")));
                } else {
                    out.push_str(&format!(" : {} : ", words.join(" ")));
                }
            } else {
                out.push_str(if x86 { " " } else { "     " });
            }
        }
        out.push_str(&call_site(session, stack, f, style.params));
        if let (Some(file), Some(line)) = (&f.source_file, f.source_line) {
            out.push_str(&format!(" [{file} @ {line}]"));
        }
        out.push('\n');
    }
    if let Some(note) = &stack.note {
        out.push_str(&format!("WARNING: {note}\n"));
    }
    out
}

fn call_site(session: &Session, stack: &Stack, f: &Frame, params: Params) -> String {
    if params != Params::None {
        if let (Some(m), Some(func)) = (&f.module, &f.function) {
            let off = match f.function_offset {
                Some(o) if o != 0 && !f.inline => format!("+{o:#x}"),
                _ => String::new(),
            };
            return match parameter_values(session, stack, f, params) {
                Some(list) => format!("{m}!{}({list}){off}", strip_parameters(func)),
                None => format!("{m}!{func}{off}"),
            };
        }
    }
    f.call_site()
}

/// `int * p = 0x00000000`00000000, int n = 0n5` from the PDB's parameters of the frame;
/// `None` when the frame has no PDB variables (the symbol's parameter list is shown then).
fn parameter_values(session: &Session, stack: &Stack, f: &Frame, params: Params) -> Option<String> {
    let variables = session.stack_frame_variables(stack, f.index).ok()?;
    let shown: Vec<String> = variables
        .iter()
        .filter(|v| v.is_parameter)
        .map(|v| {
            let view = session.view_variable(v);
            format!("{} {} = {}", view.type_name, view.name, view.value)
        })
        .collect();
    Some(match params {
        Params::Lines if !shown.is_empty() => format!("\n\t\t\t{}", shown.join(",\n\t\t\t")),
        _ => shown.join(", "),
    })
}
