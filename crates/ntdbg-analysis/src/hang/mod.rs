//! Hangs and deadlocks: what every thread waits on ([`wait_chain`]), the critical sections
//! involved ([`critical_section`]), the critical sections reachable from the threads
//! ([`locks`]), and the conclusions for a dump without an exception: each thread's wait, and a
//! deadlock cycle reported as such.

pub mod critical_section;
pub mod locks;
pub mod wait_chain;

use crate::conclusion::Inference;
use serde::Serialize;
use wait_chain::{ThreadWait, WaitKind};

/// One thread's wait in the analysis report (addresses and ids as `0x` hex strings).
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
pub struct WaitFacts {
    /// The thread's index (`~N`).
    pub thread: usize,
    /// Its id.
    pub thread_id: String,
    /// `critical_section`, `srw_lock`, `condition_variable`, `object`, `objects`, `sleep`,
    /// `address`, `keyed_event`, `message`, `io_completion`, `thread_pool`, or `null` when no
    /// wait function is on top of its stack.
    pub waits_on: Option<&'static str>,
    /// The outermost wait function's frame number.
    pub frame: Option<usize>,
    /// Its call site.
    pub function: Option<String>,
    /// The first frame outside system modules.
    pub caller: Option<String>,
    /// The critical section waited for, when known.
    pub object: Option<String>,
    /// The thread owning it, from its `OwningThread`.
    pub owner_thread_id: Option<String>,
    /// The wait in one line.
    pub text: String,
    /// How it was found, or why no more is known.
    pub basis: String,
}

/// A cycle of threads each waiting for a critical section the next one owns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deadlock {
    /// Indexes into the waits, in cycle order: each waits for a section owned by the next.
    pub members: Vec<usize>,
}

/// The cycles among the waits: following "waits for a section owned by" from every thread,
/// at most as many steps as there are threads. Each cycle is reported once, starting at its
/// lowest thread index.
pub fn deadlocks(waits: &[ThreadWait]) -> Vec<Deadlock> {
    let next = |i: usize| -> Option<usize> {
        let owner = waits[i].section.as_ref()?.section.owning_thread;
        waits.iter().position(|w| u64::from(w.thread_id) == owner)
    };
    let mut out: Vec<Deadlock> = Vec::new();
    for start in 0..waits.len() {
        let mut members = vec![start];
        let mut at = start;
        while members.len() <= waits.len() {
            let Some(n) = next(at) else { break };
            if n == start {
                if members.iter().all(|&m| m >= start)
                    && !out.iter().any(|d| d.members.contains(&start))
                {
                    out.push(Deadlock { members });
                }
                break;
            }
            if members.contains(&n) {
                break;
            }
            members.push(n);
            at = n;
        }
    }
    out
}

/// What a dump without an exception says about hangs: the inferences (deadlock cycles, held
/// sections with waiters, or what the threads wait on), each thread's wait, and the
/// limitations met on the way.
pub fn analyze_hang(
    session: &ntdbg_engine::Session,
) -> (Vec<Inference>, Vec<WaitFacts>, Vec<String>) {
    let waits = wait_chain::thread_waits(session);
    let mut inferences = hang_inferences(&waits);
    if !inferences.iter().any(|i| i.text.starts_with("deadlock")) {
        inferences.extend(contention_inferences(&unexplained_sections(
            session, &waits,
        )));
    }
    let mut limitations = Vec::new();
    if !waits.is_empty() && waits.iter().all(|w| w.kind.is_none()) {
        limitations.push(
            "what the threads wait on is unknown: no wait function was recognised on any stack (ntdll, kernelbase and kernel32 need symbols or their images on the symbol path to be named and unwound)"
                .to_string(),
        );
    }
    (inferences, wait_facts(&waits), limitations)
}

/// Held sections no wait chain leads to, each with where it was found: the process-wide list
/// when it can be walked, else the captured thread stacks (scanned).
fn unexplained_sections(
    session: &ntdbg_engine::Session,
    waits: &[ThreadWait],
) -> Vec<(String, critical_section::CriticalSection)> {
    let waited: Vec<u64> = waits
        .iter()
        .filter_map(|w| Some(w.section.as_ref()?.section.address))
        .collect();
    match locks::process_list(session) {
        Ok(list) => list
            .sections
            .into_iter()
            .filter(|cs| !waited.contains(&cs.address))
            .map(|cs| ("listed in ntdll!RtlCriticalSectionList".to_string(), cs))
            .collect(),
        Err(_) => locks::reachable_sections(session, waits)
            .into_iter()
            .filter_map(|r| match r.found {
                locks::Found::StackScan { thread_id } => Some((
                    format!("found by scanning the stack of thread {thread_id:#x}"),
                    r.section,
                )),
                locks::Found::WaitedFor { .. } => None,
            })
            .collect(),
    }
}

/// Held critical sections with waiters that no wait chain explained.
fn contention_inferences(
    sections: &[(String, critical_section::CriticalSection)],
) -> Vec<Inference> {
    sections
        .iter()
        .filter(|(_, cs)| cs.locked && cs.waiters > 0)
        .map(|(found, cs)| Inference {
            kind: "contention".into(),
            text: format!(
                "contention: critical section {:#x} is held by thread {:#x} and {} thread{} wait{} for it (the waiters are not identified)",
                cs.address,
                cs.owning_thread,
                cs.waiters,
                if cs.waiters == 1 { "" } else { "s" },
                if cs.waiters == 1 { "s" } else { "" },
            ),
            basis: format!(
                "{found}: RTL_CRITICAL_SECTION fields check out (LockCount {}, RecursionCount {}, OwningThread {:#x})",
                cs.lock_count, cs.recursion_count, cs.owning_thread
            ),
        })
        .collect()
}

/// The typed facts of every wait.
pub fn wait_facts(waits: &[ThreadWait]) -> Vec<WaitFacts> {
    waits.iter().map(facts).collect()
}

fn facts(w: &ThreadWait) -> WaitFacts {
    let section = w.section.as_ref();
    WaitFacts {
        thread: w.thread,
        thread_id: format!("{:#x}", w.thread_id),
        waits_on: w.kind.map(WaitKind::name),
        frame: w.frame,
        function: w.function.clone(),
        caller: w.caller.clone(),
        object: section.map(|s| format!("{:#x}", s.section.address)),
        owner_thread_id: section.map(|s| format!("{:#x}", s.section.owning_thread)),
        text: wait_text(w),
        basis: wait_basis(w),
    }
}

/// `thread 0xd4 (~1) waits to enter critical section 0x11fc10 owned by thread 0xd8`.
fn wait_text(w: &ThreadWait) -> String {
    let who = format!("thread {:#x} (~{})", w.thread_id, w.thread);
    let from = w
        .caller
        .as_ref()
        .map(|c| format!(" in {c}"))
        .unwrap_or_default();
    match (w.kind, &w.section) {
        (Some(WaitKind::CriticalSection), Some(s)) => format!(
            "{who} waits to enter critical section {:#x} owned by thread {:#x}{from}",
            s.section.address, s.section.owning_thread
        ),
        (Some(WaitKind::CriticalSection), None) => {
            format!("{who} waits to enter a critical section (which one is unknown){from}")
        }
        (Some(k), _) => format!("{who} {}{from}", k.describe()),
        (None, _) => format!("{who}: no wait function recognised on top of its stack{from}"),
    }
}

/// The frame and the fields a wait rests on.
fn wait_basis(w: &ThreadWait) -> String {
    let mut parts = Vec::new();
    if let (Some(frame), Some(function)) = (w.frame, &w.function) {
        let named = if w.named_by_exports {
            " (named by its module's export table)"
        } else {
            ""
        };
        parts.push(format!("frame {frame} is {function}{named}"));
    }
    if let Some(s) = &w.section {
        parts.push(section_basis(s));
    }
    if let Some(why) = &w.unknown {
        parts.push(why.clone());
    }
    parts.join("; ")
}

/// `rbx recovered in frame 3 = 0x11fc10, whose fields check out: LockCount 1, …`.
fn section_basis(s: &wait_chain::FoundSection) -> String {
    let cs = &s.section;
    format!(
        "{} recovered by unwinding in frame {} = {:#x}, read as RTL_CRITICAL_SECTION whose fields check out (LockCount {}, RecursionCount {}, OwningThread {:#x}, {} waiter{})",
        s.register,
        s.frame,
        cs.address,
        cs.lock_count,
        cs.recursion_count,
        cs.owning_thread,
        cs.waiters,
        if cs.waiters == 1 { "" } else { "s" }
    )
}

/// The inferences of a dump without an exception: each deadlock cycle, then one line on what
/// the threads wait on.
pub fn hang_inferences(waits: &[ThreadWait]) -> Vec<Inference> {
    let mut out: Vec<Inference> = deadlocks(waits)
        .iter()
        .map(|d| deadlock_inference(waits, d))
        .collect();
    let waiting: Vec<&ThreadWait> = waits.iter().filter(|w| w.kind.is_some()).collect();
    if out.is_empty() && !waiting.is_empty() {
        out.push(Inference {
            kind: "hang".into(),
            text: format!(
                "hang: {} of {} threads are blocked waiting and no deadlock cycle was found: {}",
                waiting.len(),
                waits.len(),
                waiting
                    .iter()
                    .map(|w| wait_text(w))
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
            basis: format!(
                "no exception in the dump (taken by hand or by a watchdog); {}",
                waiting
                    .iter()
                    .map(|w| format!("thread {:#x}: {}", w.thread_id, wait_basis(w)))
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        });
    }
    out
}

/// `deadlock: thread A holds critical section X and waits for Y held by thread B, which
/// waits for X`.
fn deadlock_inference(waits: &[ThreadWait], d: &Deadlock) -> Inference {
    let section = |i: usize| {
        waits[i]
            .section
            .as_ref()
            .map(|s| s.section.address)
            .unwrap_or_default()
    };
    let first = d.members[0];
    let last = *d.members.last().unwrap_or(&first);
    let mut text = format!(
        "deadlock: thread {:#x} holds critical section {:#x} and waits for critical section {:#x}",
        waits[first].thread_id,
        section(last),
        section(first)
    );
    for (k, &m) in d.members.iter().enumerate().skip(1) {
        text.push_str(&format!(
            " held by thread {:#x}, which waits for critical section {:#x}",
            waits[m].thread_id,
            section(m)
        ));
        if k + 1 == d.members.len() {
            text.push_str(&format!(" held by thread {:#x}", waits[first].thread_id));
        }
    }
    let basis = d
        .members
        .iter()
        .map(|&m| {
            format!(
                "thread {:#x}: {}",
                waits[m].thread_id,
                wait_basis(&waits[m])
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    Inference::new("deadlock", text, basis)
}

#[cfg(test)]
mod tests {
    use super::critical_section::{CriticalSection, LockEncoding};
    use super::wait_chain::FoundSection;
    use super::*;

    fn waiting(thread: usize, id: u32, section: u64, owner: u32) -> ThreadWait {
        ThreadWait {
            thread,
            thread_id: id,
            kind: Some(WaitKind::CriticalSection),
            frame: Some(3),
            function: Some("ntdll!RtlEnterCriticalSection+0x91".into()),
            named_by_exports: false,
            caller: Some("app!worker+0x85".into()),
            section: Some(FoundSection {
                section: CriticalSection {
                    address: section,
                    debug_info: 0,
                    lock_count: 1,
                    recursion_count: 1,
                    owning_thread: u64::from(owner),
                    lock_semaphore: 0,
                    spin_count: 0,
                    encoding: Some(LockEncoding::Counted),
                    locked: true,
                    waiters: 1,
                    waiter_woken: None,
                    debug: None,
                },
                frame: 2,
                register: "rbx",
            }),
            unknown: None,
        }
    }

    #[test]
    fn two_thread_cycle_is_one_deadlock() {
        let waits = vec![
            waiting(0, 0x10, 0xa000, 0x20),
            waiting(1, 0x20, 0xb000, 0x10),
        ];
        let found = deadlocks(&waits);
        assert_eq!(
            found,
            vec![Deadlock {
                members: vec![0, 1]
            }]
        );
        let text = &hang_inferences(&waits)[0].text;
        assert_eq!(
            text,
            "deadlock: thread 0x10 holds critical section 0xb000 and waits for critical section 0xa000 held by thread 0x20, which waits for critical section 0xb000 held by thread 0x10"
        );
    }

    #[test]
    fn three_thread_cycle_and_a_bystander() {
        let mut waits = vec![
            waiting(0, 0x10, 0xa000, 0x20),
            waiting(1, 0x20, 0xb000, 0x30),
            waiting(2, 0x30, 0xc000, 0x10),
            // Waits for a lock of the cycle without being part of it.
            waiting(3, 0x40, 0xa000, 0x20),
        ];
        assert_eq!(
            deadlocks(&waits),
            vec![Deadlock {
                members: vec![0, 1, 2]
            }]
        );
        waits.truncate(2);
        // A chain that ends at a thread that does not wait is no deadlock.
        waits[1].section = None;
        assert!(deadlocks(&waits).is_empty());
    }

    #[test]
    fn self_owned_and_long_chains_stay_bounded() {
        // A thread "waiting" on a section it owns: a cycle of one.
        let waits = vec![waiting(0, 0x10, 0xa000, 0x10)];
        assert_eq!(deadlocks(&waits).len(), 1);
        // A long chain without a cycle ends.
        let chain: Vec<ThreadWait> = (0..200u32)
            .map(|i| waiting(i as usize, i + 1, 0x1000 * u64::from(i + 1), i + 2))
            .collect();
        assert!(deadlocks(&chain).is_empty());
    }
}
