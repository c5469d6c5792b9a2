//! JSON-RPC admission: every message a client sends, over stdio or HTTP, is checked here before
//! rmcp sees it, so that each malformed one gets a JSON-RPC error (rmcp drops some without a
//! word and answers others without an `id`).
//!
//! - Not UTF-8, not JSON, or JSON the parser will not hold (nesting deeper than 128, a number
//!   out of range such as `1e400`, a lone surrogate): `-32700` Parse error.
//! - A batch (an array): MCP has none since 2025-06-18, so each element is answered `-32600`
//!   (an empty array gets one `-32600`), and nothing in it runs.
//! - An object that is not a JSON-RPC 2.0 message (no `"jsonrpc": "2.0"`, a `method` that is no
//!   string, an `id` that is neither a string nor a 64-bit integer, a result and an error
//!   together): `-32600` Invalid Request.
//! - A request whose `params` is no object, or does not fit the MCP method it names (e.g. a
//!   `tools/call` without a tool `name`): `-32602` Invalid params (rmcp would answer `-32601`).
//!
//! Every error carries the message's `id` when it can be read, even from a message that does
//! not parse (JSON-RPC 2.0: `null` only when it cannot be detected); an `id` read from a
//! message that is not UTF-8 is used only if it came through whole.

use rmcp::model::{
    CallToolRequestMethod, CancelTaskMethod, CompleteRequestMethod, ConstString,
    DiscoverRequestMethod, GetPromptRequestMethod, GetTaskMethod, InitializeResultMethod,
    ListPromptsRequestMethod, ListResourceTemplatesRequestMethod, ListResourcesRequestMethod,
    ListToolsRequestMethod, PingRequestMethod, ReadResourceRequestMethod, SetLevelRequestMethod,
    SubscribeRequestMethod, SubscriptionsListenRequestMethod, UnsubscribeRequestMethod,
    UpdateTaskMethod,
};
use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde_json::{json, Map, Value};

/// JSON-RPC's code for text that is not JSON.
pub const PARSE_ERROR: i64 = -32700;
/// JSON-RPC's code for JSON that is not a valid request.
pub const INVALID_REQUEST: i64 = -32600;
/// JSON-RPC's code for parameters that do not fit the method.
pub const INVALID_PARAMS: i64 = -32602;

/// The request methods of MCP that rmcp parses into typed requests. A request naming one of
/// them whose params do not fit would reach the server as an unknown method.
const TYPED_METHODS: &[&str] = &[
    PingRequestMethod::VALUE,
    InitializeResultMethod::VALUE,
    DiscoverRequestMethod::VALUE,
    CompleteRequestMethod::VALUE,
    SetLevelRequestMethod::VALUE,
    GetPromptRequestMethod::VALUE,
    ListPromptsRequestMethod::VALUE,
    ListResourcesRequestMethod::VALUE,
    ListResourceTemplatesRequestMethod::VALUE,
    ReadResourceRequestMethod::VALUE,
    SubscriptionsListenRequestMethod::VALUE,
    SubscribeRequestMethod::VALUE,
    UnsubscribeRequestMethod::VALUE,
    CallToolRequestMethod::VALUE,
    ListToolsRequestMethod::VALUE,
    GetTaskMethod::VALUE,
    UpdateTaskMethod::VALUE,
    CancelTaskMethod::VALUE,
];

/// What to do with one incoming message.
#[derive(Debug, PartialEq)]
pub enum Admission {
    /// Only white space: nothing to do.
    Blank,
    /// A well-formed message, for rmcp.
    Pass(Inbound),
    /// A malformed message: send this reply (one JSON value, no newline) instead.
    Reject(Vec<u8>),
}

/// A well-formed message, as far as the transports need to know it.
#[derive(Debug, PartialEq, Eq)]
pub enum Inbound {
    /// A request; its id as JSON text (how the reply will spell it).
    Request(String),
    /// `notifications/cancelled`: the id of the request it cancels, as JSON text.
    Cancel(Option<String>),
    /// Any other notification.
    Notification,
    /// A response to a request of the server's.
    Response,
}

/// Checks one message (a stdio line or an HTTP body).
pub fn admit(bytes: &[u8]) -> Admission {
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Admission::Blank;
    }
    let text = match std::str::from_utf8(bytes) {
        Ok(text) => text,
        Err(e) => {
            let lossy = String::from_utf8_lossy(bytes);
            let id = salvage_id(&lossy).filter(|id| !id.to_string().contains('\u{FFFD}'));
            return reject(
                PARSE_ERROR,
                &format!(
                    "Parse error: the message is not UTF-8 (byte {})",
                    e.valid_up_to()
                ),
                id,
            );
        }
    };
    match serde_json::from_str::<Value>(text) {
        Err(e) => reject(PARSE_ERROR, &format!("Parse error: {e}"), salvage_id(text)),
        Ok(Value::Array(batch)) if batch.is_empty() => reject(
            INVALID_REQUEST,
            "Invalid Request: an empty batch (MCP takes one message at a time)",
            None,
        ),
        Ok(Value::Array(batch)) => {
            let replies: Vec<Value> = batch
                .iter()
                .map(|element| {
                    let id = element.as_object().and_then(readable_id);
                    error_value(
                        INVALID_REQUEST,
                        "Invalid Request: MCP does not take JSON-RPC batches; send each message on its own",
                        id,
                    )
                })
                .collect();
            Admission::Reject(Value::Array(replies).to_string().into_bytes())
        }
        Ok(Value::Object(message)) => match check_message(&message) {
            Ok(inbound) => Admission::Pass(inbound),
            Err((code, text)) => reject(code, &text, readable_id(&message)),
        },
        Ok(_) => reject(
            INVALID_REQUEST,
            "Invalid Request: a message is a JSON object",
            None,
        ),
    }
}

/// The error reply for a message with this id (`None`: `null`), as one JSON value.
pub fn error_reply(code: i64, message: &str, id: Option<Value>) -> Vec<u8> {
    error_value(code, message, id).to_string().into_bytes()
}

fn reject(code: i64, message: &str, id: Option<Value>) -> Admission {
    Admission::Reject(error_reply(code, message, id))
}

fn error_value(code: i64, message: &str, id: Option<Value>) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id.unwrap_or(Value::Null),
        "error": { "code": code, "message": message },
    })
}

/// The message's id if it is one MCP allows: a string or an integer that fits 64 bits.
fn readable_id(message: &Map<String, Value>) -> Option<Value> {
    message.get("id").filter(|id| valid_id(id)).cloned()
}

fn valid_id(id: &Value) -> bool {
    id.is_string() || id.is_i64()
}

/// Whether a parsed object is a JSON-RPC 2.0 message MCP accepts, and which kind.
fn check_message(message: &Map<String, Value>) -> Result<Inbound, (i64, String)> {
    let invalid = |why: &str| Err((INVALID_REQUEST, format!("Invalid Request: {why}")));
    if message.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return invalid("\"jsonrpc\" must be \"2.0\"");
    }
    let id = message.get("id");
    if id.is_some_and(|id| !valid_id(id)) {
        return invalid("\"id\" must be a string or an integer (64-bit)");
    }
    let Some(method) = message.get("method") else {
        let has = |key| message.contains_key(key);
        return match (has("result"), has("error"), id) {
            (true, false, Some(_)) | (false, true, _) => Ok(Inbound::Response),
            _ => invalid("a message has a \"method\", or is a response with an \"id\" and one of \"result\" and \"error\""),
        };
    };
    let Some(method) = method.as_str() else {
        return invalid("\"method\" must be a string");
    };
    if message.get("params").is_some_and(|p| !p.is_object()) {
        return Err((
            INVALID_PARAMS,
            format!("Invalid params: the params of {method} must be an object"),
        ));
    }
    match id {
        Some(id) => {
            if TYPED_METHODS.contains(&method) && !fits_its_method(message) {
                return Err((
                    INVALID_PARAMS,
                    format!("Invalid params: the params do not fit {method}"),
                ));
            }
            Ok(Inbound::Request(id.to_string()))
        }
        None if method == rmcp::model::CancelledNotificationMethod::VALUE => {
            let cancelled = message
                .get("params")
                .and_then(|p| p.get("requestId"))
                .filter(|id| valid_id(id))
                .map(Value::to_string);
            Ok(Inbound::Cancel(cancelled))
        }
        None => Ok(Inbound::Notification),
    }
}

/// Whether rmcp reads the request as the MCP method it names (and not as an unknown one).
fn fits_its_method(message: &Map<String, Value>) -> bool {
    use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcMessage};
    let value = Value::Object(message.clone());
    match serde_json::from_value::<ClientJsonRpcMessage>(value) {
        Ok(JsonRpcMessage::Request(request)) => {
            !matches!(request.request, ClientRequest::CustomRequest(_))
        }
        _ => false,
    }
}

/// The `id` of a top-level object read up to the point where the text stops being JSON, if it
/// came before that point and is a string or an integer.
fn salvage_id(text: &str) -> Option<Value> {
    let mut found = None;
    let mut reader = serde_json::Deserializer::from_str(text);
    let _ = serde::Deserializer::deserialize_map(&mut reader, IdProbe(&mut found));
    found.filter(valid_id)
}

/// Reads the entries of a map, keeping the value of `id` and skipping the rest.
struct IdProbe<'a>(&'a mut Option<Value>);

impl<'de> Visitor<'de> for IdProbe<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON-RPC message")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while let Some(key) = map.next_key::<String>()? {
            if key == "id" {
                *self.0 = Some(map.next_value::<Value>()?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(bytes: &[u8]) -> Value {
        match admit(bytes) {
            Admission::Reject(r) => serde_json::from_slice(&r).expect("replies are JSON"),
            other => panic!(
                "expected a rejection of {:?}, got {other:?}",
                String::from_utf8_lossy(bytes)
            ),
        }
    }

    fn code_and_id(bytes: &[u8]) -> (i64, Value) {
        let r = reply(bytes);
        assert_eq!(r["jsonrpc"], "2.0");
        assert!(
            r.get("id").is_some(),
            "every error names an id, null or not: {r}"
        );
        (r["error"]["code"].as_i64().expect("code"), r["id"].clone())
    }

    #[test]
    fn well_formed_messages_pass() {
        assert_eq!(
            admit(br#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#),
            Admission::Pass(Inbound::Request("7".into()))
        );
        assert_eq!(
            admit(br#"{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"name":"x"}}"#),
            Admission::Pass(Inbound::Request("\"a\"".into()))
        );
        assert_eq!(
            admit(br#"{"jsonrpc":"2.0","id":8,"method":"vendor/thing","params":{"a":[1]}}"#),
            Admission::Pass(Inbound::Request("8".into())),
            "unknown methods are rmcp's to answer (-32601)"
        );
        assert_eq!(
            admit(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Admission::Pass(Inbound::Notification)
        );
        assert_eq!(
            admit(br#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"r1"}}"#),
            Admission::Pass(Inbound::Cancel(Some("\"r1\"".into())))
        );
        assert_eq!(
            admit(br#"{"jsonrpc":"2.0","id":3,"result":{}}"#),
            Admission::Pass(Inbound::Response)
        );
        assert_eq!(admit(b"  \r\n"), Admission::Blank);
        assert_eq!(
            admit(b"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\r\n"),
            Admission::Pass(Inbound::Request("1".into()))
        );
    }

    /// Issue 35, item 7: each of these got no reply at all, or one without an id.
    #[test]
    fn malformed_messages_get_an_error_with_their_id_where_it_can_be_read() {
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":13,"method":"tools/list","params":{{"x":{}{}}}}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        for (bytes, code, id) in [
            (&b"{\"jsonrpc\":\"2.0\",\"id\":11,\"method\":\"tools/list\",\"params\":{\"x\":\"\xff\"}}"[..], PARSE_ERROR, json!(11)),
            (br#"{"jsonrpc":"2.0","id":12,"method":"tools/list","params":{"x":"\ud800"}}"#, PARSE_ERROR, json!(12)),
            (deep.as_bytes(), PARSE_ERROR, json!(13)),
            (br#"{"jsonrpc":"2.0","id":1e400,"method":"tools/list"}"#, PARSE_ERROR, Value::Null),
            (br#"{"jsonrpc":"2.0","id":14,"method":"tools/li"#, PARSE_ERROR, json!(14)),
            (b"not json", PARSE_ERROR, Value::Null),
            (br#"{"jsonrpc":"2.0","id":1.5,"method":"tools/list"}"#, INVALID_REQUEST, Value::Null),
            (br#"{"jsonrpc":"2.0","id":null,"method":"tools/list"}"#, INVALID_REQUEST, Value::Null),
            (br#"{"jsonrpc":"2.0","id":18446744073709551615,"method":"tools/list"}"#, INVALID_REQUEST, Value::Null),
            (br#"{"jsonrpc":"2.0","id":15,"method":5}"#, INVALID_REQUEST, json!(15)),
            (br#"{"id":16,"method":"tools/list"}"#, INVALID_REQUEST, json!(16)),
            (br#"{"jsonrpc":"2.0","id":17}"#, INVALID_REQUEST, json!(17)),
            (br#"{"jsonrpc":"2.0","id":18,"result":{},"error":{}}"#, INVALID_REQUEST, json!(18)),
            (br#""a string""#, INVALID_REQUEST, Value::Null),
            (b"[]", INVALID_REQUEST, Value::Null),
            (br#"{"jsonrpc":"2.0","id":19,"method":"tools/list","params":[1]}"#, INVALID_PARAMS, json!(19)),
            (br#"{"jsonrpc":"2.0","id":"r20","method":"tools/call","params":{"name":5}}"#, INVALID_PARAMS, json!("r20")),
        ] {
            assert_eq!(
                code_and_id(bytes),
                (code, id),
                "{}",
                String::from_utf8_lossy(bytes)
            );
        }
    }

    #[test]
    fn a_batch_gets_one_error_per_element() {
        let r = reply(
            br#"[{"jsonrpc":"2.0","id":1,"method":"ping"},5,{"jsonrpc":"2.0","method":"x"}]"#,
        );
        let replies = r.as_array().expect("an array of replies");
        assert_eq!(replies.len(), 3);
        assert_eq!(replies[0]["id"], 1);
        assert!(replies[1]["id"].is_null() && replies[2]["id"].is_null());
        assert!(replies
            .iter()
            .all(|e| e["error"]["code"] == INVALID_REQUEST));
    }

    #[test]
    fn an_id_broken_by_bad_utf8_is_not_echoed() {
        let (code, id) =
            code_and_id(b"{\"jsonrpc\":\"2.0\",\"id\":\"a\xffb\",\"method\":\"ping\"}");
        assert_eq!((code, id), (PARSE_ERROR, Value::Null));
    }
}
