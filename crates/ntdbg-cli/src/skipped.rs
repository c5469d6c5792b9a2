//! The one line that names the commands a batch did not run: after a failure (`ntdbg run`
//! without `--keep-going`), a cancel (Ctrl-C in the REPL) or a time-out. A 900-command script
//! cancelled at its second command gets one line, not 900.

use ntdbg_commands::{CommandResult, ErrorCode, Status};

/// Commands named in the line; the rest are counted.
const NAMED: usize = 5;

/// `not executed (an earlier command failed): 3 commands: kb; lm; dv`, or `None` when every
/// command ran.
pub fn line(results: &[CommandResult]) -> Option<String> {
    let skipped: Vec<&str> = results
        .iter()
        .filter(|r| r.status == Status::NotExecuted)
        .map(|r| r.command.as_str())
        .collect();
    if skipped.is_empty() {
        return None;
    }
    let cancelled = results.iter().any(|r| {
        r.status == Status::TimedOut
            || r.error
                .as_ref()
                .is_some_and(|e| e.code == ErrorCode::Cancelled)
    });
    let why = if cancelled {
        "the batch was cancelled"
    } else {
        "an earlier command failed"
    };
    let count = match skipped.len() {
        1 => String::new(),
        n => format!("{n} commands: "),
    };
    let more = match skipped.len().saturating_sub(NAMED) {
        0 => String::new(),
        n => format!(" and {n} more"),
    };
    let named = skipped[..skipped.len().min(NAMED)].join("; ");
    Some(format!("not executed ({why}): {count}{named}{more}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ntdbg_commands::CommandError;

    fn result(index: usize, status: Status, error: Option<ErrorCode>) -> CommandResult {
        CommandResult {
            index,
            command: format!("cmd{index}"),
            thread: 0,
            status,
            output: String::new(),
            typed: None,
            error: error.map(|code| CommandError::new(code, "x")),
        }
    }

    #[test]
    fn every_command_ran_no_line() {
        assert_eq!(line(&[result(0, Status::Succeeded, None)]), None);
    }

    #[test]
    fn a_long_cancelled_batch_is_one_line() {
        let mut results = vec![result(0, Status::Failed, Some(ErrorCode::Cancelled))];
        results.extend((1..=921).map(|i| result(i, Status::NotExecuted, None)));
        assert_eq!(
            line(&results).as_deref(),
            Some(
                "not executed (the batch was cancelled): 921 commands: cmd1; cmd2; cmd3; cmd4; cmd5 and 916 more"
            )
        );
    }

    #[test]
    fn one_command_after_a_failure_is_named() {
        let results = [
            result(0, Status::Failed, Some(ErrorCode::UnknownCommand)),
            result(1, Status::NotExecuted, None),
        ];
        assert_eq!(
            line(&results).as_deref(),
            Some("not executed (an earlier command failed): cmd1")
        );
    }
}
