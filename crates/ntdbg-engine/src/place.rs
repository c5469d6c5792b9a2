//! Where a typed value lives: the meeting point of frame variables (`dv`, `.frame`) and the
//! typed evaluator (`??`, `dx`, `dt VAR`).

/// Where a value lives, as far as the debugger knows it at the selected frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Place {
    /// In target memory at this address.
    Memory(u64),
    /// In a register whose value was recovered for the frame (the whole register's value).
    Register {
        /// The register's WinDbg name (`rcx`, `esi`, `x19`).
        name: String,
        /// Its value in the frame.
        value: u64,
    },
    /// Not known at this instruction: the location is not valid here, or its register was not
    /// recovered by the unwinder. Printed as `<value unavailable>`.
    Unavailable {
        /// Why, for people and for the typed result.
        why: String,
    },
}

/// A value of a PDB type at a place: what `dv`, `??` and `dx` print.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypedPlace {
    /// Base address of the module whose PDB declares the type.
    pub module_base: u64,
    /// The TPI type index of the value's type.
    pub type_index: u32,
    /// Where the value is.
    pub place: Place,
}
