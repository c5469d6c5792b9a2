//! Breakpoint hits a stub holds back. A stub that reports one event at a time (winedbg) keeps
//! the others pending: a thread that executed the debugger's `int3` in the same moment as the
//! thread that is shown sits one byte past it, in the middle of the instruction under the
//! breakpoint, until its event is reported later. Shown like that, the thread looks moved
//! into an instruction, and a step or a run from there would execute the rest of one.
//!
//! When a stop is shown, such a thread's hit is cancelled, as gdbserver does for its own
//! threads: its program counter goes back to the breakpoint, so it executes the `int3` again
//! when it runs (and the hit is reported then); the event the stub still holds is
//! recognised as stale when it comes (the `int3` is at its program counter).

use ntdbg_gdbremote::{GdbClient, ThreadId};

use super::LiveControl;

impl LiveControl {
    /// Cancels the pending breakpoint hits of every thread but `shown` (see the module
    /// documentation). A thread one byte past an `int3` whose registers are those of its
    /// last trap (a step that executed a one-byte instruction under the breakpoint) has not
    /// run since, and is left alone.
    pub(super) fn cancel_pending_hits(&self, client: &mut GdbClient, shown: Option<ThreadId>) {
        if !client.writes_int3() || client.int3_sites().is_empty() {
            return;
        }
        let Ok(threads) = client.threads() else {
            return;
        };
        let shown_tid = shown.and_then(|t| t.tid());
        for thread in threads {
            let Some(tid) = thread.tid().filter(|&tid| Some(tid) != shown_tid) else {
                continue;
            };
            let Some(regs) = self.registers_of(client, thread) else {
                continue;
            };
            let Some(site) = self
                .layout
                .value_u64(self.pc_name, &regs)
                .and_then(|pc| pc.checked_sub(1))
                .filter(|&site| client.int3_original(site).is_some())
            else {
                continue;
            };
            let unmoved = self
                .inner()
                .run
                .threads
                .get(&tid)
                .and_then(|r| r.last_trap.as_ref())
                .is_some_and(|last| self.same_general_registers(last, &regs));
            if !unmoved && self.write_pc(client, site).is_ok() {
                self.thread_run_tid(tid, |r| r.cancelled_hit = Some(site));
            }
        }
        if let Some(t) = shown {
            let _ = client.set_thread(t);
        }
    }
}
