//! Call stacks: `k`, `kb`, `kn`, `kv`, `kp`, `kP`, `kc` (with an optional frame count).

use super::util::eval;
use crate::error::CommandError;
use crate::output::{CommandOutput, TypedResult};
use crate::render::stack::{render_stack, Params, Style};
use crate::spec::{CommandSpec, Invocation};
use ntdbg_engine::Session;

/// WinDbg's default number of frames shown.
const DEFAULT_FRAMES: u64 = 256;

const K_DETAILS: &str =
    "A number after the command limits the frames (`kn 10`; 256 without one). The walk stops \
after 1,024 frames unless the number asks for more: on a stack overflow `kn 0n100000` walks to \
where the recursion began (up to 262,144 frames). `kb`/`kv` add the \
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
    let count = usize::try_from(count).unwrap_or(usize::MAX);
    // One frame past the count, so that the last row shown has its return address.
    let mut stack = session.stack_to(count.saturating_add(1))?;
    stack.truncate(count);
    let text = render_stack(session, &stack, style);
    Ok(CommandOutput::with(text, TypedResult::Stack(stack)))
}
