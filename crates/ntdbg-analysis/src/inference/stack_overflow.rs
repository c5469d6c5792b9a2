//! Stack overflow (0xC00000FD): the repeating cycle of frames (one function or several) and
//! the size of the stack that ran out.

use crate::conclusion::Inference;
use ntdbg_engine::stack::{Frame, DEEPEST_WALK, MAX_FRAMES};
use ntdbg_engine::Session;
use ntdbg_targets::ExceptionEvent;

/// Longest cycle of functions looked for.
const MAX_CYCLE: usize = 8;
/// Fewest repetitions that make a cycle.
const MIN_REPEATS: usize = 3;

/// A run of consecutive frames with the same function.
#[derive(Debug, Clone)]
struct Run {
    /// `module!function` (or `module+0x…` without symbols).
    pub name: String,
    /// How many frames in a row.
    pub count: usize,
}

/// The stack with consecutive repeats collapsed.
fn collapse(names: &[String]) -> Vec<Run> {
    let mut runs: Vec<Run> = Vec::new();
    for name in names.iter().cloned() {
        match runs.last_mut() {
            Some(r) if r.name == name => r.count += 1,
            _ => runs.push(Run { name, count: 1 }),
        }
    }
    runs
}

/// `module!function` without the offset, or `module+0x…` without symbols.
fn frame_name(f: &Frame) -> String {
    let site = f.call_site();
    match &f.function {
        Some(_) => site.split('+').next().unwrap_or(&site).to_string(),
        None => site,
    }
}

/// [`frame_name`] of every frame; a frame in the same function of the same module as the one
/// before it (a recursion) has its name, not built again.
fn frame_names(frames: &[Frame]) -> Vec<String> {
    let mut names: Vec<String> = Vec::with_capacity(frames.len());
    for (i, f) in frames.iter().enumerate() {
        let same_function = i > 0 && {
            let previous = &frames[i - 1];
            f.module.is_some()
                && f.function.is_some()
                && f.module == previous.module
                && f.function == previous.function
        };
        let name = match names.last() {
            Some(last) if same_function => last.clone(),
            _ => frame_name(f),
        };
        names.push(name);
    }
    names
}

/// A repeating sequence of frames: `period` functions repeated `repeats` times from `first`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Cycle {
    /// Index of the first frame of the cycle's repetitions.
    pub first: usize,
    /// How many frames one repetition spans.
    pub period: usize,
    /// How many whole repetitions in a row.
    pub repeats: usize,
}

/// The cycle covering the most frames (a shorter period wins a tie), when one repeats at
/// least [`MIN_REPEATS`] times.
pub(crate) fn find_cycle(names: &[String]) -> Option<Cycle> {
    let mut best: Option<Cycle> = None;
    for period in 1..=MAX_CYCLE.min(names.len() / MIN_REPEATS) {
        let mut i = 0;
        while i + period < names.len() {
            // The longest stretch from i where every name equals the one `period` later.
            let mut end = i;
            while end + period < names.len() && names[end] == names[end + period] {
                end += 1;
            }
            let covered = end - i + period;
            let repeats = covered / period;
            // Periods are tried shortest first and must cover strictly more frames, so a
            // unit that is itself a shorter cycle repeated never wins.
            if repeats >= MIN_REPEATS
                && best
                    .as_ref()
                    .is_none_or(|b| repeats * period > b.repeats * b.period)
            {
                best = Some(Cycle {
                    first: i,
                    period,
                    repeats,
                });
            }
            i = end.max(i) + 1;
        }
    }
    best
}

/// The stack overflow inference.
pub(super) fn stack_overflow(
    session: &Session,
    event: &ExceptionEvent,
    frames: &[Frame],
) -> Inference {
    // A recursion that fills the walk's default length is walked to its end, so that the
    // report says how deep it went and where it was entered.
    let deep = (frames.len() >= MAX_FRAMES)
        .then(|| session.event_stack_to(DEEPEST_WALK).ok())
        .flatten()
        .filter(|s| s.frames.len() > frames.len());
    let frames = deep.as_ref().map_or(frames, |s| &s.frames[..]);
    let names = frame_names(frames);
    let cycle = find_cycle(&names);
    let reaches_end = |c: &Cycle| c.first + c.repeats * c.period >= frames.len();
    // The first frame past the recursion that is not one of its functions (a partial last
    // repetition belongs to it): the caller that entered it, when the walk got there.
    let entry = cycle
        .as_ref()
        .and_then(|c| {
            let members = &names[c.first..c.first + c.period];
            names[(c.first + c.repeats * c.period).min(names.len())..]
                .iter()
                .find(|n| !members.contains(n))
        })
        .map(|caller| format!(", entered from {caller}"))
        .unwrap_or_default();
    let text = match &cycle {
        Some(c) if c.period == 1 => {
            let last = c.first + c.repeats - 1;
            let tail = if reaches_end(c) {
                " and the walk ended inside the recursion, so it is at least that deep"
            } else {
                ""
            };
            format!(
                "unbounded recursion: {} repeats {} times (frames {}-{last}){tail}{entry}",
                names[c.first], c.repeats, c.first
            )
        }
        Some(c) => {
            let last = c.first + c.repeats * c.period - 1;
            let members: Vec<&str> = names[c.first..c.first + c.period]
                .iter()
                .rev()
                .map(String::as_str)
                .collect();
            let tail = if reaches_end(c) {
                " and the walk ended inside the cycle, so it is at least that deep"
            } else {
                ""
            };
            format!(
                "unbounded recursion through a cycle of {} functions ({} -> {}) repeated {} times (frames {}-{last}){tail}{entry}",
                c.period,
                members.join(" -> "),
                members[0],
                c.repeats,
                c.first
            )
        }
        None => "stack overflow: the thread exhausted its stack".into(),
    };
    let shape = shape(&names, cycle.as_ref());
    let mut basis = format!(
        "exception code 0xC00000FD (stack overflow); {} frames walked, collapsed: {shape}",
        frames.len()
    );
    if let Some(bytes) = cycle.as_ref().and_then(|c| bytes_per_repetition(frames, c)) {
        basis.push_str(&format!("; each repetition uses {bytes:#x} bytes of stack"));
    }
    if let Some(size) = stack_size(session, event, frames) {
        basis.push_str("; ");
        basis.push_str(&size);
    }
    Inference::new("stack_overflow", text, basis)
}

/// The stack in a few words, innermost first: runs of one function as `f x12`, and a longer
/// cycle as `(f <- g) x40`.
fn shape(names: &[String], cycle: Option<&Cycle>) -> String {
    let runs = |part: &[String]| -> Vec<String> {
        collapse(part)
            .into_iter()
            .map(|r| {
                if r.count > 1 {
                    format!("{} x{}", r.name, r.count)
                } else {
                    r.name
                }
            })
            .collect()
    };
    let mut parts = match cycle.filter(|c| c.period > 1) {
        Some(c) => {
            let end = c.first + c.repeats * c.period;
            let mut parts = runs(&names[..c.first]);
            parts.push(format!(
                "({}) x{}",
                names[c.first..c.first + c.period].join(" <- "),
                c.repeats
            ));
            parts.extend(runs(&names[end..]));
            parts
        }
        None => runs(names),
    };
    parts.truncate(6);
    parts.join(" <- ")
}

/// The stack one repetition of the cycle takes, when every repetition takes the same (frames
/// that disagree, such as scanned ones, make the figure unknown).
fn bytes_per_repetition(frames: &[Frame], c: &Cycle) -> Option<u64> {
    let starts: Vec<u64> = (0..c.repeats)
        .map(|r| frames[c.first + r * c.period].stack_pointer)
        .collect();
    let first = starts.get(1)?.checked_sub(starts[0]).filter(|d| *d > 0)?;
    starts
        .windows(2)
        .all(|w| w[1].checked_sub(w[0]) == Some(first))
        .then_some(first)
}

/// The size of the faulting thread's stack and where that figure comes from: the TEB's
/// StackBase and DeallocationStack (the reservation) or StackLimit (committed), else the
/// MemoryInfoList's allocation, else the memory the dump captured.
fn stack_size(session: &Session, event: &ExceptionEvent, frames: &[Frame]) -> Option<String> {
    let sp = frames.first().map(|f| f.stack_pointer)?;
    let Some(thread) = session
        .target()
        .threads()
        .iter()
        .find(|t| t.id == event.thread_id)
    else {
        // No thread list (or not this thread): only the memory range holding sp is known.
        let region = session.target().stack_region_at(sp)?;
        return Some(format!(
            "the dump holds {} of stack memory from {:#x} to {:#x} around the stack pointer; the thread's own stack range is not in the dump (no thread entry)",
            human(region.size),
            region.base,
            region.end()
        ));
    };
    let index = session
        .target()
        .threads()
        .iter()
        .position(|t| t.id == thread.id)?;
    if let Ok(teb) = session.teb(index) {
        if let (Some(base), Some(limit)) = (teb.stack_base, teb.stack_limit) {
            if limit < base && limit <= sp && sp <= base {
                return Some(match teb.deallocation_stack.filter(|d| *d < limit) {
                    Some(reserved) => format!(
                        "the thread's stack reserves {} (TEB StackBase {base:#x} - DeallocationStack {reserved:#x}); {} in use at the overflow",
                        human(base - reserved),
                        human(base - sp)
                    ),
                    None => format!(
                        "the thread's stack has {} committed (TEB StackBase {base:#x} - StackLimit {limit:#x}); {} in use at the overflow",
                        human(base - limit),
                        human(base - sp)
                    ),
                });
            }
        }
    }
    if let Some(info) = session.target().memory_info() {
        if let Some(region) = info.iter().find(|r| r.base <= sp && sp < r.end()) {
            let allocation = region.allocation_base;
            let end = info
                .iter()
                .filter(|r| r.allocation_base == allocation)
                .map(|r| r.end())
                .max()?;
            return Some(format!(
                "the stack's allocation is {} ({allocation:#x}..{end:#x}, MemoryInfoList); {} in use at the overflow",
                human(end - allocation),
                human(end.saturating_sub(sp))
            ));
        }
    }
    let stack = thread.stack.as_ref()?;
    (stack.base <= sp && sp < stack.end()).then(|| {
        format!(
            "the dump captured {} of the thread's stack ({:#x}..{:#x}); its reservation is not in the dump (no TEB, no MemoryInfoList)",
            human(stack.size),
            stack.base,
            stack.end()
        )
    })
}

/// `1 MiB`, `256 KiB`, `0x1230 bytes`.
fn human(bytes: u64) -> String {
    if bytes >= 1 << 20 && bytes.is_multiple_of(1 << 20) {
        format!("{} MiB", bytes >> 20)
    } else if bytes >= 1 << 10 && bytes.is_multiple_of(1 << 10) {
        format!("{} KiB", bytes >> 10)
    } else {
        format!("{bytes:#x} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn single_function_recursion() {
        let n = names(&["a!leaf", "a!f", "a!f", "a!f", "a!f", "a!main"]);
        assert_eq!(
            find_cycle(&n),
            Some(Cycle {
                first: 1,
                period: 1,
                repeats: 4
            })
        );
    }

    #[test]
    fn two_function_cycle() {
        let n = names(&[
            "a!pong", "a!ping", "a!pong", "a!ping", "a!pong", "a!ping", "a!pong", "a!run",
        ]);
        let c = find_cycle(&n).expect("a cycle");
        assert_eq!((c.first, c.period, c.repeats), (0, 2, 3));
    }

    #[test]
    fn three_function_cycle_after_noise() {
        let mut n = names(&["a!x", "a!y"]);
        for _ in 0..5 {
            n.extend(names(&["a!c", "a!b", "a!a"]));
        }
        let c = find_cycle(&n).expect("a cycle");
        assert_eq!((c.first, c.period, c.repeats), (2, 3, 5));
    }

    #[test]
    fn no_cycle_without_repeats() {
        assert_eq!(find_cycle(&names(&["a!x", "a!y", "a!x", "a!z"])), None);
        assert_eq!(find_cycle(&[]), None);
    }

    #[test]
    fn sizes_read_well() {
        assert_eq!(human(1 << 20), "1 MiB");
        assert_eq!(human(256 << 10), "256 KiB");
        assert_eq!(human(0x1234), "0x1234 bytes");
    }
}
