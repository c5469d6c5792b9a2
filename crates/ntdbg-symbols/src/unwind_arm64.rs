//! Glue between [`ntdbg_formats::unwind_arm64`] and a Breakpad [`FrameWalker`].

use breakpad_symbols::FrameWalker;
use ntdbg_formats::pe::pdata::RuntimeFunctionArm64;
use ntdbg_formats::unwind_arm64::{function_length, unwind, Arm64Regs, XdataHeader};

use crate::image::MappedImage;
use crate::SharedBytes;

/// Registers the walker knows by these names, with their `x` index.
const NAMED: [(&str, usize); 12] = [
    ("x19", 19),
    ("x20", 20),
    ("x21", 21),
    ("x22", 22),
    ("x23", 23),
    ("x24", 24),
    ("x25", 25),
    ("x26", 26),
    ("x27", 27),
    ("x28", 28),
    ("fp", 29),
    ("lr", 30),
];

/// The entry covering `rva`, with its `.xdata` record when it has one.
pub(crate) fn entry_for<'f>(
    image: &MappedImage,
    functions: &'f [RuntimeFunctionArm64],
    rva: u32,
) -> Option<(&'f RuntimeFunctionArm64, Option<SharedBytes>)> {
    let i = functions
        .partition_point(|f| f.begin <= rva)
        .checked_sub(1)?;
    let entry = functions.get(i)?;
    let xdata = if entry.flag() == 0 {
        let at = entry.unwind_data;
        // The header words (4 or 8 bytes, clipped to the image) say how long the record is;
        // from a dump with holes, all of it must really be there.
        let head_end = at.checked_add(8)?.min(image.info.size_of_image);
        let head = image.read_laid_out(at, head_end.checked_sub(at)? as usize)?;
        let len = XdataHeader::parse_fixed(&head).ok()?.len();
        Some(image.read(at, len)?)
    } else {
        None
    };
    let len = function_length(entry, xdata.as_deref()).ok()?;
    (rva < entry.begin.checked_add(len)?).then_some((entry, xdata))
}

/// Unwinds one ARM64 frame of the module at `base`.
pub(crate) fn walk(
    image: &MappedImage,
    functions: &[RuntimeFunctionArm64],
    base: u64,
    walker: &mut dyn FrameWalker,
) -> Option<()> {
    let ip = walker.get_instruction();
    let rva = u32::try_from(ip.checked_sub(base)?).ok()?;
    let mut regs = Arm64Regs {
        sp: walker.get_callee_register("sp")?,
        pc: ip,
        ..Arm64Regs::default()
    };
    for (name, i) in NAMED {
        regs.x[i] = walker.get_callee_register(name);
    }
    let before = regs.clone();
    // No entry: a leaf function, which the stack walker unwinds itself through `lr` (and
    // checks that it follows a call).
    let (entry, xdata) = entry_for(image, functions, rva)?;
    let offset = rva - entry.begin;
    let mut read = |addr: u64| walker.get_register_at_address(addr);
    unwind(entry, xdata.as_deref(), offset, &mut regs, &mut read).ok()?;
    walker.set_cfa(regs.sp)?;
    walker.set_ra(regs.pc)?;
    for (name, i) in NAMED {
        if let Some(v) = regs.x[i] {
            if before.x[i].is_some() || Some(v) != before.x[i] {
                walker.set_caller_register(name, v);
            }
        }
    }
    Some(())
}
