//! Unwinding with DWARF call frame information from a PE image: the `.eh_frame` and
//! `.debug_frame` sections MinGW GCC and clang write into x86 and x64 images (libgcc's
//! unwinder reads `.eh_frame` to throw C++ exceptions on 32-bit MinGW; Breakpad and
//! minidump-stackwalk read neither).
//!
//! The sections come from the image the unwind tables come from (the file on the symbol path,
//! or dump memory, where only `.eh_frame` is mapped). Each section's frame description entries
//! are indexed by address once, on the first frame that needs them; a frame then parses its
//! one entry and evaluates its rules with `gimli`, DWARF expressions included (GCC describes
//! the frame of a function that realigns its stack, such as 32-bit `main`, with them) as far
//! as they need only registers and stack memory.

use std::collections::HashMap;
use std::ops::Range;
use std::sync::Arc;

use breakpad_symbols::FrameWalker;
use gimli::{
    BaseAddresses, CfaRule, CieOrFde, DebugFrame, EhFrame, Encoding, EndianSlice, EvaluationResult,
    Expression, Format, LittleEndian, Location, Piece, Register, RegisterRule, UnwindContext,
    UnwindExpression, UnwindOffset, UnwindSection, Value,
};
use ntdbg_formats::pe::Machine;

use crate::image::MappedImage;
use crate::SharedBytes;

/// The largest CFI section read (a section claiming more is damaged).
const MAX_SECTION: u32 = 64 << 20;

/// Operations a DWARF expression may take (a damaged one may loop).
const MAX_EXPRESSION_STEPS: u32 = 256;

/// One architecture's DWARF registers.
#[derive(Debug)]
struct Abi {
    /// The walker's names by DWARF register number (System V psABI numbering, which MinGW's
    /// `.eh_frame` uses too).
    registers: &'static [&'static str],
    /// The stack pointer, whose caller value is the CFA.
    sp: &'static str,
    /// The instruction pointer, whose caller value is the return address.
    ip: &'static str,
    address_size: u8,
}

const X86: Abi = Abi {
    registers: &[
        "eax", "ecx", "edx", "ebx", "esp", "ebp", "esi", "edi", "eip",
    ],
    sp: "esp",
    ip: "eip",
    address_size: 4,
};

const X64: Abi = Abi {
    registers: &[
        "rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10", "r11", "r12",
        "r13", "r14", "r15", "rip",
    ],
    sp: "rsp",
    ip: "rip",
    address_size: 8,
};

type Slice<'a> = EndianSlice<'a, LittleEndian>;

/// Runs `$body` with `$section` (a [`Section`] of `$cfi`) as gimli's `.eh_frame` or
/// `.debug_frame` type, bound to `$parsed`: the two differ only in type.
macro_rules! with_section {
    ($cfi:expr, $section:expr, $parsed:ident => $body:expr) => {{
        let data = Slice::new(&$section.bytes, LittleEndian);
        match $section.kind {
            Kind::EhFrame => {
                let mut $parsed = EhFrame::from(data);
                $parsed.set_address_size($cfi.abi.address_size);
                $body
            }
            Kind::DebugFrame => {
                let mut $parsed = DebugFrame::from(data);
                $parsed.set_address_size($cfi.abi.address_size);
                $body
            }
        }
    }};
}

/// Which kind of section an entry was found in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    EhFrame,
    DebugFrame,
}

/// One frame description entry: the RVAs it covers and where it lies in its section.
#[derive(Debug, Clone, Copy)]
struct Entry {
    start: u32,
    end: u32,
    /// Index into [`DwarfCfi::sections`].
    section: u8,
    offset: u32,
}

/// One CFI section as the loader maps it.
#[derive(Debug)]
struct Section {
    kind: Kind,
    /// The section's address in the process.
    address: u64,
    bytes: SharedBytes,
}

/// The DWARF call frame information of one image loaded at one address.
#[derive(Debug)]
pub(crate) struct DwarfCfi {
    abi: &'static Abi,
    /// The text section's address (a base some pointer encodings use).
    text: u64,
    base: u64,
    sections: Vec<Section>,
    /// Every entry, sorted by start; where entries overlap, the first in section order.
    entries: Vec<Entry>,
}

impl DwarfCfi {
    /// The CFI of `image` loaded at `base`: `None` when it is not an x86 or x64 image or has
    /// no readable `.eh_frame` or `.debug_frame` with an entry.
    pub(crate) fn new(image: &Arc<MappedImage>, base: u64) -> Option<DwarfCfi> {
        let abi = match image.info.machine {
            Machine::X86 => &X86,
            Machine::X64 => &X64,
            _ => return None,
        };
        let text = image
            .info
            .sections
            .iter()
            .find(|s| s.is_executable())
            .map_or(base, |s| base.wrapping_add(u64::from(s.virtual_address)));
        let mut cfi = DwarfCfi {
            abi,
            text,
            base,
            sections: Vec::new(),
            entries: Vec::new(),
        };
        for header in &image.info.sections {
            let kind = match header.name.as_str() {
                // lld keeps 8 bytes of a mapped section's name when it writes no string table.
                ".eh_frame" | ".eh_fram" => Kind::EhFrame,
                ".debug_frame" => Kind::DebugFrame,
                _ => continue,
            };
            let len = header.mapped_size();
            if len == 0 || len > MAX_SECTION || cfi.sections.len() >= usize::from(u8::MAX) {
                continue;
            }
            let Some(bytes) = image.read(header.virtual_address, len as usize) else {
                continue;
            };
            cfi.sections.push(Section {
                kind,
                address: base.wrapping_add(u64::from(header.virtual_address)),
                bytes,
            });
        }
        for index in 0..cfi.sections.len() {
            cfi.index_section(index);
        }
        // Stable: of two entries starting at one address, the first section's wins.
        cfi.entries.sort_by_key(|e| e.start);
        (!cfi.entries.is_empty()).then_some(cfi)
    }

    /// Bytes the sections and the index hold.
    pub(crate) fn held_bytes(&self) -> usize {
        self.sections.iter().map(|s| s.bytes.len()).sum::<usize>()
            + self.entries.len() * std::mem::size_of::<Entry>()
    }

    fn bases(&self, section: &Section) -> BaseAddresses {
        let bases = BaseAddresses::default().set_text(self.text);
        match section.kind {
            Kind::EhFrame => bases.set_eh_frame(section.address),
            Kind::DebugFrame => bases,
        }
    }

    /// Adds the entries of section `index`, as far as it parses.
    fn index_section(&mut self, index: usize) {
        let section = &self.sections[index];
        let bases = self.bases(section);
        let mut found = Vec::new();
        with_section!(self, section, parsed => {
            collect_entries(&parsed, &bases, self.base, &mut found)
        });
        self.entries
            .extend(found.into_iter().map(|(range, offset)| Entry {
                start: range.start,
                end: range.end,
                section: index as u8,
                offset,
            }));
    }

    /// Whether an entry covers `rva`.
    pub(crate) fn covers(&self, rva: u64) -> bool {
        self.entry_at(rva).is_some()
    }

    /// Whether a symbol at `symbol` may name the code at `rva`: no other function's entry lies
    /// between them (the entry covering the symbol, or else the first one after it, is the
    /// one covering `rva`). `None` when no entry covers `rva`. A symbol may start a little
    /// before its function's entry (a hot-patch area).
    pub(crate) fn same_function(&self, symbol: u64, rva: u64) -> Option<bool> {
        let entry = self.entry_at(rva)?;
        let symbol_entry = self.entry_at(symbol).or_else(|| {
            let symbol = u32::try_from(symbol).ok()?;
            let next = self.entries.partition_point(|e| e.start < symbol);
            self.entries.get(next).copied()
        });
        Some(symbol_entry.is_some_and(|e| e.start == entry.start))
    }

    fn entry_at(&self, rva: u64) -> Option<Entry> {
        let rva = u32::try_from(rva).ok()?;
        let after = self.entries.partition_point(|e| e.start <= rva);
        // Entries may nest or overlap (a damaged or hand-written table): the nearest start
        // that still covers `rva`.
        self.entries[..after]
            .iter()
            .rev()
            .take(8)
            .find(|e| rva < e.end)
            .copied()
    }

    /// Unwinds the frame `walker` describes (its instruction in the image loaded at
    /// [`DwarfCfi::base`]); `None` when no entry covers it or its rules cannot be evaluated.
    pub(crate) fn walk(&self, walker: &mut dyn FrameWalker) -> Option<()> {
        let ip = walker.get_instruction();
        let entry = self.entry_at(ip.checked_sub(self.base)?)?;
        let section = self.sections.get(usize::from(entry.section))?;
        let bases = self.bases(section);
        let mut context = UnwindContext::new();
        let row = with_section!(self, section, parsed => {
            row_at(&parsed, &bases, &mut context, entry.offset, ip)?
        });
        self.apply(&row, &section.bytes, walker)
    }

    /// All ones in the address size's bits.
    fn mask(&self) -> u64 {
        if self.abi.address_size == 4 {
            u64::from(u32::MAX)
        } else {
            u64::MAX
        }
    }

    /// The callee's value of DWARF register `r`.
    fn callee(&self, walker: &dyn FrameWalker, r: Register) -> Option<u64> {
        walker.get_callee_register(self.abi.registers.get(usize::from(r.0))?)
    }

    /// The address (or value) DWARF expression `expression` of `section` computes from the
    /// callee's registers and stack, starting from `initial` on its stack (the CFA for a
    /// register's rule).
    fn evaluate(
        &self,
        section: &[u8],
        expression: &UnwindExpression<usize>,
        initial: Option<u64>,
        walker: &dyn FrameWalker,
    ) -> Option<u64> {
        let end = expression.offset.checked_add(expression.length)?;
        let code = section.get(expression.offset..end)?;
        let encoding = Encoding {
            format: Format::Dwarf32,
            version: 4,
            address_size: self.abi.address_size,
        };
        let mut evaluation = Expression(Slice::new(code, LittleEndian)).evaluation(encoding);
        evaluation.set_max_iterations(MAX_EXPRESSION_STEPS);
        if let Some(value) = initial {
            evaluation.set_initial_value(value);
        }
        let mut state = evaluation.evaluate().ok()?;
        loop {
            state = match state {
                EvaluationResult::Complete => break,
                EvaluationResult::RequiresRegister { register, .. } => {
                    let value = self.callee(walker, register)?;
                    evaluation
                        .resume_with_register(Value::Generic(value))
                        .ok()?
                }
                EvaluationResult::RequiresMemory { address, size, .. }
                    if size == self.abi.address_size =>
                {
                    let value = walker.get_register_at_address(address & self.mask())?;
                    evaluation.resume_with_memory(Value::Generic(value)).ok()?
                }
                _ => return None,
            };
        }
        match evaluation.as_result() {
            [Piece {
                location: Location::Address { address },
                ..
            }] => Some(address & self.mask()),
            _ => None,
        }
    }

    /// Sets the caller's registers from the rules of one row of `section`.
    fn apply(&self, row: &Row, section: &[u8], walker: &mut dyn FrameWalker) -> Option<()> {
        let mask = self.mask();
        let cfa = match &row.cfa {
            CfaRule::RegisterAndOffset { register, offset } => {
                self.callee(walker, *register)?.wrapping_add_signed(*offset) & mask
            }
            CfaRule::Expression(expression) => self.evaluate(section, expression, None, walker)?,
        };
        let value = |walker: &dyn FrameWalker, rule: &RegisterRule<usize>| -> Option<u64> {
            match rule {
                RegisterRule::Offset(n) => {
                    walker.get_register_at_address(cfa.wrapping_add_signed(*n) & mask)
                }
                RegisterRule::ValOffset(n) => Some(cfa.wrapping_add_signed(*n) & mask),
                RegisterRule::Register(r) => self.callee(walker, *r),
                RegisterRule::Expression(e) => {
                    let at = self.evaluate(section, e, Some(cfa), walker)?;
                    walker.get_register_at_address(at)
                }
                RegisterRule::ValExpression(e) => self.evaluate(section, e, Some(cfa), walker),
                RegisterRule::Constant(v) => Some(v & mask),
                _ => None,
            }
        };
        let ra = value(walker, &row.return_address)?;
        let mut restored = Vec::with_capacity(row.registers.len());
        for (register, rule) in &row.registers {
            let Some(name) = self.abi.registers.get(usize::from(register.0)) else {
                continue;
            };
            // The stack pointer is the CFA, the instruction pointer the return address.
            if [self.abi.sp, self.abi.ip].contains(name) {
                continue;
            }
            match rule {
                RegisterRule::SameValue => {}
                RegisterRule::Undefined => restored.push((*name, None)),
                rule => restored.push((*name, value(walker, rule))),
            }
        }
        walker.set_cfa(cfa)?;
        walker.set_ra(ra)?;
        for (name, value) in restored {
            match value {
                Some(v) => {
                    walker.set_caller_register(name, v);
                }
                None => walker.clear_caller_register(name),
            }
        }
        Some(())
    }
}

/// What a row of the unwind table says, copied out of the unwind context.
struct Row {
    /// How the CFA is computed.
    cfa: CfaRule<usize>,
    /// The return address column's rule.
    return_address: RegisterRule<usize>,
    /// Every other register with a rule.
    registers: Vec<(Register, RegisterRule<usize>)>,
}

/// The FDEs of `section` as (RVA range, offset), as far as the section parses. Entries that
/// lie outside the image loaded at `base` are left out.
fn collect_entries<'a, S: UnwindSection<Slice<'a>>>(
    section: &S,
    bases: &BaseAddresses,
    base: u64,
    found: &mut Vec<(Range<u32>, u32)>,
) where
    S::Offset: From<usize>,
{
    let mut cies = HashMap::new();
    let mut entries = section.entries(bases);
    while let Ok(Some(entry)) = entries.next() {
        let CieOrFde::Fde(partial) = entry else {
            continue;
        };
        let Ok(fde) = partial.parse(|section, bases, offset| {
            let key: usize = UnwindOffset::into(offset);
            if let Some(cie) = cies.get(&key) {
                return Ok(Clone::clone(cie));
            }
            let cie = section.cie_from_offset(bases, offset)?;
            cies.insert(key, cie.clone());
            Ok(cie)
        }) else {
            continue;
        };
        let (Some(start), Some(end)) = (
            fde.initial_address().checked_sub(base),
            fde.end_address().checked_sub(base),
        ) else {
            continue;
        };
        let (Ok(start), Ok(end), Ok(offset)) = (
            u32::try_from(start),
            u32::try_from(end),
            u32::try_from(fde.offset()),
        ) else {
            continue;
        };
        if start < end {
            found.push((start..end, offset));
        }
    }
}

/// The row of the FDE at `offset` that covers `address`.
fn row_at<'a, S: UnwindSection<Slice<'a>>>(
    section: &S,
    bases: &BaseAddresses,
    context: &mut UnwindContext<usize>,
    offset: u32,
    address: u64,
) -> Option<Row>
where
    S::Offset: From<usize>,
{
    let fde = section
        .fde_from_offset(bases, S::Offset::from(offset as usize), |s, b, o| {
            s.cie_from_offset(b, o)
        })
        .ok()?;
    let return_register = fde.cie().return_address_register();
    let row = fde
        .unwind_info_for_address(section, bases, context, address)
        .ok()?;
    Some(Row {
        cfa: row.cfa().clone(),
        return_address: row.register(return_register)?,
        registers: row
            .registers()
            .filter(|(r, _)| *r != return_register)
            .map(|(r, rule)| (*r, rule.clone()))
            .collect(),
    })
}
