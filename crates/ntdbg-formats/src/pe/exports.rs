//! The export directory: the names and RVAs a DLL exports.

use object::pe as raw;

use super::{PeInfo, PeLayout};
use crate::bytes::{c_string, u16_at, u32_at};
use crate::FormatError;

/// Most exports read (ordinals are 16-bit, so no real image has more).
const MAX_EXPORTS: u32 = 0x1_0000;
/// Longest export or forwarder name read.
const MAX_NAME: usize = 1024;
/// Size of `IMAGE_EXPORT_DIRECTORY`.
const EXPORT_DIRECTORY_SIZE: u32 = 40;

/// One exported function or variable.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Export {
    /// The exported name; `None` for an export by ordinal only.
    pub name: Option<String>,
    /// The ordinal (the directory's `Base` plus the index in its function table).
    pub ordinal: u32,
    /// Its RVA (0 for a forwarder).
    pub rva: u32,
    /// `OTHERDLL.Function` when the export forwards to another DLL instead of having code here.
    pub forwarder: Option<String>,
}

impl PeInfo {
    /// The image's exports, sorted by RVA (forwarders last). Empty when the image has no
    /// export directory. Counts are bounded; names that cannot be read are skipped.
    ///
    /// ```
    /// use ntdbg_formats::pe::{PeInfo, PeLayout};
    /// # let Some(dir) = ntdbg_testutil::testdata_dir() else { return };
    /// let path = dir.join("rizin-testbins/pe/microsoft_seh_tests/x64/xframe_eh_dll.dll");
    /// let bytes = std::fs::read(path).unwrap();
    /// let pe = PeInfo::parse(&bytes, PeLayout::File).unwrap();
    /// let exports = pe.exports(&bytes, PeLayout::File).unwrap();
    /// assert_eq!(exports[0].name.as_deref(), Some("setup_data_dll"));
    /// assert_eq!(exports[0].rva, 0x1000);
    /// ```
    pub fn exports(&self, bytes: &[u8], layout: PeLayout) -> Result<Vec<Export>, FormatError> {
        let Some(dir) = self.data_directory(raw::IMAGE_DIRECTORY_ENTRY_EXPORT) else {
            return Ok(Vec::new());
        };
        let what = "export directory";
        let header = self.data_at_rva(bytes, layout, dir.rva, EXPORT_DIRECTORY_SIZE, what)?;
        let base = u32_at(header, 16, what)?;
        let n_functions = u32_at(header, 20, what)?.min(MAX_EXPORTS);
        let n_names = u32_at(header, 24, what)?.min(MAX_EXPORTS);
        let functions_rva = u32_at(header, 28, what)?;
        let names_rva = u32_at(header, 32, what)?;
        let ordinals_rva = u32_at(header, 36, what)?;

        let functions = self.data_at_rva(
            bytes,
            layout,
            functions_rva,
            n_functions * 4,
            "export address table",
        )?;
        let mut names: Vec<Option<String>> = vec![None; n_functions as usize];
        if n_names > 0 {
            let name_table =
                self.data_at_rva(bytes, layout, names_rva, n_names * 4, "export name table")?;
            let ordinal_table = self.data_at_rva(
                bytes,
                layout,
                ordinals_rva,
                n_names * 2,
                "export ordinal table",
            )?;
            for i in 0..n_names as usize {
                let index = usize::from(u16_at(ordinal_table, i * 2, "export ordinal table")?);
                let name_rva = u32_at(name_table, i * 4, "export name table")?;
                let Some(slot) = names.get_mut(index) else {
                    continue;
                };
                if slot.is_none() {
                    *slot = self.string_at(bytes, layout, name_rva);
                }
            }
        }
        let in_directory = |rva: u32| rva >= dir.rva && rva - dir.rva < dir.size;
        let mut out = Vec::new();
        for (index, name) in names.into_iter().enumerate() {
            let rva = u32_at(functions, index * 4, "export address table")?;
            if rva == 0 {
                continue;
            }
            let ordinal = base.wrapping_add(index as u32);
            if in_directory(rva) {
                out.push(Export {
                    name,
                    ordinal,
                    rva: 0,
                    forwarder: self.string_at(bytes, layout, rva),
                });
            } else {
                out.push(Export {
                    name,
                    ordinal,
                    rva,
                    forwarder: None,
                });
            }
        }
        out.sort_by_key(|e| (e.forwarder.is_some(), e.rva, e.ordinal));
        Ok(out)
    }

    /// A NUL-terminated ASCII string at `rva`, at most [`MAX_NAME`] bytes.
    fn string_at(&self, bytes: &[u8], layout: PeLayout, rva: u32) -> Option<String> {
        let start = self.rva_to_offset(rva, 1, layout)?;
        let end = bytes.len().min(start.checked_add(MAX_NAME)?);
        let s = c_string(bytes.get(start..end)?);
        (!s.is_empty()).then_some(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_rvas_and_ordinals_of_a_real_dll() {
        ntdbg_testutil::require_testdata!();
        let path =
            ntdbg_testutil::testdata("rizin-testbins/pe/microsoft_seh_tests/x64/xframe_eh_dll.dll");
        let bytes = std::fs::read(path).unwrap();
        let pe = PeInfo::parse(&bytes, PeLayout::File).unwrap();
        let exports = pe.exports(&bytes, PeLayout::File).unwrap();
        let got: Vec<(&str, u32)> = exports
            .iter()
            .map(|e| (e.name.as_deref().unwrap_or(""), e.rva))
            .collect();
        // The DLL's PDB has these functions at these RVAs.
        assert_eq!(
            got,
            [
                ("setup_data_dll", 0x1000),
                ("pass_through_dll", 0x10a0),
                ("pass_through_catch_dll", 0x10b0),
                ("raise_nocatch_fin_dll", 0x10c0),
                ("fault_and_catch_dll", 0x1120),
                ("fault_nocatch_fin", 0x1160),
            ]
        );
        assert!(exports
            .iter()
            .all(|e| e.ordinal >= 1 && e.forwarder.is_none()));
        // The same from the mapped layout.
        let mapped = crate::pe::map_file_image(&bytes, &pe).unwrap();
        let pe_mapped = PeInfo::parse(&mapped, PeLayout::Mapped).unwrap();
        assert_eq!(
            pe_mapped.exports(&mapped, PeLayout::Mapped).unwrap(),
            exports
        );
    }

    #[test]
    fn no_export_directory_is_empty_and_garbage_does_not_panic() {
        ntdbg_testutil::require_testdata!();
        let path = ntdbg_testutil::testdata("winelab/x64/crashy.exe");
        let bytes = std::fs::read(path).unwrap();
        let mut pe = PeInfo::parse(&bytes, PeLayout::File).unwrap();
        assert!(pe.exports(&bytes, PeLayout::File).unwrap().is_empty());
        // Point the export directory at arbitrary places: whatever is read, nothing panics.
        if pe.data_directories.is_empty() {
            pe.data_directories.push(Default::default());
        }
        for rva in [0x10u32, 0x3c, 0x200, 0x1000, u32::MAX - 8] {
            pe.data_directories[raw::IMAGE_DIRECTORY_ENTRY_EXPORT] =
                super::super::DataDirectory { rva, size: 0x40 };
            let _ = pe.exports(&bytes, PeLayout::File);
            let _ = pe.exports(&bytes, PeLayout::Mapped);
        }
    }
}
