//! Turning disassembled lines into WinDbg's text output.

use super::types::Instruction;

/// The WinDbg text for `lines`: each label as its own `label:` line, then the instruction line;
/// every line ends with `\n`.
pub fn render(lines: &[Instruction]) -> String {
    let mut out = String::new();
    for line in lines {
        if let Some(label) = &line.label {
            out.push_str(label);
            out.push_str(":\n");
        }
        out.push_str(&line.text);
        out.push('\n');
    }
    out
}
