//! Module symbols as the engine loads them: from the symbol store, with the module's image
//! read from target memory when the dump holds it.

use ntdbg_symbols::{ModuleSymbols, SharedBytes, SymbolStore};
use ntdbg_targets::Target;
use std::sync::Arc;

/// Loads (or fetches from cache) the symbols of one module, letting the store read the
/// module's image from target memory when the dump holds it.
pub(crate) fn load_module_symbols(
    target: &dyn Target,
    symbols: &SymbolStore,
    module: &minidump::MinidumpModule,
) -> Arc<ModuleSymbols> {
    let read_image = |addr: u64, len: usize| read_image(target, addr, len);
    symbols.module(module, &read_image)
}

/// `len` bytes of a module's image at `addr` in the target's memory: borrowed from the
/// dump's mapping when they lie in one captured run (no copy of a whole image), else copied.
pub(crate) fn read_image(target: &dyn Target, addr: u64, len: usize) -> Option<SharedBytes> {
    if let Some((owner, range)) = target.shared_bytes(addr, len) {
        return SharedBytes::new(owner, range);
    }
    target.read_exact(addr, len).map(SharedBytes::from)
}
