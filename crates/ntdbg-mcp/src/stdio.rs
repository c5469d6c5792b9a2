//! The stdio transport: newline-delimited JSON-RPC on stdin/stdout, and nothing else on stdout.
//!
//! A filter sits in front of rmcp. Each complete input line goes through
//! [`admission`](crate::admission): a malformed message is answered there (with its `id` where
//! it can be read) and dropped; a well-formed one goes on to rmcp. Lines over [`MAX_LINE`] bytes
//! are discarded with an error too. One writer task owns the output, so replies never
//! interleave.
//!
//! Backpressure: the filter stops reading stdin while [`MAX_IN_FLIGHT`] requests are waiting for
//! their reply to be queued for stdout, and the queue holds at most [`OUTPUT_QUEUE`] lines; a
//! client that sends without reading its replies finds its writes blocked once the pipe fills,
//! and the server's memory stays bounded however many requests it pipelines. rmcp itself takes
//! every request it is handed (it spawns a task per request and per reply), so the bound has to
//! be kept here. A `notifications/cancelled` frees its request's place at once (rmcp sends no
//! reply to a cancelled request).

use crate::admission::{self, Admission, Inbound};
use crate::server::NtdbgServer;
use rmcp::ServiceExt;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::{mpsc, OwnedSemaphorePermit, Semaphore};

/// Longest accepted input line (a JSON-RPC message), in bytes.
pub const MAX_LINE: usize = 16 << 20;

/// Most requests handed to rmcp whose replies have not yet been queued for output.
pub const MAX_IN_FLIGHT: usize = 64;

/// Most output lines waiting for stdout.
pub const OUTPUT_QUEUE: usize = 64;

/// Serves the server over this process's stdin and stdout until stdin closes.
///
/// # Errors
/// I/O errors on stdout.
pub async fn serve_stdio(server: NtdbgServer) -> std::io::Result<()> {
    serve_io(server, tokio::io::stdin(), tokio::io::stdout()).await
}

/// Serves the server over any reader and writer of newline-delimited JSON-RPC (stdio, a pipe,
/// or `tokio::io::duplex` in tests) until the reader ends.
///
/// # Errors
/// I/O errors on the writer.
pub async fn serve_io<R, W>(server: NtdbgServer, reader: R, writer: W) -> std::io::Result<()>
where
    R: AsyncRead + Unpin + Send + 'static,
    W: AsyncWrite + Unpin + Send + 'static,
{
    let (ours, theirs) = tokio::io::duplex(1 << 16);
    let (from_rmcp, to_rmcp) = tokio::io::split(ours);
    let (out_tx, out_rx) = mpsc::channel::<Vec<u8>>(OUTPUT_QUEUE);
    let in_flight = InFlight::default();

    let writer_task = tokio::spawn(write_lines(writer, out_rx));
    let forward_task = tokio::spawn(forward_replies(
        from_rmcp,
        out_tx.clone(),
        in_flight.clone(),
    ));
    let filter_task = tokio::spawn(filter_requests(reader, to_rmcp, out_tx, in_flight));

    match server.serve(theirs).await {
        Ok(running) => {
            let _ = running.waiting().await;
        }
        // The client left (or never initialized): nothing to serve.
        Err(e) => tracing::debug!("stdio session ended before it started: {e}"),
    }
    filter_task.abort();
    let _ = forward_task.await;
    writer_task.await.unwrap_or(Ok(()))
}

/// Reads the client's lines, answers the malformed ones and hands the rest to rmcp, waiting
/// for a place among the requests in flight before each request.
async fn filter_requests<R, W>(
    reader: R,
    mut to_rmcp: W,
    out: mpsc::Sender<Vec<u8>>,
    in_flight: InFlight,
) where
    R: AsyncRead + Unpin,
    W: AsyncWrite + Unpin,
{
    let mut input = BufReader::new(reader);
    let mut line = Vec::new();
    loop {
        line.clear();
        let inbound = match read_line_bounded(&mut input, &mut line, MAX_LINE).await {
            Ok(LineRead::Eof) | Err(_) => break,
            Ok(LineRead::TooLong) => Admission::Reject(admission::error_reply(
                admission::INVALID_REQUEST,
                "Invalid Request: message too large",
                None,
            )),
            Ok(LineRead::Line) => admission::admit(&line),
        };
        match inbound {
            Admission::Blank => {}
            Admission::Reject(mut reply) => {
                tracing::debug!("answering a malformed input line with an error");
                reply.push(b'\n');
                if out.send(reply).await.is_err() {
                    break;
                }
            }
            Admission::Pass(kind) => {
                match kind {
                    Inbound::Request(id) => {
                        if let Err(reply) = in_flight.enter(id).await {
                            if out.send(reply).await.is_err() {
                                break;
                            }
                            continue;
                        }
                    }
                    Inbound::Cancel(Some(id)) => in_flight.leave(&id),
                    Inbound::Cancel(None) | Inbound::Notification | Inbound::Response => {}
                }
                if !line.ends_with(b"\n") {
                    line.push(b'\n');
                }
                if to_rmcp.write_all(&line).await.is_err() {
                    break;
                }
            }
        }
    }
    let _ = to_rmcp.shutdown().await;
}

/// Queues rmcp's output lines for stdout; a reply frees its request's place once queued.
async fn forward_replies<R: AsyncRead + Unpin>(
    from_rmcp: R,
    out: mpsc::Sender<Vec<u8>>,
    in_flight: InFlight,
) {
    let mut lines = BufReader::new(from_rmcp);
    loop {
        let mut line = Vec::new();
        match lines.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {
                // The place is freed before the reply is queued, so a client that reads the
                // reply and reuses the id at once finds it free; the output queue's own bound
                // holds while the client does not read.
                if let Some(id) = reply_id(&line) {
                    in_flight.leave(&id);
                }
                if out.send(line).await.is_err() {
                    break;
                }
            }
        }
    }
}

/// The id of a reply (a result or an error) rmcp wrote, as JSON text; `None` for its own
/// requests and notifications.
fn reply_id(line: &[u8]) -> Option<String> {
    #[derive(serde::Deserialize)]
    struct Outgoing {
        id: Option<serde_json::Value>,
        method: Option<serde::de::IgnoredAny>,
    }
    let out: Outgoing = serde_json::from_slice(line).ok()?;
    match (out.id, out.method) {
        (Some(id), None) if !id.is_null() => Some(id.to_string()),
        _ => None,
    }
}

/// The requests handed to rmcp and not yet answered, each holding one of [`MAX_IN_FLIGHT`]
/// places.
#[derive(Clone)]
struct InFlight {
    places: Arc<Semaphore>,
    held: Arc<Mutex<HashMap<String, OwnedSemaphorePermit>>>,
}

impl Default for InFlight {
    fn default() -> InFlight {
        InFlight {
            places: Arc::new(Semaphore::new(MAX_IN_FLIGHT)),
            held: Arc::default(),
        }
    }
}

impl InFlight {
    /// Waits for a place for the request `id` (JSON text). An id already in flight is refused
    /// with the error line to send: MCP forbids reusing an id, and rmcp would answer only one
    /// of the two.
    async fn enter(&self, id: String) -> Result<(), Vec<u8>> {
        if self.held().contains_key(&id) {
            let mut reply = admission::error_reply(
                admission::INVALID_REQUEST,
                &format!("Invalid Request: id {id} belongs to a request still in progress"),
                serde_json::from_str(&id).ok(),
            );
            reply.push(b'\n');
            return Err(reply);
        }
        if let Ok(permit) = self.places.clone().acquire_owned().await {
            self.held().insert(id, permit);
        }
        Ok(())
    }

    /// Frees the place of the request `id` (answered or cancelled); an id holding none is
    /// ignored.
    fn leave(&self, id: &str) {
        self.held().remove(id);
    }

    fn held(&self) -> std::sync::MutexGuard<'_, HashMap<String, OwnedSemaphorePermit>> {
        self.held.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

async fn write_lines<W: AsyncWrite + Unpin>(
    mut writer: W,
    mut lines: mpsc::Receiver<Vec<u8>>,
) -> std::io::Result<()> {
    while let Some(line) = lines.recv().await {
        writer.write_all(&line).await?;
        writer.flush().await?;
    }
    Ok(())
}

enum LineRead {
    Line,
    TooLong,
    Eof,
}

/// Reads one line (with its newline) into `buf`, or discards it whole when it is longer than
/// `max`.
async fn read_line_bounded<R: AsyncBufReadExt + Unpin>(
    reader: &mut R,
    buf: &mut Vec<u8>,
    max: usize,
) -> std::io::Result<LineRead> {
    let mut too_long = false;
    loop {
        let available = reader.fill_buf().await?;
        if available.is_empty() {
            return Ok(if too_long {
                LineRead::TooLong
            } else if buf.is_empty() {
                LineRead::Eof
            } else {
                LineRead::Line
            });
        }
        let (chunk, done) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (&available[..=i], true),
            None => (available, false),
        };
        let used = chunk.len();
        if !too_long {
            if buf.len() + chunk.len() > max {
                too_long = true;
                buf.clear();
            } else {
                buf.extend_from_slice(chunk);
            }
        }
        reader.consume(used);
        if done {
            return Ok(if too_long {
                LineRead::TooLong
            } else {
                LineRead::Line
            });
        }
    }
}

/// Resolves on ctrl-c; on Unix also on SIGTERM, on Windows also on Ctrl-Break and on the
/// console being closed (the console's "X" or the user logging off), so the server detaches its
/// live targets before the process ends.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    tokio::select! {
        () = ctrl_c => {}
        () = platform_shutdown_signal() => {}
    }
}

/// SIGTERM; pending forever when it cannot be watched.
#[cfg(unix)]
async fn platform_shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match signal(SignalKind::terminate()) {
        Ok(mut s) => {
            s.recv().await;
        }
        Err(_) => std::future::pending::<()>().await,
    }
}

/// Ctrl-Break or the console closing; pending forever for a signal that cannot be watched
/// (no console, as under a service).
#[cfg(windows)]
async fn platform_shutdown_signal() {
    use tokio::signal::windows::{ctrl_break, ctrl_close};
    let brk = async {
        match ctrl_break() {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    let close = async {
        match ctrl_close() {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        () = brk => {}
        () = close => {}
    }
}

/// No other signal to watch.
#[cfg(not(any(unix, windows)))]
async fn platform_shutdown_signal() {
    std::future::pending::<()>().await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn bounded_lines() {
        let data = b"short\n0123456789abcdef\nlast".to_vec();
        let mut r = BufReader::with_capacity(4, &data[..]);
        let mut buf = Vec::new();
        assert!(matches!(
            read_line_bounded(&mut r, &mut buf, 10).await.unwrap(),
            LineRead::Line
        ));
        assert_eq!(buf, b"short\n");
        buf.clear();
        assert!(matches!(
            read_line_bounded(&mut r, &mut buf, 10).await.unwrap(),
            LineRead::TooLong
        ));
        buf.clear();
        assert!(matches!(
            read_line_bounded(&mut r, &mut buf, 10).await.unwrap(),
            LineRead::Line
        ));
        assert_eq!(buf, b"last");
        buf.clear();
        assert!(matches!(
            read_line_bounded(&mut r, &mut buf, 10).await.unwrap(),
            LineRead::Eof
        ));
    }
}
