//! Native live debugging of Windows processes: `pid:N` (attach) and `exe:PATH ARGS` (start
//! under the debugger), through the Win32 debugging API — no DbgEng, no Debugging Tools.
//!
//! The backend is a GDB remote stub on a thread of its own: that thread attaches (Win32 wants
//! `WaitForDebugEvent`/`ContinueDebugEvent` on the thread that attached), runs the debug loop
//! and serves the GDB remote protocol on a private loopback connection. [`start`] hands back the
//! other end of that connection, ready for `GdbClient::handshake`, so run control, breakpoints,
//! the stop log and symbols work exactly as for any GDB remote target.
//!
//! Windows facts that GDB signals cannot carry (exception code, first/second chance, module
//! loads, debug strings) travel as extra `ntdbg-*` pairs in `T` stop packets, and dumps and
//! suspended detaches as `Qntdbg.*` packets (see `ARCHITECTURE.md`).
//!
//! On other systems [`start`] returns [`Win32Error::NotWindows`]: from Linux, debug a Windows
//! process through a gdb stub such as `winedbg --gdb` instead.

pub mod spec;

// The protocol side is portable so that it is unit-tested on every OS; outside Windows only
// the tests use it.
#[cfg_attr(not(windows), allow(dead_code))]
mod backend;
#[cfg_attr(not(windows), allow(dead_code))]
mod link;
#[cfg_attr(not(windows), allow(dead_code))]
mod server;

#[cfg(windows)]
mod debugger;

#[cfg(test)]
mod tests;

use std::net::TcpStream;
use std::time::Duration;

pub use spec::TargetSpec;

/// Why a Windows process could not be debugged.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Win32Error {
    /// `pid:`/`exe:` targets need ntdbg itself to run on Windows.
    #[error(
        "pid:/exe: targets need ntdbg running on Windows; from Linux use gdb:HOST:PORT \
         (a gdb stub such as `winedbg --gdb`)"
    )]
    NotWindows,
    /// The target text is not `pid:N` or `exe:PATH ARGS`.
    #[error("{0}")]
    BadSpec(String),
    /// Attaching, starting the process or the loopback link failed.
    #[error("{0}")]
    Start(String),
}

/// Attaches to (`pid:`) or starts (`exe:`) the process, waits up to `timeout` for its first
/// stop (the break-in or the initial breakpoint), and returns the client end of the loopback
/// connection to the stub that now debugs it.
pub fn start(spec: &TargetSpec, timeout: Duration) -> Result<TcpStream, Win32Error> {
    #[cfg(windows)]
    {
        let spec = spec.clone();
        link::serve_on_loopback(
            move || debugger::Win32Debugger::open(&spec, timeout),
            timeout,
        )
        .map_err(Win32Error::Start)
    }
    #[cfg(not(windows))]
    {
        let _ = (spec, timeout);
        Err(Win32Error::NotWindows)
    }
}
