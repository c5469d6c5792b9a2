//! A frame's module and symbols (function, source line, inlined calls), looked up once per
//! address in a walk: a deep recursion returns to the same few addresses hundreds of times.

use std::cell::RefCell;
use std::collections::HashMap;

use breakpad_symbols::FrameSymbolizer;
use minidump::MinidumpModule;
use minidump_unwind::InlineFrame;
use ntdbg_symbols::SymbolStore;
use ntdbg_targets::Target;

use crate::provider::load_module_symbols;

/// A frame's module and what the symbols said about its lookup address.
#[derive(Clone, Default)]
pub(crate) struct FrameSymbols {
    /// The module holding the address.
    pub(crate) module: Option<MinidumpModule>,
    /// For code outside every module that a file beside the dump names: what that file says
    /// holds it (Unity: the managed assembly).
    pub(crate) jit_module: Option<String>,
    /// The function (or public symbol) name.
    pub(crate) function_name: Option<String>,
    /// Where the function starts.
    pub(crate) function_base: Option<u64>,
    /// Bytes of stack parameters the function takes (x86 `STACK WIN`).
    pub(crate) parameter_size: Option<u32>,
    /// Source file.
    pub(crate) source_file_name: Option<String>,
    /// Source line.
    pub(crate) source_line: Option<u32>,
    /// Inlined calls, innermost first (the frames' order).
    pub(crate) inlines: Vec<InlineFrame>,
}

/// Collects what [`ModuleSymbols::fill_symbol`](ntdbg_symbols::ModuleSymbols::fill_symbol)
/// says about one address (the last function and source line it gives, as a
/// [`FrameSymbolizer`] keeps them).
struct Lookup {
    instruction: u64,
    found: FrameSymbols,
}

impl FrameSymbols {
    /// Looks `instruction` up in the module holding it.
    fn look_up(target: &dyn Target, symbols: &SymbolStore, instruction: u64) -> FrameSymbols {
        let mut lookup = Lookup {
            instruction,
            found: FrameSymbols::default(),
        };
        if let Some(module) = target.modules().module_at_address(instruction) {
            load_module_symbols(target, symbols, module).fill_symbol(module, &mut lookup);
            lookup.found.module = Some(module.clone());
        } else if let Some(names) = symbols.jit_names() {
            // Such files list a caller at its return address, just past `instruction`.
            let back = if target.arch() == ntdbg_targets::Arch::Arm64 {
                4
            } else {
                1
            };
            if let Some(name) = names
                .at(instruction)
                .or_else(|| names.at(instruction.wrapping_add(back)))
            {
                lookup.found.function_name = Some(name.function.clone());
                lookup.found.jit_module = name.module.clone();
            }
        }
        // The symbols give inlined calls outermost first.
        lookup.found.inlines.reverse();
        lookup.found
    }
}

impl FrameSymbolizer for Lookup {
    fn get_instruction(&self) -> u64 {
        self.instruction
    }
    fn set_function(&mut self, name: &str, base: u64, parameter_size: u32) {
        self.found.function_name = Some(name.to_string());
        self.found.function_base = Some(base);
        self.found.parameter_size = Some(parameter_size);
    }
    fn set_source_file(&mut self, file: &str, line: u32, _base: u64) {
        self.found.source_file_name = Some(file.to_string());
        self.found.source_line = Some(line);
    }
    fn add_inline_frame(&mut self, name: &str, file: Option<&str>, line: Option<u32>) {
        self.found.inlines.push(InlineFrame {
            function_name: name.to_string(),
            source_file_name: file.map(ToString::to_string),
            source_line: line,
        });
    }
}

/// The lookups one walk has made, by address.
#[derive(Default)]
pub(crate) struct SymbolMemo(RefCell<HashMap<u64, FrameSymbols>>);

impl SymbolMemo {
    /// The module and symbols of lookup address `instruction`, looked up only the first
    /// time the walk meets it.
    pub(crate) fn get(
        &self,
        target: &dyn Target,
        symbols: &SymbolStore,
        instruction: u64,
    ) -> FrameSymbols {
        let mut memo = self.0.borrow_mut();
        memo.entry(instruction)
            .or_insert_with(|| FrameSymbols::look_up(target, symbols, instruction))
            .clone()
    }
}
