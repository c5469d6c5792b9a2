//! A module's import table: which function of which DLL each import-address-table slot calls,
//! read from the module's image (the file on the symbol path, else the image in dump memory).
//! A `call [slot]` through the table is named `KERNEL32.dll!HeapAlloc` this way with no
//! symbols at all.

use ntdbg_engine::Session;
use std::cell::RefCell;
use std::collections::HashMap;

/// `IMAGE_DIRECTORY_ENTRY_IMPORT`.
const IMPORT_DIRECTORY: usize = 1;
/// Size of an `IMAGE_IMPORT_DESCRIPTOR`.
const DESCRIPTOR_SIZE: usize = 20;
/// Most DLLs read from one table.
const MAX_DLLS: usize = 512;
/// Most functions read from one DLL's thunks.
const MAX_THUNKS: usize = 8192;
/// Longest DLL or function name read.
const MAX_NAME: usize = 256;

/// The import names of the modules asked about, each table read once.
#[derive(Debug, Default)]
pub(crate) struct ImportNames {
    /// Module base -> (IAT slot RVA -> `dll!function`).
    tables: RefCell<HashMap<u64, HashMap<u32, String>>>,
}

impl ImportNames {
    /// `KERNEL32.dll!HeapAlloc` for the import-address-table slot at `slot`, when the module
    /// holding it imports through that slot and its image is available.
    pub fn slot_name(&self, session: &Session, slot: u64) -> Option<String> {
        let module = session.module_at(slot)?;
        let base = module.raw.base_of_image;
        let rva = u32::try_from(slot - base).ok()?;
        let mut tables = self.tables.borrow_mut();
        let table = tables
            .entry(base)
            .or_insert_with(|| read_imports(session, base));
        table.get(&rva).cloned()
    }
}

/// The import table of the module at `base`: IAT slot RVA -> `dll!function` (or
/// `dll!#ordinal`). Empty when the image or its table cannot be read.
fn read_imports(session: &Session, base: u64) -> HashMap<u32, String> {
    let mut out = HashMap::new();
    let Some(module) = session.module_at(base) else {
        return out;
    };
    let symbols = session.module_symbols(module);
    let Some(info) = symbols.image_info() else {
        return out;
    };
    let Some(dir) = info.data_directory(IMPORT_DIRECTORY) else {
        return out;
    };
    let from_file = matches!(
        symbols.image_source(),
        Some(ntdbg_symbols::ImageSource::File(_))
    );
    let read_some = |rva: u32, len: usize| -> Option<Vec<u8>> {
        Some(symbols.image_bytes(u64::from(rva), len)?.to_vec())
    };
    let read = |rva: u32, len: usize| -> Option<Vec<u8>> {
        read_some(rva, len).filter(|b| b.len() == len)
    };
    let pointer = session.arch().pointer_size();
    for d in 0..MAX_DLLS {
        // RVAs come from the image: a damaged one must end the walk, not overflow.
        let Some(descriptor) = dir
            .rva
            .checked_add((d * DESCRIPTOR_SIZE) as u32)
            .and_then(|at| read(at, DESCRIPTOR_SIZE))
        else {
            break;
        };
        let field = |at: usize| u32::from_le_bytes(descriptor[at..at + 4].try_into().unwrap());
        let (names_rva, dll_rva, slots_rva) = (field(0), field(12), field(16));
        if descriptor.iter().all(|b| *b == 0) {
            break;
        }
        // The original thunks name each slot; an image without them names the slots through
        // the IAT itself, which holds names only in the file (the loader overwrites it).
        let thunks_rva = match (names_rva, from_file) {
            (0, true) => slots_rva,
            (0, false) => continue,
            (rva, _) => rva,
        };
        let Some(dll) = c_string(&read_some, dll_rva) else {
            continue;
        };
        for i in 0..MAX_THUNKS {
            let offset = (i * pointer) as u32;
            let Some(thunk) = thunks_rva
                .checked_add(offset)
                .and_then(|at| read(at, pointer))
            else {
                break;
            };
            let mut value = [0u8; 8];
            value[..pointer].copy_from_slice(&thunk);
            let value = u64::from_le_bytes(value);
            if value == 0 {
                break;
            }
            let ordinal_flag = 1u64 << (pointer * 8 - 1);
            let name = if value & ordinal_flag != 0 {
                format!("#{}", value & 0xffff)
            } else {
                match u32::try_from(value)
                    .ok()
                    .and_then(|rva| c_string(&read_some, rva.wrapping_add(2)))
                {
                    Some(n) => n,
                    None => continue,
                }
            };
            let Some(slot) = slots_rva.checked_add(offset) else {
                break;
            };
            out.insert(slot, format!("{dll}!{name}"));
        }
    }
    out
}

/// A printable NUL-terminated name at `rva` (`read` may return fewer bytes than asked: as far
/// as the image holds them).
fn c_string(read: &dyn Fn(u32, usize) -> Option<Vec<u8>>, rva: u32) -> Option<String> {
    let bytes = read(rva, MAX_NAME)?;
    let end = bytes.iter().position(|b| *b == 0)?;
    let name = String::from_utf8(bytes[..end].to_vec()).ok()?;
    let printable = !name.is_empty() && name.chars().all(|c| c.is_ascii_graphic());
    printable.then_some(name)
}
