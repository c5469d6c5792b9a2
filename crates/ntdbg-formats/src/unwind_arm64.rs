//! ARM64 unwinding from `.pdata`/`.xdata`, as documented in Microsoft's "ARM64 exception
//! handling".
//!
//! [`unwind`] undoes one function's prologue effects: given the `.pdata` entry covering the
//! program counter, its `.xdata` record (unless the entry is packed), the registers of the
//! frame and a way to read stack memory, it restores the caller's `sp`, `x19`–`x30` and `pc`.
//! Prologue and epilogue positions are honoured (only the instructions already executed are
//! undone). No I/O: stack reads go through the caller's closure, like gimli's evaluator asks
//! for what it needs.
//!
//! Not supported (an error, never a guess): SVE allocations (`alloc_z`), trap frames and
//! ARM64EC contexts.

use crate::bytes::{slice, u32_at};
use crate::pe::pdata::RuntimeFunctionArm64;
use crate::FormatError;

/// Register state for one frame. `x[29]` is the frame pointer, `x[30]` the link register;
/// `None` means the value is unknown.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Arm64Regs {
    /// `x0`–`x30`.
    pub x: [Option<u64>; 31],
    /// The stack pointer.
    pub sp: u64,
    /// The program counter.
    pub pc: u64,
}

/// The fixed part of an `.xdata` record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct XdataHeader {
    /// Function length in bytes.
    pub function_length: u32,
    /// Whether exception handler data follows the codes.
    pub has_handler: bool,
    /// Whether the single epilogue is described in the header (`E` bit).
    pub single_epilog: bool,
    /// Epilogue scope count, or with `E` the index of the epilogue's first unwind code.
    pub epilog_count: u32,
    /// Number of 32-bit words of unwind codes.
    pub code_words: u32,
    /// Offset of the epilogue scopes.
    pub epilogs_at: usize,
    /// Offset of the unwind codes.
    pub codes_at: usize,
}

impl XdataHeader {
    /// Parses the header at the start of an `.xdata` record and checks that the epilogue
    /// scopes and unwind codes it announces are present.
    pub fn parse(xdata: &[u8]) -> Result<XdataHeader, FormatError> {
        let header = XdataHeader::parse_fixed(xdata)?;
        slice(
            xdata,
            header.codes_at,
            header.code_words as usize * 4,
            ".xdata unwind codes",
        )?;
        Ok(header)
    }

    /// Parses the header words at the start of an `.xdata` record (4 or 8 bytes) without
    /// checking that the scopes and codes follow: enough to learn [`XdataHeader::len`] before
    /// reading the rest.
    pub fn parse_fixed(xdata: &[u8]) -> Result<XdataHeader, FormatError> {
        let what = ".xdata header";
        let w = u32_at(xdata, 0, what)?;
        let version = (w >> 18) & 3;
        if version != 0 {
            return Err(FormatError::Unsupported {
                what: ".xdata version",
                value: u64::from(version),
            });
        }
        let mut epilog_count = (w >> 22) & 0x1f;
        let mut code_words = w >> 27;
        let mut at = 4;
        if epilog_count == 0 && code_words == 0 {
            let ext = u32_at(xdata, 4, what)?;
            epilog_count = ext & 0xffff;
            code_words = (ext >> 16) & 0xff;
            at = 8;
        }
        let single_epilog = w & (1 << 21) != 0;
        let epilogs_at = at;
        let codes_at = if single_epilog {
            at
        } else {
            at + epilog_count as usize * 4
        };
        Ok(XdataHeader {
            function_length: (w & 0x3ffff) * 4,
            has_handler: w & (1 << 20) != 0,
            single_epilog,
            epilog_count,
            code_words,
            epilogs_at,
            codes_at,
        })
    }

    /// Total bytes of header, scopes and codes.
    pub fn len(&self) -> usize {
        self.codes_at + self.code_words as usize * 4
    }

    /// Whether the record has no unwind codes.
    pub fn is_empty(&self) -> bool {
        self.code_words == 0
    }
}

/// The length in bytes of the function an entry describes (`xdata` is needed unless the
/// entry is packed).
pub fn function_length(
    entry: &RuntimeFunctionArm64,
    xdata: Option<&[u8]>,
) -> Result<u32, FormatError> {
    match entry.flag() {
        0 => {
            let xdata = xdata.ok_or(FormatError::NeedsData {
                what: ".xdata record",
                address: u64::from(entry.unwind_data),
            })?;
            Ok(XdataHeader::parse(xdata)?.function_length)
        }
        1 | 2 => Ok(((entry.unwind_data >> 2) & 0x7ff) * 4),
        _ => Err(FormatError::Unsupported {
            what: "ARM64 .pdata flag",
            value: 3,
        }),
    }
}

/// Reads one 64-bit stack value.
pub type ReadStack<'a> = dyn FnMut(u64) -> Option<u64> + 'a;

/// Unwinds one frame in place: `regs` describes the frame whose `pc` lies `pc_offset` bytes
/// into the function `entry` describes; on success it describes the caller (`pc` = return
/// address, pointer authentication bits stripped).
pub fn unwind(
    entry: &RuntimeFunctionArm64,
    xdata: Option<&[u8]>,
    pc_offset: u32,
    regs: &mut Arm64Regs,
    read: &mut ReadStack<'_>,
) -> Result<(), FormatError> {
    let mut m = Machine {
        regs,
        read,
        pc_set: false,
        pac: false,
    };
    let instr = pc_offset / 4;
    match entry.flag() {
        0 => {
            let xdata = xdata.ok_or(FormatError::NeedsData {
                what: ".xdata record",
                address: u64::from(entry.unwind_data),
            })?;
            unwind_full(xdata, instr, &mut m)?;
        }
        1 | 2 => unwind_packed(entry.unwind_data, instr, &mut m)?,
        _ => {
            return Err(FormatError::Unsupported {
                what: "ARM64 .pdata flag",
                value: 3,
            })
        }
    }
    if !m.pc_set {
        m.regs.pc = m.reg(30)?;
    }
    if m.pac {
        m.regs.pc = strip_pac(m.regs.pc);
    }
    Ok(())
}

/// Removes pointer-authentication bits from a code address (user or kernel half).
pub fn strip_pac(address: u64) -> u64 {
    if address & (1 << 55) != 0 {
        address | 0xffff_0000_0000_0000
    } else {
        address & 0x0000_ffff_ffff_ffff
    }
}

struct Machine<'r, 'f> {
    regs: &'r mut Arm64Regs,
    read: &'r mut ReadStack<'f>,
    pc_set: bool,
    pac: bool,
}

impl Machine<'_, '_> {
    fn load(&mut self, address: u64) -> Result<u64, FormatError> {
        (self.read)(address).ok_or(FormatError::NeedsData {
            what: "stack memory",
            address,
        })
    }

    fn reg(&self, n: usize) -> Result<u64, FormatError> {
        self.regs
            .x
            .get(n)
            .copied()
            .flatten()
            .ok_or(FormatError::NeedsData {
                what: "register value",
                address: n as u64,
            })
    }

    fn add_sp(&mut self, bytes: u64) {
        self.regs.sp = self.regs.sp.wrapping_add(bytes);
    }

    /// Loads `count` registers from `reg` on, from `sp + 8 * max(pos, 0)`; a negative `pos`
    /// (pre-indexed store) then pops `-8 * pos` bytes. `reg >= 31` means "floating point,
    /// skip the value".
    fn restore(
        &mut self,
        reg: usize,
        count: usize,
        pos: i64,
        float: bool,
    ) -> Result<(), FormatError> {
        let offset = pos.max(0) as u64;
        if !float {
            for i in 0..count {
                let value = self.load(self.regs.sp.wrapping_add(8 * (offset + i as u64)))?;
                let slot = self.regs.x.get_mut(reg + i).ok_or(FormatError::Malformed {
                    what: "ARM64 unwind code",
                    offset: reg as u64,
                    reason: "register number out of range",
                })?;
                *slot = Some(value);
            }
        }
        if pos < 0 {
            self.add_sp(8 * pos.unsigned_abs());
        }
        Ok(())
    }
}

/// Bytes taken by the unwind code starting with `op`.
fn code_len(op: u8) -> usize {
    match op {
        0x00..=0xbf => 1,
        0xc0..=0xdf => 2,
        0xe0 => 4,
        0xe2 => 2,
        0xe7 => 3,
        _ => 1,
    }
}

/// Number of unwind codes (instructions) from `at` to the next `end`/`end_c`.
fn sequence_len(codes: &[u8], mut at: usize) -> usize {
    let mut n = 0;
    while let Some(&op) = codes.get(at) {
        if op == 0xe4 || op == 0xe5 {
            break;
        }
        at += code_len(op);
        n += 1;
    }
    n
}

/// Runs unwind codes from `at`, skipping the first `skip` of them.
fn run_codes(
    codes: &[u8],
    mut at: usize,
    mut skip: usize,
    m: &mut Machine<'_, '_>,
) -> Result<(), FormatError> {
    while skip > 0 {
        match codes.get(at) {
            Some(&op) if op != 0xe4 && op != 0xe5 => {
                at += code_len(op);
                skip -= 1;
            }
            _ => break,
        }
    }
    let mut save_next = 2usize;
    while let Some(&op) = codes.get(at) {
        let n = code_len(op);
        let Some(b) = codes.get(at..at + n) else {
            break;
        };
        let val = if n > 1 {
            u32::from(b[0]) << 8 | u32::from(b[1])
        } else {
            u32::from(op)
        };
        let z6 = i64::from(val & 0x3f);
        let x4 = 19 + ((val >> 6) & 0xf) as usize;
        match op {
            0x00..=0x1f => m.add_sp(16 * u64::from(val & 0x1f)),
            0x20..=0x3f => m.restore(19, save_next, -i64::from(val & 0x1f), false)?,
            0x40..=0x7f => m.restore(29, 2, z6, false)?,
            0x80..=0xbf => m.restore(29, 2, -z6 - 1, false)?,
            0xc0..=0xc7 => m.add_sp(16 * u64::from(val & 0x7ff)),
            0xc8..=0xcb => m.restore(x4, save_next, z6, false)?,
            0xcc..=0xcf => m.restore(x4, save_next, -z6 - 1, false)?,
            0xd0..=0xd3 => m.restore(x4, 1, z6, false)?,
            0xd4..=0xd5 => {
                let reg = 19 + ((val >> 5) & 0xf) as usize;
                m.restore(reg, 1, -i64::from(val & 0x1f) - 1, false)?
            }
            0xd6..=0xd7 => {
                let reg = 19 + 2 * ((val >> 6) & 0x7) as usize;
                m.restore(reg, 1, z6, false)?;
                m.restore(30, 1, z6 + 1, false)?;
            }
            0xd8..=0xd9 => m.restore(0, save_next, z6, true)?,
            0xda..=0xdb => m.restore(0, save_next, -z6 - 1, true)?,
            0xdc..=0xdd => m.restore(0, 1, z6, true)?,
            0xde => m.restore(0, 1, -i64::from(val & 0x1f) - 1, true)?,
            0xe0 => {
                let size = u64::from(b[1]) << 16 | u64::from(b[2]) << 8 | u64::from(b[3]);
                m.add_sp(16 * size);
            }
            0xe1 => m.regs.sp = m.reg(29)?,
            0xe2 => m.regs.sp = m.reg(29)?.wrapping_sub(8 * u64::from(val & 0xff)),
            0xe3 | 0xec => {}
            0xe4 | 0xe5 => break,
            0xe6 => {
                save_next += 2;
                at += n;
                continue;
            }
            0xe7 => save_any_reg(b, save_next, m)?,
            0xe9 => {
                // Machine frame: the interrupted pc and sp were pushed.
                let sp = m.regs.sp;
                m.regs.pc = m.load(sp.wrapping_add(8))?;
                m.regs.sp = m.load(sp)?;
                m.pc_set = true;
            }
            0xea => restore_context(m)?,
            0xfc => m.pac = true,
            other => {
                return Err(FormatError::Unsupported {
                    what: "ARM64 unwind code",
                    value: u64::from(other),
                })
            }
        }
        save_next = 2;
        at += n;
    }
    Ok(())
}

/// `save_any_reg` (`11100111 0pxrrrrr ffoooooo`).
fn save_any_reg(b: &[u8], save_next: usize, m: &mut Machine<'_, '_>) -> Result<(), FormatError> {
    let paired = b[1] & 0x40 != 0;
    let writeback = b[1] & 0x20 != 0;
    let reg = usize::from(b[1] & 0x1f);
    let kind = b[2] >> 6;
    if b[1] & 0x80 != 0 || kind == 3 || (paired && save_next != 2) {
        return Err(FormatError::Malformed {
            what: "ARM64 unwind code save_any_reg",
            offset: 0,
            reason: "reserved encoding",
        });
    }
    let count = if paired { 2 } else { 1 };
    let mut pos = i64::from(b[2] & 0x3f);
    if writeback {
        pos = -(pos + 1);
    }
    if (writeback || paired) && kind != 2 {
        pos *= 2;
    }
    match kind {
        0 => m.restore(reg, count, pos, false),
        1 => m.restore(0, count, pos, true),
        // Q registers are 16 bytes: only the stack adjustment matters here.
        _ => m.restore(0, count, pos * 2, true),
    }
}

/// `MSFT_OP_CONTEXT`: a whole `ARM64_NT_CONTEXT` was saved at `sp`.
fn restore_context(m: &mut Machine<'_, '_>) -> Result<(), FormatError> {
    let base = m.regs.sp;
    for i in 0..31 {
        let v = m.load(base.wrapping_add(8 + 8 * i as u64))?;
        m.regs.x[i] = Some(v);
    }
    m.regs.sp = m.load(base.wrapping_add(8 + 8 * 31))?;
    m.regs.pc = m.load(base.wrapping_add(8 + 8 * 32))?;
    m.pc_set = true;
    Ok(())
}

fn unwind_full(xdata: &[u8], instr: u32, m: &mut Machine<'_, '_>) -> Result<(), FormatError> {
    let h = XdataHeader::parse(xdata)?;
    let codes = slice(
        xdata,
        h.codes_at,
        h.code_words as usize * 4,
        ".xdata unwind codes",
    )?;
    let code_bytes = codes.len() as u32;
    let instr_usize = instr as usize;

    // In the prologue: undo only the instructions already executed.
    let prolog = sequence_len(codes, 0);
    if instr_usize < prolog {
        return run_codes(codes, 0, prolog - instr_usize, m);
    }
    if h.single_epilog {
        let start = h.epilog_count as usize;
        if start < codes.len() {
            let len = sequence_len(codes, start) as u32 + 1;
            let words = h.function_length / 4;
            if instr < words && instr + len >= words {
                return run_codes(codes, start, (instr + len - words) as usize, m);
            }
        }
    } else {
        for i in 0..h.epilog_count as usize {
            let scope = u32_at(xdata, h.epilogs_at + 4 * i, ".xdata epilog scope")?;
            let start = scope & 0x3ffff;
            let index = (scope >> 22) as usize;
            if instr < start {
                break;
            }
            if index >= code_bytes as usize {
                continue;
            }
            let len = sequence_len(codes, index) as u32;
            if instr <= start + len {
                return run_codes(codes, index, (instr - start) as usize, m);
            }
        }
    }
    run_codes(codes, 0, 0, m)
}

fn unwind_packed(word: u32, instr: u32, m: &mut Machine<'_, '_>) -> Result<(), FormatError> {
    let flag = word & 3;
    let length = (word >> 2) & 0x7ff;
    let reg_f = (word >> 13) & 7;
    let reg_i = (word >> 16) & 0xf;
    let homes = (word >> 20) & 1;
    let cr = (word >> 21) & 3;
    let frame = ((word >> 23) & 0x1ff) * 16;

    let int_bytes = reg_i * 8 + if cr == 1 { 8 } else { 0 };
    let fp_bytes = if reg_f > 0 { (reg_f + 1) * 8 } else { 0 };
    let save_bytes = (int_bytes + fp_bytes + 64 * homes + 15) & !15;
    let local = frame
        .checked_sub(save_bytes)
        .ok_or(FormatError::Malformed {
            what: "ARM64 packed unwind data",
            offset: u64::from(word),
            reason: "frame smaller than its register save area",
        })?;
    let int_regs = i64::from(int_bytes / 8);
    let fp_regs = i64::from(fp_bytes / 8);
    let save_regs = i64::from(save_bytes / 8);

    // How many prologue instructions are still to run, or epilogue ones already ran. The
    // epilogue mirrors the prologue without the parameter homing, plus its `ret`.
    let mut skip = 0u32;
    let mut in_epilog = false;
    if flag == 1 {
        let mut len = (int_bytes + 8) / 16 + (fp_bytes + 8) / 16;
        len += match cr {
            2 => 3, // pacibsp, stp fp/lr, mov fp
            3 => 2,
            _ => 0,
        };
        if cr < 2 || local > 512 {
            if local > 0 {
                len += 1;
            }
            if local > 4088 {
                len += 1;
            }
        }
        let prolog_len = len + 4 * homes;
        let epilog_len = len + 1;
        if instr < prolog_len {
            skip = prolog_len - instr;
        } else if instr < length && instr + epilog_len >= length {
            skip = instr + epilog_len - length;
            in_epilog = true;
        }
    }

    if skip == 0 {
        if cr >= 2 {
            let fp = m.reg(29)?;
            m.regs.sp = fp;
            m.restore(29, 2, 0, false)?;
        }
        m.add_sp(u64::from(local));
        if fp_bytes > 0 {
            m.restore(0, fp_regs as usize, int_regs, true)?;
        }
        if cr == 1 {
            m.restore(30, 1, int_regs - 1, false)?;
        }
        return m.restore(19, reg_i as usize, -save_regs, false);
    }

    // Partial: replay the canonical prologue backwards, step by step, skipping the first
    // `skip` steps.
    let mut pos = 0u32;
    let mut step =
        |m: &mut Machine<'_, '_>,
         f: &mut dyn FnMut(&mut Machine<'_, '_>) -> Result<(), FormatError>| {
            let run = pos >= skip;
            pos += 1;
            if run {
                f(m)
            } else {
                Ok(())
            }
        };
    let local_regs = i64::from(local / 8);
    if cr >= 2 {
        step(m, &mut |m| {
            m.regs.sp = m.reg(29)?;
            Ok(())
        })?;
        if local <= 512 {
            step(m, &mut |m| m.restore(29, 2, -local_regs, false))?;
        } else {
            step(m, &mut |m| m.restore(29, 2, 0, false))?;
        }
    }
    if (cr < 2 || local > 512) && local > 0 {
        step(m, &mut |m| {
            m.add_sp(u64::from((local - 1) % 4088 + 1));
            Ok(())
        })?;
        if local > 4088 {
            step(m, &mut |m| {
                m.add_sp(4088);
                Ok(())
            })?;
        }
    }
    if homes != 0 && !in_epilog {
        for _ in 0..4 {
            step(m, &mut |_| Ok(()))?;
        }
    }
    if fp_bytes > 0 {
        if reg_f % 2 == 0 {
            step(m, &mut |m| m.restore(0, 1, int_regs + fp_regs - 1, true))?;
        }
        for i in (0..reg_f.div_ceil(2)).rev() {
            let i = i64::from(i);
            step(m, &mut |m| {
                if i == 0 && int_bytes == 0 {
                    m.restore(0, 2, -save_regs, true)
                } else {
                    m.restore(0, 2, int_regs + 2 * i, true)
                }
            })?;
        }
    }
    if reg_i % 2 == 1 {
        step(m, &mut |m| {
            if cr == 1 {
                m.restore(30, 1, int_regs - 1, false)?;
            }
            let last = 18 + reg_i as usize;
            if reg_i > 1 {
                m.restore(last, 1, i64::from(reg_i) - 1, false)
            } else {
                m.restore(last, 1, -save_regs, false)
            }
        })?;
    } else if cr == 1 {
        step(m, &mut |m| {
            let pos = if reg_i > 0 { int_regs - 1 } else { -save_regs };
            m.restore(30, 1, pos, false)
        })?;
    }
    for i in (0..reg_i / 2).rev() {
        let i = i64::from(i);
        step(m, &mut |m| {
            if i > 0 {
                m.restore(19 + 2 * i as usize, 2, 2 * i, false)
            } else {
                m.restore(19, 2, -save_regs, false)
            }
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
