//! `ntdbg collect`: the upload endpoint (`POST /submit`). Each report is checked (address
//! rate, token, size, format), its dump stored once by SHA-256 in the object store, its upload
//! recorded and queued durably, and only then answered `200` with the crash id as the whole
//! body, which Crashpad keeps as the report's upload id. With SQLite the collector's own
//! workers analyse what it accepts; with PostgreSQL, `ntdbg worker` processes do.

use crate::access::{loopback_host, presented_token, Exposure};
use crate::crashpad::{decode_body, parse_report, BadUpload, Report};
use crate::intake::Intake;
use crate::listener::Limits;
use crate::rate::RateLimit;
use crate::tokens::{ProductTokens, Refusal};
use axum::body::Body;
use axum::extract::{ConnectInfo, State};
use axum::http::{header, HeaderMap, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use ntdbg_objects::{keys, Objects, StoreUrl};
use ntdbg_store::{DbLocation, Doorbell, Upload, WorkerOptions};
use sha2::{Digest, Sha256};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// Where reports are posted.
pub const SUBMIT_PATH: &str = "/submit";
/// Bodies above this size are decoded and hashed off the async threads.
const INLINE_WORK: usize = 256 * 1024;
/// Most bytes of a refused request read (and dropped) so that its client gets the answer.
const DRAIN_BYTES: usize = 1 << 20;
/// Longest a refused request is read for.
const DRAIN_TIME: Duration = Duration::from_secs(2);

/// How `ntdbg collect` runs.
#[derive(Debug, Clone)]
pub struct CollectOptions {
    /// Where it listens, and how exposed.
    pub exposure: Exposure,
    /// The crash database.
    pub db: DbLocation,
    /// The object store for dumps.
    pub store: StoreUrl,
    /// Per-product tokens; `None`: any report is accepted (loopback only).
    pub tokens: Option<ProductTokens>,
    /// The largest upload, compressed or not, in bytes.
    pub max_upload: usize,
    /// Uploads a second from one address (0: no limit), and the burst allowed.
    pub rate_limit: (u32, u32),
    /// Connection, header and body bounds.
    pub limits: Limits,
    /// Analysis workers in this process (the default with SQLite; 0 leaves the queue to
    /// `ntdbg worker` processes).
    pub workers: usize,
    /// How those workers analyse.
    pub worker: WorkerOptions,
    /// Also serve the crash-stats page on the same port, with this token when set.
    pub pages: Option<Option<String>>,
}

/// What the upload handler shares.
struct Collector {
    objects: Objects,
    intake: Intake,
    tokens: Option<ProductTokens>,
    rate: RateLimit,
    max_upload: usize,
    body_timeout: Duration,
    any_host: bool,
}

/// An upload refused, with the status and the message the client reads.
struct Refused(StatusCode, String);

impl IntoResponse for Refused {
    fn into_response(self) -> Response {
        let mut message = self.1;
        message.push('\n');
        (
            self.0,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            message,
        )
            .into_response()
    }
}

impl From<BadUpload> for Refused {
    fn from(e: BadUpload) -> Refused {
        let status = match e {
            BadUpload::TooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            BadUpload::Encoding(_) | BadUpload::NotMultipart => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            _ => StatusCode::BAD_REQUEST,
        };
        Refused(status, e.to_string())
    }
}

/// Runs the collector on `listener` until `shutdown` completes; its workers finish the dump
/// in hand before it returns.
pub async fn run_collector(
    listener: tokio::net::TcpListener,
    options: CollectOptions,
    shutdown: impl std::future::Future<Output = ()>,
) -> Result<(), String> {
    options
        .exposure
        .validate(options.tokens.is_some(), "--tokens FILE")?;
    if options.exposure.unsafe_http && matches!(options.pages, Some(None)) {
        return Err("--pages with --unsafe-http requires --token-env VAR for the page".into());
    }
    let objects = Objects::open(&options.store).map_err(|e| e.message)?;
    let doorbell = Arc::new(Doorbell::default());
    let (intake, committer) =
        Intake::start(&options.db, doorbell.clone()).map_err(|e| e.to_string())?;
    let stop = Arc::new(AtomicBool::new(false));
    let workers = start_workers(&options, &doorbell, &stop)?;
    let collector = Arc::new(Collector {
        objects,
        intake,
        tokens: options.tokens.clone(),
        rate: RateLimit::new(options.rate_limit.0, options.rate_limit.1),
        max_upload: options.max_upload,
        body_timeout: options.limits.body_timeout,
        any_host: options.exposure.any_host(),
    });
    let mut router = axum::Router::new()
        .route(SUBMIT_PATH, axum::routing::post(submit))
        .with_state(collector);
    if let Some(token) = &options.pages {
        let pages = crate::pages::PageOptions {
            db: options.db.clone(),
            token: token.clone(),
            any_host: options.exposure.any_host(),
        };
        router = router.merge(crate::pages::router(pages));
    } else {
        router = router.fallback(|| async {
            Refused(
                StatusCode::NOT_FOUND,
                format!("this is an ntdbg crash collector: POST crash reports to {SUBMIT_PATH}"),
            )
        });
    }
    let served = crate::listener::serve(listener, router, &options.limits, shutdown).await;
    stop.store(true, Ordering::Relaxed);
    doorbell.ring();
    for w in workers {
        let _ = w.join();
    }
    let _ = committer.join();
    served.map_err(|e| e.to_string())
}

/// The in-process analysis workers.
fn start_workers(
    options: &CollectOptions,
    doorbell: &Arc<Doorbell>,
    stop: &Arc<AtomicBool>,
) -> Result<Vec<std::thread::JoinHandle<()>>, String> {
    (0..options.workers)
        .map(|i| {
            let worker = WorkerOptions {
                wait: true,
                doorbell: Some(doorbell.clone()),
                stop: Some(stop.clone()),
                ..options.worker.clone()
            };
            let db = options.db.clone();
            std::thread::Builder::new()
                .name(format!("ntdbg-worker-{i}"))
                .spawn(move || {
                    let log = |m: &str| tracing::warn!("worker: {m}");
                    if let Err(e) = ntdbg_store::run_worker(&db, &worker, &log) {
                        tracing::error!("worker stopped: {e}");
                    }
                })
                .map_err(|e| format!("cannot start a worker: {e}"))
        })
        .collect()
}

/// `POST /submit`.
async fn submit(
    State(c): State<Arc<Collector>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    uri: Uri,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, Refused> {
    let token = presented_token(&headers, uri.query());
    if let Some(refused) = refused_before_the_body(&c, peer, &headers, token.as_deref()) {
        // A request refused before its body is read costs nothing beyond a short drain.
        drain_briefly(body).await;
        return Ok(refused);
    }
    let text = |name: header::HeaderName| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let raw = read_body(body, c.max_upload, c.body_timeout).await?;
    let (encoding, content_type) = (text(header::CONTENT_ENCODING), text(header::CONTENT_TYPE));
    let max = c.max_upload;
    let decode = move || decode_body(raw, encoding.as_deref(), max);
    let decoded = if max_hint(&headers) > INLINE_WORK {
        tokio::task::spawn_blocking(decode)
            .await
            .map_err(|e| Refused(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))??
    } else {
        decode()?
    };
    let report = parse_report(decoded, content_type.as_deref(), uri.query()).await?;
    if let Some(tokens) = &c.tokens {
        tokens
            .check(report.product().as_deref(), token.as_deref())
            .map_err(refusal)?;
    }
    let id = c.keep(report).await?;
    Ok((
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        id,
    )
        .into_response())
}

/// The body's length as announced (0 when chunked).
fn max_hint(headers: &HeaderMap) -> usize {
    headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// What a client is told about its token.
fn refusal(r: Refusal) -> Refused {
    match r {
        Refusal::Missing => Refused(
            StatusCode::UNAUTHORIZED,
            "this collector needs the product's upload token: add ?token=TOKEN to the upload URL"
                .into(),
        ),
        Refusal::Unknown => Refused(
            StatusCode::FORBIDDEN,
            "the upload token is not valid here".into(),
        ),
        Refusal::Wrong => Refused(
            StatusCode::FORBIDDEN,
            "the upload token is not this product's".into(),
        ),
    }
}

/// The whole body, at most `limit` bytes, within `timeout`.
/// The answer to a request refused on its headers alone (Host, rate, token), if it is.
fn refused_before_the_body(
    c: &Collector,
    peer: SocketAddr,
    headers: &HeaderMap,
    token: Option<&str>,
) -> Option<Response> {
    if !c.any_host && !loopback_host(headers) {
        return Some(
            Refused(
                StatusCode::FORBIDDEN,
                "the Host header must name this machine's loopback address".into(),
            )
            .into_response(),
        );
    }
    if let Err(wait) = c.rate.check(peer.ip()) {
        let seconds = wait.as_secs().max(1).to_string();
        let mut response = Refused(
            StatusCode::TOO_MANY_REQUESTS,
            format!("too many uploads from {}: retry in {seconds} s", peer.ip()),
        )
        .into_response();
        if let Ok(v) = header::HeaderValue::from_str(&seconds) {
            response.headers_mut().insert(header::RETRY_AFTER, v);
        }
        return Some(response);
    }
    let tokens = c.tokens.as_ref()?;
    tokens
        .knows(token)
        .err()
        .map(|r| refusal(r).into_response())
}

/// Reads and drops what a refused request is sending, up to [`DRAIN_BYTES`] or
/// [`DRAIN_TIME`]: a client still writing its upload when the connection closed would get a
/// reset instead of the answer. A larger or slower upload is cut off as before.
async fn drain_briefly(body: Body) {
    let _ = tokio::time::timeout(DRAIN_TIME, Limited::new(body, DRAIN_BYTES).collect()).await;
}

async fn read_body(body: Body, limit: usize, timeout: Duration) -> Result<Bytes, Refused> {
    match tokio::time::timeout(timeout, Limited::new(body, limit).collect()).await {
        Err(_) => Err(Refused(
            StatusCode::REQUEST_TIMEOUT,
            format!("the upload did not arrive within {} s", timeout.as_secs()),
        )),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => {
            Err(BadUpload::TooLarge(limit).into())
        }
        Ok(Err(e)) => Err(Refused(
            StatusCode::BAD_REQUEST,
            format!("the upload was cut off: {e}"),
        )),
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
    }
}

impl Collector {
    /// Stores the dump once and records the upload, durably; the crash id.
    async fn keep(&self, report: Report) -> Result<String, Refused> {
        let unavailable = |e: String| {
            tracing::error!("an upload could not be kept: {e}");
            Refused(
                StatusCode::SERVICE_UNAVAILABLE,
                "the crash store is unavailable; send the report again later".into(),
            )
        };
        let hash = hex::encode(Sha256::digest(&report.dump));
        let key = keys::dump_key(&hash);
        let size = report.dump.len() as u64;
        if !self
            .objects
            .exists(&key)
            .await
            .map_err(|e| unavailable(e.message))?
        {
            self.objects
                .put(&key, report.dump.clone())
                .await
                .map_err(|e| unavailable(e.message))?;
        }
        let upload = Upload {
            location: self.objects.url().object_url(&key),
            hash: hash.clone(),
            size,
            received_at: ntdbg_store::now(),
            product: report.product(),
            version: report.version(),
            guid: report.guid(),
            annotations: report.annotations,
        };
        self.intake.record(upload).await.map_err(unavailable)?;
        Ok(hash)
    }
}
