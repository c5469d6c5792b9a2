//! Frames and their variables: `.frame [/r] [/c] [N]`, `dv [/t] [/v] [/i] [PATTERN]`.

use super::util::eval;
use crate::error::CommandError;
use crate::output::{CommandOutput, TypedResult};
use crate::render::addr;
use crate::spec::{CommandSpec, Invocation};
use ntdbg_engine::place::Place;
use ntdbg_engine::stack::{Frame, Stack};
use ntdbg_engine::variable_view::VariableView;
use ntdbg_engine::FrameVariable;
use ntdbg_engine::Session;
use ntdbg_symbols::wildcard_match;

const FRAME_DETAILS: &str = "`.frame N` selects frame N of the current stack (N in the default \
radix, hex, as `kn` numbers frames) as the local context: `dv`, `kp` values and `.frame` use it \
until the register context changes (`.ecxr`, `.cxr`, `~Ns`, a live stop reset it to frame 0). \
`.frame` alone shows the selected frame. `/r` also shows the frame's registers as the unwinder \
recovered them: registers it could not recover (volatile registers of caller frames, and \
everything but the instruction and stack pointers of a frame found by scanning) are shown as \
`?` — WinDbg prints stale values there. `/c` makes the frame's registers the register context \
(`r`, `k`, `u` start from it, `r` showing `?` for what was not recovered; `.cxr` alone goes \
back). Differences from WinDbg: the `= BasePtr …` forms are not supported, and `kn` does not \
mark the selected frame (WinDbg does not either; `.frame` shows it).";

const DV_DETAILS: &str = "Lists the parameters and locals of the selected frame (`.frame`) \
that the PDB declares for the scope of the frame's instruction (the procedure, the nested \
blocks containing it; for an inlined frame, its inline site). `/t` shows types, `/v` the \
location (`@rcx`, `@rsp+0x28`, with the address for memory), `/i` whether each is a parameter \
or a local (`prv param`/`prv local`). A wildcard pattern (`dv /t p*`) filters by name. A value \
whose location is not valid at the frame's instruction (outside its live range, in a gap), or \
whose register the unwinder did not recover for the frame, prints `<value unavailable>`: ntdbg \
never guesses; the typed result says why. Memory the dump does not hold prints `??`. Not yet \
shown: static locals (`S_LDATA32` in a procedure), and variables split over several registers \
(`S_DEFRANGE_SUBFIELD_REGISTER`) or x86 `vframe`-relative ones print as unavailable.";

pub(crate) const COMMANDS: &[CommandSpec] = &[
    CommandSpec::inspect(
        &[".frame"],
        ".frame [/r] [/c] [N]",
        "select or show the local context (frame) for dv and kp",
        FRAME_DETAILS,
        frame,
    ),
    CommandSpec::inspect(
        &["dv"],
        "dv [/t] [/v] [/i] [PATTERN]",
        "parameters and locals of the selected frame",
        DV_DETAILS,
        dv,
    ),
];

/// Splits leading `/x` switches (several letters may share one slash) from the rest.
fn switches<'a>(
    args: &'a str,
    allowed: &str,
    command: &str,
) -> Result<(String, &'a str), CommandError> {
    let mut flags = String::new();
    let mut rest = args.trim();
    while let Some(after) = rest.strip_prefix('/') {
        let end = after.find(char::is_whitespace).unwrap_or(after.len());
        for c in after[..end].chars() {
            if !allowed.contains(c) {
                return Err(CommandError::syntax(format!(
                    "Syntax error in '{command}': unknown switch /{c}"
                ))
                .with_hint(format!(
                    "{command} accepts /{}",
                    allowed
                        .chars()
                        .map(String::from)
                        .collect::<Vec<_>>()
                        .join(" /")
                )));
            }
            flags.push(c);
        }
        rest = after[end..].trim_start();
    }
    Ok((flags, rest))
}

fn frame(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    let (flags, rest) = switches(inv.args, "rc", ".frame")?;
    let index = if rest.is_empty() {
        session.selected_frame()
    } else {
        let n = eval(session, rest)?;
        usize::try_from(n).unwrap_or(usize::MAX)
    };
    select(session, index, flags.contains('r'), flags.contains('c'))
}

/// Selects frame `index` and prints its `kn` line (with `/r` its registers; with `/c` it
/// becomes the register context).
fn select(
    session: &mut Session,
    index: usize,
    registers: bool,
    set_context: bool,
) -> Result<CommandOutput, CommandError> {
    let frame = session.select_frame(index)?;
    let mut text = crate::render::stack::numbered_line(session, &frame);
    if registers {
        text.push_str(&frame_registers(&frame));
        text.push_str(&crate::render::code::current_instruction(
            session,
            frame.instruction,
        ));
    }
    if set_context {
        session.select_context((*frame.context).clone(), format!("frame {index:02x}"));
    }
    Ok(CommandOutput::with(
        text,
        TypedResult::Stack(Stack::new(
            session.current_thread().map_or(0, |t| t.id),
            vec![frame],
            Vec::new(),
        )),
    ))
}

/// The frame's registers in `r`'s layout, `?` for those the unwinder did not recover.
fn frame_registers(frame: &Frame) -> String {
    crate::render::registers::render_known_registers(&frame.context, &|name| {
        frame.register(name).is_some()
    })
}

struct DvStyle {
    types: bool,
    locations: bool,
    kinds: bool,
}

fn dv(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    let (flags, pattern) = switches(inv.args, "tviV", "dv")?;
    let style = DvStyle {
        types: flags.contains('t'),
        locations: flags.contains('v') || flags.contains('V'),
        kinds: flags.contains('i'),
    };
    let stack = session.stack()?;
    let index = session.selected_frame();
    let frame = stack
        .frames
        .get(index)
        .ok_or(ntdbg_engine::EngineError::NoSuchFrame(index))?;
    let variables = session.stack_frame_variables(&stack, index)?;
    let shown: Vec<(&FrameVariable, VariableView)> = variables
        .iter()
        .filter(|v| pattern.is_empty() || wildcard_match(pattern, &v.name))
        .map(|v| (v, session.view_variable(v)))
        .collect();
    let text = render_dv(session, &shown, &style);
    let views = shown.into_iter().map(|(_, view)| view).collect();
    Ok(CommandOutput::with(
        text,
        TypedResult::Locals {
            frame: index,
            function: frame.function.clone(),
            variables: views,
        },
    ))
}

fn render_dv(
    session: &Session,
    views: &[(&FrameVariable, VariableView)],
    style: &DvStyle,
) -> String {
    let label = |v: &VariableView| {
        if style.types {
            format!("{} {}", v.type_name, v.name)
        } else {
            v.name.clone()
        }
    };
    let width = views
        .iter()
        .map(|(_, v)| label(v).len())
        .max()
        .unwrap_or(0)
        .max(15);
    let mut out = String::new();
    for (variable, v) in views {
        if style.kinds {
            let kind = if v.kind == "parameter" {
                "param"
            } else {
                "local"
            };
            out.push_str(&format!("prv {kind}  "));
        }
        if style.locations {
            let address = match variable.value.place {
                Place::Memory(a) => addr(session, a),
                _ => String::new(),
            };
            let blank = if session.arch().pointer_size() == 4 {
                8
            } else {
                17
            };
            out.push_str(&format!("{address:>blank$} {:<14} ", v.location));
        }
        out.push_str(&format!("{:>width$} = {}\n", label(v), v.value));
    }
    out
}
