//! Reads [`VariableTable`] from a PDB's module symbol streams with `pdb2`.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use pdb_addr2line::pdb::{
    self, AddressGap, AddressRange, FallibleIterator, IdIndex, Inlinee, MachineType, ModuleInfo,
    Source, SymbolData, SymbolIndex, TypeData, TypeIndex, PDB,
};

use super::{
    CvRegister, FrameBase, LiveRange, Location, Machine, Procedure, RecordKind, Scope, Storage,
    Variable, VariableTable,
};
use crate::pdb_address::{dbi_debug_streams, Addresses};
use crate::SymbolError;

/// Deepest scope nesting followed (hostile files must not grow the stack without bound).
const MAX_DEPTH: usize = 256;
/// Most scopes kept for one procedure.
const MAX_SCOPES: usize = 4096;
/// Most variables kept for one scope.
const MAX_VARIABLES: usize = 4096;

pub(super) fn read_table(path: &Path) -> Result<VariableTable, SymbolError> {
    let file = ntdbg_files::open_regular(path).map_err(|source| SymbolError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let pdb_err = |e: pdb::Error| SymbolError::Pdb {
        path: path.to_path_buf(),
        source: e.into(),
    };
    crate::source::panic_guard::guarded(path, "PDB variable reader", || {
        let mut pdb = PDB::open(file).map_err(pdb_err)?;
        read_pdb(&mut pdb).map_err(pdb_err)
    })
}

fn read_pdb<'s, S: Source<'s> + 's>(pdb: &mut PDB<'s, S>) -> Result<VariableTable, pdb::Error> {
    let dbi = pdb.debug_information()?;
    let machine = match dbi.machine_type().unwrap_or(MachineType::Unknown) {
        MachineType::X86 => Machine::X86,
        MachineType::Arm64 => Machine::Arm64,
        _ => Machine::X64,
    };
    let streams = dbi_debug_streams(pdb)?;
    let addresses = Addresses::read(pdb, &streams)?;
    let parameter_counts = parameter_counts(pdb);
    let mut procedures = Vec::new();
    let mut modules = dbi.modules()?;
    while let Ok(Some(module)) = modules.next() {
        // A module whose stream is damaged loses its variables, not the whole PDB.
        let Ok(Some(info)) = pdb.module_info(&module) else {
            continue;
        };
        let reader = ModuleReader {
            machine,
            addresses: &addresses,
            parameter_counts: &parameter_counts,
        };
        let _ = reader.read_module(&info, &mut procedures);
    }
    procedures.sort_by_key(|p: &Procedure| p.start);
    // Identical-code folding: several procedures at one address; keep the first.
    procedures.dedup_by_key(|p| p.start);
    Ok(VariableTable {
        procedures,
        machine,
    })
}

/// The declared parameter count of every procedure and member-function type, for telling
/// MSVC's `S_REGREL32`/`S_BPREL32`/`S_REGISTER` parameters (the first ones) from locals.
fn parameter_counts<'s, S: Source<'s> + 's>(pdb: &mut PDB<'s, S>) -> HashMap<u32, u16> {
    let mut out = HashMap::new();
    let Ok(info) = pdb.type_information() else {
        return out;
    };
    let mut iter = info.iter();
    while let Ok(Some(item)) = iter.next() {
        match item.parse() {
            Ok(TypeData::Procedure(p)) => {
                out.insert(item.index().0, p.parameter_count);
            }
            Ok(TypeData::MemberFunction(m)) => {
                let this = u16::from(m.this_pointer_type.is_some());
                out.insert(item.index().0, m.parameter_count.saturating_add(this));
            }
            _ => {}
        }
    }
    out
}

struct ModuleReader<'a, 's> {
    machine: Machine,
    addresses: &'a Addresses<'s>,
    parameter_counts: &'a HashMap<u32, u16>,
}

/// A procedure being read.
struct Open {
    procedure: Procedure,
    /// Scope index and the symbol index its record ends at, innermost last.
    stack: Vec<(usize, SymbolIndex)>,
    /// Where `S_DEFRANGE_*` records go: (scope, variable) of the last `S_LOCAL`.
    last_local: Option<(usize, usize)>,
    /// Parameters of MSVC-style records still to come.
    parameters_left: u16,
}

impl Open {
    /// The procedure, with frame-relative locations read before its `S_FRAMEPROC` (MSVC
    /// writes it after the variables) given their frame register.
    fn finish(mut self) -> Procedure {
        let (local, param) = (self.procedure.local_base, self.procedure.param_base);
        for scope in &mut self.procedure.scopes {
            for v in &mut scope.variables {
                let base = if v.is_parameter { param } else { local };
                let fix = |l: &mut Location| {
                    if let Location::FrameRelative {
                        base: b @ FrameBase::None,
                        ..
                    } = l
                    {
                        *b = base;
                    }
                };
                match &mut v.storage {
                    Storage::WholeScope(l) => fix(l),
                    Storage::Ranges(ranges) => ranges.iter_mut().for_each(|r| fix(&mut r.location)),
                    Storage::HomeAndRanges { home, ranges } => {
                        fix(home);
                        ranges.iter_mut().for_each(|r| fix(&mut r.location));
                    }
                }
            }
        }
        self.procedure
    }
}

impl<'a, 's> ModuleReader<'a, 's> {
    fn read_module(
        &self,
        info: &ModuleInfo<'_>,
        procedures: &mut Vec<Procedure>,
    ) -> Result<(), pdb::Error> {
        let inlinees: BTreeMap<IdIndex, Inlinee<'_>> = match info.inlinees() {
            Ok(iter) => iter
                .map(|i| Ok((i.index(), i)))
                .collect()
                .unwrap_or_default(),
            Err(_) => BTreeMap::new(),
        };
        let mut iter = info.symbols()?;
        let mut open: Option<Open> = None;
        let mut proc_offset = None;
        while let Some(symbol) = iter.next()? {
            let index = symbol.index();
            if let Some(o) = open.as_mut() {
                while o.stack.last().is_some_and(|&(_, end)| index >= end) {
                    o.stack.pop();
                }
                if o.stack.is_empty() {
                    procedures.extend(open.take().map(Open::finish));
                }
            }
            let Ok(data) = symbol.parse() else {
                continue;
            };
            if let SymbolData::Procedure(p) = &data {
                // A nested procedure ends the one being read (it is its own function).
                procedures.extend(open.take().map(Open::finish));
                let Some((start, end)) = self.addresses.ranges(p.offset, p.len).first().copied()
                else {
                    continue;
                };
                proc_offset = Some(p.offset);
                open = Some(Open {
                    procedure: Procedure {
                        name: p.name.to_string().into_owned(),
                        start,
                        end,
                        local_base: FrameBase::None,
                        param_base: FrameBase::None,
                        scopes: vec![Scope {
                            ranges: vec![(start, end)],
                            inline_site: false,
                            parent: None,
                            variables: Vec::new(),
                        }],
                    },
                    stack: vec![(0, p.end)],
                    last_local: None,
                    parameters_left: self
                        .parameter_counts
                        .get(&p.type_index.0)
                        .copied()
                        .unwrap_or(0),
                });
                continue;
            }
            let Some(o) = open.as_mut() else {
                continue;
            };
            let defrange = self.read_symbol(o, &data, proc_offset, &inlinees);
            if !defrange {
                o.last_local = None;
            }
        }
        procedures.extend(open.map(Open::finish));
        Ok(())
    }

    /// Adds one record to the open procedure; returns whether it was an `S_DEFRANGE_*`
    /// (which keeps attaching to the last `S_LOCAL`).
    fn read_symbol(
        &self,
        o: &mut Open,
        data: &SymbolData<'_>,
        proc_offset: Option<pdb::PdbInternalSectionOffset>,
        inlinees: &BTreeMap<IdIndex, Inlinee<'_>>,
    ) -> bool {
        let current = o.stack.last().map_or(0, |&(s, _)| s);
        match data {
            SymbolData::FrameProcedure(f) => {
                o.procedure.local_base = self.frame_base(f.flags.encoded_local_base_pointer);
                o.procedure.param_base = self.frame_base(f.flags.encoded_param_base_pointer);
            }
            SymbolData::Block(b) => {
                let ranges = self.addresses.ranges(b.offset, b.len);
                self.open_scope(o, current, ranges, false, b.end);
            }
            SymbolData::InlineSite(site) => {
                let mut ranges = Vec::new();
                if let (Some(inlinee), Some(offset)) = (inlinees.get(&site.inlinee), proc_offset) {
                    let mut lines = inlinee.lines(offset, site);
                    while let Ok(Some(line)) = lines.next() {
                        if let Some(len) = line.length.filter(|&n| n > 0) {
                            ranges.extend(self.addresses.ranges(line.offset, len));
                        }
                    }
                }
                self.open_scope(o, current, ranges, true, site.end);
            }
            SymbolData::Local(local) => {
                let variable = Variable {
                    name: local.name.to_string().into_owned(),
                    type_index: local.type_index.0,
                    is_parameter: local.flags.isparam,
                    storage: Storage::Ranges(Vec::new()),
                    record: RecordKind::Local,
                };
                if let Some(v) = push_variable(o, current, variable) {
                    o.last_local = Some((current, v));
                }
                return true;
            }
            SymbolData::RegisterRelative(r) => {
                let location = match self.register(r.register.0) {
                    Ok(register) => Location::RegisterRelative {
                        register,
                        offset: r.offset,
                    },
                    Err(unsupported) => unsupported,
                };
                self.push_whole_scope(
                    o,
                    current,
                    &r.name,
                    r.type_index,
                    location,
                    RecordKind::RegRel32,
                );
            }
            SymbolData::BasePointerRelative(b) => {
                let is_parameter = current == 0 && o.parameters_left > 0;
                let base = if is_parameter {
                    o.procedure.param_base
                } else {
                    o.procedure.local_base
                };
                let base = match base {
                    FrameBase::None => self.default_frame_base(),
                    other => other,
                };
                let location = Location::FrameRelative {
                    base,
                    offset: b.offset,
                };
                self.push_whole_scope(
                    o,
                    current,
                    &b.name,
                    b.type_index,
                    location,
                    RecordKind::BpRel32,
                );
            }
            SymbolData::RegisterVariable(r) => {
                let location = self.register_location(r.register.0);
                self.push_whole_scope(
                    o,
                    current,
                    &r.name,
                    r.type_index,
                    location,
                    RecordKind::Register,
                );
            }
            SymbolData::DefRangeRegister(d) => {
                let location = self.register_location(d.register.0);
                return self.add_range(o, &d.range, &d.gaps, location);
            }
            SymbolData::DefRangeFramePointerRelative(d) => {
                let location = self.frame_relative(o, d.offset);
                return self.add_range(o, &d.range, &d.gaps, location);
            }
            SymbolData::DefRangeFramePointerRelativeFullScope(d) => {
                let location = self.frame_relative(o, d.offset);
                if let Some(v) = last_local(o) {
                    let ranges = match &mut v.storage {
                        Storage::Ranges(r) => std::mem::take(r),
                        _ => Vec::new(),
                    };
                    v.storage = Storage::HomeAndRanges {
                        home: location,
                        ranges,
                    };
                }
                return o.last_local.is_some();
            }
            SymbolData::DefRangeRegisterRelative(d) => {
                let location = match self.register(d.base_register.0) {
                    Ok(register) if d.spilled_udt_member == 0 => Location::RegisterRelative {
                        register,
                        offset: d.offset_base_pointer,
                    },
                    Ok(_) => Location::Unsupported("a spilled structure member".to_string()),
                    Err(unsupported) => unsupported,
                };
                return self.add_range(o, &d.range, &d.gaps, location);
            }
            SymbolData::DefRangeSubFieldRegister(d) => {
                let location = match self.register(d.register.0) {
                    Ok(register) => Location::SubfieldRegister {
                        register,
                        parent_offset: d.offset,
                    },
                    Err(unsupported) => unsupported,
                };
                return self.add_range(o, &d.range, &d.gaps, location);
            }
            SymbolData::DefRange(d) => {
                let location = Location::Unsupported("an S_DEFRANGE DIA program".to_string());
                return self.add_range(o, &d.range, &d.gaps, location);
            }
            SymbolData::DefRangeSubField(d) => {
                let location =
                    Location::Unsupported("an S_DEFRANGE_SUBFIELD DIA program".to_string());
                return self.add_range(o, &d.range, &d.gaps, location);
            }
            _ => {}
        }
        false
    }

    fn open_scope(
        &self,
        o: &mut Open,
        parent: usize,
        ranges: Vec<(u32, u32)>,
        inline_site: bool,
        end: SymbolIndex,
    ) {
        if o.stack.len() >= MAX_DEPTH || o.procedure.scopes.len() >= MAX_SCOPES {
            return;
        }
        let mut ranges = ranges;
        ranges.sort_unstable();
        o.procedure.scopes.push(Scope {
            ranges,
            inline_site,
            parent: Some(parent),
            variables: Vec::new(),
        });
        o.stack.push((o.procedure.scopes.len() - 1, end));
    }

    fn push_whole_scope(
        &self,
        o: &mut Open,
        scope: usize,
        name: &pdb::RawString<'_>,
        type_index: TypeIndex,
        location: Location,
        record: RecordKind,
    ) {
        // MSVC's records carry no parameter flag: the procedure's first N are its parameters.
        let is_parameter = scope == 0 && o.parameters_left > 0;
        if is_parameter {
            o.parameters_left -= 1;
        }
        // MSVC repeats variables it described with `S_LOCAL` in the older records: the
        // `S_LOCAL` ranges are the precise ones.
        let name = name.to_string();
        let described = o.procedure.scopes.get(scope).is_some_and(|s| {
            s.variables
                .iter()
                .any(|v| v.record == RecordKind::Local && v.name == name)
        });
        if described {
            return;
        }
        push_variable(
            o,
            scope,
            Variable {
                name: name.into_owned(),
                type_index: type_index.0,
                is_parameter,
                storage: Storage::WholeScope(location),
                record,
            },
        );
    }

    fn add_range(
        &self,
        o: &mut Open,
        range: &AddressRange,
        gaps: &[AddressGap],
        location: Location,
    ) -> bool {
        let Some(v) = last_local(o) else {
            return false;
        };
        let ranges = match &mut v.storage {
            Storage::Ranges(ranges) | Storage::HomeAndRanges { ranges, .. } => ranges,
            Storage::WholeScope(_) => return true,
        };
        let Some(start) = self.addresses.rva(range.offset) else {
            return true;
        };
        let end = start.saturating_add(u32::from(range.cb_range));
        let gaps = gaps
            .iter()
            .map(|g| {
                let s = start.saturating_add(u32::from(g.gap_start_offset));
                (s, s.saturating_add(u32::from(g.cb_range)))
            })
            .collect();
        if ranges.len() < MAX_VARIABLES {
            ranges.push(LiveRange {
                start,
                end,
                gaps,
                location,
            });
        }
        true
    }

    fn frame_relative(&self, o: &Open, offset: i32) -> Location {
        let is_parameter = last_local_ref(o).is_some_and(|v| v.is_parameter);
        let base = if is_parameter {
            o.procedure.param_base
        } else {
            o.procedure.local_base
        };
        Location::FrameRelative { base, offset }
    }

    /// The value held whole in register `number`, or why it cannot be read.
    fn register_location(&self, number: u16) -> Location {
        self.register(number)
            .map_or_else(|unsupported| unsupported, Location::Register)
    }

    fn register(&self, number: u16) -> Result<CvRegister, Location> {
        CvRegister::from_number(self.machine, number).ok_or_else(|| {
            Location::Unsupported(match number {
                // CV_ALLREG_VFRAME: relative to x86's virtual frame (`$T0` of the frame data).
                30006 => "relative to the x86 virtual frame ($T0), not computed yet".to_string(),
                _ => format!("in CodeView register {number}, which ntdbg does not map yet"),
            })
        })
    }

    /// `S_FRAMEPROC`'s 2-bit encoded frame register.
    fn frame_base(&self, encoded: u8) -> FrameBase {
        let number = match (self.machine, encoded) {
            (_, 0) => return FrameBase::None,
            (Machine::X86, 1) => return FrameBase::VirtualFrame,
            (Machine::X86, 2) => 22,   // ebp
            (Machine::X86, _) => 20,   // ebx
            (Machine::X64, 1) => 335,  // rsp
            (Machine::X64, 2) => 334,  // rbp
            (Machine::X64, _) => 341,  // r13
            (Machine::Arm64, 1) => 81, // sp
            (Machine::Arm64, 2) => 79, // fp
            (Machine::Arm64, _) => 69, // x19
        };
        CvRegister::from_number(self.machine, number).map_or(FrameBase::None, FrameBase::Register)
    }

    /// `S_BPREL32` without `S_FRAMEPROC`: the classic frame pointer.
    fn default_frame_base(&self) -> FrameBase {
        self.frame_base(2)
    }
}

fn push_variable(o: &mut Open, scope: usize, variable: Variable) -> Option<usize> {
    let vars = &mut o.procedure.scopes.get_mut(scope)?.variables;
    if vars.len() >= MAX_VARIABLES {
        return None;
    }
    vars.push(variable);
    Some(vars.len() - 1)
}

fn last_local(o: &mut Open) -> Option<&mut Variable> {
    let (scope, v) = o.last_local?;
    o.procedure.scopes.get_mut(scope)?.variables.get_mut(v)
}

fn last_local_ref(o: &Open) -> Option<&Variable> {
    let (scope, v) = o.last_local?;
    o.procedure.scopes.get(scope)?.variables.get(v)
}
