//! A frame variable as people and agents see it: type name, rendered value, location — the row
//! `dv` prints, `kp` puts in its parameter lists and `analyze` reports under `FRAME_LOCALS`.

use crate::frame_vars::FrameVariable;
use crate::place::Place;
use crate::Session;
use serde::Serialize;

/// A variable as `dv` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, schemars::JsonSchema)]
pub struct VariableView {
    /// Name.
    pub name: String,
    /// `parameter` or `local`.
    pub kind: &'static str,
    /// Type.
    #[serde(rename = "type")]
    pub type_name: String,
    /// Value as `dv` prints it.
    pub value: String,
    /// Location (`@rcx`, `@rsp+0x28`).
    pub location: String,
    /// Address, when in memory.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    /// Whether the value is known here.
    pub available: bool,
    /// Why not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// What WinDbg prints for a value it cannot locate.
pub const UNAVAILABLE: &str = "<value unavailable>";

impl Session {
    /// Renders a frame variable: its type name and its value as `dv` shows them.
    pub fn view_variable(&self, v: &FrameVariable) -> VariableView {
        let type_name = crate::typed::type_name(self, v.value.module_base, v.value.type_index)
            .unwrap_or_else(|| "<unknown type>".to_string());
        let (value, available, reason, address) = match &v.value.place {
            Place::Unavailable { why } => (UNAVAILABLE.to_string(), false, Some(why.clone()), None),
            Place::Memory(a) => (
                crate::typed::render_value(self, &v.value),
                true,
                None,
                Some(format!("{a:#x}")),
            ),
            Place::Register { .. } => {
                (crate::typed::render_value(self, &v.value), true, None, None)
            }
        };
        VariableView {
            name: v.name.clone(),
            kind: if v.is_parameter { "parameter" } else { "local" },
            type_name,
            value,
            location: v.location.clone(),
            address,
            available,
            reason,
        }
    }
}
