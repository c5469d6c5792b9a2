//! Turning addresses into `module!function+0xoffset` names.

use crate::text::call_site_name;
use ntdbg_symbols::strip_parameters;
use serde::Serialize;

/// What is known about one address.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Symbolized {
    /// The address.
    #[serde(serialize_with = "crate::hex_json::serialize")]
    #[schemars(with = "crate::hex_json::Hex")]
    pub address: u64,
    /// The WinDbg module name (file name without extension), when in a module.
    pub module: Option<String>,
    /// The module's base address.
    #[serde(serialize_with = "crate::hex_json::serialize")]
    #[schemars(with = "Option<crate::hex_json::Hex>")]
    pub module_base: Option<u64>,
    /// The function or public symbol containing the address.
    pub function: Option<String>,
    /// Offset of the address from the function start.
    #[serde(serialize_with = "crate::hex_json::serialize")]
    #[schemars(with = "Option<crate::hex_json::Hex>")]
    pub function_offset: Option<u64>,
    /// Source file, when the symbols have line information.
    pub source_file: Option<String>,
    /// Source line.
    pub source_line: Option<u32>,
}

impl Symbolized {
    /// The WinDbg form: `crashy!main+0x10`, `crashy+0x1234`, or the bare hex address.
    pub fn display(&self) -> String {
        call_site_name(
            self.module.as_deref(),
            self.module_base,
            self.function.as_deref().map(strip_parameters),
            self.function_offset,
            self.address,
        )
    }

    /// ` [file @ line]` as WinDbg appends to stack frames, or an empty string.
    pub fn source_suffix(&self) -> String {
        match (&self.source_file, self.source_line) {
            (Some(f), Some(l)) => format!(" [{f} @ {l}]"),
            _ => String::new(),
        }
    }
}

/// The WinDbg module name for a module path: the file name without its extension
/// (`C:\Windows\System32\ntdll.dll` → `ntdll`).
pub fn module_name(code_file: &str) -> String {
    let file = ntdbg_formats::store::file_name_of(code_file);
    match file.rfind('.') {
        Some(dot) if dot > 0 => file[..dot].to_string(),
        _ => file.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn module_names_drop_folder_and_extension() {
        assert_eq!(module_name(r"C:\Windows\System32\ntdll.dll"), "ntdll");
        assert_eq!(module_name("Z:\\tmp\\crashy.exe"), "crashy");
        assert_eq!(module_name("/usr/lib/libc.so.6"), "libc.so");
        assert_eq!(module_name("noext"), "noext");
    }

    #[test]
    fn display_forms() {
        let mut s = Symbolized {
            address: 0x140002134,
            ..Default::default()
        };
        assert_eq!(s.display(), "0x140002134");
        s.module = Some("crashy".into());
        s.module_base = Some(0x140000000);
        assert_eq!(s.display(), "crashy+0x2134");
        s.function = Some("crash_null_write(int*)".into());
        s.function_offset = Some(4);
        assert_eq!(s.display(), "crashy!crash_null_write+0x4");
    }
}
