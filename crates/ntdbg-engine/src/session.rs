//! The debugging session: a target, its symbols, and the debugger state (current thread,
//! register scope).

use crate::error::EngineError;
use crate::extensions::Extensions;
use crate::provider::load_module_symbols;
use crate::registers;
use crate::stack::{self, Stack};
use crate::symbolize::{module_name, Symbolized};
use minidump::{MinidumpContext, MinidumpModule};
use ntdbg_symbols::{ModuleSymbols, SymbolPath, SymbolStore};
use ntdbg_targets::{Arch, Target, ThreadInfo};
use std::borrow::Cow;
use std::path::Path;
use std::sync::Arc;

/// Which register context commands see, as WinDbg's `.ecxr` / `.cxr` select it.
#[derive(Debug, Clone)]
pub enum RegisterScope {
    /// The current thread's own context (the default, and after `.cxr` with no argument).
    Thread,
    /// The exception context of the last event (after `.ecxr`).
    Exception,
    /// A context record read from memory (after `.cxr ADDR`).
    Record {
        /// Where the record was read.
        address: u64,
        /// The context.
        context: Box<MinidumpContext>,
    },
    /// A context a command built itself (`.trap ADDR` from a trap frame, `.thread ADDR` from
    /// a thread's saved state).
    Explicit {
        /// Where the context came from, for people (`trap frame @ fffff804…`).
        label: String,
        /// The context.
        context: Box<MinidumpContext>,
    },
}

/// A debugging session over one target.
#[derive(Debug)]
pub struct Session {
    target: Box<dyn Target>,
    symbols: SymbolStore,
    current_thread: usize,
    scope: RegisterScope,
    /// The frame `.frame N` selected in the current stack (0 after any context change).
    pub(crate) selected_frame: usize,
    cursors: Cursors,
    /// Run control, for a live target.
    pub(crate) live: Option<std::sync::Arc<crate::live::LiveControl>>,
    /// How many of the live target's stops this session has shown.
    pub(crate) shown_stops: u64,
    /// State the layers above keep with the session.
    extensions: Extensions,
    /// What long commands check to stop early and report progress to.
    interrupt: crate::Interrupt,
}

/// Where argument-less `d*` and `u` commands continue.
#[derive(Debug, Default, Clone, Copy)]
struct Cursors {
    display: Option<u64>,
    disasm: Option<u64>,
}

impl Session {
    /// Opens a dump file (user minidump or kernel dump, by signature). Without a symbol path, symbols are searched in the dump's folder,
    /// then `_NT_SYMBOL_PATH`.
    pub fn open_dump(path: &Path, symbol_path: Option<&str>) -> Result<Session, EngineError> {
        let target = ntdbg_targets::open(path)?;
        let folder = path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let symbols = symbol_store(symbol_path, folder)?;
        symbols.set_jit_names(crate::jit_names::beside(path, target.as_ref()).map(Arc::new));
        Ok(Session::new(target, symbols))
    }

    /// A session over any target, starting on the thread of the exception context when there
    /// is one ([`Session::exception_thread_index`]).
    pub fn new(target: Box<dyn Target>, symbols: SymbolStore) -> Session {
        let current_thread = event_thread_index(target.as_ref()).unwrap_or(0);
        let mut session = Session {
            target,
            symbols,
            current_thread,
            scope: RegisterScope::Thread,
            selected_frame: 0,
            cursors: Cursors::default(),
            live: None,
            shown_stops: 0,
            extensions: Extensions::default(),
            interrupt: crate::Interrupt::default(),
        };
        if let Some(owner) = session.exception_context_owner() {
            session.current_thread = owner.index;
        }
        session
    }

    /// The token long commands check ([`Interrupt::check`](crate::Interrupt::check)) and
    /// report progress to.
    pub fn interrupt(&self) -> &crate::Interrupt {
        &self.interrupt
    }

    /// Gives the next commands `interrupt` (a front end keeps a clone to cancel them), symbol
    /// downloads included; returns the one it replaces.
    pub fn set_interrupt(&mut self, interrupt: crate::Interrupt) -> crate::Interrupt {
        let check = interrupt.clone();
        self.symbols
            .set_cancel_check(Some(Arc::new(move || check.is_cancelled())));
        std::mem::replace(&mut self.interrupt, interrupt)
    }

    /// Keeps `value` with the session for the layers above the engine (one value per type,
    /// replacing the last one of its type).
    pub fn set_extension<T: std::any::Any + Send + Sync>(&mut self, value: T) {
        self.extensions.set(value);
    }

    /// The value of type `T` kept with [`Session::set_extension`], if any.
    pub fn extension<T: std::any::Any + Send + Sync>(&self) -> Option<&T> {
        self.extensions.get()
    }

    /// The target.
    pub fn target(&self) -> &dyn Target {
        self.target.as_ref()
    }

    /// The target, for refreshing a live one after it ran.
    pub(crate) fn target_mut(&mut self) -> &mut dyn Target {
        self.target.as_mut()
    }

    /// `Ok` while the dump file holds what it held when the session opened it (one `fstat`;
    /// a live target always). A dump truncated, copied over or written since fails every
    /// later check: what is read from it may be zeros or another file's bytes.
    pub fn check_dump(&self) -> Result<(), EngineError> {
        self.target.check_source().map_err(EngineError::DumpChanged)
    }

    /// [`Session::check_dump`], then the files behind the symbols loaded so far: symbols
    /// whose `.sym`, index or image changed on disk are dropped (read again on next use) and
    /// reported. Front ends check after each command and analysis, so that an answer read
    /// from a file that changed meanwhile is replaced by this error.
    pub fn check_files(&self) -> Result<(), EngineError> {
        self.check_dump()?;
        self.symbols
            .check_loaded()
            .map_err(EngineError::SymbolsChanged)
    }

    /// The symbol store.
    pub fn symbols(&self) -> &SymbolStore {
        &self.symbols
    }

    /// The target's architecture.
    pub fn arch(&self) -> Arch {
        self.target.arch()
    }

    /// Index (`~N`) of the current thread.
    pub fn current_thread_index(&self) -> usize {
        self.current_thread
    }

    /// The current thread, if the target has threads.
    pub fn current_thread(&self) -> Option<&ThreadInfo> {
        self.target.threads().get(self.current_thread)
    }

    /// The WinDbg number (`~N`) of the thread at `index` (see [`Target::thread_number`]).
    pub fn thread_number(&self, index: usize) -> usize {
        self.target.thread_number(index)
    }

    /// The index of the thread WinDbg numbers `number` (`~N`).
    pub fn thread_index_of_number(&self, number: usize) -> Option<usize> {
        (0..self.target.threads().len()).find(|&i| self.target.thread_number(i) == number)
    }

    /// Index of the thread that raised the last event.
    pub fn event_thread_index(&self) -> Option<usize> {
        event_thread_index(self.target.as_ref())
    }

    /// Makes thread `index` current (`~Ns`); the register scope returns to the thread's own.
    pub fn set_current_thread(&mut self, index: usize) -> Result<&ThreadInfo, EngineError> {
        if index >= self.target.threads().len() {
            return Err(EngineError::NoSuchThread(index.to_string()));
        }
        self.current_thread = index;
        self.scope = RegisterScope::Thread;
        self.selected_frame = 0;
        self.cursors.disasm = None;
        Ok(&self.target.threads()[index])
    }

    /// The register scope in force.
    pub fn scope(&self) -> &RegisterScope {
        &self.scope
    }

    /// `.ecxr`: switches to the exception context and the thread it belongs to (the event
    /// thread, or the thread whose stack holds its stack pointer when that is another one:
    /// [`Session::exception_thread_index`]).
    pub fn select_exception_context(&mut self) -> Result<MinidumpContext, EngineError> {
        let event = self.target.event().ok_or(EngineError::NoExceptionContext)?;
        let context = event
            .context
            .clone()
            .ok_or(EngineError::NoExceptionContext)?;
        if let Some(index) = self.exception_thread_index() {
            self.current_thread = index;
        }
        self.scope = RegisterScope::Exception;
        self.selected_frame = 0;
        self.cursors.disasm = None;
        Ok(context)
    }

    /// `.cxr ADDR`: reads a CONTEXT record from memory and makes it the scope.
    pub fn select_context_record(&mut self, address: u64) -> Result<MinidumpContext, EngineError> {
        let arch = self.arch();
        let bytes = self
            .target
            .read_exact(address, registers::context_size(arch))
            .ok_or(EngineError::BadContextRecord(address))?;
        let context = registers::context_from_bytes(arch, &bytes)
            .ok_or(EngineError::BadContextRecord(address))?;
        self.scope = RegisterScope::Record {
            address,
            context: Box::new(context.clone()),
        };
        self.selected_frame = 0;
        self.cursors.disasm = None;
        Ok(context)
    }

    /// Makes `context` the register scope (`.trap`, `.thread`): `r`, `k` and `u` use it until
    /// the scope is reset or another thread is selected.
    pub fn select_context(&mut self, context: MinidumpContext, label: impl Into<String>) {
        self.scope = RegisterScope::Explicit {
            label: label.into(),
            context: Box::new(context),
        };
        self.selected_frame = 0;
        self.cursors.disasm = None;
    }

    /// `.cxr` with no argument: back to the current thread's own context.
    pub fn reset_scope(&mut self) {
        self.scope = RegisterScope::Thread;
        self.selected_frame = 0;
        self.cursors.disasm = None;
    }

    /// The register context commands see now.
    pub fn context(&self) -> Option<MinidumpContext> {
        match &self.scope {
            RegisterScope::Thread => self.current_thread()?.context.clone(),
            RegisterScope::Exception => self.target.event()?.context.clone(),
            RegisterScope::Record { context, .. } | RegisterScope::Explicit { context, .. } => {
                Some((**context).clone())
            }
        }
    }

    /// A register of the current context, by name (sub-registers included).
    pub fn register(&self, name: &str) -> Option<u64> {
        registers::register(&self.context()?, name)
    }

    /// The current instruction pointer.
    pub fn instruction_pointer(&self) -> Option<u64> {
        Some(self.context()?.get_instruction_pointer())
    }

    /// The call stack of the current thread in the current scope.
    pub fn stack(&self) -> Result<Stack, EngineError> {
        self.stack_to(stack::MAX_FRAMES)
    }

    /// The call stack of the current thread in the current scope, walked to at most `limit`
    /// frames (see [`stack::walk_to`]): `k` with a count past [`stack::MAX_FRAMES`].
    pub fn stack_to(&self, limit: usize) -> Result<Stack, EngineError> {
        let thread = self
            .current_thread()
            .ok_or_else(|| EngineError::NoSuchThread(self.current_thread.to_string()))?;
        let context = self.context().ok_or(EngineError::NoContext(thread.id))?;
        Ok(stack::walk_to(
            self.target.as_ref(),
            &self.symbols,
            thread.id,
            &context,
            limit,
        ))
    }

    /// The call stack of thread `index` from its own context (as `~*k` shows).
    pub fn thread_stack(&self, index: usize) -> Result<Stack, EngineError> {
        let thread = self
            .target
            .threads()
            .get(index)
            .ok_or_else(|| EngineError::NoSuchThread(index.to_string()))?;
        let context = thread
            .context
            .clone()
            .ok_or(EngineError::NoContext(thread.id))?;
        Ok(stack::walk(
            self.target.as_ref(),
            &self.symbols,
            thread.id,
            &context,
        ))
    }

    /// The call stack of the last event: the exception context on the event thread.
    pub fn event_stack(&self) -> Result<Stack, EngineError> {
        self.event_stack_to(stack::MAX_FRAMES)
    }

    /// [`Session::event_stack`] walked to at most `limit` frames (see [`stack::walk_to`]).
    pub fn event_stack_to(&self, limit: usize) -> Result<Stack, EngineError> {
        let event = self.target.event().ok_or(EngineError::NoExceptionContext)?;
        let context = event
            .context
            .clone()
            .ok_or(EngineError::NoExceptionContext)?;
        Ok(stack::walk_to(
            self.target.as_ref(),
            &self.symbols,
            event.thread_id,
            &context,
            limit,
        ))
    }

    /// The module containing `addr`.
    pub fn module_at(&self, addr: u64) -> Option<&MinidumpModule> {
        self.target.modules().module_at_address(addr)
    }

    /// A module by its WinDbg name (`ntdll`) or file name (`ntdll.dll`), case-insensitive.
    pub fn module_by_name(&self, name: &str) -> Option<&MinidumpModule> {
        self.target.modules().iter().find(|m| {
            let short = module_name(&m.name);
            let file = crate::module_info::file_name_of(&m.name);
            short.eq_ignore_ascii_case(name) || file.eq_ignore_ascii_case(name)
        })
    }

    /// The symbols of a module (loaded on first use).
    pub fn module_symbols(&self, module: &MinidumpModule) -> Arc<ModuleSymbols> {
        load_module_symbols(self.target.as_ref(), &self.symbols, module)
    }

    /// Everything known about an address: module, function, offset, source line.
    pub fn symbolize(&self, addr: u64) -> Symbolized {
        let mut out = Symbolized {
            address: addr,
            ..Default::default()
        };
        let Some(module) = self.module_at(addr) else {
            return out;
        };
        let base = module.raw.base_of_image;
        out.module = Some(module_name(&module.name));
        out.module_base = Some(base);
        if let Some(hit) = self.module_symbols(module).lookup(addr - base) {
            out.function = Some(hit.name);
            out.function_offset = Some((addr - base).wrapping_sub(hit.start_rva));
            out.source_file = hit.file;
            out.source_line = hit.line;
        }
        out
    }

    /// Resolves `mod!name`, `mod` or a bare `name` to an address.
    pub fn resolve_symbol(&self, text: &str) -> Option<u64> {
        if let Some((module, name)) = text.split_once('!') {
            let m = self.module_by_name(module)?;
            let rva = self.module_symbols(m).resolve(name)?;
            return m.raw.base_of_image.checked_add(rva);
        }
        if let Some(m) = self.module_by_name(text) {
            return Some(m.raw.base_of_image);
        }
        self.target.modules().iter().find_map(|m| {
            let rva = self.module_symbols(m).resolve(text)?;
            m.raw.base_of_image.checked_add(rva)
        })
    }

    /// Code bytes at `addr` (at most `max`): from the dump, else from the module's image found
    /// on the symbol path, as WinDbg does for minidumps, which rarely capture code. Never
    /// invented: `None` when neither holds them.
    pub fn read_code(&self, addr: u64, max: usize) -> Option<Cow<'_, [u8]>> {
        stack::read_code(self.target.as_ref(), &self.symbols, addr, max)
    }

    /// Reads memory: the dump's bytes, and inside a module the read-only bytes of its image
    /// file where the dump has none (see [`Session::read_memory`], which also says which
    /// bytes came from an image). Never invents bytes: `None` marks a hole.
    pub fn read_virtual(&self, addr: u64, len: usize) -> Vec<Option<u8>> {
        self.read_memory(addr, len).bytes
    }

    /// Where an argument-less memory display (`db`, `dd`, …) continues.
    pub fn display_cursor(&self) -> Option<u64> {
        self.cursors.display
    }

    /// Records where the last memory display ended.
    pub fn set_display_cursor(&mut self, addr: u64) {
        self.cursors.display = Some(addr);
    }

    /// Where an argument-less `u` continues.
    pub fn disasm_cursor(&self) -> Option<u64> {
        self.cursors.disasm
    }

    /// Records where the last `u` ended.
    pub fn set_disasm_cursor(&mut self, addr: u64) {
        self.cursors.disasm = Some(addr);
    }

    /// Replaces the symbol path (`.sympath`), dropping loaded symbols.
    pub fn set_symbol_path(&mut self, path: SymbolPath) {
        self.symbols.set_path(path);
    }
}

fn event_thread_index(target: &dyn Target) -> Option<usize> {
    let event = target.event()?;
    target
        .threads()
        .iter()
        .position(|t| t.id == event.thread_id)
}

/// The store for `symbol_path`; without one, `folder` (the dump's own) then
/// `_NT_SYMBOL_PATH`.
pub(crate) fn symbol_store(
    symbol_path: Option<&str>,
    folder: &Path,
) -> Result<SymbolStore, EngineError> {
    let path_text = match symbol_path {
        Some(p) => p.to_string(),
        None => {
            let mut parts = vec![folder.display().to_string()];
            if let Ok(env) = std::env::var("_NT_SYMBOL_PATH") {
                if !env.trim().is_empty() {
                    parts.push(env);
                }
            }
            parts.join(";")
        }
    };
    let sympath =
        SymbolPath::parse(&path_text).map_err(|e| EngineError::SymbolPath(e.to_string()))?;
    Ok(SymbolStore::new(sympath))
}
