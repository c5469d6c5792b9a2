//! C++ exceptions: the thrown type of an MSVC `throw` (0xE06D7363), read from the ThrowInfo
//! the exception record points to.
//!
//! MSVC parameters: `[magic, object, ThrowInfo*, image base]` (image base on x64/ARM64 only,
//! where ThrowInfo's fields are RVAs). ThrowInfo → CatchableTypeArray → the first CatchableType →
//! TypeDescriptor, whose decorated name (`.?AVruntime_error@std@@`) names the type.

use ntdbg_engine::Session;
use ntdbg_targets::ExceptionEvent;

/// The MSVC C++ exception code (`'msc'`).
pub const MSVC_CPP_CODE: u32 = 0xE06D_7363;
/// The GCC/Clang (Itanium ABI on Windows) C++ exception code (`' GCC'`).
pub const GCC_CPP_CODE: u32 = 0x2047_4343;

/// Longest decorated type name read.
const MAX_NAME: usize = 256;

/// What could be learned about a thrown C++ object's type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ThrownType {
    /// The type, demangled (`std::runtime_error`), and its decorated form.
    Known {
        /// `std::runtime_error`.
        name: String,
        /// `.?AVruntime_error@std@@`.
        decorated: String,
    },
    /// Why it could not be read.
    Unknown(String),
}

/// Reads the thrown type of an MSVC C++ exception; `None` for other codes.
pub fn thrown_type(session: &Session, event: &ExceptionEvent) -> Option<ThrownType> {
    if event.code != MSVC_CPP_CODE {
        return None;
    }
    let ptr = session.arch().pointer_size();
    let p = |i: usize| event.parameters.get(i).copied();
    let Some(throw_info) = p(2).filter(|&a| a != 0) else {
        return Some(ThrownType::Unknown(
            "thrown type unknown (no ThrowInfo in the exception record)".into(),
        ));
    };
    let relative = ptr == 8;
    let image_base = if relative { p(3).unwrap_or(0) } else { 0 };
    let missing = || ThrownType::Unknown("thrown type unknown (memory not in the dump)".into());
    let at = |field: u64| -> Option<u64> {
        let v = read_u32(session, field)?;
        Some(if relative {
            image_base.wrapping_add(u64::from(v))
        } else {
            u64::from(v)
        })
    };
    // ThrowInfo: attributes, pmfnUnwind, pForwardCompat, pCatchableTypeArray.
    let Some(array) = at(throw_info + 12) else {
        return Some(missing());
    };
    // CatchableTypeArray: nCatchableTypes, then the entries.
    let Some(first) = at(array + 4) else {
        return Some(missing());
    };
    // CatchableType: properties, pType.
    let Some(descriptor) = at(first + 4) else {
        return Some(missing());
    };
    // TypeDescriptor: pVFTable, spare, name.
    let name_at = descriptor + 2 * ptr as u64;
    let Some(decorated) = read_c_string(session, name_at) else {
        return Some(missing());
    };
    Some(ThrownType::Known {
        name: demangle_type(&decorated),
        decorated,
    })
}

fn read_u32(session: &Session, addr: u64) -> Option<u32> {
    let bytes = session.read_code(addr, 4)?;
    let b: [u8; 4] = bytes.get(..4)?.try_into().ok()?;
    Some(u32::from_le_bytes(b))
}

fn read_c_string(session: &Session, addr: u64) -> Option<String> {
    let bytes = session.read_code(addr, MAX_NAME)?;
    let end = bytes.iter().position(|&b| b == 0)?;
    let s = std::str::from_utf8(bytes.get(..end)?).ok()?;
    (s.starts_with('.') && s.len() > 1).then(|| s.to_string())
}

/// Demangles an RTTI type name: `.?AVruntime_error@std@@` → `std::runtime_error`,
/// `.?AUfoo@@` → `foo`, `.H` → `int`; anything else is returned as written.
pub fn demangle_type(decorated: &str) -> String {
    let body = [".?AV", ".?AU", ".?AW4"]
        .iter()
        .find_map(|p| decorated.strip_prefix(p));
    if let Some(body) = body {
        if let Some(names) = body.strip_suffix("@@") {
            if !names.is_empty() && !names.contains(['?', '$']) {
                let mut parts: Vec<&str> = names.split('@').collect();
                parts.reverse();
                return parts.join("::");
            }
        }
        return decorated.to_string();
    }
    let primitive = match decorated {
        ".H" => "int",
        ".I" => "unsigned int",
        ".J" => "long",
        ".K" => "unsigned long",
        ".D" => "char",
        ".E" => "unsigned char",
        ".F" => "short",
        ".G" => "unsigned short",
        ".M" => "float",
        ".N" => "double",
        ".N_" => "bool",
        "._J" => "__int64",
        "._K" => "unsigned __int64",
        ".PEAD" | ".PAD" => "char *",
        ".PEBD" | ".PBD" => "char const *",
        _ => return decorated.to_string(),
    };
    primitive.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn demangles_rtti_names() {
        assert_eq!(
            demangle_type(".?AVruntime_error@std@@"),
            "std::runtime_error"
        );
        assert_eq!(demangle_type(".?AVexception@std@@"), "std::exception");
        assert_eq!(demangle_type(".?AUmy_error@@"), "my_error");
        assert_eq!(demangle_type(".H"), "int");
        assert_eq!(demangle_type(".PEBD"), "char const *");
        assert_eq!(demangle_type(".?AV?$weird@H@@"), ".?AV?$weird@H@@");
    }
}
