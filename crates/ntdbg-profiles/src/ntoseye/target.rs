//! The `target` snapshot of ntoseye's answers (`running`, `current_thread`, `rip`, `symbol`,
//! the processes and thread of the stop, `coherent`, `kernel_base`) and the `[target ...]`
//! trailer drawn from it, read from the ntdbg session after each command.
//!
//! Every field comes from the session: the run state from the live target's control, the
//! thread, instruction pointer and symbol from the session's current scope, the process id
//! from the dump's process facts and its name from the main module, the kernel's base from
//! its module (ntoskrnl.exe or ntkrnl*.exe) on a kernel target. A field the session cannot
//! say is null, never guessed.

use ntdbg_engine::live::RunState;
use ntdbg_engine::Session;
use ntdbg_mcp::Api;
use schemars::JsonSchema;
use serde::Serialize;
use std::time::Duration;

/// How long the snapshot waits for the session, which a command may still hold.
const SESSION_WAIT: Duration = Duration::from_secs(3);

/// A process of the snapshot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct ProcessRef {
    /// Its id, when the target records it.
    pub pid: Option<u32>,
    /// Its main module's file name, when known.
    pub name: Option<String>,
}

/// The stopped thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, JsonSchema)]
pub struct ThreadRef {
    /// The OS thread id.
    pub tid: u32,
}

/// Where the target is: ntoseye's `target` object.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, JsonSchema)]
pub struct TargetSnapshot {
    /// Whether the target runs (a dump never does).
    pub running: bool,
    /// The current thread's `~` number, when halted.
    pub current_thread: Option<String>,
    /// Its instruction pointer (0x hex), when known.
    pub rip: Option<String>,
    /// The symbol at rip, when a module holds it.
    pub symbol: Option<String>,
    /// The process memory commands read (ntdbg has no `.process` scope: null).
    pub attached_process: Option<ProcessRef>,
    /// The process of the stop.
    pub stopped_process: Option<ProcessRef>,
    /// The thread of the stop.
    pub stopped_thread: Option<ThreadRef>,
    /// Whether the debugger's view of the target is current (false once it exited or was
    /// detached).
    pub coherent: bool,
    /// The kernel's base (0x hex) on a kernel target, else null.
    pub kernel_base: Option<String>,
    /// ntdbg's trailer for a target that exited or was detached (no ntoseye form).
    #[serde(skip)]
    #[schemars(skip)]
    ended: Option<String>,
}

impl TargetSnapshot {
    /// ntoseye's trailer: `[target running]` or
    /// `[target halted @ <thread> <rip> <symbol> | process <name> (<pid>)]`.
    pub fn trailer(&self) -> String {
        if let Some(ended) = &self.ended {
            return ended.clone();
        }
        if self.running {
            return "[target running]".into();
        }
        let mut line = String::from("[target halted");
        if let Some(thread) = &self.current_thread {
            line.push_str(" @ ");
            line.push_str(thread);
            for part in [&self.rip, &self.symbol].into_iter().flatten() {
                line.push(' ');
                line.push_str(part);
            }
        }
        for (label, process) in [
            ("process", &self.stopped_process),
            ("scope", &self.attached_process),
        ] {
            if let Some(ProcessRef {
                pid: Some(pid),
                name,
            }) = process
            {
                let name = name.as_deref().unwrap_or("?");
                line.push_str(&format!(" | {label} {name} ({pid})"));
            }
        }
        line.push(']');
        line
    }
}

/// The snapshot of session `id` now.
pub async fn snapshot(api: &Api, id: &str) -> TargetSnapshot {
    let Ok(slot) = api.session(id) else {
        return ended("[target detached]".into());
    };
    if let Some(live) = &slot.live {
        match live.state() {
            RunState::Running => {
                return TargetSnapshot {
                    running: true,
                    coherent: true,
                    ..TargetSnapshot::default()
                }
            }
            RunState::Halted(_) => {}
            other => return ended(other.trailer()),
        }
    }
    let Ok(session) = tokio::time::timeout(SESSION_WAIT, slot.session.clone().lock_owned()).await
    else {
        // A command still holds the session: only the run state is known.
        return TargetSnapshot {
            coherent: true,
            ..TargetSnapshot::default()
        };
    };
    tokio::task::spawn_blocking(move || halted(&session))
        .await
        .unwrap_or_default()
}

fn ended(trailer: String) -> TargetSnapshot {
    TargetSnapshot {
        ended: Some(trailer),
        ..TargetSnapshot::default()
    }
}

/// The snapshot of a halted target (or a dump).
fn halted(session: &Session) -> TargetSnapshot {
    let ip = session.instruction_pointer();
    let symbol = ip
        .map(|ip| session.symbolize(ip))
        .filter(|s| s.module.is_some())
        .map(|s| s.display());
    let target = session.target();
    let kernel = target.as_kernel_dump().is_some();
    let process = (!kernel).then(|| ProcessRef {
        pid: target.system().process_id,
        name: target.modules().main_module().map(|m| {
            let file = m.name.as_str();
            file.rsplit(['\\', '/']).next().unwrap_or(file).to_string()
        }),
    });
    let kernel_base = kernel
        .then(|| ntdbg_analysis::kernel_objects::kernel_module(session))
        .flatten()
        .map(|m| format!("{:#x}", m.raw.base_of_image));
    TargetSnapshot {
        running: false,
        current_thread: Some(
            session
                .thread_number(session.current_thread_index())
                .to_string(),
        ),
        rip: ip.map(|ip| format!("{ip:#x}")),
        symbol,
        attached_process: None,
        stopped_process: process,
        stopped_thread: session.current_thread().map(|t| ThreadRef { tid: t.id }),
        coherent: true,
        kernel_base,
        ended: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailers_take_ntoseye_forms() {
        let running = TargetSnapshot {
            running: true,
            ..TargetSnapshot::default()
        };
        assert_eq!(running.trailer(), "[target running]");
        let halted = TargetSnapshot {
            current_thread: Some("0".into()),
            rip: Some("0x140001000".into()),
            symbol: Some("crashy!main+0x10".into()),
            stopped_process: Some(ProcessRef {
                pid: Some(42),
                name: Some("crashy.exe".into()),
            }),
            ..TargetSnapshot::default()
        };
        assert_eq!(
            halted.trailer(),
            "[target halted @ 0 0x140001000 crashy!main+0x10 | process crashy.exe (42)]"
        );
        assert_eq!(
            ended("[target exited: code 0]".into()).trailer(),
            "[target exited: code 0]"
        );
    }
}
