//! A frame's module and symbols (function, source line, inlined calls), looked up once per
//! address in a walk: a deep recursion returns to the same few addresses hundreds of times.

use std::cell::RefCell;
use std::collections::HashMap;

use breakpad_symbols::FrameSymbolizer;
use minidump::MinidumpModule;
use minidump_unwind::{InlineFrame, StackFrame};
use ntdbg_symbols::SymbolStore;
use ntdbg_targets::Target;

use crate::provider::load_module_symbols;

/// What the symbols said about one lookup address, as the calls
/// [`ModuleSymbols::fill_symbol`](ntdbg_symbols::ModuleSymbols::fill_symbol) made.
#[derive(Clone)]
struct FrameSymbols {
    instruction: u64,
    module: Option<MinidumpModule>,
    /// The last `set_function`: name, base, parameter size.
    function: Option<(String, u64, u32)>,
    /// The last `set_source_file`: file, line, line base.
    source: Option<(String, u32, u64)>,
    /// Inlined calls, outermost first (the symbols' order).
    inlines: Vec<InlineFrame>,
}

impl FrameSymbols {
    /// Looks `instruction` up in the module holding it.
    fn look_up(target: &dyn Target, symbols: &SymbolStore, instruction: u64) -> FrameSymbols {
        let mut found = FrameSymbols {
            instruction,
            module: None,
            function: None,
            source: None,
            inlines: Vec::new(),
        };
        if let Some(module) = target.modules().module_at_address(instruction) {
            load_module_symbols(target, symbols, module).fill_symbol(module, &mut found);
            found.module = Some(module.clone());
        }
        found
    }

    /// Gives `frame` the module and symbols, through the frame's own [`FrameSymbolizer`] so
    /// that it is filled exactly as a direct lookup would fill it; inlined calls end up
    /// innermost first, the frames' order.
    fn apply(&self, frame: &mut StackFrame) {
        frame.module.clone_from(&self.module);
        if let Some((name, base, parameter_size)) = &self.function {
            frame.set_function(name, *base, *parameter_size);
        }
        if let Some((file, line, base)) = &self.source {
            frame.set_source_file(file, *line, *base);
        }
        for inline in &self.inlines {
            frame.add_inline_frame(
                &inline.function_name,
                inline.source_file_name.as_deref(),
                inline.source_line,
            );
        }
        frame.inlines.reverse();
    }
}

impl FrameSymbolizer for FrameSymbols {
    fn get_instruction(&self) -> u64 {
        self.instruction
    }
    fn set_function(&mut self, name: &str, base: u64, parameter_size: u32) {
        self.function = Some((name.to_string(), base, parameter_size));
    }
    fn set_source_file(&mut self, file: &str, line: u32, base: u64) {
        self.source = Some((file.to_string(), line, base));
    }
    fn add_inline_frame(&mut self, name: &str, file: Option<&str>, line: Option<u32>) {
        self.inlines.push(InlineFrame {
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
    /// Fills `frame` (module, function, source line, inlined calls innermost first) for its
    /// `instruction`, looking the address up only the first time the walk meets it.
    pub(crate) fn fill(&self, target: &dyn Target, symbols: &SymbolStore, frame: &mut StackFrame) {
        let mut memo = self.0.borrow_mut();
        memo.entry(frame.instruction)
            .or_insert_with(|| FrameSymbols::look_up(target, symbols, frame.instruction))
            .apply(frame);
    }
}
