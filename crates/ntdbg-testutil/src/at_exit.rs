//! Work for the end of a test process: libtest has no hook after the last test, so the C
//! runtime's `atexit` runs what was registered here (the tally of skipped tests, the removal of
//! folders a whole process shares).

use std::sync::{Mutex, Once};

type Task = Box<dyn FnOnce() + Send>;

static TASKS: Mutex<Vec<Task>> = Mutex::new(Vec::new());

extern "C" {
    /// The C runtime's `atexit` (C89; in every libc and in the Windows CRT).
    fn atexit(callback: extern "C" fn()) -> std::ffi::c_int;
}

/// Runs `task` when the process exits normally (the test harness returns from `main` or calls
/// `exit`), after the harness's own summary; tasks run in the order they were registered.
pub fn at_exit(task: impl FnOnce() + Send + 'static) {
    static REGISTER: Once = Once::new();
    REGISTER.call_once(|| {
        // SAFETY: `run_tasks` is an `extern "C" fn()` that never unwinds (it catches panics),
        // as `atexit` requires; registering it has no other precondition.
        unsafe {
            atexit(run_tasks);
        }
    });
    if let Ok(mut tasks) = TASKS.lock() {
        tasks.push(Box::new(task));
    }
}

extern "C" fn run_tasks() {
    let tasks = match TASKS.lock() {
        Ok(mut tasks) => std::mem::take(&mut *tasks),
        Err(_) => return,
    };
    for task in tasks {
        // A panic must not unwind out of an `extern "C"` function.
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(task));
    }
}
