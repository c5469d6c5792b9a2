//! Stand-in for h15b's `typed::type_name` / `typed::render_value` until that branch is
//! merged: integers and pointers only. To be replaced by `crate::typed`.

use crate::place::{Place, TypedPlace};
use crate::Session;

/// The type's name (not known to this stand-in: `None`).
pub(crate) fn type_name(_session: &Session, _module_base: u64, _type_index: u32) -> Option<String> {
    None
}

/// A register value as hex; memory as its address.
pub(crate) fn render_value(_session: &Session, value: &TypedPlace) -> String {
    match &value.place {
        Place::Register { value, .. } => format!("{value:#x}"),
        Place::Memory(address) => format!("<memory at {address:#x}>"),
        Place::Unavailable { .. } => crate::variable_view::UNAVAILABLE.to_string(),
    }
}
