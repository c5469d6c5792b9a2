//! The throw site: the frame that called a throw function (`_CxxThrowException`,
//! `__cxa_throw`, `__cxa_rethrow`), found by the callee frame's name or, where the runtime has
//! no symbols, by the target of the call instruction before the frame's return address
//! (`call [__imp__CxxThrowException]`). A throw function still on the stack below
//! `std::terminate` means the exception found no handler.

use super::memory::Memory;
use super::Abi;
use ntdbg_engine::stack::Frame;
use ntdbg_engine::Session;
use ntdbg_symbols::strip_parameters;

/// The throw functions, as symbols name them, and their ABI.
const THROWERS: &[(&str, Abi)] = &[
    ("_CxxThrowException", Abi::Msvc),
    ("__cxa_throw", Abi::Itanium),
    ("__cxa_rethrow", Abi::Itanium),
];
/// `std::terminate` and the runtime functions it runs through, as symbols name them.
const TERMINATE: &[&str] = &[
    "std::terminate",
    "_ZSt9terminatev",
    "terminate",
    "__cxxabiv1::__terminate",
    "_ZN10__cxxabiv111__terminateEPFvvE",
    "std::__terminate",
];
/// Frames searched for a throw function.
const MAX_FRAMES: usize = 64;
/// Most stack bytes searched for a return address into a throw site.
const MAX_SLOT_SEARCH: u64 = 64 * 1024;

/// How the throw site was recognised.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Recognised {
    /// The frame above it (this frame number) is the throw function.
    CalleeFrame(usize),
    /// Its call instruction targets the throw function (this symbol).
    CallTarget(String),
}

/// The frame that called the throw function.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ThrowSite {
    /// The ABI of the throw function.
    pub abi: Abi,
    /// `__cxa_throw`.
    pub thrower: &'static str,
    /// The site's frame number.
    pub frame: usize,
    /// `app!load_settings+0x38`.
    pub call_site: String,
    /// The return address into the site (just after its call).
    pub return_address: u64,
    /// How the walker found the site's frame.
    found_by: &'static str,
    /// How it was recognised.
    recognised: Recognised,
    /// The `std::terminate` frame above the throw function, if any.
    terminate_frame: Option<usize>,
}

impl ThrowSite {
    /// Whether the throw function called `std::terminate`: the exception found no handler.
    pub fn terminated(&self) -> bool {
        self.terminate_frame.is_some()
    }

    /// The evidence, in one clause.
    pub fn describe(&self) -> String {
        let how = match &self.recognised {
            Recognised::CalleeFrame(callee) => format!("frame {callee:02x} is {}", self.thrower),
            Recognised::CallTarget(target) => {
                format!("the call before its return address targets {target}")
            }
        };
        let mut text = format!(
            "thrown at frame {:02x} {} (found by {}; {how})",
            self.frame, self.call_site, self.found_by
        );
        if let Some(t) = self.terminate_frame {
            text.push_str(&format!(
                "; {} then called std::terminate (frame {t:02x}): no handler caught it",
                self.thrower
            ));
        }
        text
    }
}

/// The innermost throw site on the stack, if any.
pub(super) fn find(session: &Session, frames: &[Frame]) -> Option<ThrowSite> {
    let frames = &frames[..frames.len().min(MAX_FRAMES)];
    // Return addresses whose call is known not to target a throw function: a recursion
    // returns to the same few addresses, each disassembled once.
    let mut not_throwing: Vec<u64> = Vec::new();
    for k in 1..frames.len() {
        let by_frame = bare_name(&frames[k - 1])
            .and_then(thrower)
            .map(|t| (t, Recognised::CalleeFrame(frames[k - 1].index)));
        let found = by_frame.or_else(|| {
            let address = frames[k].instruction;
            if not_throwing.contains(&address) {
                return None;
            }
            let by_call = call_target(session, address).and_then(|target| {
                let t = thrower(target.strip_prefix("__imp_").unwrap_or(&target))?;
                Some((t, Recognised::CallTarget(target)))
            });
            if by_call.is_none() {
                not_throwing.push(address);
            }
            by_call
        });
        if let Some(((thrower, abi), recognised)) = found {
            let terminate_frame = frames[..k]
                .iter()
                .rposition(|f| bare_name(f).is_some_and(|n| TERMINATE.contains(&n)));
            return Some(ThrowSite {
                abi,
                thrower,
                frame: frames[k].index,
                call_site: frames[k].call_site(),
                return_address: frames[k].instruction,
                found_by: frames[k].found_by.name(),
                recognised,
                terminate_frame: terminate_frame.map(|i| frames[i].index),
            });
        }
    }
    None
}

/// A throw site the frame walk did not reach: the highest stack slot in `[low, high)` that holds
/// a return address whose call targets a throw function of `abi`: `(slot, site name, target)`.
pub(super) fn return_into_thrower(
    session: &Session,
    abi: Abi,
    low: u64,
    high: u64,
) -> Option<(u64, String, String)> {
    let memory = Memory::new(session);
    let ptr = memory.pointer_size as u64;
    let high = high.min(low.saturating_add(MAX_SLOT_SEARCH));
    let mut slot = high.checked_sub(ptr)? / ptr * ptr;
    while slot >= low {
        if let Some(value) = memory.pointer(slot).filter(|&v| memory.in_module(v)) {
            if let Some(target) = call_target(session, value) {
                if thrower(target.strip_prefix("__imp_").unwrap_or(&target))
                    .is_some_and(|(_, a)| a == abi)
                {
                    return Some((slot, session.symbolize(value).display(), target));
                }
            }
        }
        slot = slot.checked_sub(ptr)?;
    }
    None
}

fn bare_name(frame: &Frame) -> Option<&str> {
    frame.function.as_deref().map(strip_parameters)
}

fn thrower(name: &str) -> Option<(&'static str, Abi)> {
    THROWERS.iter().find(|(n, _)| *n == name).copied()
}

/// The name of the function the call instruction ending at `return_address` calls
/// (`__cxa_throw`; `_CxxThrowException` for a `call [slot]` through its import slot);
/// `None` when it is not a call or the callee is not named.
fn call_target(session: &Session, return_address: u64) -> Option<String> {
    let imports = crate::evidence::imports::ImportNames::default();
    let call = crate::evidence::calls::call_before(session, &imports, return_address)?;
    call.function().map(str::to_string)
}
