//! The ntdbg engine: a [`Session`] over a [`Target`](ntdbg_targets::Target).
//!
//! A session joins a target (a user-mode minidump, a kernel dump, or a live process behind a
//! GDB remote stub) with symbols
//! ([`ntdbg_symbols::SymbolStore`]), the stack walker ([`stack`]), the disassembler
//! ([`disasm`]) and the MASM expression evaluator ([`expr`]). It keeps the debugger state
//! that WinDbg users expect: the current thread (`~Ns`) and the register scope (`.ecxr`,
//! `.cxr`). It prints nothing: the command layer renders what it returns.
//!
//! ```no_run
//! use ntdbg_engine::Session;
//! let mut session = Session::open_dump("crash.dmp".as_ref(), None)?;
//! session.select_exception_context()?;
//! for frame in session.stack()?.frames {
//!     println!("{}", frame.call_site());
//! }
//! # Ok::<(), ntdbg_engine::EngineError>(())
//! ```

mod context_owner;
pub mod disasm;
mod error;
pub mod expr;
mod expr_env;
mod extensions;
pub mod frame_vars;
pub mod hex_json;
pub mod interrupt;
mod jit_names;
pub mod live;
pub mod memory;
pub mod module_info;
pub mod ntstatus;
pub mod place;
mod prefetch;
pub mod process_blocks;
mod provider;
pub mod registers;
mod session;
pub mod stack;
pub mod symbolize;
pub mod text;
pub mod typed;
pub mod variable_view;

pub use context_owner::{ContextOwner, StackRange};
pub use error::EngineError;
pub use frame_vars::FrameVariable;
pub use interrupt::{Cancelled, Interrupt};
pub use ntdbg_errors::ErrorCode;
pub use session::{RegisterScope, Session};
pub use symbolize::{module_name, Symbolized};
