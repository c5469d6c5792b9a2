//! A synchronous GDB Remote Serial Protocol client, for ntdbg's live targets.
//!
//! It talks to gdbserver, `winedbg --gdb` and QEMU's gdbstub over TCP: packet framing with
//! checksums, acknowledgements and no-ack mode, run-length decoding (in replies `+` is data
//! inside a packet; only bytes before a `$` are acks), binary escapes, `qSupported`, target
//! descriptions (`qXfer:features:read:target.xml` → [`RegisterLayout`]), registers (`g`/`p`),
//! memory (`m`/`M`, with holes for unreadable bytes), breakpoints (`Z0`–`Z4`, with an `int3`
//! fallback when `Z0` is refused), run control (`c`/`s`/`vCont`, interrupt), stop replies
//! ([`StopReply`]), threads and detach/kill.
//!
//! Every read has a deadline: a stub that does not answer gives [`GdbError::Timeout`], never a
//! hang. Dropping a [`GdbClient`] detaches, because winedbg spins when a client leaves without
//! `D` or `k`.
//!
//! ```no_run
//! use ntdbg_gdbremote::{ClientOptions, GdbClient, ResumeAction};
//! use std::time::Duration;
//! let mut gdb = GdbClient::connect("127.0.0.1:1234", ClientOptions::default())?;
//! let layout = gdb.register_layout()?;
//! let regs = gdb.read_registers()?;
//! let rip = layout.value_u64("rip", &regs);
//! gdb.resume(ResumeAction::Continue, None)?;
//! match gdb.wait_stop(Duration::from_secs(1))? {
//!     Some(stop) => println!("stopped: {stop:?}"),
//!     None => println!("still running; {:?}", gdb.break_in()?),
//! }
//! gdb.detach()?;
//! # let _ = rip;
//! # Ok::<(), ntdbg_gdbremote::GdbError>(())
//! ```

mod client;
mod error;
pub mod packet;
pub mod stop;
pub mod target_xml;

pub use client::{
    BreakpointKind, BreakpointMethod, ClientOptions, FeatureValue, Features, GdbClient,
    InterruptHandle, ResumeAction, RunState,
};
pub use error::{GdbError, Result};
pub use stop::{IdPart, StopReason, StopReply, ThreadId, WindowsEvent, WindowsEventKind};
pub use target_xml::{RegisterInfo, RegisterLayout};
