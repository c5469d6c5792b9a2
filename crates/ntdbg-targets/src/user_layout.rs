//! Where the fields of a Windows process's own structures sit: the thread environment block
//! (TEB, starting with the `NT_TIB`), the process environment block (PEB), the process
//! parameters (`RTL_USER_PROCESS_PARAMETERS`), the loader data (`PEB_LDR_DATA`) and its entries
//! (`LDR_DATA_TABLE_ENTRY`). One table per bitness: 32-bit processes (x86, and WOW64's 32-bit
//! side) and 64-bit ones (x64 and ARM64 share the layout). The offsets are those of the public
//! definitions (Wine's `winternl.h`, ReactOS' `ldrtypes.h`, the `!peb`/`!teb` output of WinDbg);
//! Windows and Wine agree on every field listed here.
//!
//! This is the one place these offsets are written: the loader list of a live process (here),
//! and the engine's typed `Session::teb`/`Session::peb` (which `!teb`, `!peb`, `!gle`,
//! `!address` and `$peb` read) all use it.

use crate::Arch;

/// The offsets of one bitness.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UserLayout {
    /// Bytes in a pointer.
    pub pointer_size: usize,
    /// Offset of `Buffer` in a `UNICODE_STRING` (after `Length` and `MaximumLength`, aligned).
    pub unicode_buffer: u64,
    /// The TEB's fields.
    pub teb: TebLayout,
    /// The PEB's fields.
    pub peb: PebLayout,
    /// The process parameters' fields.
    pub params: ParamsLayout,
    /// The loader data's fields.
    pub ldr: LdrLayout,
}

/// Fields of the TEB. The first eight are the `NT_TIB`, one pointer each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TebLayout {
    /// `NtTib.StackBase`: the highest address of the stack (one past its end).
    pub stack_base: u64,
    /// `NtTib.StackLimit`: the lowest committed address of the stack.
    pub stack_limit: u64,
    /// `ClientId`: the process id, then the thread id (one pointer each).
    pub client_id: u64,
    /// `ProcessEnvironmentBlock`.
    pub peb: u64,
    /// `LastErrorValue` (32 bits).
    pub last_error: u64,
    /// `LastStatusValue` (32 bits).
    pub last_status: u64,
    /// `DeallocationStack`: the base of the stack's reservation.
    pub deallocation_stack: u64,
}

/// Fields of the PEB.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PebLayout {
    /// `InheritedAddressSpace` (a byte).
    pub inherited_address_space: u64,
    /// `ReadImageFileExecOptions` (a byte).
    pub read_image_file_exec_options: u64,
    /// `BeingDebugged` (a byte).
    pub being_debugged: u64,
    /// `ImageBaseAddress`.
    pub image_base: u64,
    /// `Ldr`: the loader data.
    pub ldr: u64,
    /// `ProcessParameters`.
    pub process_parameters: u64,
    /// `ProcessHeap`.
    pub process_heap: u64,
    /// `NumberOfHeaps` (32 bits).
    pub number_of_heaps: u64,
    /// `ProcessHeaps`: an array of `NumberOfHeaps` heap addresses.
    pub process_heaps: u64,
}

/// Fields of the process parameters (each a `UNICODE_STRING`; the current directory's is the
/// first field of its `CURDIR`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ParamsLayout {
    /// `CurrentDirectory.DosPath`.
    pub current_directory: u64,
    /// `ImagePathName`.
    pub image_path: u64,
    /// `CommandLine`.
    pub command_line: u64,
}

/// Fields of the loader data and of its entries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LdrLayout {
    /// `InLoadOrderModuleList` in `PEB_LDR_DATA` (a `LIST_ENTRY` head; each entry starts with
    /// its own links).
    pub in_load_order: u64,
    /// `DllBase` of an entry.
    pub entry_dll_base: u64,
    /// `SizeOfImage` of an entry (32 bits).
    pub entry_size_of_image: u64,
    /// `FullDllName` of an entry.
    pub entry_full_name: u64,
}

const BITS32: UserLayout = UserLayout {
    pointer_size: 4,
    unicode_buffer: 4,
    teb: TebLayout {
        stack_base: 0x4,
        stack_limit: 0x8,
        client_id: 0x20,
        peb: 0x30,
        last_error: 0x34,
        last_status: 0xbf4,
        deallocation_stack: 0xe0c,
    },
    peb: PebLayout {
        inherited_address_space: 0,
        read_image_file_exec_options: 1,
        being_debugged: 2,
        image_base: 0x8,
        ldr: 0xc,
        process_parameters: 0x10,
        process_heap: 0x18,
        number_of_heaps: 0x88,
        process_heaps: 0x90,
    },
    params: ParamsLayout {
        current_directory: 0x24,
        image_path: 0x38,
        command_line: 0x40,
    },
    ldr: LdrLayout {
        in_load_order: 0xc,
        entry_dll_base: 0x18,
        entry_size_of_image: 0x20,
        entry_full_name: 0x24,
    },
};

const BITS64: UserLayout = UserLayout {
    pointer_size: 8,
    unicode_buffer: 8,
    teb: TebLayout {
        stack_base: 0x8,
        stack_limit: 0x10,
        client_id: 0x40,
        peb: 0x60,
        last_error: 0x68,
        last_status: 0x1250,
        deallocation_stack: 0x1478,
    },
    peb: PebLayout {
        inherited_address_space: 0,
        read_image_file_exec_options: 1,
        being_debugged: 2,
        image_base: 0x10,
        ldr: 0x18,
        process_parameters: 0x20,
        process_heap: 0x30,
        number_of_heaps: 0xe8,
        process_heaps: 0xf0,
    },
    params: ParamsLayout {
        current_directory: 0x38,
        image_path: 0x60,
        command_line: 0x70,
    },
    ldr: LdrLayout {
        in_load_order: 0x10,
        entry_dll_base: 0x30,
        entry_size_of_image: 0x40,
        entry_full_name: 0x48,
    },
};

impl UserLayout {
    /// The layout of a user-mode process of `arch`: 32-bit x86, or 64-bit for every other
    /// architecture (x64, ARM64).
    pub fn of(arch: Arch) -> &'static UserLayout {
        if arch == Arch::X86 {
            &BITS32
        } else {
            &BITS64
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `NT_TIB` is pointers in a row, and each layout's fields fit its pointer size.
    #[test]
    fn the_tib_is_pointers_in_a_row() {
        for layout in [UserLayout::of(Arch::X86), UserLayout::of(Arch::X64)] {
            let p = layout.pointer_size as u64;
            assert_eq!((layout.teb.stack_base, layout.teb.stack_limit), (p, 2 * p));
            assert_eq!(layout.unicode_buffer, p);
            assert_eq!(layout.teb.peb, 12 * p);
        }
        assert_eq!(UserLayout::of(Arch::Arm64), UserLayout::of(Arch::X64));
    }
}
