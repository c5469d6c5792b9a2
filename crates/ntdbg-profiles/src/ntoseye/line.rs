//! A `command` line cut into the steps ntdbg runs: runs of WinDbg commands, which go to the
//! command runner as one batch, and ntoseye's own `break`, which interrupts a running target
//! (WinDbg's Ctrl+Break; ntdbg's `break_in`), so `break; bp X; g` works as one line.

use ntdbg_commands::Batch;
use ntdbg_mcp::ToolError;

/// One step of a line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// ntoseye's `break`.
    Break,
    /// WinDbg commands, `;`-separated.
    Commands(String),
}

impl Step {
    /// The step as the line spelled it.
    pub fn text(&self) -> &str {
        match self {
            Step::Break => "break",
            Step::Commands(commands) => commands,
        }
    }
}

/// The steps of `line`, in order; none for a blank line.
///
/// # Errors
/// The line does not split (an unterminated quote or block, or it is too long).
pub fn steps(line: &str) -> Result<Vec<Step>, ToolError> {
    if line.trim().is_empty() {
        return Ok(Vec::new());
    }
    let batch = Batch::split(line).map_err(ToolError::from)?;
    let mut steps = Vec::new();
    let mut run: Vec<&str> = Vec::new();
    for command in batch.commands() {
        if command.trim() == "break" {
            if !run.is_empty() {
                steps.push(Step::Commands(run.join("; ")));
                run.clear();
            }
            steps.push(Step::Break);
        } else {
            run.push(command);
        }
    }
    if !run.is_empty() {
        steps.push(Step::Commands(run.join("; ")));
    }
    Ok(steps)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn break_splits_the_line_and_the_rest_stays_batched() {
        assert_eq!(steps("  ").ok(), Some(vec![]));
        assert_eq!(steps("k").ok(), Some(vec![Step::Commands("k".into())]));
        assert_eq!(
            steps("break; bp nt!NtCreateFile; g").ok(),
            Some(vec![
                Step::Break,
                Step::Commands("bp nt!NtCreateFile; g".into())
            ])
        );
        assert_eq!(
            steps("r; break").ok(),
            Some(vec![Step::Commands("r".into()), Step::Break])
        );
        // A quoted `break` is an argument, not the command.
        assert_eq!(
            steps(".echo \"break\"").ok(),
            Some(vec![Step::Commands(".echo \"break\"".into())])
        );
        assert!(steps(".echo \"open").is_err());
    }
}
