//! CONTEXT records: reading one from raw bytes (a dump header, memory for `.cxr`).

use crate::Arch;
use minidump::format as md;
use minidump::{MinidumpContext, MinidumpRawContext};
use scroll::Pread;

/// Reads a CONTEXT record (as `.cxr ADDR` takes) of the given architecture from raw bytes.
pub fn context_from_bytes(arch: Arch, bytes: &[u8]) -> Option<MinidumpContext> {
    let le = scroll::Endian::Little;
    let raw = match arch {
        Arch::X64 => MinidumpRawContext::Amd64(bytes.pread_with::<md::CONTEXT_AMD64>(0, le).ok()?),
        Arch::X86 => MinidumpRawContext::X86(bytes.pread_with::<md::CONTEXT_X86>(0, le).ok()?),
        Arch::Arm64 => {
            MinidumpRawContext::Arm64(bytes.pread_with::<md::CONTEXT_ARM64>(0, le).ok()?)
        }
        Arch::Other(_) => return None,
    };
    Some(MinidumpContext::from_raw(raw))
}

/// Size in bytes of a CONTEXT record for the architecture.
pub fn context_size(arch: Arch) -> usize {
    match arch {
        Arch::X64 => 1232,
        Arch::X86 => 716,
        Arch::Arm64 => 912,
        Arch::Other(_) => 0,
    }
}
