//! Exact JSON for 64-bit values.
//!
//! JavaScript clients (the MCP Inspector, the TypeScript SDK) round JSON numbers above 2^53, so
//! every address, pointer and other 64-bit value of a typed result is a `0x` lower-case hex
//! string without padding (`"0x7ff7215f8da4"`). A field keeps its Rust type and says so with
//! `#[serde(serialize_with = "hex_json::serialize")]` and `#[schemars(with = "hex_json::Hex")]`
//! (`Option<Hex>`, `Vec<Hex>` for those shapes).

use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
use serde::{Serialize, Serializer};
use std::borrow::Cow;

/// A 64-bit value as JSON: the string `0x…` (lower-case hex, no padding).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hex(pub u64);

impl Serialize for Hex {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // Spelled by hand, not through `format_args!`: stacks write several per frame.
        s.serialize_str(crate::text::prefixed_hex(self.0, &mut [0; 18]))
    }
}

impl JsonSchema for Hex {
    fn inline_schema() -> bool {
        true
    }

    fn schema_name() -> Cow<'static, str> {
        "Hex".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "type": "string", "pattern": "^0x[0-9a-f]+$" })
    }
}

/// A field shape that holds 64-bit values (or ids written the same way, as thread ids are):
/// `u64`, `u32`, `Option<u64>`, `Vec<u64>`.
pub trait HexField {
    /// Serializes the value(s) as [`Hex`] strings.
    fn serialize_hex<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error>;
}

impl HexField for u64 {
    fn serialize_hex<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Hex(*self).serialize(s)
    }
}

impl HexField for u32 {
    fn serialize_hex<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Hex(u64::from(*self)).serialize(s)
    }
}

impl HexField for Option<u64> {
    fn serialize_hex<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.map(Hex).serialize(s)
    }
}

impl HexField for Vec<u64> {
    fn serialize_hex<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.iter().map(|v| Hex(*v)))
    }
}

/// `serialize_with` target for [`HexField`]s.
pub fn serialize<T: HexField, S: Serializer>(value: &T, s: S) -> Result<S::Ok, S::Error> {
    value.serialize_hex(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spells_values_as_unpadded_lower_case_hex() {
        assert_eq!(
            serde_json::to_string(&Hex(0xFFFF_F802_1234_ABCD)).unwrap(),
            "\"0xfffff8021234abcd\""
        );
        assert_eq!(serde_json::to_string(&Hex(0)).unwrap(), "\"0x0\"");
        assert_eq!(
            serde_json::to_string(&Hex(u64::MAX)).unwrap(),
            "\"0xffffffffffffffff\""
        );
        assert_eq!(serde_json::to_string(&Some(Hex(16))).unwrap(), "\"0x10\"");
    }
}
