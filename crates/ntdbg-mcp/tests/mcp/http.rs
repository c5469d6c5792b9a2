//! The HTTP app in-process: Origin and Host checks, the bearer token, and a real MCP exchange.

use crate::common::samples;
use axum::body::Body;
use axum::http::{Request, StatusCode};
use http_body_util::BodyExt;
use ntdbg_mcp::{AllowedDirs, HttpOptions, NtdbgServer};
use tower::ServiceExt;

fn app(token: Option<&str>, unsafe_http: bool) -> axum::Router {
    let server = NtdbgServer::new(AllowedDirs::new(&[samples()]).expect("dirs"));
    let options = HttpOptions {
        addr: "127.0.0.1:0".parse().expect("addr"),
        unsafe_http,
        token: token.map(String::from),
        limits: Default::default(),
    };
    ntdbg_mcp::app(server, &options).0
}

fn initialize(host: &str, origin: Option<&str>, auth: Option<&str>) -> Request<Body> {
    let body = serde_json::json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}});
    let mut request = Request::post("/mcp")
        .header("host", host)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream");
    if let Some(o) = origin {
        request = request.header("origin", o);
    }
    if let Some(a) = auth {
        request = request.header("authorization", a);
    }
    request.body(Body::from(body.to_string())).expect("request")
}

async fn status(app: axum::Router, request: Request<Body>) -> (StatusCode, String) {
    let response = app.oneshot(request).await.expect("response");
    let status = response.status();
    let body = response
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    (status, String::from_utf8_lossy(&body).into_owned())
}

#[tokio::test]
async fn local_origins_pass_and_foreign_ones_are_refused() {
    let (s, body) = status(app(None, false), initialize("127.0.0.1:8080", None, None)).await;
    assert_eq!(s, StatusCode::OK, "{body}");
    assert!(body.contains("2025-11-25"), "{body}");
    let (s, _) = status(
        app(None, false),
        initialize("localhost:8080", Some("http://localhost:3000"), None),
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    let (s, _) = status(
        app(None, false),
        initialize("127.0.0.1:8080", Some("http://evil.example"), None),
    )
    .await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    let (s, _) = status(
        app(None, false),
        initialize("evil.example:8080", Some("http://evil.example:8080"), None),
    )
    .await;
    assert_eq!(s, StatusCode::FORBIDDEN, "DNS rebinding: foreign Host");
}

#[tokio::test]
async fn the_token_is_required_when_set() {
    let (s, body) = status(
        app(Some("s3cret"), true),
        initialize("10.1.2.3:8080", None, None),
    )
    .await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    assert!(!body.contains("s3cret"));
    let (s, _) = status(
        app(Some("s3cret"), true),
        initialize("10.1.2.3:8080", None, Some("Bearer wrong")),
    )
    .await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    let (s, _) = status(
        app(Some("s3cret"), true),
        initialize("10.1.2.3:8080", None, Some("Bearer s3cret")),
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    // Origin is still checked behind the token.
    let (s, _) = status(
        app(Some("s3cret"), true),
        initialize(
            "10.1.2.3:8080",
            Some("http://evil.example"),
            Some("Bearer s3cret"),
        ),
    )
    .await;
    assert_eq!(s, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn other_paths_are_not_served() {
    let request = Request::get("/")
        .header("host", "127.0.0.1")
        .body(Body::empty())
        .expect("request");
    let (s, _) = status(app(None, false), request).await;
    assert_eq!(s, StatusCode::NOT_FOUND);
}
