//! Call stacks in `k`'s layouts, shared by `k` and the commands that show a stack
//! (`!thread`, `!process`).

use crate::render::addr;
use ntdbg_engine::stack::{Frame, Stack};
use ntdbg_engine::text::{no_address, unreadable_address};
use ntdbg_engine::Session;
use ntdbg_symbols::strip_parameters;
use std::fmt::Write as _;

/// Which columns a `k` variant shows.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Style {
    /// `kn`: frame numbers.
    pub(crate) numbers: bool,
    /// `kb`/`kv`: the first stack words ("Args to Child").
    pub(crate) args: bool,
    /// `kp`/`kP`: parameters with their values.
    pub(crate) params: Params,
    /// `kc`: call sites only.
    pub(crate) clean: bool,
}

/// How `k` shows a function's parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Params {
    /// Not at all (`k`, `kn`, `kb`).
    None,
    /// With values on the frame's line (`kp`).
    Inline,
    /// With values, one per line (`kP`).
    Lines,
}

/// A stack in `k`'s plain layout (Child-SP, RetAddr, Call Site), for commands that show one.
pub(crate) fn render_plain(session: &Session, stack: &Stack) -> String {
    render_with(session, stack, false, false)
}

/// A stack in `k`'s layout, with `kb`'s stack arguments (`args`) or `kp`'s parameter lists
/// (`params`) when asked (`!uniqstack -b -p`).
pub(crate) fn render_with(session: &Session, stack: &Stack, args: bool, params: bool) -> String {
    let style = Style {
        numbers: false,
        args,
        params: if params { Params::Inline } else { Params::None },
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
    let stack = Stack::new(0, vec![frame.clone()], Vec::new());
    let text = render_stack(session, &stack, style);
    // The frame's own line: the last (after the header and any warning), with its newline.
    let lines = text.trim_end_matches('\n');
    let line = lines.rsplit_once('\n').map_or(lines, |(_, line)| line);
    format!("{line}\n")
}

/// WinDbg's line before the first frame it could not unwind with unwind data; ntdbg prints
/// it before the first frame whose return address could not be checked
/// ([`Frame::is_trusted`]).
const UNVERIFIED_WARNING: &str =
    "WARNING: Stack unwind information not available. Following frames may be wrong.\n";

/// A stack in the layout of the `k` variant `style`.
pub(crate) fn render_stack(session: &Session, stack: &Stack, style: Style) -> String {
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
        let _ = writeln!(out, "{num}{header}Call Site");
    } else {
        out.push_str("Call Site\n");
    }
    let mut warned = false;
    for f in &stack.frames {
        if !warned && !f.is_trusted() {
            out.push_str(UNVERIFIED_WARNING);
            warned = true;
        }
        if style.clean {
            out.push_str(&call_site(session, stack, f, style.params));
            out.push('\n');
            continue;
        }
        if style.numbers {
            let _ = write!(out, "{:02x} ", f.index);
        }
        if f.inline {
            let dashes = no_address(ptr);
            let _ = write!(out, "(Inline Function) {dashes}");
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
            let ret = f.return_address.unwrap_or(0);
            let _ = write!(out, "{} {}", addr(session, child), addr(session, ret));
            if style.args {
                let words: Vec<String> = (0..if x86 { 3 } else { 4 })
                    .map(|i| match f.args.get(i) {
                        Some(v) => addr(session, *v),
                        None => unreadable_address(ptr).to_string(),
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
            let _ = write!(out, " [{file} @ {line}]");
        }
        out.push('\n');
    }
    if let Some(note) = &stack.note {
        let _ = writeln!(out, "WARNING: {note}");
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
