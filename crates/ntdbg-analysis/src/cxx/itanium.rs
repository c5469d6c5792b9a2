//! Itanium C++ ABI exceptions (MinGW GCC; Clang with libstdc++ or libc++) on 64-bit Windows.
//!
//! libgcc's SEH unwinder raises 0x20474343 with one parameter, the `_Unwind_Exception`. It is
//! the last member of the `__cxa_exception` header that precedes the thrown object, so on x64
//! (checked against MinGW 12's libstdc++ and libc++abi's layout, which agree from the end):
//!
//! - `_Unwind_Exception { u64 exception_class; cleanup; u64 private_[6] }`, 64 bytes, whose
//!   class is `GNUCC++\0` (libstdc++) or `CLNGC++\0` (libc++abi) for a primary exception,
//!   ending in 1 instead for a dependent one (whose `primaryException` sits where a primary
//!   keeps `exceptionType`);
//! - `exceptionType` (the `std::type_info *`) 80 bytes before it;
//! - the thrown object right after it.
//!
//! `std::type_info` is a vftable pointer and a pointer to the mangled name (`St13runtime_error`).
//! libstdc++'s `std::runtime_error` and `std::logic_error` (and their standard children) store
//! the message as a copy-on-write string after the vftable pointer: a pointer to the characters,
//! preceded by the string's header `{ length, capacity, refcount }`.
//!
//! Without the exception record (the process ended in `std::terminate`), the throw site still
//! names the type: on x64 the caller of `__cxa_throw(object, type_info, destructor)` loads the
//! `type_info` address into `rdx` right before the call; on x86 (cdecl) the arguments sit on the
//! stack just above the return address into the throw site. 32-bit MinGW unwinds with DWARF
//! data and raises no SEH exception for a throw: the process ends in `abort()`, and the throw
//! site is found on the stack by its call to `__cxa_throw` when the frame walk stops short.

use super::memory::{instruction_bytes, one_line, Memory, MAX_STRING};
use super::names::demangle_itanium_type;
use super::{Abi, Message, UncaughtException};
use ntdbg_engine::disasm::{
    disassemble_backward, instruction_registers, Bitness, NoSymbols, SliceMemory,
};
use ntdbg_engine::Session;
use ntdbg_targets::ExceptionEvent;

/// `GNUCC++\0`: libstdc++'s primary exception class.
const LIBSTDCXX_CLASS: u64 = 0x474E_5543_432B_2B00;
/// `CLNGC++\0`: libc++abi's primary exception class.
const LIBCXXABI_CLASS: u64 = 0x434C_4E47_432B_2B00;
/// From the `_Unwind_Exception` back to `exceptionType` (x64).
const TYPE_BEFORE_UNWIND_HEADER: u64 = 80;
/// Size of the SEH `_Unwind_Exception` (x64): the thrown object follows it.
const UNWIND_HEADER_SIZE: u64 = 64;
/// The classes whose message libstdc++ keeps in a copy-on-write string after the vftable.
const COW_MESSAGE_TYPES: &[&str] = &[
    "std::runtime_error",
    "std::range_error",
    "std::overflow_error",
    "std::underflow_error",
    "std::logic_error",
    "std::domain_error",
    "std::invalid_argument",
    "std::length_error",
    "std::out_of_range",
];
/// Longest message accepted from a string header.
const MAX_MESSAGE: u64 = 64 * 1024;
/// Instructions looked at before the call to `__cxa_throw`.
const SITE_WINDOW: usize = 12;
/// Bytes of code read before the return address.
const SITE_BYTES: u64 = 200;

/// A validated `std::type_info`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct TypeInfo {
    /// `std::runtime_error`.
    name: String,
    /// The mangled name as stored (`St13runtime_error`).
    mangled: String,
}

/// Reads what a 0x20474343 record says.
pub(super) fn from_record(session: &Session, event: &ExceptionEvent) -> UncaughtException {
    let mut found = UncaughtException {
        abi: Abi::Itanium,
        type_name: None,
        message: Message::None,
        throw_site: None,
        evidence: Vec::new(),
    };
    let memory = Memory::new(session);
    if memory.pointer_size != 8 {
        found
            .evidence
            .push("the 32-bit GCC exception layout is not decoded: thrown type unknown".into());
        return found;
    }
    let Some(header) = event.parameters.first().copied().filter(|&p| p != 0) else {
        found
            .evidence
            .push("the record holds no _Unwind_Exception pointer: thrown type unknown".into());
        return found;
    };
    let (header, runtime) = match primary(&memory, header) {
        Ok((primary, runtime, note)) => {
            found.evidence.extend(note);
            (primary, runtime)
        }
        Err(why) => {
            found.evidence.push(format!("{why}: thrown type unknown"));
            return found;
        }
    };
    let type_at = header - TYPE_BEFORE_UNWIND_HEADER;
    let type_info = memory
        .pointer(type_at)
        .ok_or_else(|| format!("exceptionType at {type_at:#x} is not in the dump"))
        .and_then(|t| read_type_info(&memory, t).map(|info| (t, info)));
    match type_info {
        Ok((address, info)) => {
            found.evidence.push(format!(
                "_Unwind_Exception {header:#x} (class {runtime}) -> __cxa_exception.exceptionType {address:#x} -> type_info name {}",
                info.mangled
            ));
            let object = header + UNWIND_HEADER_SIZE;
            found.message = message(&memory, object, &info.name, &mut found.evidence);
            found.type_name = Some(info.name);
        }
        Err(why) => found.evidence.push(format!(
            "_Unwind_Exception {header:#x} (class {runtime}): {why}: thrown type unknown"
        )),
    }
    found
}

/// The runtime whose primary exception class `class` is.
fn runtime_of(class: u64) -> Option<&'static str> {
    match class {
        LIBSTDCXX_CLASS => Some("GNUCC++"),
        LIBCXXABI_CLASS => Some("CLNGC++"),
        _ => None,
    }
}

/// The primary exception behind the `_Unwind_Exception` at `header`: itself when its class is a
/// primary one; for a dependent exception (`std::rethrow_exception`, class ending in 1), the
/// primary whose thrown object its `primaryException` (where a primary keeps
/// `exceptionType`) points to, with a note. `(header, runtime, note)`, or why not.
fn primary(memory: &Memory, header: u64) -> Result<(u64, &'static str, Option<String>), String> {
    let class = memory.u64(header).ok_or_else(|| format!(
        "the exception object's header at {header:#x} (parameter 0) is not in the dump (libstdc++ allocates it on the heap, which this dump does not hold)"
    ))?;
    if let Some(runtime) = runtime_of(class) {
        return Ok((header, runtime, None));
    }
    let dependent = runtime_of(class & !0xff).filter(|_| class & 0xff == 1);
    let Some(runtime) = dependent else {
        return Err(format!(
            "_Unwind_Exception {header:#x} has class {class:#018x}, not a C++ exception"
        ));
    };
    let at = header - TYPE_BEFORE_UNWIND_HEADER;
    let object = memory.pointer(at).ok_or_else(|| {
        format!("dependent exception {header:#x}: primaryException at {at:#x} is not in the dump")
    })?;
    let primary = object.wrapping_sub(UNWIND_HEADER_SIZE);
    match memory.u64(primary) {
        Some(c) if runtime_of(c) == Some(runtime) => Ok((
            primary,
            runtime,
            Some(format!(
                "_Unwind_Exception {header:#x} is a dependent exception (std::rethrow_exception) of the primary {primary:#x}"
            )),
        )),
        Some(c) => Err(format!(
            "dependent exception {header:#x} points to {primary:#x}, whose class {c:#018x} is not a primary exception"
        )),
        None => Err(format!(
            "dependent exception {header:#x}: its primary at {primary:#x} is not in the dump"
        )),
    }
}

/// The arguments of a 32-bit `__cxa_throw(object, type_info, destructor)` (cdecl: on the
/// stack above the return address into the throw site, at `slot`): the `type_info` it was
/// passed, validated, and the message of a standard exception object when the dump holds it.
fn type_from_x86_arguments(memory: &Memory, slot: u64, found: &mut UncaughtException) {
    let (Some(object), Some(address)) = (memory.pointer(slot + 4), memory.pointer(slot + 8)) else {
        found.evidence.push(format!(
            "thrown type unknown: the arguments of __cxa_throw above its return address at {slot:#x} are not in the dump"
        ));
        return;
    };
    match read_type_info(memory, address) {
        Ok(info) => {
            found.evidence.push(format!(
                "type from __cxa_throw's arguments on the stack (cdecl): [{:#x}] = object {object:#x}, [{:#x}] = type_info {address:#x}, named {}",
                slot + 4,
                slot + 8,
                info.mangled
            ));
            found.message = message(memory, object, &info.name, &mut found.evidence);
            found.type_name = Some(info.name);
        }
        Err(why) => found.evidence.push(format!(
            "the second argument of __cxa_throw at {:#x} is {address:#x}, but {why}: thrown type unknown",
            slot + 8
        )),
    }
}

/// An uncaught Itanium exception whose throw site the frame walk did not reach (32-bit MinGW
/// code unwinds with DWARF data, through `__gxx_personality_v0`): on the event thread's stack, a
/// return address whose call targets `__cxa_throw`; the type from its arguments (x86) or the
/// site's code (x64).
pub(super) fn throw_on_stack(
    session: &Session,
    frames: &[ntdbg_engine::stack::Frame],
) -> Option<UncaughtException> {
    let low = frames.first()?.stack_pointer;
    let (slot, name, target) =
        super::site::return_into_thrower(session, Abi::Itanium, low, u64::MAX)?;
    if target.trim_start_matches("__imp_") != "__cxa_throw" {
        return None;
    }
    let return_address = Memory::new(session).pointer(slot)?;
    let mut found = UncaughtException {
        abi: Abi::Itanium,
        type_name: None,
        message: Message::None,
        throw_site: Some(name.clone()),
        evidence: vec![format!(
            "thrown at {name}: the return address at {slot:#x} on the event thread's stack follows its call to {target} (the frame walk did not reach it); the process then ended in abort(), as std::terminate does when no handler catches the exception"
        )],
    };
    type_at_throw_site(session, return_address, Some(slot), &mut found);
    Some(found)
}

/// Names the type thrown at the call that `return_address` follows (a call to `__cxa_throw`):
/// on x86 from the call's arguments above `slot` (the stack slot holding the return address),
/// on x64 from the code before the call, where the last instruction that touches `rdx` must be
/// `lea rdx,[rip+X]`, with a valid `type_info` at X. Sets the type and its evidence when it is;
/// notes why not otherwise.
pub(super) fn type_at_throw_site(
    session: &Session,
    return_address: u64,
    slot: Option<u64>,
    found: &mut UncaughtException,
) {
    let memory = Memory::new(session);
    if memory.pointer_size != 8 {
        let slot = slot.or_else(|| slot_holding(&memory, return_address));
        match slot {
            Some(slot) => type_from_x86_arguments(&memory, slot, found),
            None => found.evidence.push(format!(
                "thrown type unknown: no stack slot holding the return address {return_address:#x} into the throw site was found"
            )),
        }
        return;
    }
    match type_info_loaded_before(session, return_address) {
        Ok((lea, address)) => match read_type_info(&memory, address) {
            Ok(info) => {
                found.evidence.push(format!(
                    "type from the throw site's code: {lea:#x} loads rdx = {address:#x}, the type_info argument of __cxa_throw, named {}",
                    info.mangled
                ));
                if COW_MESSAGE_TYPES.contains(&info.name.as_str()) {
                    found.message = Message::Unavailable(
                        "no exception record points to the thrown object (the process ended in std::terminate) and libstdc++ keeps it on the heap".into(),
                    );
                }
                found.type_name = Some(info.name);
            }
            Err(why) => found.evidence.push(format!(
                "the throw site passes {address:#x} as the type_info, but {why}: thrown type unknown"
            )),
        },
        Err(why) => found
            .evidence
            .push(format!("thrown type unknown: {why}")),
    }
}

/// The stack slot of the event thread that holds `value` (a return address), searched upwards
/// from the event's stack pointer.
fn slot_holding(memory: &Memory, value: u64) -> Option<u64> {
    /// Stack bytes searched.
    const SEARCH: u64 = 64 * 1024;
    let sp = memory.event_stack_pointer()?;
    let ptr = memory.pointer_size as u64;
    (0..SEARCH / ptr)
        .map(|i| sp + i * ptr)
        .find(|a| memory.pointer(*a) == Some(value))
}

/// `(lea address, loaded address)` of the `lea rdx,[rip+X]` feeding the call that ends at
/// `return_address`.
fn type_info_loaded_before(session: &Session, return_address: u64) -> Result<(u64, u64), String> {
    let (base, code) = Memory::new(session).code_before(return_address, SITE_BYTES);
    if code.is_empty() {
        return Err(format!(
            "the code before {return_address:#x} is not in the dump or image"
        ));
    }
    let memory = SliceMemory { base, bytes: &code };
    let lines = disassemble_backward(
        Bitness::Bits64,
        &memory,
        &NoSymbols,
        return_address,
        SITE_WINDOW,
    );
    let (_call, before) = lines
        .split_last()
        .filter(|(c, _)| c.readable && c.mnemonic == "call")
        .ok_or_else(|| format!("no call instruction ends at {return_address:#x}"))?;
    for line in before.iter().rev() {
        let bytes = instruction_bytes(line).ok_or("unreadable code before the call")?;
        let (text, registers, operand) =
            instruction_registers(Bitness::Bits64, &bytes, line.address)
                .ok_or("undecodable code before the call")?;
        if line.mnemonic.starts_with('j') || line.mnemonic == "call" || line.mnemonic == "ret" {
            return Err("control flow between the argument and the call".into());
        }
        if !registers.iter().any(|r| r == "rdx") {
            continue;
        }
        return match operand {
            Some(op) if text.starts_with("lea rdx,") && op.base.is_none() && op.index.is_none() => {
                Ok((line.address, op.displacement as u64))
            }
            _ => Err(format!(
                "the last instruction before the call that uses rdx is `{text}`, not a load of a constant type_info address"
            )),
        };
    }
    Err(format!(
        "none of the {} instructions before the call sets rdx",
        before.len()
    ))
}

/// Reads and validates a `type_info` at `address`: its vftable pointer inside a module, its
/// name a mangled type.
fn read_type_info(memory: &Memory, address: u64) -> Result<TypeInfo, String> {
    let ptr = memory.pointer_size as u64;
    if !memory.in_module(address) {
        return Err(format!("type_info {address:#x} is not inside a module"));
    }
    let vftable = memory
        .pointer(address)
        .ok_or_else(|| format!("type_info {address:#x} is not in the dump or image"))?;
    if !memory.in_module(vftable) {
        return Err(format!(
            "type_info {address:#x} has vftable {vftable:#x}, outside every module"
        ));
    }
    let name_at = memory
        .pointer(address + ptr)
        .ok_or_else(|| format!("type_info {address:#x} is not in the dump or image"))?;
    let mangled = memory
        .c_string(name_at, MAX_STRING)
        .map_err(|why| format!("type_info {address:#x} name: {why}"))?;
    let name = demangle_itanium_type(&mangled)
        .ok_or_else(|| format!("type_info {address:#x} name {mangled:?} is not a mangled type"))?;
    Ok(TypeInfo { name, mangled })
}

/// The message of a thrown object of type `name`, for the standard classes that store one.
fn message(memory: &Memory, object: u64, name: &str, evidence: &mut Vec<String>) -> Message {
    if !COW_MESSAGE_TYPES.contains(&name) {
        return Message::None;
    }
    let ptr = memory.pointer_size as u64;
    let Some(chars) = memory.pointer(object + ptr) else {
        return Message::Unavailable(format!(
            "the thrown object at {object:#x} is not in the dump"
        ));
    };
    let header = chars.wrapping_sub(3 * ptr);
    let (Some(length), Some(capacity)) = (memory.pointer(header), memory.pointer(header + ptr))
    else {
        return Message::Unavailable(format!(
            "the message string at {chars:#x} is not in the dump"
        ));
    };
    if length > capacity || length > MAX_MESSAGE {
        return Message::Unavailable(format!(
            "the string header before {chars:#x} is not valid (length {length}, capacity {capacity})"
        ));
    }
    let Some(bytes) = memory.bytes(chars, length as usize + 1) else {
        return Message::Unavailable(format!(
            "the message string at {chars:#x} is not in the dump"
        ));
    };
    if bytes.last() != Some(&0) || bytes[..length as usize].contains(&0) {
        return Message::Unavailable(format!(
            "the string at {chars:#x} does not end where its header says"
        ));
    }
    match String::from_utf8(bytes[..length as usize].to_vec()) {
        Ok(text) => {
            evidence.push(format!(
                "message: the {name} object at {object:#x} holds a string of {length} bytes at {chars:#x}"
            ));
            Message::Text(one_line(&text))
        }
        Err(_) => Message::Unavailable(format!("the string at {chars:#x} is not UTF-8 text")),
    }
}
