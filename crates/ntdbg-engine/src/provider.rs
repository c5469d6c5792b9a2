//! Glue between the stack walker (`minidump-unwind`) and our symbol store.

use async_trait::async_trait;
use breakpad_symbols::{
    FileError, FileKind, FillSymbolError, FrameSymbolizer, FrameWalker, Module,
};
use minidump_unwind::SymbolProvider;
use ntdbg_symbols::{ModuleSymbols, SharedBytes, SymbolStatus, SymbolStore};
use ntdbg_targets::Target;
use std::path::PathBuf;
use std::sync::Arc;

/// Answers the walker's symbol and CFI questions from a target's modules and a symbol store.
pub(crate) struct StoreProvider<'a> {
    pub(crate) target: &'a dyn Target,
    pub(crate) symbols: &'a SymbolStore,
}

impl StoreProvider<'_> {
    fn symbols_for(&self, base: u64) -> Option<Arc<ModuleSymbols>> {
        let module = self
            .target
            .modules()
            .iter()
            .find(|m| m.raw.base_of_image == base)?;
        Some(load_module_symbols(self.target, self.symbols, module))
    }
}

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

#[async_trait]
impl SymbolProvider for StoreProvider<'_> {
    async fn fill_symbol(
        &self,
        module: &(dyn Module + Sync),
        frame: &mut (dyn FrameSymbolizer + Send),
    ) -> Result<(), FillSymbolError> {
        let symbols = self
            .symbols_for(module.base_address())
            .ok_or(FillSymbolError {})?;
        // `Ok` means "this module has symbols", even when the address has no name: the stack
        // scanner then rejects candidate return addresses that fall outside every function.
        symbols.fill_symbol(module, frame);
        if symbols.status() == SymbolStatus::NoSymbols {
            Err(FillSymbolError {})
        } else {
            Ok(())
        }
    }

    async fn walk_frame(
        &self,
        module: &(dyn Module + Sync),
        walker: &mut (dyn FrameWalker + Send),
    ) -> Option<()> {
        self.symbols_for(module.base_address())?
            .walk_frame(module, walker)
    }

    async fn get_file_path(
        &self,
        _module: &(dyn Module + Sync),
        _file_kind: FileKind,
    ) -> Result<PathBuf, FileError> {
        Err(FileError::NotFound)
    }
}
