//! The process's own bookkeeping, typed: a thread's TEB and the process's PEB with its
//! parameters, read through the session by [`UserLayout`] (the one table of their offsets).
//! A field the target does not hold is `None`: a minidump often lacks parts of both.

use crate::error::EngineError;
use crate::hex_json::{self, Hex};
use crate::Session;
use ntdbg_targets::UserLayout;
use serde::Serialize;

/// Most heaps listed from the PEB's `ProcessHeaps` (a damaged count could be huge).
const MAX_HEAPS: u64 = 256;
/// Longest `UNICODE_STRING` read, in bytes (`Length` is a 16-bit count).
const MAX_STRING_BYTES: usize = 0x8000;

/// A thread environment block: its `NT_TIB` and the fields debuggers show.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Teb {
    /// Where the TEB is.
    #[serde(serialize_with = "hex_json::serialize")]
    #[schemars(with = "Hex")]
    pub address: u64,
    /// `NtTib.ExceptionList`.
    #[serde(serialize_with = "hex_json::serialize")]
    #[schemars(with = "Option<Hex>")]
    pub exception_list: Option<u64>,
    /// `NtTib.StackBase`: one past the stack's highest address.
    #[serde(serialize_with = "hex_json::serialize")]
    #[schemars(with = "Option<Hex>")]
    pub stack_base: Option<u64>,
    /// `NtTib.StackLimit`: the stack's lowest committed address.
    #[serde(serialize_with = "hex_json::serialize")]
    #[schemars(with = "Option<Hex>")]
    pub stack_limit: Option<u64>,
    /// `NtTib.SubSystemTib`.
    #[serde(serialize_with = "hex_json::serialize")]
    #[schemars(with = "Option<Hex>")]
    pub sub_system_tib: Option<u64>,
    /// `NtTib.FiberData`.
    #[serde(serialize_with = "hex_json::serialize")]
    #[schemars(with = "Option<Hex>")]
    pub fiber_data: Option<u64>,
    /// `NtTib.ArbitraryUserPointer`.
    #[serde(serialize_with = "hex_json::serialize")]
    #[schemars(with = "Option<Hex>")]
    pub arbitrary_user_pointer: Option<u64>,
    /// `NtTib.Self`: the TEB's own address, as the thread sees it.
    #[serde(serialize_with = "hex_json::serialize")]
    #[schemars(with = "Option<Hex>")]
    pub self_pointer: Option<u64>,
    /// `EnvironmentPointer`.
    #[serde(serialize_with = "hex_json::serialize")]
    #[schemars(with = "Option<Hex>")]
    pub environment_pointer: Option<u64>,
    /// `ClientId.UniqueProcess`.
    #[serde(serialize_with = "hex_json::serialize")]
    #[schemars(with = "Option<Hex>")]
    pub process_id: Option<u64>,
    /// `ClientId.UniqueThread`.
    #[serde(serialize_with = "hex_json::serialize")]
    #[schemars(with = "Option<Hex>")]
    pub thread_id: Option<u64>,
    /// `ProcessEnvironmentBlock`.
    #[serde(serialize_with = "hex_json::serialize")]
    #[schemars(with = "Option<Hex>")]
    pub peb: Option<u64>,
    /// `LastErrorValue` (a Win32 error code).
    #[serde(serialize_with = "hex_json::serialize")]
    #[schemars(with = "Option<Hex>")]
    pub last_error: Option<u64>,
    /// `LastStatusValue` (an NTSTATUS).
    #[serde(serialize_with = "hex_json::serialize")]
    #[schemars(with = "Option<Hex>")]
    pub last_status: Option<u64>,
    /// `DeallocationStack`: the base of the stack's reservation.
    #[serde(serialize_with = "hex_json::serialize")]
    #[schemars(with = "Option<Hex>")]
    pub deallocation_stack: Option<u64>,
}

/// The process environment block and its process parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct Peb {
    /// Where the PEB is.
    #[serde(serialize_with = "hex_json::serialize")]
    #[schemars(with = "Hex")]
    pub address: u64,
    /// `InheritedAddressSpace`.
    pub inherited_address_space: Option<bool>,
    /// `ReadImageFileExecOptions`.
    pub read_image_file_exec_options: Option<bool>,
    /// `BeingDebugged`.
    pub being_debugged: Option<bool>,
    /// `ImageBaseAddress`: where the executable is mapped.
    #[serde(serialize_with = "hex_json::serialize")]
    #[schemars(with = "Option<Hex>")]
    pub image_base: Option<u64>,
    /// `Ldr`: the loader's module lists.
    #[serde(serialize_with = "hex_json::serialize")]
    #[schemars(with = "Option<Hex>")]
    pub ldr: Option<u64>,
    /// `ProcessHeap`: the default heap.
    #[serde(serialize_with = "hex_json::serialize")]
    #[schemars(with = "Option<Hex>")]
    pub process_heap: Option<u64>,
    /// `ProcessHeaps`: every heap of the process, as far as the dump holds the array.
    #[serde(serialize_with = "hex_json::serialize")]
    #[schemars(with = "Vec<Hex>")]
    pub heaps: Vec<u64>,
    /// `ProcessParameters`.
    #[serde(serialize_with = "hex_json::serialize")]
    #[schemars(with = "Option<Hex>")]
    pub process_parameters: Option<u64>,
    /// `ProcessParameters.CurrentDirectory`.
    pub current_directory: Option<String>,
    /// `ProcessParameters.ImagePathName`.
    pub image_path: Option<String>,
    /// `ProcessParameters.CommandLine`.
    pub command_line: Option<String>,
}

impl Session {
    /// The layout of the process's own structures (by the target's bitness).
    pub fn user_layout(&self) -> &'static UserLayout {
        UserLayout::of(self.arch())
    }

    /// An unsigned little-endian value of `size` bytes of process data at `addr`. The TEB, the
    /// PEB and what they point to are writable memory, which image files never supply
    /// ([`Session::read_memory`] takes only read-only sections from them), so they are read from
    /// the target alone: no module's image is opened to look.
    fn data_uint(&self, addr: u64, size: usize) -> Option<u64> {
        self.target().read_uint(addr, size)
    }

    /// A pointer of the process's size at `addr` (see [`Session::data_uint`]).
    fn data_pointer(&self, addr: u64) -> Option<u64> {
        self.data_uint(addr, self.user_layout().pointer_size)
    }

    /// The TEB of thread `index` (its index in the target's thread list).
    ///
    /// # Errors
    /// `NoSuchThread`; `MemoryUnavailable` when the thread has no TEB address or the target
    /// does not hold its first byte.
    pub fn teb(&self, index: usize) -> Result<Teb, EngineError> {
        let thread = self
            .target()
            .threads()
            .get(index)
            .ok_or_else(|| EngineError::NoSuchThread(index.to_string()))?;
        let address = thread.teb;
        if address == 0 || self.data_uint(address, 1).is_none() {
            return Err(EngineError::MemoryUnavailable {
                what: "TEB",
                address,
            });
        }
        let l = self.user_layout();
        let p = l.pointer_size as u64;
        let field = |offset: u64| self.data_pointer(address.checked_add(offset)?);
        let word = |offset: u64| self.data_uint(address.checked_add(offset)?, 4);
        Ok(Teb {
            address,
            exception_list: field(0),
            stack_base: field(l.teb.stack_base),
            stack_limit: field(l.teb.stack_limit),
            sub_system_tib: field(3 * p),
            fiber_data: field(4 * p),
            arbitrary_user_pointer: field(5 * p),
            self_pointer: field(6 * p),
            environment_pointer: field(7 * p),
            process_id: field(l.teb.client_id),
            thread_id: field(l.teb.client_id + p),
            peb: field(l.teb.peb),
            last_error: word(l.teb.last_error),
            last_status: word(l.teb.last_status),
            deallocation_stack: field(l.teb.deallocation_stack),
        })
    }

    /// The address of the PEB, from the current thread's TEB.
    pub fn peb_address(&self) -> Option<u64> {
        let teb = self.current_thread()?.teb;
        self.data_pointer(teb.checked_add(self.user_layout().teb.peb)?)
    }

    /// The PEB of the process, found through the current thread's TEB.
    ///
    /// # Errors
    /// `MemoryUnavailable` when the TEB does not give its address (`what: "TEB"`) or the
    /// target does not hold the PEB's first bytes (`what: "PEB"`).
    pub fn peb(&self) -> Result<Peb, EngineError> {
        let Some(address) = self.peb_address() else {
            let teb = self.current_thread().map_or(0, |t| t.teb);
            return Err(EngineError::MemoryUnavailable {
                what: "TEB",
                address: teb,
            });
        };
        let l = self.user_layout();
        let flag = |offset: u64| Some(self.data_uint(address.checked_add(offset)?, 1)? != 0);
        let Some(being_debugged) = flag(l.peb.being_debugged) else {
            return Err(EngineError::MemoryUnavailable {
                what: "PEB",
                address,
            });
        };
        let field = |offset: u64| self.data_pointer(address.checked_add(offset)?);
        let params = field(l.peb.process_parameters);
        let text = |offset: u64| self.unicode_string(params?.checked_add(offset)?);
        Ok(Peb {
            address,
            inherited_address_space: flag(l.peb.inherited_address_space),
            read_image_file_exec_options: flag(l.peb.read_image_file_exec_options),
            being_debugged: Some(being_debugged),
            image_base: field(l.peb.image_base),
            ldr: field(l.peb.ldr),
            process_heap: field(l.peb.process_heap),
            heaps: self.process_heaps(address),
            process_parameters: params,
            current_directory: text(l.params.current_directory),
            image_path: text(l.params.image_path),
            command_line: text(l.params.command_line),
        })
    }

    /// The PEB's `ProcessHeaps` array, as far as the target holds it.
    fn process_heaps(&self, peb: u64) -> Vec<u64> {
        let l = self.user_layout();
        let (Some(count), Some(list)) = (
            peb.checked_add(l.peb.number_of_heaps)
                .and_then(|at| self.data_uint(at, 4)),
            peb.checked_add(l.peb.process_heaps)
                .and_then(|at| self.data_pointer(at)),
        ) else {
            return Vec::new();
        };
        let p = l.pointer_size as u64;
        (0..count.min(MAX_HEAPS))
            .map_while(|i| self.data_pointer(list.checked_add(i * p)?))
            .collect()
    }

    /// The text of the `UNICODE_STRING` of process data at `at`.
    fn unicode_string(&self, at: u64) -> Option<String> {
        let len = usize::try_from(self.data_uint(at, 2)?).ok()?;
        let buffer = self.data_pointer(at.checked_add(self.user_layout().unicode_buffer)?)?;
        let bytes = self
            .target()
            .read_exact(buffer, len.min(MAX_STRING_BYTES))?;
        let units: Vec<u16> = bytes
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]))
            .collect();
        Some(String::from_utf16_lossy(&units))
    }
}
