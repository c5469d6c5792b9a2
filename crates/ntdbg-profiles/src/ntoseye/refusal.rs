//! ntoseye's error shape: a JSON-RPC error (invalid params, invalid request or internal
//! error) whose message says what went wrong, and whose data carries the `kind` of failure
//! (ntdbg's stable error code) and a `hint` saying what to do instead.

use ntdbg_engine::ErrorCode;
use ntdbg_mcp::ToolError;
use rmcp::ErrorData;
use serde_json::json;

/// Which JSON-RPC error ntoseye answers with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Class {
    /// The arguments are wrong.
    Params,
    /// The call does not fit the server's state or abilities.
    Request,
    /// ntdbg failed.
    Internal,
}

/// A call ntoseye's tools refuse or fail.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    class: Class,
    /// ntdbg's stable code for it.
    pub kind: ErrorCode,
    /// What went wrong.
    pub message: String,
    /// What to do instead.
    pub hint: String,
}

impl Refusal {
    /// Wrong arguments.
    pub fn params(kind: ErrorCode, message: impl Into<String>, hint: impl Into<String>) -> Self {
        Refusal {
            class: Class::Params,
            kind,
            message: message.into(),
            hint: hint.into(),
        }
    }

    /// A call the server's state or abilities do not allow.
    pub fn request(kind: ErrorCode, message: impl Into<String>, hint: impl Into<String>) -> Self {
        Refusal {
            class: Class::Request,
            kind,
            message: message.into(),
            hint: hint.into(),
        }
    }

    /// A failure of one of ntdbg's tools, `doing` what (e.g. `failed to open (dump)`).
    pub fn failed(doing: &str, e: ToolError) -> Self {
        let class = match e.code {
            ErrorCode::InternalError => Class::Internal,
            ErrorCode::InvalidArguments | ErrorCode::InvalidArg | ErrorCode::PathNotAllowed => {
                Class::Params
            }
            _ => Class::Request,
        };
        Refusal {
            class,
            kind: e.code,
            message: format!("{doing}: {}", e.message),
            hint: e.hint.unwrap_or_else(|| "check the arguments".into()),
        }
    }
}

impl From<Refusal> for ErrorData {
    fn from(r: Refusal) -> ErrorData {
        let data = Some(json!({ "kind": r.kind, "hint": r.hint }));
        match r.class {
            Class::Params => ErrorData::invalid_params(r.message, data),
            Class::Request => ErrorData::invalid_request(r.message, data),
            Class::Internal => ErrorData::internal_error(r.message, data),
        }
    }
}

/// `command` and `close` with no session open.
pub fn no_session(doing: &str) -> Refusal {
    Refusal::request(
        ErrorCode::NotAttached,
        format!("no debugger session is active; {doing}"),
        "call open with backend dump and connect PATH (or backend gdb and connect HOST:PORT), \
         or start the server with --dump PATH",
    )
}

/// A call while `open` is still opening the target.
pub fn still_opening() -> Refusal {
    Refusal::request(
        ErrorCode::SessionBusy,
        "a debugger session is still opening; retry shortly",
        "wait for open to answer, then call again",
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_become_json_rpc_errors_with_kind_and_hint() {
        let e = ErrorData::from(no_session("call open to attach"));
        assert_eq!(e.code, rmcp::model::ErrorCode::INVALID_REQUEST);
        assert!(e.message.contains("no debugger session is active"));
        let data = e.data.expect("data");
        assert_eq!(data["kind"], "not_attached");
        assert!(data["hint"].as_str().is_some_and(|h| h.contains("open")));

        let failed = Refusal::failed(
            "failed to open (dump)",
            ToolError::new(ErrorCode::InternalError, "boom"),
        );
        let e = ErrorData::from(failed);
        assert_eq!(e.code, rmcp::model::ErrorCode::INTERNAL_ERROR);
        assert_eq!(e.message, "failed to open (dump): boom");
    }
}
