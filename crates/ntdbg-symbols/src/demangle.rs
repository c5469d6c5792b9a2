//! Undecorating public symbol names, the way WinDbg and Breakpad's `dump_syms` show them.
//!
//! - C++ names (`?f@C@ns@@QEAAXH@Z`) go through `msvc-demangler`: publics get the qualified
//!   name only (`ns::C::f`), functions without type information get the full signature.
//! - Itanium C++ names (`_ZSt9terminatev`, from GCC/Clang objects linked into a PE, such as a
//!   static libstdc++) go through `cpp_demangle` to the qualified name only (`std::terminate`).
//! - 32-bit x86 C names lose their calling-convention decoration: `_f` (cdecl) → `f`,
//!   `_f@12` (stdcall) and `@f@12` (fastcall) → `f` with 12 bytes of parameters.

use msvc_demangler::DemangleFlags;

/// A public symbol's display name and the parameter bytes its decoration declares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Undecorated {
    /// The name to show.
    pub name: String,
    /// Bytes of stack parameters (stdcall/fastcall decoration), else 0.
    pub parameter_size: u32,
}

/// Undecorates a public symbol name. `x86` selects the 32-bit C decoration rules.
pub(crate) fn public_name(raw: &str, x86: bool) -> Undecorated {
    let itanium = if x86 {
        raw.strip_prefix('_')
    } else {
        Some(raw)
    };
    if let Some(name) = itanium.and_then(itanium_name) {
        return Undecorated {
            name,
            parameter_size: 0,
        };
    }
    if raw.starts_with('?') {
        let name = demangle(raw, DemangleFlags::NAME_ONLY).unwrap_or_else(|| raw.to_string());
        return Undecorated {
            name,
            parameter_size: 0,
        };
    }
    if x86 {
        if let Some(u) = strip_x86_decoration(raw) {
            return u;
        }
    }
    Undecorated {
        name: raw.to_string(),
        parameter_size: 0,
    }
}

/// The display name of an exported function: [`public_name`] without the x86 rules (the export
/// table holds names as the linker exports them), reusing `raw` when it needs no change.
pub(crate) fn export_name(raw: String) -> String {
    if raw.starts_with('?') || raw.starts_with("_Z") {
        public_name(&raw, false).name
    } else {
        raw
    }
}

/// The qualified name (no parameters) of an Itanium-mangled function name (`_Z…`), or `None`
/// when `raw` is not one or does not demangle.
fn itanium_name(raw: &str) -> Option<String> {
    if !raw.starts_with("_Z") {
        return None;
    }
    let options = cpp_demangle::DemangleOptions::new().no_params();
    crate::source::panic_guard::contain(|| {
        cpp_demangle::Symbol::new(raw).ok()?.demangle(&options).ok()
    })
    .flatten()
    .filter(|s| !s.is_empty())
}

/// The display name of a 32-bit x86 assembly (MASM) procedure. Its symbol record holds the
/// name as assembled: calling-convention decoration (`@f@8`, `_f@8`) is removed, a C
/// underscore is removed from `__f` but `_f` is kept (`__SEH_prolog4` → `_SEH_prolog4`,
/// `_aulldvrm` stays), matching WinDbg and dump_syms.
pub(crate) fn masm_procedure_name(raw: &str) -> String {
    if let Some(u) =
        strip_x86_decoration(raw).filter(|u| u.parameter_size > 0 || raw.starts_with('@'))
    {
        return u.name;
    }
    match raw.strip_prefix('_') {
        Some(rest) if rest.starts_with('_') => rest.to_string(),
        _ => raw.to_string(),
    }
}

/// The full signature of a decorated function name (used when a procedure has no type
/// information), or `None` when it is not decorated or does not demangle.
pub(crate) fn function_signature(raw: &str) -> Option<String> {
    if !raw.starts_with('?') {
        return None;
    }
    demangle(
        raw,
        DemangleFlags::NO_FUNCTION_RETURNS
            | DemangleFlags::NO_ACCESS_SPECIFIERS
            | DemangleFlags::NO_MEMBER_TYPE
            | DemangleFlags::NO_MS_KEYWORDS
            | DemangleFlags::NO_THISTYPE
            | DemangleFlags::NO_CLASS_TYPE
            | DemangleFlags::SPACE_AFTER_COMMA
            | DemangleFlags::HUG_TYPE,
    )
}

/// Runs the demangler, containing any panic it might have on odd input.
fn demangle(raw: &str, flags: DemangleFlags) -> Option<String> {
    crate::source::panic_guard::contain(|| msvc_demangler::demangle(raw, flags).ok())
        .flatten()
        .filter(|s| !s.is_empty())
}

fn strip_x86_decoration(raw: &str) -> Option<Undecorated> {
    let (prefixed, rest) = match raw.as_bytes().first() {
        Some(b'_') => (true, &raw[1..]),
        Some(b'@') => (true, &raw[1..]),
        _ => (false, raw),
    };
    if !prefixed || rest.is_empty() {
        return None;
    }
    if let Some((name, digits)) = rest.rsplit_once('@') {
        if !name.is_empty() && !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit()) {
            if let Ok(parameter_size) = digits.parse::<u32>() {
                return Some(Undecorated {
                    name: name.to_string(),
                    parameter_size,
                });
            }
        }
    }
    if raw.starts_with('_') {
        return Some(Undecorated {
            name: rest.to_string(),
            parameter_size: 0,
        });
    }
    None
}

/// The name without its trailing parameter list (and qualifiers after it):
/// `ns::f(int, char*) const` → `ns::f`. Names without one come back unchanged.
pub fn strip_parameters(name: &str) -> &str {
    let trimmed = name.trim_end();
    let Some(close) = trimmed.rfind(')') else {
        return name;
    };
    // Only a parameter list if nothing but qualifiers follows the ')'.
    let tail = &trimmed[close + 1..];
    if !tail.split_whitespace().all(|w| {
        matches!(
            w,
            "const" | "volatile" | "&" | "&&" | "noexcept" | "__ptr64"
        )
    }) {
        return name;
    }
    let mut depth = 0usize;
    for (i, c) in trimmed[..=close].char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    let head = trimmed[..i].trim_end();
                    // `operator()` keeps its own parentheses.
                    return if head.is_empty() { name } else { head };
                }
            }
            _ => {}
        }
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn itanium_names_lose_their_mangling_and_parameters() {
        assert_eq!(public_name("_ZSt9terminatev", false).name, "std::terminate");
        assert_eq!(
            public_name("_ZN10__cxxabiv111__terminateEPFvvE", false).name,
            "__cxxabiv1::__terminate"
        );
        // 32-bit MinGW adds the C underscore in front.
        assert_eq!(public_name("__ZSt9terminatev", true).name, "std::terminate");
        assert_eq!(export_name("_ZSt9terminatev".into()), "std::terminate");
        // Not mangled, or not demangling: kept as they are.
        assert_eq!(public_name("_Zebra", false).name, "_Zebra");
        assert_eq!(public_name("main", false).name, "main");
    }

    #[test]
    fn cpp_publics_get_qualified_names() {
        let u = public_name("?f@C@google_breakpad@@QAEHXZ", true);
        assert_eq!(u.name, "google_breakpad::C::f");
        assert_eq!(public_name("?h@@YAXXZ", false).name, "h");
        // Not demanglable: kept as is.
        assert_eq!(public_name("?@@@", false).name, "?@@@");
    }

    #[test]
    fn cpp_signatures_for_untyped_functions() {
        assert_eq!(
            function_signature("?set_member@C@google_breakpad@@QAEXH@Z").as_deref(),
            Some("google_breakpad::C::set_member(int)")
        );
        assert_eq!(function_signature("main"), None);
    }

    #[test]
    fn x86_c_decorations() {
        assert_eq!(
            public_name("_RtlUnwind@16", true),
            Undecorated {
                name: "RtlUnwind".into(),
                parameter_size: 16
            }
        );
        assert_eq!(public_name("@fast@8", true).name, "fast");
        assert_eq!(public_name("__NLG_Dispatch", true).name, "_NLG_Dispatch");
        assert_eq!(public_name("_main", true).name, "main");
        // x64 names are not decorated: untouched.
        assert_eq!(public_name("_main", false).name, "_main");
        assert_eq!(public_name("_", true).name, "_");
        assert_eq!(public_name("plain", true).name, "plain");
    }

    #[test]
    fn masm_procedures() {
        assert_eq!(masm_procedure_name("__SEH_prolog4"), "_SEH_prolog4");
        assert_eq!(masm_procedure_name("_aulldvrm"), "_aulldvrm");
        assert_eq!(
            masm_procedure_name("@_EH4_LocalUnwind@16"),
            "_EH4_LocalUnwind"
        );
        assert_eq!(masm_procedure_name("_RtlUnwind@16"), "RtlUnwind");
        assert_eq!(masm_procedure_name("memcpy"), "memcpy");
    }

    #[test]
    fn parameter_lists_are_stripped() {
        assert_eq!(
            strip_parameters("crash_null_write(int*)"),
            "crash_null_write"
        );
        assert_eq!(strip_parameters("main(int, char**)"), "main");
        assert_eq!(strip_parameters("ns::C::f() const"), "ns::C::f");
        assert_eq!(strip_parameters("f(void (*)(int))"), "f");
        assert_eq!(
            strip_parameters("ns::C::operator()(int)"),
            "ns::C::operator()"
        );
        assert_eq!(strip_parameters("mainCRTStartup"), "mainCRTStartup");
        assert_eq!(
            strip_parameters("(anonymous namespace)::f"),
            "(anonymous namespace)::f"
        );
        assert_eq!(strip_parameters("x)"), "x)");
    }
}
