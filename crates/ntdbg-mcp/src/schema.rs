//! Compact JSON schemas for the tool definitions.
//!
//! Every character of `tools/list` is read by the agent on every conversation, so schemas keep
//! what describes the data and drop what does not: the `$schema` URL, integer `format`s
//! (`uint`, `uint64`: `minimum: 0` already says it), and enums written as `oneOf` of described
//! constants become plain `enum`s. Output schemas also drop the descriptions inside `$defs`
//! (the shapes stay exact; the top-level fields keep their descriptions).
//!
//! For portability (clients that map schemas onto a single-`type` dialect), no schema has a
//! `type` array: an optional input parameter is simply not required, and a nullable output
//! field is `anyOf` a typed branch and `null`.

use rmcp::handler::server::tool::{schema_for_input, schema_for_output};
use rmcp::model::JsonObject;
use serde_json::Value;
use std::sync::Arc;

/// The compact input schema of `T`.
///
/// # Panics
/// When `T`'s schema is not an object schema: a programming error caught by the first
/// `tools/list` in any test.
pub fn input<T: schemars::JsonSchema + 'static>() -> Arc<JsonObject> {
    let schema = match schema_for_input::<T>() {
        Ok(s) => s,
        Err(e) => panic!("input schema of {}: {e}", std::any::type_name::<T>()),
    };
    Arc::new(compact(schema.as_ref().clone(), false))
}

/// The compact output schema of `T`.
pub fn output<T: schemars::JsonSchema + 'static>() -> Arc<JsonObject> {
    Arc::new(compact(schema_for_output::<T>().as_ref().clone(), true))
}

fn compact(mut schema: JsonObject, output: bool) -> JsonObject {
    schema.remove("$schema");
    if !output {
        optional_not_nullable(&mut schema);
    }
    let mut value = Value::Object(schema);
    tidy(&mut value);
    if output {
        if let Some(Value::Object(defs)) = value.get_mut("$defs") {
            for def in defs.values_mut() {
                strip_descriptions(def);
            }
        }
    }
    match value {
        Value::Object(o) => o,
        _ => JsonObject::new(),
    }
}

/// Optional parameters need no `null`: leaving them out says the same, portably.
fn optional_not_nullable(schema: &mut JsonObject) {
    let required: Vec<Value> = schema
        .get("required")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let Some(Value::Object(props)) = schema.get_mut("properties") else {
        return;
    };
    for (name, prop) in props.iter_mut() {
        if required.iter().any(|r| r.as_str() == Some(name)) {
            continue;
        }
        if let Some(non_null) = non_null_type(prop) {
            if let Value::Object(p) = prop {
                p.insert("type".into(), non_null);
            }
        }
    }
}

/// The other type of a `type: [T, "null"]` schema.
fn non_null_type(schema: &Value) -> Option<Value> {
    let types = schema.get("type")?.as_array()?;
    if types.len() != 2 || !types.iter().any(|t| t == "null") {
        return None;
    }
    types.iter().find(|t| *t != "null").cloned()
}

/// `type: [T, "null"]` becomes `anyOf: [{type: T, …}, {type: null}]`.
fn split_nullable(map: &mut JsonObject) {
    let Some(non_null) = non_null_type(&Value::Object(map.clone())) else {
        return;
    };
    let keys: Vec<String> = map
        .keys()
        .filter(|k| !matches!(k.as_str(), "description" | "default" | "title"))
        .cloned()
        .collect();
    let mut branch = JsonObject::new();
    for key in keys {
        if let Some(v) = map.remove(&key) {
            branch.insert(key, v);
        }
    }
    branch.insert("type".into(), non_null);
    map.insert(
        "anyOf".into(),
        Value::Array(vec![
            Value::Object(branch),
            serde_json::json!({ "type": "null" }),
        ]),
    );
}

/// Drops integer formats, turns `oneOf` of constants into `enum` and `type` arrays into
/// `anyOf`, everywhere.
fn tidy(value: &mut Value) {
    match value {
        Value::Object(map) => {
            split_nullable(map);
            let integer_format = map
                .get("format")
                .and_then(Value::as_str)
                .is_some_and(|f| f.starts_with("uint") || f.starts_with("int"));
            if integer_format {
                map.remove("format");
            }
            let constants = map
                .get("oneOf")
                .and_then(Value::as_array)
                .and_then(|variants| {
                    variants
                        .iter()
                        .map(|v| v.get("const").filter(|c| c.is_string()).cloned())
                        .collect::<Option<Vec<Value>>>()
                });
            if let Some(constants) = constants {
                map.remove("oneOf");
                map.insert("type".into(), Value::String("string".into()));
                map.insert("enum".into(), Value::Array(constants));
            }
            for v in map.values_mut() {
                tidy(v);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(tidy),
        _ => {}
    }
}

/// Removes every `description` below `value` (property names called `description` stay).
fn strip_descriptions(value: &mut Value) {
    match value {
        Value::Object(map) => {
            if map.get("description").is_some_and(Value::is_string) {
                map.remove("description");
            }
            for (key, v) in map.iter_mut() {
                if key == "properties" {
                    if let Value::Object(props) = v {
                        props.values_mut().for_each(strip_descriptions);
                    }
                } else {
                    strip_descriptions(v);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(strip_descriptions),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn optional_inputs_are_not_nullable() {
        let schema = json!({
            "type": "object",
            "required": ["a"],
            "properties": {
                "a": {"type": ["string", "null"]},
                "b": {"type": ["integer", "null"], "format": "uint64", "minimum": 0}
            }
        });
        let Value::Object(o) = schema else {
            unreachable!()
        };
        let out = Value::Object(compact(o, false));
        assert_eq!(
            out["properties"]["b"],
            json!({"type": "integer", "minimum": 0})
        );
        assert_eq!(
            out["properties"]["a"],
            json!({"anyOf": [{"type": "string"}, {"type": "null"}]})
        );
    }

    #[test]
    fn compacts_without_losing_shape() {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                "n": {"type": "integer", "format": "uint", "minimum": 0, "description": "kept"},
                "s": {"$ref": "#/$defs/S"},
                "o": {"type": ["string", "null"], "description": "kept"}
            },
            "$defs": {
                "S": {"description": "gone", "oneOf": [
                    {"const": "a", "description": "gone", "type": "string"},
                    {"const": "b", "type": "string"}
                ]},
                "T": {"type": "object", "description": "gone", "properties": {
                    "description": {"type": "string", "description": "gone"}
                }}
            }
        });
        let Value::Object(o) = schema else {
            unreachable!()
        };
        let out = Value::Object(compact(o, true));
        assert_eq!(
            out,
            json!({
                "type": "object",
                "properties": {
                    "n": {"type": "integer", "minimum": 0, "description": "kept"},
                    "s": {"$ref": "#/$defs/S"},
                    "o": {"anyOf": [{"type": "string"}, {"type": "null"}], "description": "kept"}
                },
                "$defs": {
                    "S": {"type": "string", "enum": ["a", "b"]},
                    "T": {"type": "object", "properties": {"description": {"type": "string"}}}
                }
            })
        );
    }
}
