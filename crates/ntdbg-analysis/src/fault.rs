//! The faulting access, looked at closely: where the inaccessible address lies (null page,
//! a field reached through NULL, non-canonical, a thread's stack, a module image, ASCII
//! bytes, unknown) and the faulting instruction with the registers it uses.

use ntdbg_engine::disasm::{instruction_registers, Bitness, MemoryOperand};
use ntdbg_engine::module_info::file_name_of;
use ntdbg_engine::Session;
use ntdbg_targets::{Arch, ExceptionEvent};

/// Addresses below this are the null page region Windows never maps.
pub const NULL_REGION: u64 = 0x1_0000;

/// Where an inaccessible address lies.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AddressClass {
    /// Exactly 0.
    Null,
    /// Inside the never-mapped first 64 KiB: a field at this offset from a NULL base.
    NearNull {
        /// The offset from 0.
        offset: u64,
    },
    /// Between the x64 user and kernel halves: never a valid pointer.
    NonCanonical,
    /// Inside a thread's stack.
    Stack {
        /// The owning thread's id.
        thread_id: u32,
        /// Whether it is the faulting thread.
        faulting: bool,
    },
    /// Inside a loaded module's image.
    Image {
        /// The module's file name.
        module: String,
        /// The section holding it, when the image headers are known.
        section: Option<String>,
    },
    /// Every byte is printable ASCII (`0x41414141`): pointer bytes overwritten by text.
    Ascii {
        /// The bytes as text, lowest address byte first.
        text: String,
    },
    /// Kernel address space, touched from user mode.
    Kernel,
    /// None of the above: not mapped in anything the dump describes.
    Unknown,
}

impl AddressClass {
    /// A phrase for people: `the NULL page`, `offset 0x10 from a NULL base`, ….
    pub fn describe(&self) -> String {
        match self {
            AddressClass::Null => "a NULL pointer".into(),
            AddressClass::NearNull { offset } => format!("offset {offset:#x} from a NULL base"),
            AddressClass::NonCanonical => "a non-canonical address".into(),
            AddressClass::Stack {
                thread_id,
                faulting: true,
            } => format!("the faulting thread's own stack (thread {thread_id:#x})"),
            AddressClass::Stack { thread_id, .. } => {
                format!("the stack of another thread ({thread_id:#x})")
            }
            AddressClass::Image {
                module,
                section: Some(s),
            } => format!("the {s} section of {module}"),
            AddressClass::Image {
                module,
                section: None,
            } => format!("the image of {module}"),
            AddressClass::Ascii { text } => format!("ASCII bytes \"{text}\""),
            AddressClass::Kernel => "kernel address space".into(),
            AddressClass::Unknown => "memory no module or stack in the dump covers".into(),
        }
    }
}

/// Classifies `addr` for a dump of `session`; `faulting_thread` is the event's thread id.
pub fn classify_address(
    session: &Session,
    addr: u64,
    faulting_thread: Option<u32>,
) -> AddressClass {
    let arch = session.arch();
    if addr == 0 {
        return AddressClass::Null;
    }
    if addr < NULL_REGION {
        return AddressClass::NearNull { offset: addr };
    }
    if arch == Arch::X64 && addr > 0x0000_7FFF_FFFF_FFFF && addr < 0xFFFF_8000_0000_0000 {
        return AddressClass::NonCanonical;
    }
    if let Some(c) = stack_owner(session, addr, faulting_thread) {
        return c;
    }
    if let Some(m) = session.module_at(addr) {
        let base = m.raw.base_of_image;
        let section = u32::try_from(addr.wrapping_sub(base)).ok().and_then(|rva| {
            let symbols = session.module_symbols(m);
            symbols
                .image_info()
                .and_then(|pe| pe.section_for_rva(rva).map(|s| s.name.clone()))
        });
        return AddressClass::Image {
            module: file_name_of(&m.name).to_string(),
            section,
        };
    }
    let width = if arch == Arch::X86 { 4 } else { 8 };
    let bytes: Vec<u8> = addr.to_le_bytes()[..width].to_vec();
    let significant: Vec<u8> = if width == 4 || addr >> 32 != 0 {
        bytes
    } else {
        bytes[..4].to_vec()
    };
    if significant.iter().all(|b| (0x20..0x7f).contains(b)) {
        return AddressClass::Ascii {
            text: significant.iter().map(|&b| b as char).collect(),
        };
    }
    let kernel_start = match arch {
        Arch::X86 => 0x8000_0000,
        _ => 0xFFFF_8000_0000_0000,
    };
    if addr >= kernel_start {
        return AddressClass::Kernel;
    }
    AddressClass::Unknown
}

/// The thread whose stack holds `addr`: from the captured stack memory, else the TEB's
/// StackLimit..StackBase when the dump holds the TEB.
fn stack_owner(session: &Session, addr: u64, faulting: Option<u32>) -> Option<AddressClass> {
    let ptr = session.arch().pointer_size();
    for t in session.target().threads() {
        let captured = t
            .stack
            .as_ref()
            .is_some_and(|s| s.base <= addr && addr < s.end());
        let from_teb = t.teb != 0 && {
            let read = |off: u64| read_pointer(session, t.teb.wrapping_add(off), ptr);
            match (read(ptr as u64), read(2 * ptr as u64)) {
                (Some(base), Some(limit)) => limit <= addr && addr < base,
                _ => false,
            }
        };
        if captured || from_teb {
            return Some(AddressClass::Stack {
                thread_id: t.id,
                faulting: Some(t.id) == faulting,
            });
        }
    }
    None
}

/// The exception kind with the access of a general-protection fault taken from the faulting
/// instruction: its record always says "read" of 0xffffffffffffffff (x64, a non-canonical
/// address), whatever the instruction did; an instruction that writes its memory operand makes
/// it a write.
pub fn access_from_instruction(
    session: &Session,
    event: &ExceptionEvent,
    kind: &crate::exception::ExceptionKind,
) -> crate::exception::ExceptionKind {
    use crate::exception::{Access, ExceptionKind};
    let gp = matches!(
        kind,
        ExceptionKind::AccessViolation {
            address: Some(u64::MAX),
            in_page: false,
            ..
        }
    ) && session.arch() == Arch::X64;
    if !gp {
        return kind.clone();
    }
    let writes = Bitness::of_arch(session.arch())
        .and_then(|b| {
            let bytes = session.read_code(event.address, 16)?;
            ntdbg_engine::disasm::instruction_effects(b, &bytes, event.address)
        })
        .is_some_and(|i| i.store.is_some());
    match kind {
        ExceptionKind::AccessViolation {
            address, in_page, ..
        } if writes => ExceptionKind::AccessViolation {
            access: Some(Access::Write),
            address: *address,
            in_page: *in_page,
        },
        _ => kind.clone(),
    }
}

/// A little-endian pointer from dump memory, `None` when any byte is missing.
pub(crate) fn read_pointer(session: &Session, addr: u64, size: usize) -> Option<u64> {
    let bytes: Option<Vec<u8>> = session.read_virtual(addr, size).into_iter().collect();
    let bytes = bytes?;
    let mut buf = [0u8; 8];
    buf.get_mut(..bytes.len())?.copy_from_slice(&bytes);
    Some(u64::from_le_bytes(buf))
}

/// The faulting instruction, decoded, with the values of the registers it uses.
#[derive(Debug, Clone)]
pub struct FaultingInstruction {
    /// `mov dword ptr [rax],ecx`.
    pub text: String,
    /// `(register, value)` for every register it uses that the exception context holds.
    pub registers: Vec<(String, u64)>,
    /// Its memory operand, if any.
    pub memory: Option<MemoryOperand>,
    /// `rax=0` style summary of `registers`.
    pub values: String,
}

/// Decodes the instruction at the exception address (x86/x64 only; `None` when the code
/// bytes are neither in the dump nor in an image on the symbol path).
pub fn faulting_instruction(
    session: &Session,
    event: &ExceptionEvent,
) -> Option<FaultingInstruction> {
    let bitness = Bitness::of_arch(session.arch())?;
    let code = session.read_code(event.address, 16)?;
    let (text, used, memory) = instruction_registers(bitness, &code, event.address)?;
    let ctx = event.context.as_ref();
    let registers: Vec<(String, u64)> = used
        .iter()
        .filter(|r| {
            !matches!(
                r.as_str(),
                "rip" | "eip" | "rsp" | "esp" | "rflags" | "eflags"
            )
        })
        .filter_map(|r| {
            let v = ntdbg_engine::registers::register(ctx?, r)?;
            Some((r.clone(), v))
        })
        .collect();
    let values = registers
        .iter()
        .map(|(r, v)| format!("{r}={v:x}"))
        .collect::<Vec<_>>()
        .join(", ");
    Some(FaultingInstruction {
        text,
        registers,
        memory,
        values,
    })
}

impl FaultingInstruction {
    /// The memory operand's base register and its value, when the context holds it.
    pub fn base_value(&self) -> Option<(&str, u64)> {
        let base = self.memory.as_ref()?.base.as_deref()?;
        self.registers
            .iter()
            .find(|(r, _)| r == base)
            .map(|(r, v)| (r.as_str(), *v))
    }

    /// The value of `register` in the exception context, when the instruction uses it.
    pub fn value_of(&self, register: &str) -> Option<u64> {
        self.registers
            .iter()
            .find(|(r, _)| r == register)
            .map(|(_, v)| *v)
    }

    /// The memory operand's effective address, `base + index * scale + displacement`, from the
    /// context's registers; `None` with a segment override (its base is not in the context) or
    /// a register the context lacks.
    pub fn effective_address(&self) -> Option<u64> {
        let m = self.memory.as_ref()?;
        if m.segment.is_some() {
            return None;
        }
        let base = match &m.base {
            Some(r) => self.value_of(r)?,
            None => 0,
        };
        let index = match &m.index {
            Some(r) => self.value_of(r)?.wrapping_mul(u64::from(m.scale)),
            None => 0,
        };
        Some(base.wrapping_add(index).wrapping_add(m.displacement as u64))
    }

    /// `mov dword ptr [rax],ecx with rax=0, ecx=2a`.
    pub fn summary(&self) -> String {
        if self.values.is_empty() {
            self.text.clone()
        } else {
            format!("{} with {}", self.text, self.values)
        }
    }
}
