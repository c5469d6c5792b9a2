//! Frames and their variables: the selected frame (`.frame N`) and the parameters and locals
//! of a frame (`dv`, `kp`), with each location evaluated against the registers the unwinder
//! recovered for that frame.
//!
//! A value is only placed where the PDB says it lives *at the frame's instruction* (the exact
//! instruction for the context frame, the call instruction for callers) and only with
//! registers the walker really recovered; anything else is [`Place::Unavailable`] with the
//! reason, never a guess.

use crate::error::EngineError;
use crate::place::{Place, TypedPlace};
use crate::stack::{FoundBy, Frame, Stack};
use crate::Session;
use ntdbg_symbols::{CvRegister, FrameBase, Location, Storage, Variable};

/// One parameter or local of a frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrameVariable {
    /// Its name.
    pub name: String,
    /// Whether it is a parameter.
    pub is_parameter: bool,
    /// Its type and where its value is.
    pub value: TypedPlace,
    /// The location as `dv /v` prints it (`@rcx`, `@rsp+0x28`, `@rbp-0x14`…); empty when the
    /// variable has no location at the frame's instruction.
    pub location: String,
}

impl Session {
    /// The frame `.frame N` selected (0 unless one was selected since the last context change).
    pub fn selected_frame(&self) -> usize {
        self.selected_frame
    }

    /// Selects frame `n` of the current stack (`.frame N`) and returns it.
    pub fn select_frame(&mut self, n: usize) -> Result<Frame, EngineError> {
        let mut stack = self.stack()?;
        if n >= stack.frames.len() {
            return Err(EngineError::NoSuchFrame(n));
        }
        self.selected_frame = n;
        Ok(stack.frames.swap_remove(n))
    }

    /// The parameters and locals of frame `frame` of the current stack.
    pub fn frame_variables(&self, frame: usize) -> Result<Vec<FrameVariable>, EngineError> {
        let stack = self.stack()?;
        self.stack_frame_variables(&stack, frame)
    }

    /// The parameters and locals of frame `index` of an already walked `stack` (for commands
    /// that show many frames, such as `kp`).
    pub fn stack_frame_variables(
        &self,
        stack: &Stack,
        index: usize,
    ) -> Result<Vec<FrameVariable>, EngineError> {
        let frame = stack
            .frames
            .get(index)
            .ok_or(EngineError::NoSuchFrame(index))?;
        let none = |why: String| EngineError::NoFrameVariables { frame: index, why };
        let address = frame.lookup_address();
        let module = self
            .module_at(address)
            .ok_or_else(|| none(format!("{address:#x} is in no module")))?;
        let base = module.raw.base_of_image;
        let table = self
            .module_symbols(module)
            .variables()
            .map_err(|e| none(format!("{}: {e}", crate::module_name(&module.name))))?;
        let rva = u32::try_from(address - base)
            .map_err(|_| none(format!("{address:#x} is outside its module's image")))?;
        let scope = table
            .scope_at(rva)
            .ok_or_else(|| none(format!("no procedure record covers {address:#x}")))?;
        let variables = match inline_depth(&stack.frames, index) {
            None => scope.frame,
            Some((depth, count)) if count == scope.inlined.len() => {
                scope.inlined.get(depth).cloned().unwrap_or_default()
            }
            Some(_) => {
                return Err(none(
                    "the PDB's inline sites at this address differ from the stack's".to_string(),
                ))
            }
        };
        Ok(variables
            .into_iter()
            .map(|v| evaluate(frame, base, rva, v))
            .collect())
    }
}

/// For an inlined frame: its depth among the inline sites of its physical frame (0 =
/// outermost) and how many there are. `None` for a physical frame.
fn inline_depth(frames: &[Frame], index: usize) -> Option<(usize, usize)> {
    if !frames.get(index)?.inline {
        return None;
    }
    let start = (0..=index)
        .rev()
        .take_while(|&i| frames[i].inline)
        .last()
        .unwrap_or(index);
    let end = (index..frames.len())
        .find(|&i| !frames[i].inline)
        .unwrap_or(frames.len());
    let count = end - start;
    // Frames list inlined calls innermost first.
    Some((count - 1 - (index - start), count))
}

/// Places one variable at the frame's instruction.
fn evaluate(frame: &Frame, module_base: u64, rva: u32, v: &Variable) -> FrameVariable {
    let location = match &v.storage {
        Storage::WholeScope(location) => Some(location),
        Storage::HomeAndRanges { home, ranges } if !ranges.iter().any(|r| r.covers(rva)) => {
            Some(home)
        }
        Storage::Ranges(ranges) | Storage::HomeAndRanges { ranges, .. } => {
            let live: Vec<&Location> = ranges
                .iter()
                .filter(|r| r.covers(rva))
                .map(|r| &r.location)
                .collect();
            // Several live ranges at once are a variable split over registers.
            match live.as_slice() {
                [one] => Some(*one),
                [] => None,
                [first, ..] => {
                    if live.iter().all(|l| l == first) {
                        Some(*first)
                    } else {
                        return unavailable(
                            v,
                            module_base,
                            "held in several places at once (not evaluated)",
                            String::new(),
                        );
                    }
                }
            }
        }
    };
    let Some(location) = location else {
        return unavailable(
            v,
            module_base,
            "not live at this instruction",
            String::new(),
        );
    };
    let (place, text) = place_of(frame, location);
    FrameVariable {
        name: v.name.clone(),
        is_parameter: v.is_parameter,
        value: TypedPlace {
            module_base,
            type_index: v.type_index,
            place,
        },
        location: text,
    }
}

fn unavailable(v: &Variable, module_base: u64, why: &str, location: String) -> FrameVariable {
    FrameVariable {
        name: v.name.clone(),
        is_parameter: v.is_parameter,
        value: TypedPlace {
            module_base,
            type_index: v.type_index,
            place: Place::Unavailable {
                why: why.to_string(),
            },
        },
        location,
    }
}

/// The place a location names in `frame`, and the location as `dv /v` prints it.
fn place_of(frame: &Frame, location: &Location) -> (Place, String) {
    let missing = |r: &CvRegister| Place::Unavailable {
        why: format!("{} was not recovered for this frame", r.full),
    };
    match location {
        Location::Register(r) => {
            let text = format!("@{}", r.name);
            match frame.register(r.full) {
                Some(v) => (
                    Place::Register {
                        name: r.name.to_string(),
                        value: r.extract(v),
                    },
                    text,
                ),
                None => (missing(r), text),
            }
        }
        Location::RegisterRelative { register, offset } => relative(frame, register, *offset),
        Location::FrameRelative { base, offset } => match base {
            FrameBase::Register(r) => relative(frame, r, *offset),
            FrameBase::VirtualFrame => (
                Place::Unavailable {
                    why: "relative to x86's virtual frame ($T0), which ntdbg does not evaluate"
                        .to_string(),
                },
                format!("vframe{}", signed(*offset)),
            ),
            FrameBase::None => (
                Place::Unavailable {
                    why: "frame-relative, but the procedure names no frame register".to_string(),
                },
                String::new(),
            ),
        },
        Location::SubfieldRegister { register, .. } => (
            Place::Unavailable {
                why: format!("split into registers ({} holds one field)", register.name),
            },
            format!("@{}", register.name),
        ),
        Location::Unsupported(what) => (
            Place::Unavailable {
                why: format!("location not evaluated: {what}"),
            },
            String::new(),
        ),
    }
}

/// Memory at register + offset.
fn relative(frame: &Frame, register: &CvRegister, offset: i32) -> (Place, String) {
    let text = format!("@{}{}", register.name, signed(offset));
    if frame.found_by == FoundBy::Scan {
        return (
            Place::Unavailable {
                why: "the frame was found by scanning the stack: its registers are not known"
                    .to_string(),
            },
            text,
        );
    }
    match frame.register(register.full) {
        Some(base) => (
            Place::Memory(
                register
                    .extract(base)
                    .wrapping_add_signed(i64::from(offset)),
            ),
            text,
        ),
        None => (
            Place::Unavailable {
                why: format!("{} was not recovered for this frame", register.full),
            },
            text,
        ),
    }
}

/// `+0x28` / `-0x14`.
fn signed(offset: i32) -> String {
    if offset < 0 {
        format!("-{:#x}", offset.unsigned_abs())
    } else {
        format!("+{offset:#x}")
    }
}
