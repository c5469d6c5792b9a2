//! Breakpoint hits a stub holds back. A stub that reports one event at a time (winedbg, and
//! Windows itself under ntdbg's Win32 stub) keeps the others pending: a thread that executed a
//! breakpoint's `int3` in the same moment as the thread that is shown sits one byte past it,
//! in the middle of the instruction under the breakpoint, until its event is reported later.
//! Shown like that, the thread looks moved into an instruction, and a step or a run from there
//! would execute the rest of one.
//!
//! When a stop is shown, such a thread's hit is cancelled, as gdbserver does for its own
//! threads: its program counter goes back to the breakpoint, so the event the stub still holds
//! reports the hit there (or, where the debugger wrote the `int3`, is recognised as stale and
//! the thread executes the breakpoint again when it runs).

use ntdbg_gdbremote::{GdbClient, ThreadId};

use super::LiveControl;

impl LiveControl {
    /// Cancels the pending breakpoint hits of every thread but `shown` (see the module
    /// documentation): threads one byte past a software breakpoint. One whose registers are
    /// those its last single step left (it executed a one-byte instruction under the
    /// breakpoint) has not run since, and is left alone.
    pub(super) fn cancel_pending_hits(&self, client: &mut GdbClient, shown: Option<ThreadId>) {
        let sites = self.lock_breakpoints().software_sites();
        if sites.is_empty() {
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
                .filter(|site| sites.contains(site))
            else {
                continue;
            };
            let unmoved = self
                .inner()
                .run
                .threads
                .get(&tid)
                .and_then(|r| r.stepped_to.as_ref())
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
