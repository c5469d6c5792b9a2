//! Opening a live session and keeping it in step with the target.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use ntdbg_gdbremote::{ClientOptions, GdbClient};
use ntdbg_targets::{GdbTarget, Target};
use ntdbg_win32::{TargetSpec, Win32Error};

use super::control::{LiveControl, RunState};
use crate::disasm::Bitness;
use crate::{EngineError, ErrorCode, Session};

/// How often a wait for a stop looks whether its call was cancelled.
const CANCEL_POLL: Duration = Duration::from_millis(50);

/// How to attach.
#[derive(Debug, Clone)]
pub struct AttachOptions {
    /// How long connecting and each request may take.
    pub timeout: Duration,
    /// Refuse run control, breakpoints and writes.
    pub read_only: bool,
}

impl Default for AttachOptions {
    fn default() -> Self {
        AttachOptions {
            timeout: Duration::from_secs(10),
            read_only: false,
        }
    }
}

impl Session {
    /// Attaches to a live target: `gdb:HOST:PORT` (gdbserver, `winedbg --gdb`, QEMU), or on
    /// Windows `pid:N` (a running process) and `exe:PATH ARGS…` (started under the debugger)
    /// through the Win32 debugging API. Without a symbol path, symbols come from the current
    /// folder (the program's folder for `exe:`), then `_NT_SYMBOL_PATH`.
    pub fn attach(
        target: &str,
        symbol_path: Option<&str>,
        opts: &AttachOptions,
    ) -> Result<Session, EngineError> {
        let client_opts = ClientOptions {
            connect_timeout: opts.timeout,
            timeout: opts.timeout,
            ..ClientOptions::default()
        };
        if let Some(spec) = TargetSpec::parse(target).map_err(win32_error)? {
            let stream = ntdbg_win32::start(&spec, opts.timeout).map_err(win32_error)?;
            let client = GdbClient::handshake(stream, client_opts).map_err(|e| {
                EngineError::live_from(e.code(), format!("{}: {e}", spec.origin()), e)
            })?;
            let gdb = GdbTarget::from_client(client, spec.origin())?;
            let folder = spec.program_folder().unwrap_or(".");
            return Session::over_live(gdb, symbol_path, Path::new(folder), opts);
        }
        let addr = target.trim().strip_prefix("gdb:").ok_or_else(|| {
            EngineError::live(
                ErrorCode::UnsupportedTarget,
                format!(
                    "cannot attach to {target:?}: live targets are gdb:HOST:PORT, pid:N or \
                     exe:PATH ARGS"
                ),
            )
        })?;
        if addr
            .rsplit_once(':')
            .is_none_or(|(h, p)| h.is_empty() || p.parse::<u16>().is_err())
        {
            return Err(EngineError::live(
                ErrorCode::UnsupportedTarget,
                format!("{target:?} is not gdb:HOST:PORT"),
            ));
        }
        let gdb = GdbTarget::connect(addr, client_opts)?;
        Session::over_live(gdb, symbol_path, Path::new("."), opts)
    }

    /// A session over a connected live target; `folder` leads the default symbol path.
    fn over_live(
        gdb: GdbTarget,
        symbol_path: Option<&str>,
        folder: &Path,
        opts: &AttachOptions,
    ) -> Result<Session, EngineError> {
        let process_id = gdb.system().process_id.map(u64::from);
        let control = LiveControl::new(
            gdb.shared_client(),
            gdb.layout().clone(),
            opts.read_only,
            process_id,
        )?;
        let symbols = crate::session::symbol_store(symbol_path, folder)?;
        let mut session = Session::new(Box::new(gdb), symbols);
        session.live = Some(control);
        session.sync_live()?;
        Ok(session)
    }

    /// The run control of a live target; `None` for dumps.
    pub fn live(&self) -> Option<&Arc<LiveControl>> {
        self.live.as_ref()
    }

    /// Brings the session up to date after stops it has not shown yet: re-reads threads and
    /// registers and makes the stopped thread current. Returns the new state when there was
    /// something to show.
    pub fn sync_live(&mut self) -> Result<Option<RunState>, EngineError> {
        let Some(live) = self.live.clone() else {
            return Ok(None);
        };
        let stops = live.stops();
        if stops == self.shown_stops {
            return Ok(None);
        }
        let state = live.state();
        if state == RunState::Running {
            return Ok(None);
        }
        self.shown_stops = stops;
        if let RunState::Halted(h) = &state {
            self.target_mut().refresh()?;
            let tid = h.thread.and_then(|t| t.tid());
            let index = tid
                .and_then(|tid| {
                    self.target()
                        .threads()
                        .iter()
                        .position(|t| u64::from(t.id) == tid)
                })
                .unwrap_or(0);
            if index < self.target().threads().len() {
                self.set_current_thread(index)?;
            }
        }
        let event = match &state {
            RunState::Halted(h) => self.live_exception(h),
            _ => None,
        };
        self.target_mut().set_live_event(event);
        Ok(Some(state))
    }

    /// Waits up to the command wait for a running live target to stop, then brings the
    /// session up to date. `Ok(false)`: still running (or the call was cancelled).
    pub fn wait_until_halted(&mut self) -> Result<bool, EngineError> {
        let Some(live) = self.live.clone() else {
            return Ok(true);
        };
        if live.state() == RunState::Running {
            self.wait_for_stop_after(&live, live.stops());
        }
        Ok(live.state() != RunState::Running)
    }

    /// Waits up to the command wait for a stop after `stops`, giving up as soon as the
    /// session's [`Interrupt`](crate::Interrupt) is cancelled (a front end cancelled the
    /// call): the target runs on and the session is free for the next call at once.
    /// `true` when the target stopped.
    pub(crate) fn wait_for_stop_after(&self, live: &LiveControl, stops: u64) -> bool {
        let deadline = Instant::now() + live.command_wait();
        loop {
            let now = Instant::now();
            let slice = deadline.saturating_duration_since(now).min(CANCEL_POLL);
            if live.wait_for_stop(stops, slice) {
                return true;
            }
            if self.interrupt().is_cancelled() || Instant::now() >= deadline {
                return false;
            }
        }
    }

    /// The line that ends every result: `[dump]`, `[target running]`,
    /// `[target halted @ ~N ADDRESS SYMBOL]`, `[target exited: WHY]`, `[target detached]`.
    pub fn trailer(&self) -> String {
        let Some(live) = &self.live else {
            return "[dump]".into();
        };
        match live.state() {
            RunState::Halted(h) => {
                let Some(ip) = self.instruction_pointer().or(h.pc) else {
                    return format!(
                        "[target halted @ ~{}]",
                        self.thread_number(self.current_thread_index())
                    );
                };
                let bits = Bitness::of_arch(self.arch()).unwrap_or(Bitness::Bits64);
                let sym = self.symbolize(ip);
                let name = if sym.module.is_some() {
                    format!(" {}", sym.display())
                } else {
                    String::new()
                };
                format!(
                    "[target halted @ ~{} {}{name}]",
                    self.thread_number(self.current_thread_index()),
                    bits.address(ip)
                )
            }
            other => other.trailer(),
        }
    }
}

/// A `pid:`/`exe:` failure as an engine error.
fn win32_error(e: Win32Error) -> EngineError {
    let code = match e {
        Win32Error::Start(_) => ErrorCode::ConnectFailed,
        _ => ErrorCode::UnsupportedTarget,
    };
    EngineError::live_from(code, e.to_string(), e)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attach_error(target: &str) -> String {
        match Session::attach(target, None, &AttachOptions::default()) {
            Ok(_) => panic!("{target} attached"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn windows_process_targets_are_parsed_first() {
        let e = attach_error("pid:abc");
        assert!(e.contains("not a process id"), "{e}");
        let e = attach_error("exe:");
        assert!(e.contains("no program path"), "{e}");
        let e = attach_error("tcp:1");
        assert!(e.contains("pid:N"), "{e}");
        #[cfg(not(windows))]
        {
            let e = attach_error("pid:1234");
            assert!(e.contains("need ntdbg running on Windows"), "{e}");
            assert!(e.contains("gdb:HOST:PORT"), "{e}");
        }
    }
}
