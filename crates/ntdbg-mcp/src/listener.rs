//! The HTTP listener: accepts connections under a cap and serves each with hyper, under the
//! [`HttpLimits`].
//!
//! - A connection gets [`HttpLimits::header_timeout`] to send each request's head (hyper's
//!   header-read timeout, which also ends a keep-alive connection left idle that long).
//! - At most [`HttpLimits::max_connections`] connections are open. When one more arrives, the
//!   open connection that has waited longest without a request in progress (a half-sent head,
//!   an idle keep-alive) is closed to make room, so any number of clients that open connections
//!   and never finish a request cannot lock others out; only when every open connection is in
//!   the middle of a request is the newcomer answered `503` and closed.
//! - The body's own timeout is [`crate::http`]'s, where the body is read.

use axum::body::Body;
use axum::response::Response;
use http_body_util::BodyExt;
use hyper_util::rt::{TokioIo, TokioTimer};
use std::collections::BTreeMap;
use std::convert::Infallible;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

/// How long connections get to finish their requests once the server is stopping.
const DRAIN: Duration = Duration::from_secs(5);

/// The HTTP transport's limits (`ntdbg mcp --http-max-connections`, `--http-header-timeout`,
/// `--http-body-timeout`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HttpLimits {
    /// Most connections open at once.
    pub max_connections: usize,
    /// Time a connection gets to send a request's head (and the longest a keep-alive
    /// connection may stay idle).
    pub header_timeout: Duration,
    /// Time a request gets to send its whole body.
    pub body_timeout: Duration,
}

impl Default for HttpLimits {
    /// 256 connections (a quarter of a common descriptor limit of 1,024), 30 s for a head,
    /// 60 s for a body of up to [`crate::MAX_REQUEST_BODY`].
    fn default() -> HttpLimits {
        HttpLimits {
            max_connections: 256,
            header_timeout: Duration::from_secs(30),
            body_timeout: Duration::from_secs(60),
        }
    }
}

/// Serves `router` on `listener` until `stop` resolves; then open connections are asked to
/// finish and given [`DRAIN`] to do so.
pub(crate) async fn serve(
    listener: TcpListener,
    router: axum::Router,
    limits: HttpLimits,
    stop: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let connections = Arc::new(Connections::new(limits.max_connections));
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout);
    let stopping = CancellationToken::new();
    let mut tasks = tokio::task::JoinSet::new();
    tokio::pin!(stop);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of descriptors or a connection reset before it was taken: the
                    // listener itself is fine; wait a moment rather than spin.
                    tracing::warn!("accepting an HTTP connection failed: {e}");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut stop => break,
        };
        while tasks.try_join_next().is_some() {}
        let Some(ticket) = connections.admit() else {
            tokio::spawn(refuse(stream));
            continue;
        };
        let service = tracked(router.clone(), ticket.clone());
        let connection = http.serve_connection(TokioIo::new(stream), service);
        let stopping = stopping.clone();
        tasks.spawn(async move {
            tokio::pin!(connection);
            tokio::select! {
                served = connection.as_mut() => {
                    if let Err(e) = served {
                        tracing::debug!("HTTP connection ended: {e}");
                    }
                }
                () = ticket.evicted() => tracing::debug!("closed an idle HTTP connection to make room"),
                () = stopping.cancelled() => {
                    connection.as_mut().graceful_shutdown();
                    let _ = connection.await;
                }
            }
        });
    }
    stopping.cancel();
    let _ = tokio::time::timeout(DRAIN, async { while tasks.join_next().await.is_some() {} }).await;
    Ok(())
}

/// Answers a connection over the cap `503` and closes it.
async fn refuse(mut stream: TcpStream) {
    tracing::warn!("refused an HTTP connection: every connection is busy with a request");
    let _ = stream
        .write_all(b"HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nRetry-After: 1\r\nContent-Length: 0\r\n\r\n")
        .await;
    let _ = stream.shutdown().await;
}

/// `router` as a hyper service that marks the connection busy from each request's head until
/// its response body has been sent (or dropped).
fn tracked(
    router: axum::Router,
    ticket: Ticket,
) -> impl hyper::service::Service<
    hyper::Request<hyper::body::Incoming>,
    Response = Response,
    Error = Infallible,
    Future = impl Future<Output = Result<Response, Infallible>> + Send,
> + Clone {
    hyper::service::service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
        let busy = ticket.busy();
        let router = router.clone();
        async move {
            let response = router.oneshot(request.map(Body::new)).await?;
            // The closure owns the busy mark, so it ends when the body is done with.
            Ok(response.map(|body| {
                Body::new(body.map_frame(move |frame| {
                    let _held = &busy;
                    frame
                }))
            }))
        }
    })
}

/// The open connections: whether each has a request in progress, and since when it has not.
#[derive(Debug)]
struct Connections {
    max: usize,
    state: Mutex<Table>,
}

#[derive(Debug, Default)]
struct Table {
    /// Counts events, to order connections by when they last became idle.
    clock: u64,
    next_id: u64,
    open: BTreeMap<u64, Entry>,
}

#[derive(Debug)]
struct Entry {
    /// Requests in progress (0 or 1 over HTTP/1.1).
    requests: usize,
    /// When it last had no request in progress, on the table's clock.
    idle_since: u64,
    evict: CancellationToken,
}

impl Connections {
    fn new(max: usize) -> Connections {
        Connections {
            max: max.max(1),
            state: Mutex::default(),
        }
    }

    /// Registers a new connection, first closing the longest-idle one when the cap is
    /// reached; `None` when every open connection has a request in progress.
    fn admit(self: &Arc<Self>) -> Option<Ticket> {
        let mut table = self.table();
        if table.open.len() >= self.max {
            let oldest = table
                .open
                .iter()
                .filter(|(_, e)| e.requests == 0)
                .min_by_key(|(_, e)| e.idle_since)
                .map(|(id, _)| *id)?;
            if let Some(evicted) = table.open.remove(&oldest) {
                evicted.evict.cancel();
            }
        }
        let id = table.next_id;
        table.next_id += 1;
        table.clock += 1;
        let evict = CancellationToken::new();
        let entry = Entry {
            requests: 0,
            idle_since: table.clock,
            evict: evict.clone(),
        };
        table.open.insert(id, entry);
        Some(Ticket(Arc::new(TicketInner {
            id,
            evict,
            connections: self.clone(),
        })))
    }

    fn table(&self) -> MutexGuard<'_, Table> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One admitted connection; dropping the last clone forgets it.
#[derive(Debug, Clone)]
struct Ticket(Arc<TicketInner>);

#[derive(Debug)]
struct TicketInner {
    id: u64,
    evict: CancellationToken,
    connections: Arc<Connections>,
}

impl Ticket {
    /// Resolves when the connection was closed to make room.
    async fn evicted(&self) {
        self.0.evict.cancelled().await;
    }

    /// Marks a request in progress until the returned mark is dropped.
    fn busy(&self) -> Busy {
        if let Some(entry) = self.0.connections.table().open.get_mut(&self.0.id) {
            entry.requests += 1;
        }
        Busy(self.0.clone())
    }
}

impl Drop for TicketInner {
    fn drop(&mut self) {
        self.connections.table().open.remove(&self.id);
    }
}

/// A request in progress on a connection.
#[derive(Debug)]
struct Busy(Arc<TicketInner>);

impl Drop for Busy {
    fn drop(&mut self) {
        let mut table = self.0.connections.table();
        table.clock += 1;
        let now = table.clock;
        if let Some(entry) = table.open.get_mut(&self.0.id) {
            entry.requests = entry.requests.saturating_sub(1);
            if entry.requests == 0 {
                entry.idle_since = now;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_idle_connection_makes_room() {
        let connections = Arc::new(Connections::new(2));
        let first = connections.admit().expect("room");
        let second = connections.admit().expect("room");
        let working = first.busy();
        let third = connections.admit().expect("the idle one makes room");
        assert!(second.0.evict.is_cancelled(), "the idle one went");
        assert!(!first.0.evict.is_cancelled(), "a busy one stays");
        let _fourth_busy = third.busy();
        assert!(
            connections.admit().is_none(),
            "every open connection is busy: refused"
        );
        drop(working);
        assert!(connections.admit().is_some(), "idle again: it makes room");
        assert!(first.0.evict.is_cancelled());
    }

    #[test]
    fn a_closed_connection_frees_its_place() {
        let connections = Arc::new(Connections::new(1));
        let only = connections.admit().expect("room");
        let _busy = only.busy();
        assert!(connections.admit().is_none());
        drop(_busy);
        drop(only);
        let next = connections.admit().expect("room again");
        assert!(!next.0.evict.is_cancelled());
    }
}
