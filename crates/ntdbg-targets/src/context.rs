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

/// Size in bytes of an x64 `KTRAP_FRAME` (0x190 in every Windows version).
pub const KTRAP_FRAME_AMD64_SIZE: usize = 0x190;

/// The register context a kernel trap frame saved (`.trap ADDR`), from the bytes of an x64
/// `KTRAP_FRAME`. `None` for other architectures or too few bytes.
///
/// A trap frame saves only the volatile registers, rbp, the segment selectors, eflags, rip
/// and rsp; the non-volatile rbx, rsi, rdi and r12–r15 are left zero, as WinDbg shows them.
/// Offsets: `KTRAP_FRAME` (amd64) as NTDDK.H defines it, tabulated with each version by
/// Geoff Chappell (<https://www.geoffchappell.com/studies/windows/km/ntoskrnl/inc/ntos/amd64_x/ktrap_frame.htm>):
/// MxCsr 0x2c, Rax 0x30, Rcx 0x38, Rdx 0x40, R8 0x48, R9 0x50, R10 0x58, R11 0x60,
/// Dr0–Dr3 0xd8–0xf0, Dr6 0xf8, Dr7 0x100, SegDs 0x130, SegEs 0x132, SegFs 0x134,
/// SegGs 0x136, Rbp 0x158, Rip 0x168, SegCs 0x170, EFlags 0x178, Rsp 0x180, SegSs 0x188.
pub fn context_from_trap_frame(arch: Arch, bytes: &[u8]) -> Option<MinidumpContext> {
    if arch != Arch::X64 || bytes.len() < KTRAP_FRAME_AMD64_SIZE {
        return None;
    }
    let le = scroll::Endian::Little;
    let q = |off: usize| bytes.pread_with::<u64>(off, le).ok();
    let d = |off: usize| bytes.pread_with::<u32>(off, le).ok();
    let w = |off: usize| bytes.pread_with::<u16>(off, le).ok();
    let c = md::CONTEXT_AMD64 {
        // CONTEXT_AMD64 | CONTROL | INTEGER | SEGMENTS | DEBUG_REGISTERS.
        context_flags: 0x0010_0017,
        mx_csr: d(0x2c)?,
        rax: q(0x30)?,
        rcx: q(0x38)?,
        rdx: q(0x40)?,
        r8: q(0x48)?,
        r9: q(0x50)?,
        r10: q(0x58)?,
        r11: q(0x60)?,
        dr0: q(0xd8)?,
        dr1: q(0xe0)?,
        dr2: q(0xe8)?,
        dr3: q(0xf0)?,
        dr6: q(0xf8)?,
        dr7: q(0x100)?,
        ds: w(0x130)?,
        es: w(0x132)?,
        fs: w(0x134)?,
        gs: w(0x136)?,
        rbp: q(0x158)?,
        rip: q(0x168)?,
        cs: w(0x170)?,
        eflags: d(0x178)?,
        rsp: q(0x180)?,
        ss: w(0x188)?,
        ..Default::default()
    };
    Some(MinidumpContext::from_raw(MinidumpRawContext::Amd64(c)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trap_frame_registers_at_their_offsets() {
        let mut frame = vec![0u8; KTRAP_FRAME_AMD64_SIZE];
        let put = |f: &mut Vec<u8>, off: usize, v: u64| {
            f[off..off + 8].copy_from_slice(&v.to_le_bytes());
        };
        put(&mut frame, 0x30, 0xaaaa);
        put(&mut frame, 0x60, 0x1111);
        put(&mut frame, 0x140, 0xbbbb); // Rbx: not restored
        put(&mut frame, 0x158, 0xf00d);
        put(&mut frame, 0x168, 0xffff_f804_8b58_334c);
        put(&mut frame, 0x170, 0x10);
        put(&mut frame, 0x178, 0x10282);
        put(&mut frame, 0x180, 0xffff_8504_2989_1f00);
        let ctx = context_from_trap_frame(Arch::X64, &frame);
        let Some(MinidumpRawContext::Amd64(c)) = ctx.map(|c| c.raw) else {
            panic!("no context");
        };
        assert_eq!((c.rax, c.r11, c.rbx, c.rbp), (0xaaaa, 0x1111, 0, 0xf00d));
        assert_eq!(
            (c.rip, c.rsp),
            (0xffff_f804_8b58_334c, 0xffff_8504_2989_1f00)
        );
        assert_eq!((c.cs, c.eflags), (0x10, 0x10282));
        assert!(context_from_trap_frame(Arch::X64, &frame[..0x18f]).is_none());
        assert!(context_from_trap_frame(Arch::X86, &frame).is_none());
    }
}
