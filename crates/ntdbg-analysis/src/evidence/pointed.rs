//! What the faulting context's registers and the slots at the top of its stack point to:
//! text (an assertion or error message handed to the code that failed) and named symbols (a
//! global, a vftable, a function). The report shows them; an assertion message among them is
//! the cause.

use ntdbg_engine::Session;
use ntdbg_targets::{Arch, ExceptionEvent};

/// Longest text read.
const MAX_TEXT: usize = 512;
/// Shortest run of characters taken for text.
const MIN_TEXT: usize = 8;
/// Characters of a text the report shows.
const SHOWN_TEXT: usize = 200;

/// The general-purpose registers looked at, per pointer size.
const REGISTERS_64: &[&str] = &[
    "rax", "rcx", "rdx", "rbx", "rsi", "rdi", "rbp", "r8", "r9", "r10", "r11", "r12", "r13", "r14",
    "r15",
];
const REGISTERS_32: &[&str] = &["eax", "ecx", "edx", "ebx", "esi", "edi", "ebp"];
const REGISTERS_ARM64: &[&str] = &[
    "x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x19", "x20", "x21", "x22", "x23", "x24",
    "x25", "x26", "x27", "x28",
];

/// What a value points to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Target {
    /// A NUL-terminated string (ASCII, or UTF-16 when `wide`).
    Text {
        /// The text.
        text: String,
        /// Whether it is UTF-16.
        wide: bool,
        /// Whether its bytes came from the image file on the symbol path (read-only data),
        /// not from the dump.
        from_image: bool,
    },
    /// A symbol of a module (`app!g_settings`, `app!Widget::vftable`).
    Symbol(String),
}

/// A register or stack slot and what its value points to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pointed {
    /// `rsi`, `[rsp+0x18]`.
    pub place: String,
    /// The value.
    pub value: u64,
    /// What it points to.
    pub target: Target,
}

impl Pointed {
    /// The report's form of it.
    pub fn report(&self) -> crate::report::PointedTo {
        crate::report::PointedTo {
            place: self.place.clone(),
            value: format!("{:#x}", self.value),
            kind: match self.target {
                Target::Text { .. } => "text",
                Target::Symbol(_) => "symbol",
            }
            .into(),
            target: self.shown(),
        }
    }

    /// `"Assertion failed: …"` or `app!g_settings`, as the report shows it.
    fn shown(&self) -> String {
        match &self.target {
            Target::Text { text, wide, .. } => {
                let mut t: String = text.chars().take(SHOWN_TEXT).collect();
                if text.chars().count() > SHOWN_TEXT {
                    t.push_str("...");
                }
                format!("{}\"{t}\"", if *wide { "L" } else { "" })
            }
            Target::Symbol(s) => s.clone(),
        }
    }
}

/// The registers of the event's context and its top `stack_bytes` of stack slots, each with
/// the value it holds; registers first.
pub(crate) fn candidates(
    session: &Session,
    event: &ExceptionEvent,
    stack_bytes: usize,
) -> Vec<(String, u64)> {
    let Some(context) = event.context.as_ref() else {
        return Vec::new();
    };
    let (names, sp_name) = match session.arch() {
        Arch::X64 => (REGISTERS_64, "rsp"),
        Arch::X86 => (REGISTERS_32, "esp"),
        Arch::Arm64 => (REGISTERS_ARM64, "sp"),
        _ => return Vec::new(),
    };
    let mut out: Vec<(String, u64)> = names
        .iter()
        .filter_map(|r| {
            Some((
                r.to_string(),
                ntdbg_engine::registers::register(context, r)?,
            ))
        })
        .collect();
    let ptr = session.arch().pointer_size();
    if let Some(sp) = ntdbg_engine::registers::register(context, sp_name) {
        let window = session.target().read_virtual(sp, stack_bytes);
        for (i, slot) in window.chunks(ptr).enumerate() {
            let bytes: Option<Vec<u8>> = slot.iter().copied().collect();
            let Some(bytes) = bytes.filter(|b| b.len() == ptr) else {
                continue;
            };
            let mut buf = [0u8; 8];
            buf[..ptr].copy_from_slice(&bytes);
            out.push((
                format!("[{sp_name}+{:#x}]", i * ptr),
                u64::from_le_bytes(buf),
            ));
        }
    }
    out
}

/// The text `value` points to, when it points to at least [`MIN_TEXT`] printable characters.
pub(crate) fn text_target(session: &Session, value: u64) -> Option<Target> {
    if value < crate::fault::NULL_REGION {
        return None;
    }
    let read = session.read_memory(value, MAX_TEXT);
    let (text, wide) = text_at(&read.bytes)?;
    Some(Target::Text {
        text,
        wide,
        from_image: !read.from_image.is_empty(),
    })
}

/// What the registers and the top slots of the stack point to: every text, and for registers
/// (whose values the faulting code was using) the symbols of data they point to. Values
/// pointing to the same thing are listed once, at their first place.
pub(crate) fn pointed_values(session: &Session, event: &ExceptionEvent) -> Vec<Pointed> {
    /// Stack bytes looked at for the report.
    const STACK_BYTES: usize = 0x40;
    let mut out: Vec<Pointed> = Vec::new();
    for (place, value) in candidates(session, event, STACK_BYTES) {
        let register = !place.starts_with('[');
        let target = text_target(session, value).or_else(|| {
            register
                .then(|| data_symbol(session, value))
                .flatten()
                .map(Target::Symbol)
        });
        let Some(target) = target else { continue };
        if out.iter().any(|p| p.value == value || p.target == target) {
            continue;
        }
        out.push(Pointed {
            place,
            value,
            target,
        });
    }
    out
}

/// `app!g_table+0x10` for an address in a module's non-code section that a symbol names.
fn data_symbol(session: &Session, value: u64) -> Option<String> {
    let module = session.module_at(value)?;
    let rva = u32::try_from(value - module.raw.base_of_image).ok()?;
    let symbols = session.module_symbols(module);
    let section = symbols.image_info()?.section_for_rva(rva)?;
    if section.is_executable() {
        return None;
    }
    let s = session.symbolize(value);
    // Only the start of a symbol: past it may be other data the symbol does not name (static
    // variables have no symbol of their own), and linker-made names say nothing.
    let name = s.function.as_deref()?;
    (s.function_offset == Some(0) && !name.starts_with('.')).then(|| s.display())
}

/// The printable text at the start of `bytes` (ASCII, or UTF-16LE when every other byte is
/// zero), up to a terminator: `(text, wide)`.
pub(crate) fn text_at(bytes: &[Option<u8>]) -> Option<(String, bool)> {
    let wide = bytes.len() >= 4 && bytes[1] == Some(0) && bytes[3] == Some(0);
    let step = if wide { 2 } else { 1 };
    let mut out = String::new();
    for chunk in bytes.chunks(step) {
        let c = chunk[0]?;
        if wide && chunk.get(1).copied().flatten() != Some(0) {
            return None;
        }
        match c {
            0 => break,
            b'\t' | b'\n' | b'\r' | 0x20..=0x7e => out.push(c as char),
            _ => return None,
        }
    }
    let letters = out.chars().filter(|c| c.is_ascii_alphabetic()).count();
    (out.len() >= MIN_TEXT && letters * 2 >= out.len()).then_some((out, wide))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(s: &[u8]) -> Vec<Option<u8>> {
        s.iter().copied().map(Some).collect()
    }

    #[test]
    fn text_is_read_in_both_encodings() {
        assert_eq!(
            text_at(&bytes(b"Assertion failed: ok\0junk")),
            Some(("Assertion failed: ok".to_string(), false))
        );
        let wide: Vec<u8> = "assert(x) failed!"
            .encode_utf16()
            .flat_map(|u| u.to_le_bytes())
            .chain([0, 0])
            .collect();
        assert_eq!(
            text_at(&bytes(&wide)),
            Some(("assert(x) failed!".to_string(), true))
        );
        assert_eq!(text_at(&bytes(b"short\0")), None);
        assert_eq!(text_at(&bytes(b"\x01\x02binary data here")), None);
        assert_eq!(text_at(&bytes(b"12345678 9999\0")), None, "mostly digits");
        let mut holes = bytes(b"Assertion failed");
        holes[3] = None;
        assert_eq!(text_at(&holes), None);
    }
}
