//! Compact JSON schemas for the tool definitions.
//!
//! Every character of `tools/list` is read by the agent on every conversation, so schemas keep
//! what describes the data and drop what does not: the `$schema` URL, integer `format`s
//! (`uint`, `uint64`: `minimum: 0` already says it), and enums written as `oneOf` of described
//! constants become plain `enum`s.
//!
//! Output schemas are shallow: the top-level fields with their types and which are required;
//! a nested object or array is only `{"type": "object"}` / `{"type": "array"}` (open), and no
//! field carries a description. They are for programs validating `structuredContent`, which
//! most clients never show the model; the tool description and the text say what comes back.
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
    Arc::new(inline_enums(compact(schema.as_ref().clone(), false)))
}

/// A parameter whose type is a string enum gets the enum written in place (its own
/// description kept), and `$defs` goes when nothing refers to it any more.
fn inline_enums(mut schema: JsonObject) -> JsonObject {
    let Some(Value::Object(defs)) = schema.remove("$defs") else {
        return schema;
    };
    let mut still_used = false;
    if let Some(Value::Object(props)) = schema.get_mut("properties") {
        for prop in props.values_mut() {
            let def = prop
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| r.strip_prefix("#/$defs/"))
                .and_then(|name| defs.get(name));
            match (def, prop) {
                (Some(def), Value::Object(p)) if def.get("enum").is_some() => {
                    p.remove("$ref");
                    p.insert("type".into(), def["type"].clone());
                    p.insert("enum".into(), def["enum"].clone());
                }
                (_, p) => still_used |= p.to_string().contains("#/$defs/"),
            }
        }
    }
    if still_used {
        schema.insert("$defs".into(), Value::Object(defs));
    }
    schema
}

/// The shallow output schema of `T`.
pub fn output<T: schemars::JsonSchema + 'static>() -> Arc<JsonObject> {
    Arc::new(shallow(compact(
        schema_for_output::<T>().as_ref().clone(),
        true,
    )))
}

/// The full schema (with `$defs`, integer formats and descriptions) of every tool's structured
/// result, by tool name: what the record tools send and what `format: "json"` adds, in more
/// detail than the shallow output schemas of `tools/list`.
pub fn result_schemas() -> Vec<(&'static str, Value)> {
    use crate::dto::*;
    fn full<T: schemars::JsonSchema>() -> Value {
        serde_json::to_value(schemars::schema_for!(T)).unwrap_or_default()
    }
    vec![
        ("list_dumps", full::<ListDumpsResult>()),
        (
            "triage_dumps",
            full::<ntdbg_analysis::triage::TriageResult>(),
        ),
        ("open_dump", full::<OpenDumpResult>()),
        ("analyze_crash", full::<ntdbg_analysis::Report>()),
        ("run_command", full::<RunCommandResult>()),
        ("read_output", full::<ReadOutputResult>()),
        ("list_sessions", full::<ListSessionsResult>()),
        ("close_session", full::<CloseSessionResult>()),
        ("attach", full::<AttachResult>()),
        ("break_in", full::<RunStateResult>()),
        ("wait_for_event", full::<RunStateResult>()),
    ]
}

/// The top level of an object schema: each property reduced to its [`skeleton`], `required`
/// kept, `$defs` gone.
fn shallow(schema: JsonObject) -> JsonObject {
    let defs = schema.get("$defs").cloned().unwrap_or(Value::Null);
    let mut out = JsonObject::new();
    out.insert("type".into(), Value::String("object".into()));
    if let Some(Value::Object(props)) = schema.get("properties") {
        let props = props
            .iter()
            .map(|(name, prop)| (name.clone(), skeleton(prop, &defs)))
            .collect();
        out.insert("properties".into(), Value::Object(props));
    }
    if let Some(required) = schema.get("required") {
        out.insert("required".into(), required.clone());
    }
    out
}

/// A property's type without its inside: scalars and string enums as they are, objects and
/// arrays open, `$ref`s resolved in `defs`, nullable kept as `anyOf` with `null`.
fn skeleton(prop: &Value, defs: &Value) -> Value {
    if let Some(name) = prop
        .get("$ref")
        .and_then(Value::as_str)
        .and_then(|r| r.strip_prefix("#/$defs/"))
    {
        return match defs.get(name) {
            Some(def) => skeleton(def, defs),
            None => Value::Object(JsonObject::new()),
        };
    }
    if let Some(Value::Array(branches)) = prop.get("anyOf") {
        let branches = branches.iter().map(|b| skeleton(b, defs)).collect();
        return serde_json::json!({ "anyOf": Value::Array(branches) });
    }
    let mut out = JsonObject::new();
    if let Some(kind) = prop.get("type") {
        out.insert("type".into(), kind.clone());
    }
    if let Some(values) = prop.get("enum") {
        out.insert("enum".into(), values.clone());
    }
    Value::Object(out)
}

fn compact(mut schema: JsonObject, output: bool) -> JsonObject {
    schema.remove("$schema");
    if !output {
        optional_not_nullable(&mut schema);
    }
    let mut value = Value::Object(schema);
    tidy(&mut value);
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
    fn input_enums_are_written_in_place() {
        let schema = json!({
            "type": "object",
            "properties": {
                "f": {"$ref": "#/$defs/F", "description": "kept"}
            },
            "$defs": {"F": {"description": "gone", "type": "string", "enum": ["a", "b"]}}
        });
        let Value::Object(o) = schema else {
            unreachable!()
        };
        assert_eq!(
            Value::Object(inline_enums(o)),
            json!({
                "type": "object",
                "properties": {
                    "f": {"type": "string", "enum": ["a", "b"], "description": "kept"}
                }
            })
        );
    }

    #[test]
    fn output_schemas_keep_the_top_level_types() {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "required": ["n", "s"],
            "properties": {
                "n": {"type": "integer", "format": "uint", "minimum": 0, "description": "gone"},
                "s": {"$ref": "#/$defs/S"},
                "o": {"type": ["string", "null"], "description": "gone"},
                "t": {"anyOf": [{"$ref": "#/$defs/T"}, {"type": "null"}]},
                "v": {"type": "array", "items": {"$ref": "#/$defs/T"}}
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
        let out = Value::Object(shallow(compact(o, true)));
        assert_eq!(
            out,
            json!({
                "type": "object",
                "required": ["n", "s"],
                "properties": {
                    "n": {"type": "integer"},
                    "s": {"type": "string", "enum": ["a", "b"]},
                    "o": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                    "t": {"anyOf": [{"type": "object"}, {"type": "null"}]},
                    "v": {"type": "array"}
                }
            })
        );
    }
}
