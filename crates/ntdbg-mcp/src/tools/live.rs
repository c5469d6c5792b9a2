//! `attach`, `break_in` and `wait_for_event`: declared with their schemas so clients see the
//! whole contract, answering `not_available` until the gdb-remote engine lands. The tool
//! profiles call these same functions.

use crate::dto::{AttachParams, AttachResult, RunStateResult, SessionParams, WaitForEventParams};
use crate::error::ToolError;
use crate::rendered::Rendered;
use crate::state::State;
use std::sync::Arc;

/// The answer of every live-target tool in this build.
pub fn not_available(tool: &str) -> ToolError {
    ToolError::live_not_available(tool)
}

/// Attaches to a live target as a new session.
pub async fn attach(
    _state: &Arc<State>,
    _p: AttachParams,
) -> Result<Rendered<AttachResult>, ToolError> {
    Err(not_available("attach"))
}

/// Stops a running live target.
pub async fn break_in(
    _state: &Arc<State>,
    _p: SessionParams,
) -> Result<Rendered<RunStateResult>, ToolError> {
    Err(not_available("break_in"))
}

/// Waits until a running live target stops.
pub async fn wait_for_event(
    _state: &Arc<State>,
    _p: WaitForEventParams,
) -> Result<Rendered<RunStateResult>, ToolError> {
    Err(not_available("wait_for_event"))
}
