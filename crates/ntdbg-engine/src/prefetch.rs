//! Loading many modules' symbols at once, before the work that needs them, so that their
//! symbol-server downloads overlap instead of following one another.

use crate::Session;
use minidump::{MinidumpContext, MinidumpModule, Module};
use ntdbg_targets::Target;

/// Most stack bytes scanned for code addresses (from the stack pointer up).
const MAX_STACK_SCAN: usize = 256 * 1024;

impl Session {
    /// Loads the symbols of `modules` now, several at once
    /// ([`ntdbg_symbols::PARALLEL_LOADS`]); later uses find them loaded.
    pub fn preload_symbols(&self, modules: &[&MinidumpModule]) {
        let target = self.target();
        let read_image = |addr: u64, len: usize| crate::provider::read_image(target, addr, len);
        self.symbols().preload(modules, &read_image);
    }

    /// When symbols may be downloaded, preloads those a walk of the event thread's stack may
    /// need (see [`Session::preload_stack_symbols`]). Without an event, nothing is loaded.
    pub fn preload_event_stack_symbols(&self) {
        if let Some(context) = self.target().event().and_then(|e| e.context.as_ref()) {
            self.preload_stack_symbols(context);
        }
    }

    /// [`Session::preload_stack_symbols`] for the current thread in the current scope (`k`).
    pub fn preload_current_stack_symbols(&self) {
        if let Some(context) = self.context() {
            self.preload_stack_symbols(&context);
        }
    }

    /// When symbols may be downloaded ([`ntdbg_symbols::SymbolStore::may_download`]),
    /// preloads the modules holding the context's instruction pointer or any pointer-sized
    /// value on its stack: a superset of the modules a walk visits, whose downloads then
    /// overlap instead of following one another frame by frame. With local symbols only,
    /// nothing is loaded ahead (each stays `deferred` until used, as in WinDbg).
    pub fn preload_stack_symbols(&self, context: &MinidumpContext) {
        if self.symbols().may_download() {
            let modules = stack_modules(self.target(), context);
            self.preload_symbols(&modules);
        }
    }
}

/// The modules holding the instruction pointer or a value read from the stack, each once, in
/// the order first seen.
fn stack_modules<'a>(target: &'a dyn Target, context: &MinidumpContext) -> Vec<&'a MinidumpModule> {
    let modules = target.modules();
    let width = target.arch().pointer_size();
    let sp = context.get_stack_pointer();
    let stack = target.read_chunk(sp, MAX_STACK_SCAN);
    let values = stack.iter().flat_map(|bytes| {
        bytes.chunks_exact(width).map(|c| {
            let mut v = [0u8; 8];
            v[..c.len()].copy_from_slice(c);
            u64::from_le_bytes(v)
        })
    });
    let mut out: Vec<&MinidumpModule> = Vec::new();
    for value in std::iter::once(context.get_instruction_pointer()).chain(values) {
        if let Some(m) = modules.module_at_address(value) {
            if !out.iter().any(|o| o.base_address() == m.base_address()) {
                out.push(m);
            }
        }
    }
    out
}
