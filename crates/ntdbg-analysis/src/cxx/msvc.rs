//! MSVC C++ exceptions (0xE06D7363).
//!
//! Parameters: `[magic, object, ThrowInfo*, image base]` (the image base on 64-bit targets
//! only, where ThrowInfo and what it points to hold image-relative RVAs; 32-bit x86 holds
//! absolute pointers). The layouts, every field 4 bytes:
//!
//! - `ThrowInfo { attributes; pmfnUnwind; pForwardCompat; pCatchableTypeArray }`
//! - `CatchableTypeArray { nCatchableTypes; arrayOfCatchableTypes[] }`, most derived first
//! - `CatchableType { properties; pType; thisDisplacement (3 ints); sizeOrOffset; copyFunction }`
//! - `TypeDescriptor { pVFTable; spare; char name[] }` (two pointers, then the decorated name)
//!
//! The message of a `std::exception`: the object is the vftable pointer followed by
//! `__std_exception_data { const char *what; bool dofree; }`.

use super::memory::{one_line, Memory, MAX_STRING};
use super::names::demangle_msvc_type;
use super::{Abi, Message, UncaughtException};
use ntdbg_engine::Session;

/// The `magic` values of MSVC throws (VC6, VC7 /clr pure, VC8, /clr:pure).
const MAGICS: [u64; 4] = [0x1993_0520, 0x1993_0521, 0x1993_0522, 0x0199_4000];
/// Most catchable types accepted (a class and its bases; real programs have a handful).
const MAX_CATCHABLE: u32 = 64;
/// The decorated name of `std::exception`.
const STD_EXCEPTION: &str = ".?AVexception@std@@";

/// One entry of the catchable type array.
#[derive(Debug, Clone, PartialEq, Eq)]
struct CatchableType {
    /// `.?AVruntime_error@std@@`.
    decorated: String,
    /// `std::runtime_error`, or the decorated name when it does not demangle.
    name: String,
}

/// Reads what an MSVC exception record's parameters say.
pub(super) fn from_parameters(session: &Session, parameters: &[u64]) -> UncaughtException {
    let mut found = UncaughtException {
        abi: Abi::Msvc,
        type_name: None,
        message: Message::None,
        throw_site: None,
        evidence: Vec::new(),
    };
    let memory = Memory::new(session);
    let p = |i: usize| parameters.get(i).copied();
    match p(0) {
        Some(magic) if MAGICS.contains(&magic) => {}
        Some(magic) => {
            found.evidence.push(format!(
                "parameter 0 ({magic:#x}) is not an MSVC throw magic: thrown type unknown"
            ));
            return found;
        }
        None => {
            found
                .evidence
                .push("the exception record has no parameters: thrown type unknown".into());
            return found;
        }
    }
    let object = p(1).unwrap_or(0);
    let Some(throw_info) = p(2).filter(|&a| a != 0) else {
        found
            .evidence
            .push("no ThrowInfo in the exception record: thrown type unknown".into());
        return found;
    };
    let image_base = match image_base(&memory, p(3), throw_info) {
        Ok((base, how)) => {
            if let Some(how) = how {
                found.evidence.push(how);
            }
            base
        }
        Err(why) => {
            found.evidence.push(why);
            return found;
        }
    };
    let types = match catchable_types(&memory, throw_info, image_base) {
        Ok(types) => types,
        Err(why) => {
            found.evidence.push(format!(
                "ThrowInfo {throw_info:#x}: {why}: thrown type unknown"
            ));
            return found;
        }
    };
    let names: Vec<&str> = types.iter().map(|t| t.name.as_str()).collect();
    found.evidence.push(format!(
        "ThrowInfo {throw_info:#x} -> CatchableTypeArray of {} ({}) -> TypeDescriptor {}",
        types.len(),
        names.join(", "),
        types[0].decorated
    ));
    found.type_name = Some(types[0].name.clone());
    found.message = if types.iter().any(|t| t.decorated == STD_EXCEPTION) {
        what(&memory, object, &mut found.evidence)
    } else {
        scalar_value(&memory, object, &types[0].decorated, &mut found.evidence)
    };
    found
}

/// The base RVAs are relative to: none on 32-bit, parameter 3 on 64-bit, else the module that
/// holds the ThrowInfo (with a note saying so).
fn image_base(
    memory: &Memory,
    parameter: Option<u64>,
    throw_info: u64,
) -> Result<(u64, Option<String>), String> {
    if memory.pointer_size == 4 {
        return Ok((0, None));
    }
    if let Some(base) = parameter.filter(|&b| b != 0) {
        return Ok((base, None));
    }
    match memory.module_base(throw_info) {
        Some(base) => Ok((
            base,
            Some(format!(
                "no image base in the record; RVAs taken relative to the module at {base:#x} that holds the ThrowInfo"
            )),
        )),
        None => Err(format!(
            "no image base in the record and no module holds ThrowInfo {throw_info:#x}: thrown type unknown"
        )),
    }
}

/// The catchable types of a ThrowInfo, most derived first (at least one).
fn catchable_types(
    memory: &Memory,
    throw_info: u64,
    image_base: u64,
) -> Result<Vec<CatchableType>, String> {
    let at = |field: u64, what: &str| -> Result<u64, String> {
        let v = memory
            .u32(field)
            .ok_or_else(|| format!("{what} at {field:#x} is not in the dump or image"))?;
        if v == 0 {
            return Err(format!("{what} at {field:#x} is NULL"));
        }
        Ok(image_base.wrapping_add(u64::from(v)))
    };
    let array = at(throw_info.wrapping_add(12), "pCatchableTypeArray")?;
    let count = memory
        .u32(array)
        .ok_or_else(|| format!("CatchableTypeArray {array:#x} is not in the dump or image"))?;
    if count == 0 || count > MAX_CATCHABLE {
        return Err(format!(
            "CatchableTypeArray {array:#x} claims {count} types (expected 1 to {MAX_CATCHABLE})"
        ));
    }
    let ptr = memory.pointer_size as u64;
    let mut out = Vec::new();
    for i in 0..u64::from(count) {
        let entry = at(array.wrapping_add(4 + 4 * i), "CatchableType")?;
        let descriptor = at(entry.wrapping_add(4), "pType")?;
        let decorated = memory
            .c_string(descriptor.wrapping_add(2 * ptr), MAX_STRING)
            .map_err(|why| format!("TypeDescriptor {descriptor:#x}: {why}"))?;
        if !decorated.starts_with('.') || decorated.len() < 2 {
            return Err(format!(
                "TypeDescriptor {descriptor:#x} holds no decorated type name"
            ));
        }
        let name = demangle_msvc_type(&decorated).unwrap_or_else(|| decorated.clone());
        out.push(CatchableType { decorated, name });
    }
    Ok(out)
}

/// `what` of a `std::exception` object: the pointer after the vftable pointer.
fn what(memory: &Memory, object: u64, evidence: &mut Vec<String>) -> Message {
    let ptr = memory.pointer_size as u64;
    if object == 0 {
        return Message::Unavailable("the record holds no thrown object".into());
    }
    let Some(text) = memory.pointer(object.wrapping_add(ptr)) else {
        return Message::Unavailable(format!(
            "the thrown object at {object:#x} is not in the dump"
        ));
    };
    if text == 0 {
        return Message::Unavailable(format!(
            "the object at {object:#x} stores no message (what is NULL)"
        ));
    }
    match memory.c_string(text, MAX_STRING) {
        Ok(s) => {
            evidence.push(format!(
                "message: std::exception data of the object at {object:#x}, what = {text:#x}"
            ));
            Message::Text(one_line(&s))
        }
        Err(why) => Message::Unavailable(format!("what of the object at {object:#x}: {why}")),
    }
}

/// The value of a thrown scalar (`int`, `char const *`, …) when the type is one.
fn scalar_value(
    memory: &Memory,
    object: u64,
    decorated: &str,
    evidence: &mut Vec<String>,
) -> Message {
    let value = match decorated {
        ".H" | ".J" => memory.u32(object).map(|v| (v as i32).to_string()),
        ".I" | ".K" => memory.u32(object).map(|v| v.to_string()),
        "._J" => memory.u64(object).map(|v| (v as i64).to_string()),
        "._K" => memory.u64(object).map(|v| v.to_string()),
        ".PEBD" | ".PEAD" | ".PBD" | ".PAD" => memory
            .pointer(object)
            .and_then(|p| memory.c_string(p, MAX_STRING).ok())
            .map(|s| format!("\"{}\"", one_line(&s))),
        _ => return Message::None,
    };
    match value {
        Some(v) => {
            evidence.push(format!("value read from the thrown object at {object:#x}"));
            Message::Value(v)
        }
        None => Message::None,
    }
}
