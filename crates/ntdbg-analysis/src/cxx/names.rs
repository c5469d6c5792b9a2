//! Type names of thrown objects: MSVC RTTI names (`.?AVruntime_error@std@@`) and Itanium
//! `type_info` names (`St13runtime_error`), demangled.

use msvc_demangler::DemangleFlags;

/// Demangles an MSVC RTTI type name: `.?AVruntime_error@std@@` → `std::runtime_error`,
/// `.?AUfoo@@` → `foo`, `.H` → `int`, `.PEBD` → `char const *`; `None` when the name is not a
/// decorated type.
pub fn demangle_msvc_type(decorated: &str) -> Option<String> {
    let body = decorated.strip_prefix('.')?;
    if !body.starts_with('?') {
        return scalar_type(body).map(str::to_string);
    }
    // The type descriptor's own symbol (`??_R0<type>@8`) is what the demangler parses.
    let symbol = format!("??_R0{body}@8");
    let text = msvc_demangler::demangle(&symbol, DemangleFlags::llvm()).ok()?;
    let name = text.strip_suffix("::`RTTI Type Descriptor'")?;
    let name = ["class ", "struct ", "union ", "enum "]
        .iter()
        .find_map(|p| name.strip_prefix(p))
        .unwrap_or(name);
    (!name.is_empty()).then(|| name.to_string())
}

/// The scalar types thrown in practice, by their MSVC type code.
fn scalar_type(code: &str) -> Option<&'static str> {
    Some(match code {
        "H" => "int",
        "I" => "unsigned int",
        "J" => "long",
        "K" => "unsigned long",
        "D" => "char",
        "E" => "unsigned char",
        "F" => "short",
        "G" => "unsigned short",
        "M" => "float",
        "N" => "double",
        "_N" => "bool",
        "_J" => "__int64",
        "_K" => "unsigned __int64",
        "PEAD" | "PAD" => "char *",
        "PEBD" | "PBD" => "char const *",
        "PEA_W" | "PA_W" => "wchar_t *",
        "PEB_W" | "PB_W" => "wchar_t const *",
        _ => return None,
    })
}

/// Demangles an Itanium `type_info` name (`St13runtime_error`, `N3app12config_errorE`, `i`) to
/// the C++ type (`std::runtime_error`, `app::config_error`, `int`); libstdc++'s leading `*`
/// (local types compared by address) is ignored. `None` when the name does not parse as a type.
pub fn demangle_itanium_type(name: &str) -> Option<String> {
    let name = name.strip_prefix('*').unwrap_or(name);
    if name.is_empty() || !name.bytes().all(|b| b.is_ascii_graphic()) {
        return None;
    }
    // `_ZTS<type>` is the type's name string; demangling it names the type.
    let symbol = cpp_demangle::Symbol::new(format!("_ZTS{name}")).ok()?;
    let text = symbol.to_string();
    let ty = text.strip_prefix("typeinfo name for ")?;
    (!ty.is_empty()).then(|| ty.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn msvc_rtti_names() {
        let cases = [
            (".?AVruntime_error@std@@", "std::runtime_error"),
            (".?AVexception@std@@", "std::exception"),
            (".?AUmy_error@@", "my_error"),
            (".?AUconfig_error@app@@", "app::config_error"),
            (".H", "int"),
        ];
        for (decorated, name) in cases {
            assert_eq!(
                demangle_msvc_type(decorated).as_deref(),
                Some(name),
                "{decorated}"
            );
        }
        assert_eq!(demangle_msvc_type(".PEBD").as_deref(), Some("char const *"));
        assert_eq!(
            demangle_msvc_type(".?AV?$vector@HV?$allocator@H@std@@@std@@").as_deref(),
            Some("std::vector<int, class std::allocator<int> >")
        );
        assert_eq!(demangle_msvc_type("?AVx@@"), None);
        assert_eq!(demangle_msvc_type(".\u{1}junk"), None);
    }

    #[test]
    fn itanium_type_names() {
        let cases = [
            ("St13runtime_error", "std::runtime_error"),
            ("St12out_of_range", "std::out_of_range"),
            ("N3app12config_errorE", "app::config_error"),
            ("*N12_GLOBAL__N_15localE", "(anonymous namespace)::local"),
            ("i", "int"),
            ("PKc", "char const*"),
        ];
        for (raw, name) in cases {
            assert_eq!(demangle_itanium_type(raw).as_deref(), Some(name), "{raw}");
        }
        assert_eq!(demangle_itanium_type(""), None);
        assert_eq!(demangle_itanium_type("St13runtime_error trailing"), None);
        assert_eq!(demangle_itanium_type("\u{7f}"), None);
    }
}
