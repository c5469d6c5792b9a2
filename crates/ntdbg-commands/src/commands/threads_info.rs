//! What threads did: `!runaway` (times from the ThreadInfoList stream) and `!uniqstack`
//! (every thread's stack, identical ones shown once).

use crate::error::{excerpt, CommandError, ErrorCode};
use crate::output::{CommandOutput, TypedResult};
use crate::render::stack::render_with;
use crate::render::threads::header_line;
use crate::rows::{ThreadTimesRow, UniqueStack};
use crate::spec::{CommandSpec, Invocation};
use ntdbg_engine::Session;
use ntdbg_targets::ThreadTimes;

pub(crate) const COMMANDS: &[CommandSpec] = &[
    CommandSpec::inspect(
        &["!runaway"],
        "!runaway [FLAGS]",
        "time each thread spent in user mode (1), kernel mode (2) and since it started (4)",
        "FLAGS add up (default 1). Each table lists the threads as `~N:TID`, longest time first, \
         as `D days H:MM:SS.mmm`. The times come from the dump's ThreadInfoList stream (written \
         with MiniDumpWithThreadInfo); elapsed time is the dump's time minus the thread's \
         creation time. A thread name, when the dump records one, follows its row.",
        runaway,
    ),
    CommandSpec::inspect(
        &["!uniqstack"],
        "!uniqstack [-b] [-p]",
        "every thread's stack, identical stacks shown once with the threads that share them",
        "Stacks are identical when their frames have the same instruction addresses. Each \
         distinct stack is shown under the `~` line of its first thread; when other threads share \
         it, a line names them (ntdbg's addition; WinDbg only lists them at the end). The summary \
         is WinDbg's: `Total threads: N`, `Duplicate callstacks: M (windbg thread #s follow):` \
         and the duplicate thread numbers. -b adds the first stack arguments (as kb), -p the \
         parameter lists (as kp). Threads without a register context are listed as such.",
        uniqstack,
    ),
];

/// Which time of a row a `!runaway` table shows.
type TimeOf = fn(&ThreadTimesRow) -> Option<u64>;

/// 100 ns units per millisecond.
const TICKS_PER_MS: u64 = 10_000;
/// FILETIME of the Unix epoch (100 ns units since 1601).
const UNIX_EPOCH_FILETIME: u64 = 116_444_736_000_000_000;

fn runaway(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    let flags = match inv.args.trim() {
        "" => 1,
        a => super::util::eval(session, a)?,
    };
    if flags & 7 == 0 {
        return Err(CommandError::syntax(format!(
            "!runaway {}: flags must include 1 (user), 2 (kernel) or 4 (elapsed)",
            excerpt(inv.args)
        )));
    }
    let Some(times) = session.target().thread_times() else {
        return Err(CommandError::new(
            ErrorCode::NoThreadTimes,
            "The dump has no thread times (ThreadInfoList stream)",
        )
        .with_hint("the dump was written without MiniDumpWithThreadInfo"));
    };
    let dump_time = session
        .target()
        .system()
        .dump_time
        .map(|t| u64::from(t) * 1000 * TICKS_PER_MS + UNIX_EPOCH_FILETIME);
    let rows: Vec<ThreadTimesRow> = session
        .target()
        .threads()
        .iter()
        .enumerate()
        .filter_map(|(index, thread)| {
            let t = times.iter().find(|t| t.thread_id == thread.id)?;
            Some(times_row(index, thread.name.clone(), t, dump_time))
        })
        .collect();
    let ids: Vec<u32> = rows
        .iter()
        .map(|r| session.target().threads()[r.index].id)
        .collect();
    let mut text = String::new();
    let tables: [(u64, &str, TimeOf); 3] = [
        (1, "User Mode Time", |r| Some(r.user_ms)),
        (2, "Kernel Mode Time", |r| Some(r.kernel_ms)),
        (4, "Elapsed Time", |r| r.elapsed_ms),
    ];
    for (bit, title, value) in tables {
        if flags & bit == 0 {
            continue;
        }
        text.push_str(&format!(" {title}\n  Thread       Time\n"));
        let mut sorted: Vec<(&ThreadTimesRow, u32)> =
            rows.iter().zip(ids.iter().copied()).collect();
        sorted.sort_by_key(|(r, _)| std::cmp::Reverse(value(r)));
        for (r, id) in sorted {
            let label = format!("{:>4}:{id:x}", r.index);
            let time = value(r).map_or_else(|| "<unknown>".to_string(), duration);
            let name = r
                .name
                .as_ref()
                .map(|n| format!(" \"{n}\""))
                .unwrap_or_default();
            text.push_str(&format!("{label:<14} {time}{name}\n"));
        }
    }
    Ok(CommandOutput::with(
        text,
        TypedResult::ThreadTimes { threads: rows },
    ))
}

fn times_row(
    index: usize,
    name: Option<String>,
    t: &ThreadTimes,
    dump_time: Option<u64>,
) -> ThreadTimesRow {
    let elapsed = match (dump_time, t.create_time) {
        (Some(now), created) if created != 0 => {
            let end = if t.exit_time != 0 { t.exit_time } else { now };
            end.checked_sub(created).map(|d| d / TICKS_PER_MS)
        }
        _ => None,
    };
    ThreadTimesRow {
        index,
        id: format!("{:#x}", t.thread_id),
        name,
        user_ms: t.user_time / TICKS_PER_MS,
        kernel_ms: t.kernel_time / TICKS_PER_MS,
        elapsed_ms: elapsed,
        start_address: format!("{:#x}", t.start_address),
        affinity: format!("{:#x}", t.affinity),
    }
}

/// Milliseconds as `!runaway` prints them: `0 days 0:00:00.093`.
fn duration(ms: u64) -> String {
    let secs = ms / 1000;
    format!(
        "{} days {}:{:02}:{:02}.{:03}",
        secs / 86_400,
        (secs % 86_400) / 3600,
        (secs % 3600) / 60,
        secs % 60,
        ms % 1000
    )
}

fn uniqstack(session: &mut Session, inv: &Invocation<'_>) -> Result<CommandOutput, CommandError> {
    let (mut args, mut params) = (false, false);
    for word in inv.args.split_whitespace() {
        match word {
            "-b" => args = true,
            "-p" => params = true,
            other => {
                return Err(CommandError::syntax(format!(
                    "Syntax error in '!uniqstack': unexpected '{}'",
                    excerpt(other)
                ))
                .with_hint("use `!uniqstack`, `!uniqstack -b` or `!uniqstack -p`"))
            }
        }
    }
    let count = session.target().threads().len();
    let mut stacks: Vec<UniqueStack> = Vec::new();
    let mut keys: Vec<Option<Vec<u64>>> = Vec::new();
    let mut duplicates: Vec<usize> = Vec::new();
    for index in 0..count {
        super::util::thread_step(session, index, count)?;
        let (stack, unavailable) = match session.thread_stack(index) {
            Ok(s) => (Some(s), None),
            Err(e) => (None, Some(e.to_string())),
        };
        let key = stack
            .as_ref()
            .map(|s| s.frames.iter().map(|f| f.instruction).collect::<Vec<u64>>());
        match keys.iter().position(|k| key.is_some() && *k == key) {
            Some(i) => {
                stacks[i].threads.push(index);
                duplicates.push(index);
            }
            None => {
                keys.push(key);
                stacks.push(UniqueStack {
                    threads: vec![index],
                    stack,
                    unavailable,
                });
            }
        }
    }
    let mut text = format!("Processing {count} threads, please wait\n\n");
    for u in &stacks {
        let first = u.threads[0];
        text.push_str(&header_line(session, first));
        text.push('\n');
        match (&u.stack, &u.unavailable) {
            (Some(stack), _) => text.push_str(&render_with(session, stack, args, params)),
            (None, reason) => text.push_str(&format!(
                "<no stack: {}>\n",
                reason.as_deref().unwrap_or("unknown")
            )),
        }
        if u.threads.len() > 1 {
            let others: Vec<String> = u.threads[1..].iter().map(|i| i.to_string()).collect();
            text.push_str(&format!(
                "    {} threads have this stack; the others: {}\n",
                u.threads.len(),
                others.join(", ")
            ));
        }
        text.push('\n');
    }
    text.push_str(&format!("Total threads: {count}\n"));
    text.push_str(&format!(
        "Duplicate callstacks: {} (windbg thread #s follow):\n",
        duplicates.len()
    ));
    if !duplicates.is_empty() {
        let list: Vec<String> = duplicates.iter().map(|i| i.to_string()).collect();
        text.push_str(&list.join(", "));
        text.push('\n');
    }
    Ok(CommandOutput::with(
        text,
        TypedResult::UniqueStacks {
            stacks,
            total_threads: count,
            duplicate_threads: duplicates.len(),
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_use_windbg_layout() {
        assert_eq!(duration(93), "0 days 0:00:00.093");
        assert_eq!(duration(90_061_001), "1 days 1:01:01.001");
    }

    #[test]
    fn elapsed_runs_from_creation_to_the_dump_or_the_exit() {
        let t = ThreadTimes {
            thread_id: 0x55c,
            dump_flags: 0,
            exit_status: 0x103,
            create_time: UNIX_EPOCH_FILETIME,
            exit_time: 0,
            kernel_time: 1_400_000,
            user_time: 930_000,
            start_address: 0x40_1000,
            affinity: 1,
        };
        let now = UNIX_EPOCH_FILETIME + 43_533 * TICKS_PER_MS;
        let row = times_row(0, None, &t, Some(now));
        assert_eq!((row.user_ms, row.kernel_ms), (93, 140));
        assert_eq!(row.elapsed_ms, Some(43_533));
        let exited = ThreadTimes {
            exit_time: UNIX_EPOCH_FILETIME + 5 * TICKS_PER_MS,
            ..t
        };
        assert_eq!(times_row(0, None, &exited, Some(now)).elapsed_ms, Some(5));
    }
}
