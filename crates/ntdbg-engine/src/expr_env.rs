//! The session as the environment of MASM expressions: registers, pseudo-registers,
//! memory and symbols.

use crate::expr::{self, ExprEnv, ExprError, ExprErrorKind};
use crate::registers;
use crate::session::Session;
use crate::typed;

impl ExprEnv for Session {
    fn register(&self, name: &str) -> Option<u64> {
        let name = name.trim_start_matches('@');
        match name {
            "$ip" => self.instruction_pointer(),
            "$scopeip" => self.scope_instruction_pointer(),
            "$csp" => self.register(registers::sp_name(self.arch())),
            "$ra" => self.stack().ok()?.frames.get(1).map(|f| f.instruction),
            "$exentry" | "$exr" => self.target().event().map(|e| e.address),
            "$tid" => self.current_thread().map(|t| u64::from(t.id)),
            "$tpid" => self.target().system().process_id.map(u64::from),
            "$teb" | "$thread" => self.current_thread().map(|t| t.teb),
            "$peb" | "$proc" => self.peb_address(),
            "$ptrsize" => Some(self.arch().pointer_size() as u64),
            _ => Session::register(self, name),
        }
    }

    fn read_memory(&self, addr: u64, size: usize) -> Option<u64> {
        self.target().read_uint(addr, size)
    }

    fn pointer_size(&self) -> usize {
        self.arch().pointer_size()
    }

    fn symbol(&self, name: &str) -> Option<u64> {
        self.resolve_symbol(name)
    }

    fn evaluate_cpp(&self, text: &str) -> Result<u64, ExprError> {
        let value = typed::evaluate_in_session(self, text)?;
        typed::as_number(self, &value)
            .ok_or_else(|| ExprError::at(ExprErrorKind::TypeConflict, 0..text.len(), text))
    }
}

impl Session {
    /// `$scopeip`: the instruction pointer of the selected frame (`.frame N`), the current
    /// one in frame 0.
    pub fn scope_instruction_pointer(&self) -> Option<u64> {
        match self.selected_frame() {
            0 => self.instruction_pointer(),
            n => self.stack().ok()?.frames.get(n).map(|f| f.instruction),
        }
    }

    /// Evaluates a MASM expression in this session (`? EXPR`).
    pub fn evaluate(&self, text: &str) -> Result<u64, ExprError> {
        expr::evaluate(text, self)
    }
}
