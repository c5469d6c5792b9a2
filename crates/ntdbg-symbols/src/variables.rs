//! Parameters and locals of functions, from a PDB's per-module symbol records: a compact table
//! of each procedure's scopes (the procedure, its nested blocks and its inline sites) and the
//! variables declared in them with their locations and live ranges.
//!
//! Read once per module ([`crate::ModuleSymbols::variables`]); the engine evaluates the
//! locations with a frame's registers. Record kinds understood: `S_LOCAL` with
//! `S_DEFRANGE_REGISTER`, `S_DEFRANGE_FRAMEPOINTER_REL`, `S_DEFRANGE_FRAMEPOINTER_REL_FULL_SCOPE`,
//! `S_DEFRANGE_REGISTER_REL`, `S_DEFRANGE_SUBFIELD_REGISTER` (clang-cl / lld and MSVC), and
//! MSVC's `S_REGREL32`, `S_BPREL32`, `S_REGISTER`, with `S_FRAMEPROC` naming the frame
//! registers.

mod cv_register;
mod read;

pub use cv_register::CvRegister;

/// The register a frame-relative location is measured from (`S_FRAMEPROC`'s encoded frame
/// registers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameBase {
    /// A real register of the frame (`rsp`, `rbp`, `ebp`, `ebx`, `r13`, `sp`, `fp`, `x19`).
    Register(CvRegister),
    /// x86's virtual frame (`$T0` of the frame data program): not evaluated by ntdbg.
    VirtualFrame,
    /// The procedure declares none.
    None,
}

/// Where a variable lives over one address range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Location {
    /// In a register (or part of one).
    Register(CvRegister),
    /// In memory at register + offset.
    RegisterRelative {
        /// The base register.
        register: CvRegister,
        /// Signed offset from it.
        offset: i32,
    },
    /// In memory at the procedure's frame register + offset.
    FrameRelative {
        /// The frame register (local or parameter base of `S_FRAMEPROC`).
        base: FrameBase,
        /// Signed offset from it.
        offset: i32,
    },
    /// A field of the variable (at `parent_offset`) in a register: the value is split up.
    SubfieldRegister {
        /// The register holding the field.
        register: CvRegister,
        /// Offset of the field in the variable.
        parent_offset: u32,
    },
    /// A record kind or register ntdbg does not evaluate; the text says which.
    Unsupported(String),
}

/// A location valid over `[start, end)` (RVAs) except inside its gaps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiveRange {
    /// First RVA where the location holds.
    pub start: u32,
    /// One past the last RVA.
    pub end: u32,
    /// `[start, end)` RVA ranges inside the range where it does not hold.
    pub gaps: Vec<(u32, u32)>,
    /// The location.
    pub location: Location,
}

impl LiveRange {
    /// Whether the location holds at `rva`.
    pub fn covers(&self, rva: u32) -> bool {
        self.start <= rva && rva < self.end && !self.gaps.iter().any(|&(s, e)| s <= rva && rva < e)
    }
}

/// Where a variable lives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Storage {
    /// The same location everywhere in the variable's scope (`S_REGREL32`, `S_BPREL32`,
    /// `S_REGISTER`, `S_DEFRANGE_FRAMEPOINTER_REL_FULL_SCOPE`).
    WholeScope(Location),
    /// Locations valid over address ranges (`S_LOCAL` + `S_DEFRANGE_*`); no range at an
    /// address means the value is not available there.
    Ranges(Vec<LiveRange>),
    /// A home valid in the whole scope (`S_DEFRANGE_FRAMEPOINTER_REL_FULL_SCOPE`) and ranges
    /// where the current value is elsewhere (a register), which take precedence.
    HomeAndRanges {
        /// The home.
        home: Location,
        /// The more precise ranges.
        ranges: Vec<LiveRange>,
    },
}

/// Which record declared a variable (for reports and tests).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RecordKind {
    /// `S_LOCAL` (followed by `S_DEFRANGE_*`).
    Local,
    /// `S_REGREL32`.
    RegRel32,
    /// `S_BPREL32`.
    BpRel32,
    /// `S_REGISTER`.
    Register,
}

impl RecordKind {
    /// The CodeView record name (`S_LOCAL`, `S_REGREL32`, …).
    pub fn name(self) -> &'static str {
        match self {
            RecordKind::Local => "S_LOCAL",
            RecordKind::RegRel32 => "S_REGREL32",
            RecordKind::BpRel32 => "S_BPREL32",
            RecordKind::Register => "S_REGISTER",
        }
    }
}

/// One parameter or local as the PDB declares it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Variable {
    /// Its name.
    pub name: String,
    /// Its type (TPI index).
    pub type_index: u32,
    /// Whether it is a parameter.
    pub is_parameter: bool,
    /// Where it lives.
    pub storage: Storage,
    /// The record that declared it.
    pub record: RecordKind,
}

/// A lexical scope: the procedure itself, a nested block or an inline site.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Scope {
    /// The RVA ranges the scope covers.
    pub ranges: Vec<(u32, u32)>,
    /// Whether this is an inline site (its variables belong to an inlined frame).
    pub inline_site: bool,
    /// Index of the enclosing scope in [`Procedure::scopes`] (`None` for the procedure).
    pub parent: Option<usize>,
    /// The variables declared directly in it.
    pub variables: Vec<Variable>,
}

impl Scope {
    /// Whether the scope covers `rva`.
    pub fn covers(&self, rva: u32) -> bool {
        self.ranges.iter().any(|&(s, e)| s <= rva && rva < e)
    }
}

/// One procedure: its name, extent, frame registers and scopes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Procedure {
    /// The procedure's name as the record gives it (no argument list).
    pub name: String,
    /// Its first RVA.
    pub start: u32,
    /// One past its last RVA.
    pub end: u32,
    /// The register locals are addressed from (`S_FRAMEPROC`).
    pub local_base: FrameBase,
    /// The register parameters are addressed from (`S_FRAMEPROC`).
    pub param_base: FrameBase,
    /// Scope 0 is the procedure itself; then nested blocks and inline sites, parents first.
    pub scopes: Vec<Scope>,
}

/// The variables visible at an address, for one physical frame.
#[derive(Clone, Debug)]
pub struct ScopeAt<'a> {
    /// The procedure.
    pub procedure: &'a Procedure,
    /// Variables of the procedure's own frame: the procedure's and its blocks' (outside inline
    /// sites), outermost scope first.
    pub frame: Vec<&'a Variable>,
    /// For each inline site containing the address, outermost first: its variables (with
    /// its nested blocks').
    pub inlined: Vec<Vec<&'a Variable>>,
}

/// Every procedure's scopes and variables in one PDB.
#[derive(Clone, Debug, Default)]
pub struct VariableTable {
    /// Procedures sorted by start RVA.
    procedures: Vec<Procedure>,
    /// Which CPU the registers are numbered for.
    machine: Machine,
}

/// The register numbering a PDB uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Machine {
    /// 32-bit x86 (`CV_REG_*`).
    X86,
    /// x64 (`CV_AMD64_*`).
    #[default]
    X64,
    /// ARM64 (`CV_ARM64_*`).
    Arm64,
}

impl VariableTable {
    /// Reads the variable table of the PDB at `path`.
    pub fn open(path: &std::path::Path) -> Result<VariableTable, crate::SymbolError> {
        read::read_table(path)
    }

    /// All procedures, by start RVA.
    pub fn procedures(&self) -> &[Procedure] {
        &self.procedures
    }

    /// The register numbering of the PDB.
    pub fn machine(&self) -> Machine {
        self.machine
    }

    /// The procedure containing `rva`.
    pub fn procedure_at(&self, rva: u32) -> Option<&Procedure> {
        let i = self.procedures.partition_point(|p| p.start <= rva);
        let p = self.procedures.get(i.checked_sub(1)?)?;
        (rva < p.end).then_some(p)
    }

    /// The variables in scope at `rva`, split between the procedure's frame and each inline
    /// site containing it.
    pub fn scope_at(&self, rva: u32) -> Option<ScopeAt<'_>> {
        let procedure = self.procedure_at(rva)?;
        // The innermost inline site containing each scope decides which frame it belongs to.
        let mut owner: Vec<Option<usize>> = Vec::with_capacity(procedure.scopes.len());
        let mut sites: Vec<usize> = Vec::new();
        for (i, scope) in procedure.scopes.iter().enumerate() {
            let parent_owner = scope.parent.and_then(|p| owner.get(p).copied().flatten());
            let own = if scope.inline_site {
                Some(i)
            } else {
                parent_owner
            };
            owner.push(own);
            if scope.inline_site && scope.covers(rva) && in_scope(procedure, i, rva) {
                sites.push(i);
            }
        }
        let mut frame = Vec::new();
        let mut inlined: Vec<Vec<&Variable>> = vec![Vec::new(); sites.len()];
        for (i, scope) in procedure.scopes.iter().enumerate() {
            if !in_scope(procedure, i, rva) {
                continue;
            }
            match owner[i] {
                None => frame.extend(scope.variables.iter()),
                Some(site) => {
                    if let Some(k) = sites.iter().position(|&s| s == site) {
                        inlined[k].extend(scope.variables.iter());
                    }
                }
            }
        }
        Some(ScopeAt {
            procedure,
            frame,
            inlined,
        })
    }
}

/// Whether scope `i` and all its parents cover `rva` (the procedure always does).
fn in_scope(procedure: &Procedure, mut i: usize, rva: u32) -> bool {
    for _ in 0..procedure.scopes.len() {
        let Some(scope) = procedure.scopes.get(i) else {
            return false;
        };
        let Some(parent) = scope.parent else {
            return true;
        };
        if !scope.covers(rva) {
            return false;
        }
        i = parent;
    }
    false
}
