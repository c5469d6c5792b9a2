//! Facts about a loaded module that several front ends print: its file name and versions.

use minidump::MinidumpModule;

pub use ntdbg_formats::store::file_name_of;

/// `VS_FIXEDFILEINFO.dwSignature`: the version block is present.
const VS_FIXEDFILEINFO_SIGNATURE: u32 = 0xFEEF_04BD;

/// The file version from the module's VS_FIXEDFILEINFO (`10.0.19041.662`), when recorded.
pub fn file_version(m: &MinidumpModule) -> Option<String> {
    let v = &m.raw.version_info;
    (v.signature == VS_FIXEDFILEINFO_SIGNATURE)
        .then(|| dotted(v.file_version_hi, v.file_version_lo))
}

/// The product version from the module's VS_FIXEDFILEINFO, when recorded.
pub fn product_version(m: &MinidumpModule) -> Option<String> {
    let v = &m.raw.version_info;
    (v.signature == VS_FIXEDFILEINFO_SIGNATURE)
        .then(|| dotted(v.product_version_hi, v.product_version_lo))
}

fn dotted(hi: u32, lo: u32) -> String {
    format!("{}.{}.{}.{}", hi >> 16, hi & 0xffff, lo >> 16, lo & 0xffff)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_need_the_signature() {
        let mut m = MinidumpModule::new(0x1000, 0x1000, r"C:\x\ntdll.dll");
        assert_eq!(file_version(&m), None);
        m.raw.version_info.signature = VS_FIXEDFILEINFO_SIGNATURE;
        m.raw.version_info.file_version_hi = 10 << 16;
        m.raw.version_info.file_version_lo = (19041 << 16) | 662;
        assert_eq!(file_version(&m).as_deref(), Some("10.0.19041.662"));
        assert_eq!(file_name_of(&m.name), "ntdll.dll");
    }
}
