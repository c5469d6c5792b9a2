//! `attach`, `break_in` and `wait_for_event`: declared with their schemas so clients see the
//! whole contract, answering `not_available` until the gdb-remote engine lands.

use crate::error::ToolError;

/// The answer of every live-target tool in this build.
pub fn not_available(tool: &str) -> ToolError {
    ToolError::live_not_available(tool)
}
