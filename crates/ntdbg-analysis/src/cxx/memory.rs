//! Reading the C++ runtime structures: dump memory first, then the read-only bytes of the
//! module image beside the dump (where `.rdata` type information lives). Every read is
//! bounded and all-or-nothing: a hole makes the read fail, never a guessed byte.

use ntdbg_engine::disasm::Instruction;
use ntdbg_engine::Session;

/// Longest string read (type names, messages).
pub(super) const MAX_STRING: usize = 1024;

/// Reads target memory for the walkers.
#[derive(Clone, Copy)]
pub(super) struct Memory<'a> {
    session: &'a Session,
    /// The target's pointer size (4 or 8).
    pub pointer_size: usize,
}

impl<'a> Memory<'a> {
    /// A reader over the session's target.
    pub fn new(session: &'a Session) -> Memory<'a> {
        Memory {
            session,
            pointer_size: session.arch().pointer_size(),
        }
    }

    /// `len` bytes at `addr`, all of them readable.
    pub fn bytes(&self, addr: u64, len: usize) -> Option<Vec<u8>> {
        addr.checked_add(len as u64)?;
        self.session.read_virtual(addr, len).into_iter().collect()
    }

    /// The readable bytes from `addr` on, at most `len`: they stop at the first hole.
    pub fn readable_prefix(&self, addr: u64, len: usize) -> Vec<u8> {
        self.session
            .read_virtual(addr, len)
            .into_iter()
            .map_while(|b| b)
            .collect()
    }

    /// A little-endian `u32`.
    pub fn u32(&self, addr: u64) -> Option<u32> {
        let b: [u8; 4] = self.bytes(addr, 4)?.try_into().ok()?;
        Some(u32::from_le_bytes(b))
    }

    /// A little-endian `u64`.
    pub fn u64(&self, addr: u64) -> Option<u64> {
        let b: [u8; 8] = self.bytes(addr, 8)?.try_into().ok()?;
        Some(u64::from_le_bytes(b))
    }

    /// A pointer of the target's size.
    pub fn pointer(&self, addr: u64) -> Option<u64> {
        match self.pointer_size {
            4 => self.u32(addr).map(u64::from),
            _ => self.u64(addr),
        }
    }

    /// The NUL-terminated string at `addr` (at most `max` bytes before the NUL), as printable
    /// UTF-8 text; why not otherwise.
    pub fn c_string(&self, addr: u64, max: usize) -> Result<String, String> {
        if addr == 0 {
            return Err("the pointer is NULL".into());
        }
        let bytes = self.session.read_virtual(addr, max.saturating_add(1));
        let mut text = Vec::new();
        for b in bytes {
            match b {
                None => return Err(format!("the string at {addr:#x} is not in the dump")),
                Some(0) => {
                    let s = String::from_utf8(text)
                        .map_err(|_| format!("the bytes at {addr:#x} are not UTF-8 text"))?;
                    if s.chars().any(|c| c.is_control() && c != '\n' && c != '\t') {
                        return Err(format!("the bytes at {addr:#x} are not printable text"));
                    }
                    return Ok(s);
                }
                Some(b) => text.push(b),
            }
        }
        Err(format!(
            "no string end within {max} bytes at {addr:#x}: not a string"
        ))
    }

    /// The readable bytes that end at `end`, at most `len` of them: `(address of the first,
    /// bytes)`; empty when the byte before `end` cannot be read.
    pub fn code_before(&self, end: u64, len: u64) -> (u64, Vec<u8>) {
        let start = end.saturating_sub(len);
        let bytes = self.session.read_virtual(start, (end - start) as usize);
        let readable = bytes.iter().rposition(Option::is_none).map_or(0, |i| i + 1);
        let code = bytes[readable..].iter().flatten().copied().collect();
        (start + readable as u64, code)
    }

    /// The stack pointer of the event's register context.
    pub fn event_stack_pointer(&self) -> Option<u64> {
        let context = self.session.target().event()?.context.as_ref()?;
        let name = if self.pointer_size == 8 { "rsp" } else { "esp" };
        ntdbg_engine::registers::register(context, name)
    }

    /// Whether `addr` lies inside a loaded module.
    pub fn in_module(&self, addr: u64) -> bool {
        self.session.module_at(addr).is_some()
    }

    /// The base of the module containing `addr`.
    pub fn module_base(&self, addr: u64) -> Option<u64> {
        self.session.module_at(addr).map(|m| m.raw.base_of_image)
    }
}

/// The bytes of a disassembled instruction (its `bytes` field is hex).
pub(super) fn instruction_bytes(line: &Instruction) -> Option<Vec<u8>> {
    (0..line.bytes.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(line.bytes.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Printable form of a message: one line, at most 512 characters.
pub(super) fn one_line(text: &str) -> String {
    let flat: String = text
        .chars()
        .map(|c| if c == '\n' || c == '\t' { ' ' } else { c })
        .collect();
    let trimmed = flat.trim_end();
    match trimmed.char_indices().nth(512) {
        Some((cut, _)) => format!("{}...", &trimmed[..cut]),
        None => trimmed.to_string(),
    }
}
