//! Code bytes as the walker and disassembly see them: the dump's, else the module image's.

use std::borrow::Cow;

use ntdbg_symbols::SymbolStore;
use ntdbg_targets::Target;

use crate::provider::load_module_symbols;

/// Code bytes at `addr` (at most `max`): from the dump, else from the module's image found
/// on the symbol path or in dump memory, as WinDbg does for minidumps, which rarely capture
/// code. Never invented: `None` when neither holds them.
pub(crate) fn read_code<'t>(
    target: &'t dyn Target,
    symbols: &SymbolStore,
    addr: u64,
    max: usize,
) -> Option<Cow<'t, [u8]>> {
    if let Some(bytes) = target.read_chunk(addr, max) {
        return Some(bytes);
    }
    let module = target.modules().module_at_address(addr)?;
    let module_symbols = load_module_symbols(target, symbols, module);
    let bytes = module_symbols.image_bytes(addr - module.raw.base_of_image, max)?;
    (!bytes.is_empty()).then(|| Cow::Owned(bytes.to_vec()))
}

/// The longest run of known code bytes (at most `max`) that ends exactly at `end`; empty
/// when the byte just before `end` is unknown.
pub(crate) fn code_before(
    target: &dyn Target,
    symbols: &SymbolStore,
    end: u64,
    max: usize,
) -> Vec<u8> {
    // The byte before `end` first: without it no run qualifies, and asking for every length
    // would look the module up `max` times for nothing (most of a walk's return addresses in
    // modules whose code neither the dump nor the symbol path holds).
    let last_known = end
        .checked_sub(1)
        .and_then(|last| read_code(target, symbols, last, 1))
        .is_some_and(|byte| byte.len() == 1);
    if !last_known {
        return Vec::new();
    }
    for len in (1..=max).rev() {
        let Some(start) = end.checked_sub(len as u64) else {
            continue;
        };
        if let Some(bytes) = read_code(target, symbols, start, len) {
            if bytes.len() == len {
                return bytes.into_owned();
            }
        }
    }
    Vec::new()
}
