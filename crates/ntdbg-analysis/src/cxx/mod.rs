//! Uncaught C++ exceptions: the thrown type, its message and the throw site, for both ABIs a
//! Windows dump meets.
//!
//! - MSVC ([`msvc`]): the 0xE06D7363 exception record points to the thrown object and its
//!   `ThrowInfo` → `CatchableTypeArray` → `CatchableType`s → `TypeDescriptor`s, whose decorated
//!   names are demangled; the message is `std::exception`'s stored `what`.
//! - Itanium ([`itanium`]: MinGW GCC, Clang with libstdc++ or libc++): libgcc's SEH unwinder
//!   raises 0x20474343 (`' GCC'`) with the `_Unwind_Exception` inside the `__cxa_exception`
//!   header that precedes the thrown object; the header's `type_info` names the type. When the
//!   process ended in `std::terminate` → `abort()` instead, the throw site's own code names the
//!   `type_info` it passed to `__cxa_throw`.
//!
//! When an MSVC process ended in `std::terminate`, the 0xE06D7363 record is looked for on the
//! live stack between the throw site and the event ([`record`]).
//!
//! The throw site ([`site`]) is the frame that called the throw function. Every fact is read
//! and validated, never guessed: what cannot be read is said to be missing, and why.

mod itanium;
mod memory;
mod msvc;
mod names;
mod record;
mod site;

pub use names::{demangle_itanium_type, demangle_msvc_type};

use crate::conclusion::Inference;
use ntdbg_engine::stack::Frame;
use ntdbg_engine::Session;
use ntdbg_targets::ExceptionEvent;

/// The MSVC C++ exception code (`'msc'`).
pub const MSVC_CPP_CODE: u32 = 0xE06D_7363;
/// The GCC/Clang (Itanium ABI on Windows) C++ exception code (`' GCC'`).
pub const GCC_CPP_CODE: u32 = 0x2047_4343;

/// The C++ ABI that threw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Abi {
    /// Visual C++ (`_CxxThrowException`, 0xE06D7363).
    Msvc,
    /// The Itanium C++ ABI of GCC and Clang (`__cxa_throw`).
    Itanium,
}

/// What the thrown object says about itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Message {
    /// The type carries no message (it does not derive from `std::exception`, or is unknown).
    None,
    /// The `what()` text.
    Text(String),
    /// A thrown scalar's value (`42`, `"text"`).
    Value(String),
    /// The type has a message that could not be read: why.
    Unavailable(String),
}

/// What is known of an uncaught C++ exception.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UncaughtException {
    /// Which runtime threw it.
    pub abi: Abi,
    /// The thrown type, demangled (`std::runtime_error`); `None` when it could not be read.
    pub type_name: Option<String>,
    /// Its message.
    pub message: Message,
    /// The frame that called the throw function (`app!load_settings+0x38`).
    pub throw_site: Option<String>,
    /// How each fact was found, or why it is missing, in order.
    pub evidence: Vec<String>,
}

/// The uncaught C++ exception of this event: the exception itself (0xE06D7363, 0x20474343), or
/// one still in flight on the event thread's stack, where a throw function called
/// `std::terminate` (the process then ended in `abort()`), or, for an `abort()` whose stack walk
/// does not reach a throw function, a validated MSVC exception record on that stack. `None` when
/// there is none.
pub fn uncaught_exception(
    session: &Session,
    event: &ExceptionEvent,
    frames: &[Frame],
) -> Option<UncaughtException> {
    let site = site::find(session, frames);
    let mut found = match event.code {
        MSVC_CPP_CODE => msvc::from_parameters(session, &event.parameters),
        GCC_CPP_CODE => itanium::from_record(session, event),
        _ => match site.as_ref().filter(|s| s.terminated()) {
            Some(s) if s.abi == Abi::Itanium => UncaughtException {
                abi: Abi::Itanium,
                type_name: None,
                message: Message::None,
                throw_site: None,
                evidence: Vec::new(),
            },
            Some(s) => record::msvc_on_stack(session, frames, Some(s))
                .unwrap_or_else(record::msvc_record_missing),
            None if ends_in_abort(event) => match itanium::throw_on_stack(session, frames) {
                Some(found) => return Some(found),
                None => record::msvc_on_stack(session, frames, None)?,
            },
            None => return None,
        },
    };
    if let Some(site) = &site {
        found.throw_site = Some(site.call_site.clone());
        found.evidence.push(site.describe());
        if found.type_name.is_none() && site.abi == Abi::Itanium {
            if site.thrower == "__cxa_throw" {
                // The slot the call pushed its return address to lies just below the site
                // frame's stack pointer (the x86 arguments sit above it).
                let slot = frames
                    .iter()
                    .find(|f| f.index == site.frame)
                    .and_then(|f| {
                        let ptr = session.target().arch().pointer_size() as u64;
                        f.stack_pointer.checked_sub(ptr)
                    })
                    .filter(|&slot| {
                        memory::Memory::new(session).pointer(slot) == Some(site.return_address)
                    });
                itanium::type_at_throw_site(session, site.return_address, slot, &mut found);
            } else {
                found.evidence.push(format!(
                    "{} (a `throw;`) passes no type_info: thrown type unknown",
                    site.thrower
                ));
            }
        }
    }
    Some(found)
}

/// Whether the event is the end of `abort()`: STATUS_FATAL_APP_EXIT, or
/// `__fastfail(FAST_FAIL_FATAL_APP_EXIT)`.
fn ends_in_abort(event: &ExceptionEvent) -> bool {
    event.code == 0x4000_0015 || (event.code == 0xC000_0409 && event.parameters.first() == Some(&7))
}

/// The inference for [`uncaught_exception`]: "uncaught C++ exception TYPE: MESSAGE".
pub(crate) fn inference(
    session: &Session,
    event: &ExceptionEvent,
    frames: &[Frame],
) -> Option<Inference> {
    let found = uncaught_exception(session, event, frames)?;
    let runtime = match found.abi {
        Abi::Msvc => "MSVC",
        Abi::Itanium => "GCC/Clang",
    };
    let mut text = match &found.type_name {
        Some(name) => format!("uncaught C++ exception {name}"),
        None => format!("uncaught C++ exception of unknown type ({runtime} runtime)"),
    };
    match &found.message {
        Message::None => {}
        Message::Text(m) => text.push_str(&format!(": {m}")),
        Message::Value(v) => text.push_str(&format!(" (value {v})")),
        Message::Unavailable(_) => text.push_str(": <message unavailable>"),
    }
    if let Some(site) = &found.throw_site {
        text.push_str(&format!(", thrown at {site}"));
    }
    let mut basis = match event.code {
        MSVC_CPP_CODE => "exception code 0xE06D7363 (MSVC C++ throw)".to_string(),
        GCC_CPP_CODE => "exception code 0x20474343 (' GCC', the GCC/Clang SEH throw)".to_string(),
        code => format!("exception code {code:#010x}"),
    };
    for e in &found.evidence {
        basis.push_str("; ");
        basis.push_str(e);
    }
    if let Message::Unavailable(why) = &found.message {
        basis.push_str("; message unavailable: ");
        basis.push_str(why);
    }
    Some(Inference::new("cpp_exception", text, basis))
}
