//! Streamable HTTP: the MCP endpoint at `/mcp`, with the security defaults.
//!
//! - The listener binds loopback addresses only, unless `unsafe_http` is set, which also
//!   requires a bearer token (checked in constant time; a request without it gets `401`).
//! - `Host` must be a loopback name (rmcp's check), except with `unsafe_http` where the token
//!   guards the door instead.
//! - `Origin`, when a browser sends one, must be a localhost origin: DNS-rebinding protection,
//!   which rmcp leaves off unless allowed origins are configured.
//! - A request body over [`MAX_REQUEST_BODY`] is refused with `413 Payload Too Large` while it
//!   is read, before it is buffered whole; one not sent whole within the body timeout gets
//!   `408 Request Timeout`. A body that is not a well-formed JSON-RPC message is answered
//!   `400` with the JSON-RPC error [`admission`](crate::admission) gives it.
//! - Connections are capped and heads must arrive in time ([`crate::listener`]).

use crate::admission::{self, Admission};
use crate::client::TokenChecked;
use crate::listener::{self, HttpLimits};
use crate::server::NtdbgServer;
use axum::body::Body;
use axum::extract::{Request, State as AxumState};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http_body_util::BodyExt;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// Browser origins accepted: localhost on any port, over http or https.
pub const LOCAL_ORIGINS: &[&str] = &[
    "http://localhost:*",
    "http://127.0.0.1:*",
    "http://[::1]:*",
    "https://localhost:*",
    "https://127.0.0.1:*",
    "https://[::1]:*",
];

/// The largest HTTP request body accepted, in bytes: the same bound as a stdio line
/// ([`crate::MAX_LINE`]), far above any real tool call.
pub const MAX_REQUEST_BODY: usize = crate::MAX_LINE;

/// How the HTTP transport is exposed.
#[derive(Clone)]
pub struct HttpOptions {
    /// Where to listen.
    pub addr: SocketAddr,
    /// Allow a non-loopback bind (requires `token`).
    pub unsafe_http: bool,
    /// Bearer token every request must carry, when set.
    pub token: Option<String>,
    /// Connection cap and read timeouts.
    pub limits: HttpLimits,
}

impl std::fmt::Debug for HttpOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never print the token.
        f.debug_struct("HttpOptions")
            .field("addr", &self.addr)
            .field("unsafe_http", &self.unsafe_http)
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .field("limits", &self.limits)
            .finish()
    }
}

impl HttpOptions {
    /// Checks the security rules before anything listens.
    ///
    /// # Errors
    /// A non-loopback address without `unsafe_http`; `unsafe_http` without a token; an empty
    /// token.
    pub fn validate(&self) -> Result<(), String> {
        if self.token.as_deref().is_some_and(|t| t.trim().is_empty()) {
            return Err("the bearer token is empty".into());
        }
        if self.unsafe_http && self.token.is_none() {
            return Err("--unsafe-http requires a bearer token: pass --token-env VAR naming an environment variable that holds it".into());
        }
        if !self.addr.ip().is_loopback() && !self.unsafe_http {
            return Err(format!(
                "refusing to listen on {}: it is not a loopback address (use 127.0.0.1 or [::1], or --unsafe-http with --token-env)",
                self.addr
            ));
        }
        Ok(())
    }
}

/// The axum app: the MCP service nested at `/mcp`, behind the token check when one is set.
/// `shutdown` is cancelled to end every open MCP session.
pub fn app(server: NtdbgServer, options: &HttpOptions) -> (axum::Router, ShutdownHandle) {
    let mut config = StreamableHttpServerConfig::default()
        .with_allowed_origins(LOCAL_ORIGINS.iter().copied())
        .with_max_request_body_bytes(MAX_REQUEST_BODY);
    if options.unsafe_http {
        config = config.disable_allowed_hosts();
    }
    let shutdown = ShutdownHandle(config.cancellation_token.clone());
    let service = StreamableHttpService::new(
        move || Ok(server.clone()),
        Arc::new(LocalSessionManager::default()),
        config,
    );
    let mut router = axum::Router::new()
        .nest_service("/mcp", service)
        .layer(axum::middleware::from_fn(session_end_answers_no_content))
        .layer(axum::middleware::from_fn_with_state(
            options.limits.body_timeout,
            read_admitted_body,
        ));
    if let Some(token) = &options.token {
        let expected: Arc<str> = Arc::from(format!("Bearer {token}"));
        router = router.layer(axum::middleware::from_fn_with_state(
            expected,
            require_bearer,
        ));
    }
    (router, shutdown)
}

/// Ends the open MCP sessions of an [`app`].
#[derive(Debug, Clone)]
pub struct ShutdownHandle(tokio_util::sync::CancellationToken);

impl ShutdownHandle {
    /// Closes every open MCP session of the app.
    pub fn shutdown(&self) {
        self.0.cancel();
    }
}

async fn require_bearer(
    AxumState(expected): AxumState<Arc<str>>,
    request: Request,
    next: Next,
) -> Response {
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .map(HeaderValue::as_bytes)
        .unwrap_or_default();
    if constant_time_eq(given, expected.as_bytes()) {
        let mut request = request;
        request.extensions_mut().insert(TokenChecked);
        next.run(request).await
    } else {
        tracing::warn!("rejected an HTTP request without a valid bearer token");
        (
            StatusCode::UNAUTHORIZED,
            [(header::WWW_AUTHENTICATE, "Bearer")],
            "Unauthorized: this server needs an Authorization: Bearer token",
        )
            .into_response()
    }
}

/// Reads a `POST` body whole, within `timeout` and [`MAX_REQUEST_BODY`], and lets it on only
/// when it is a well-formed JSON-RPC message; anything else is answered here.
async fn read_admitted_body(
    AxumState(timeout): AxumState<Duration>,
    request: Request,
    next: Next,
) -> Response {
    if request.method() != axum::http::Method::POST {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let limited = http_body_util::Limited::new(body, MAX_REQUEST_BODY);
    let bytes = match tokio::time::timeout(timeout, limited.collect()).await {
        Err(_) => {
            return (
                StatusCode::REQUEST_TIMEOUT,
                [(header::CONNECTION, "close")],
                "Request Timeout: the body did not arrive in time",
            )
                .into_response()
        }
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => {
            return (
                StatusCode::PAYLOAD_TOO_LARGE,
                format!("Payload Too Large: the limit is {MAX_REQUEST_BODY} bytes"),
            )
                .into_response()
        }
        Ok(Err(e)) => {
            return (StatusCode::BAD_REQUEST, format!("Bad Request: {e}")).into_response()
        }
        Ok(Ok(collected)) => collected.to_bytes(),
    };
    let reply = match admission::admit(&bytes) {
        Admission::Pass(_) => {
            return next
                .run(Request::from_parts(parts, Body::from(bytes)))
                .await
        }
        Admission::Reject(reply) => reply,
        Admission::Blank => admission::error_reply(
            admission::PARSE_ERROR,
            "Parse error: the request body is empty",
            None,
        ),
    };
    (
        StatusCode::BAD_REQUEST,
        [(header::CONTENT_TYPE, "application/json")],
        reply,
    )
        .into_response()
}

/// A `DELETE` that ended a session is answered `204 No Content`, the success clients expect
/// (rmcp answers `202 Accepted`, which the official Python SDK logs as a failed termination).
async fn session_end_answers_no_content(request: Request, next: Next) -> Response {
    let delete = request.method() == axum::http::Method::DELETE;
    let mut response = next.run(request).await;
    if delete && response.status() == StatusCode::ACCEPTED {
        *response.status_mut() = StatusCode::NO_CONTENT;
    }
    response
}

/// Compares without stopping at the first difference, so timing does not reveal the token.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = a.len() ^ b.len();
    for (i, x) in b.iter().enumerate() {
        diff |= usize::from(a.get(i).copied().unwrap_or(0) ^ x);
    }
    diff == 0
}

/// Listens on `options.addr` and serves until ctrl-c (or SIGTERM). Prints the endpoint URL on
/// stderr once listening.
///
/// # Errors
/// The security rules of [`HttpOptions::validate`], and I/O errors binding or serving.
pub async fn serve_http(server: NtdbgServer, options: HttpOptions) -> std::io::Result<()> {
    options
        .validate()
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::PermissionDenied, e))?;
    let listener = tokio::net::TcpListener::bind(options.addr).await?;
    let local = listener.local_addr()?;
    let (router, shutdown) = app(server, &options);
    eprintln!("ntdbg MCP server listening on http://{local}/mcp");
    listener::serve(listener, router, options.limits, async move {
        crate::stdio::shutdown_signal().await;
        shutdown.shutdown();
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    fn options(addr: &str, unsafe_http: bool, token: Option<&str>) -> HttpOptions {
        HttpOptions {
            addr: addr.parse().unwrap(),
            unsafe_http,
            token: token.map(String::from),
            limits: HttpLimits::default(),
        }
    }

    #[test]
    fn loopback_only_unless_unsafe_with_token() {
        assert!(options("127.0.0.1:0", false, None).validate().is_ok());
        assert!(options("[::1]:0", false, None).validate().is_ok());
        assert!(options("0.0.0.0:8080", false, None).validate().is_err());
        assert!(options("0.0.0.0:8080", true, None).validate().is_err());
        assert!(options("0.0.0.0:8080", true, Some("s3cret"))
            .validate()
            .is_ok());
        assert!(options("127.0.0.1:0", false, Some(" ")).validate().is_err());
    }

    #[test]
    fn debug_hides_the_token() {
        let text = format!("{:?}", options("127.0.0.1:0", true, Some("s3cret")));
        assert!(!text.contains("s3cret"));
    }

    #[test]
    fn constant_time_compare() {
        assert!(constant_time_eq(b"Bearer a", b"Bearer a"));
        assert!(!constant_time_eq(b"Bearer b", b"Bearer a"));
        assert!(!constant_time_eq(b"Bearer", b"Bearer a"));
        assert!(!constant_time_eq(b"Bearer aa", b"Bearer a"));
    }
}
