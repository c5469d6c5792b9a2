//! The parameters and locals of the frames an engineer reads first: the faulting frame and the
//! first application frame (`frame_locals`, `FRAME_LOCALS`).

use crate::signature::SignatureConfig;
use ntdbg_engine::stack::{FoundBy, Frame, Stack};
use ntdbg_engine::variable_view::VariableView;
use ntdbg_engine::Session;
use serde::Serialize;

/// Most variables reported per frame.
pub const MAX_FRAME_LOCALS: usize = 16;

/// A frame's variables.
#[derive(Debug, Clone, Serialize, schemars::JsonSchema)]
#[schemars(rename = "Vars")]
pub struct FrameLocals {
    /// Frame number.
    pub frame: usize,
    /// Function.
    pub function: Option<String>,
    /// How the frame was found (`scan`: the variables are read as if the return address found
    /// on the stack were a live frame's).
    pub found_by: FoundBy,
    /// Parameters and locals (at most [`MAX_FRAME_LOCALS`]), each `{name, kind, type,
    /// value, location, available}` as `dv`'s typed result; the output schema leaves their
    /// shape open to keep MCP's `tools/list` small.
    #[schemars(with = "Vec<serde_json::Map<String, serde_json::Value>>")]
    pub variables: Vec<VariableView>,
    /// How many more were left out (said in the text report; not in the JSON, whose MCP
    /// output schema must stay small).
    #[serde(skip)]
    pub omitted: usize,
}

/// The first frame outside system modules with a function name.
pub(crate) fn first_application_frame(stack: &Stack, config: &SignatureConfig) -> Option<usize> {
    stack
        .frames
        .iter()
        .find(|f| f.function.is_some() && f.module.as_deref().is_some_and(|m| !config.is_system(m)))
        .map(|f| f.index)
}

/// Whether a frame is sure enough to read its variables from: its return address was checked
/// (unwind data, or it follows a call). An unverified guess may be no frame at all. A frame
/// found by scanning can still be a stale return address: its locals are shown, said so
/// ([`FrameLocals::found_by`]).
pub(crate) fn locals_are_sure(frame: &Frame) -> bool {
    frame.is_trusted()
}

/// The variables of the faulting frame (0) and of the first application frame, for those
/// whose PDB declares variables and whose registers are sure ([`locals_are_sure`]).
pub(crate) fn frame_locals(
    session: &Session,
    stack: &Stack,
    config: &SignatureConfig,
) -> Vec<FrameLocals> {
    let mut frames = vec![0];
    if let Some(app) = first_application_frame(stack, config) {
        if app != 0 {
            frames.push(app);
        }
    }
    frames
        .into_iter()
        .filter_map(|index| {
            let frame = stack.frames.get(index).filter(|f| locals_are_sure(f))?;
            let variables = session
                .stack_frame_variables(stack, index)
                .ok()
                .filter(|v| !v.is_empty())?;
            let omitted = variables.len().saturating_sub(MAX_FRAME_LOCALS);
            Some(FrameLocals {
                frame: index,
                function: frame.function.clone(),
                found_by: frame.found_by,
                variables: variables
                    .iter()
                    .take(MAX_FRAME_LOCALS)
                    .map(|v| session.view_variable(v))
                    .collect(),
                omitted,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::locals_are_sure;
    use crate::signature::tests::frame;
    use ntdbg_engine::stack::{FoundBy, Trust};

    #[test]
    fn only_frames_with_a_checked_return_address_have_locals() {
        assert!(locals_are_sure(&frame(0, "app", None, FoundBy::Context)));
        assert!(locals_are_sure(&frame(1, "app", None, FoundBy::Cfi)));
        let mut pointer = frame(2, "app", None, FoundBy::FramePointer);
        assert!(!locals_are_sure(&pointer), "unverified frame pointer guess");
        pointer.trust = Trust::CallSite;
        assert!(locals_are_sure(&pointer), "checked call site");
        let mut scanned = frame(3, "app", None, FoundBy::Scan);
        assert!(!locals_are_sure(&scanned), "unverified scan");
        scanned.trust = Trust::CallSite;
        assert!(
            locals_are_sure(&scanned),
            "scanned, follows a call: shown, said so"
        );
    }
}
