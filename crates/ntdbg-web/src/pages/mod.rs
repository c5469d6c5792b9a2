//! The crash-stats page (`ntdbg serve`, or `ntdbg collect --pages`): server-rendered HTML with
//! one inline style sheet and no script, every view a linkable `GET` URL.
//!
//! | URL | shows |
//! |---|---|
//! | `/?days=14&product=P` | top signatures of the period, their daily trend |
//! | `/new?product=P&version=V` | signatures never seen with P older than V (without: first seen in the period) |
//! | `/signature?s=SIG` | a signature's versions, OS builds, modules, stack and latest crashes |
//! | `/crash/ID` | one crash: its cause, inferences with their basis, the report as `ntdbg analyze` prints it |
//!
//! Access follows `ntdbg mcp --http`: on loopback, `Host` must be a loopback name; with a token,
//! every request carries it (`Authorization: Bearer`, or the password of a browser's Basic
//! login prompt).

mod chart;
mod crash;
mod html;
mod overview;
mod signature;

use crate::access::{loopback_host, presented_token, same_secret};
use axum::extract::{Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{Html, IntoResponse, Response};
use ntdbg_store::{DbLocation, StatsFilter, Store, StoreError};
use serde::Deserialize;
use std::sync::{Arc, Mutex};

/// Days shown when the URL names none.
const DEFAULT_DAYS: i64 = 14;

/// What the page serves and who may see it.
#[derive(Debug, Clone)]
pub struct PageOptions {
    /// The crash database.
    pub db: DbLocation,
    /// A token every request must carry.
    pub token: Option<String>,
    /// Any `Host` is accepted (exposed on purpose, with a token).
    pub any_host: bool,
}

/// The database connections the views share.
pub(crate) struct Pages {
    db: DbLocation,
    idle: Mutex<Vec<Store>>,
}

/// A view that could not be shown.
pub(crate) struct PageError(StatusCode, String);

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        let body = html::page("Not available", &format!("<p>{}</p>", html::esc(&self.1)));
        (self.0, Html(body)).into_response()
    }
}

impl From<StoreError> for PageError {
    fn from(e: StoreError) -> PageError {
        let status = if e.transient {
            StatusCode::SERVICE_UNAVAILABLE
        } else {
            StatusCode::INTERNAL_SERVER_ERROR
        };
        PageError(status, e.to_string())
    }
}

impl PageError {
    /// A 404 saying what is missing.
    pub(crate) fn not_found(what: String) -> PageError {
        PageError(StatusCode::NOT_FOUND, what)
    }
}

impl Pages {
    /// Runs `f` on a connection, off the async threads.
    pub(crate) async fn ask<T: Send + 'static>(
        self: &Arc<Self>,
        f: impl FnOnce(&mut Store) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, PageError> {
        let pages = self.clone();
        tokio::task::spawn_blocking(move || {
            let idle = pages.idle.lock().unwrap_or_else(|e| e.into_inner()).pop();
            let mut store = match idle {
                Some(s) => s,
                None => Store::open(&pages.db)?,
            };
            let answer = f(&mut store);
            // A connection that failed may be broken: only good ones go back.
            if answer.is_ok() {
                pages
                    .idle
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(store);
            }
            answer
        })
        .await
        .map_err(|e| PageError(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?
        .map_err(PageError::from)
    }
}

/// The period and product of a view's URL.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct Period {
    /// Days back from today.
    pub days: Option<i64>,
    /// One product, or every dump.
    pub product: Option<String>,
}

impl Period {
    /// The filter it names, ending now.
    pub(crate) fn filter(&self) -> StatsFilter {
        let product = self.product.clone().filter(|p| !p.is_empty());
        StatsFilter::last_days(
            self.days.unwrap_or(DEFAULT_DAYS),
            ntdbg_store::now(),
            product,
        )
    }

    /// `days=…&product=…` for links that keep the filter.
    pub(crate) fn query(&self) -> String {
        let days = self.days.map(|d| d.to_string());
        html::query(&[
            ("days", days.as_deref()),
            ("product", self.product.as_deref()),
        ])
    }
}

/// The page's routes, behind the access checks.
pub fn router(options: PageOptions) -> axum::Router {
    let pages = Arc::new(Pages {
        db: options.db.clone(),
        idle: Mutex::new(Vec::new()),
    });
    axum::Router::new()
        .route("/", axum::routing::get(overview::top))
        .route("/new", axum::routing::get(overview::new))
        .route("/signature", axum::routing::get(signature::show))
        .route("/crash/{id}", axum::routing::get(crash::show))
        .with_state(pages)
        .layer(axum::middleware::from_fn_with_state(
            Arc::new(options),
            guard,
        ))
}

/// Refuses foreign `Host`s and requests without the token.
async fn guard(State(options): State<Arc<PageOptions>>, request: Request, next: Next) -> Response {
    if !options.any_host && !loopback_host(request.headers()) {
        return PageError(
            StatusCode::FORBIDDEN,
            "the Host header must name this machine's loopback address".into(),
        )
        .into_response();
    }
    if let Some(token) = &options.token {
        let given = presented_token(request.headers(), request.uri().query());
        if !given.is_some_and(|g| same_secret(&g, token)) {
            return (
                StatusCode::UNAUTHORIZED,
                [(
                    header::WWW_AUTHENTICATE,
                    "Basic realm=\"ntdbg crash stats\"",
                )],
                "this page needs its token: log in with any user name and the token as password\n",
            )
                .into_response();
        }
    }
    next.run(request).await
}

/// Runs the page alone (`ntdbg serve`) on `listener` until `shutdown`.
pub async fn run_pages(
    listener: tokio::net::TcpListener,
    options: PageOptions,
    exposure: &crate::access::Exposure,
    limits: &crate::listener::Limits,
    shutdown: impl std::future::Future<Output = ()>,
) -> Result<(), String> {
    exposure.validate(options.token.is_some(), "--token-env VAR")?;
    if let DbLocation::Sqlite(path) = &options.db {
        if !path.is_file() {
            return Err(format!(
                "no crash database at {}: `ntdbg collect` or `ntdbg ingest` fills one (--db FILE)",
                path.display()
            ));
        }
    }
    // Fail now, not at the first visit, when the database cannot be opened (on a blocking
    // thread: the PostgreSQL client blocks on a runtime of its own).
    let db = options.db.clone();
    tokio::task::spawn_blocking(move || Store::open(&db).map(drop))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())?;
    crate::listener::serve(listener, router(options), limits, shutdown)
        .await
        .map_err(|e| e.to_string())
}
