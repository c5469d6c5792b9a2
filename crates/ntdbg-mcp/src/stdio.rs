//! The stdio transport: newline-delimited JSON-RPC on stdin/stdout, and nothing else on stdout.
//!
//! rmcp ignores input lines that are not JSON at all (to avoid echo storms between two
//! confused peers); the MCP brief for ntdbg wants garbage answered. So a small filter sits in
//! front of rmcp: each complete line that does not parse as JSON gets a JSON-RPC parse error
//! (`-32700`, `id: null`) and is dropped; every other line goes on to rmcp, which answers
//! well-formed JSON of the wrong shape with `-32600` itself. Lines over
//! [`MAX_LINE`] bytes are discarded with an error too. One writer task owns the output, so
//! replies never interleave.

use crate::server::NtdbgServer;
use rmcp::ServiceExt;
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// Longest accepted input line (a JSON-RPC message), in bytes.
pub const MAX_LINE: usize = 16 << 20;

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
    let (from_rmcp, mut to_rmcp) = tokio::io::split(ours);
    let (out_tx, out_rx) = mpsc::unbounded_channel::<Vec<u8>>();

    let writer_task = tokio::spawn(write_lines(writer, out_rx));
    let forward_tx = out_tx.clone();
    let forward_task = tokio::spawn(async move {
        let mut lines = BufReader::new(from_rmcp);
        loop {
            let mut line = Vec::new();
            match lines.read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    if forward_tx.send(line).is_err() {
                        break;
                    }
                }
            }
        }
    });
    let filter_task = tokio::spawn(async move {
        let mut input = BufReader::new(reader);
        let mut line = Vec::new();
        loop {
            line.clear();
            match read_line_bounded(&mut input, &mut line, MAX_LINE).await {
                Ok(LineRead::Eof) | Err(_) => break,
                Ok(LineRead::TooLong) => {
                    let _ = out_tx.send(error_line(-32600, "Invalid Request: message too large"));
                }
                Ok(LineRead::Line) => match check_line(&line) {
                    Verdict::Skip => {}
                    Verdict::Pass => {
                        if !line.ends_with(b"\n") {
                            line.push(b'\n');
                        }
                        if to_rmcp.write_all(&line).await.is_err() {
                            break;
                        }
                    }
                    Verdict::ParseError(detail) => {
                        tracing::debug!("answering an unparsable input line with a parse error");
                        let _ = out_tx.send(error_line(-32700, &format!("Parse error: {detail}")));
                    }
                },
            }
        }
        let _ = to_rmcp.shutdown().await;
    });

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

async fn write_lines<W: AsyncWrite + Unpin>(
    mut writer: W,
    mut lines: mpsc::UnboundedReceiver<Vec<u8>>,
) -> std::io::Result<()> {
    while let Some(line) = lines.recv().await {
        writer.write_all(&line).await?;
        writer.flush().await?;
    }
    Ok(())
}

/// A JSON-RPC error response with no id, as one output line.
fn error_line(code: i64, message: &str) -> Vec<u8> {
    let value = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": { "code": code, "message": message },
    });
    let mut line = value.to_string().into_bytes();
    line.push(b'\n');
    line
}

enum Verdict {
    Skip,
    Pass,
    ParseError(String),
}

fn check_line(line: &[u8]) -> Verdict {
    let trimmed = line.strip_suffix(b"\n").unwrap_or(line);
    let trimmed = trimmed.strip_suffix(b"\r").unwrap_or(trimmed);
    let trimmed = trimmed.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(trimmed);
    if trimmed.iter().all(u8::is_ascii_whitespace) {
        return Verdict::Skip;
    }
    match serde_json::from_slice::<serde::de::IgnoredAny>(trimmed) {
        Ok(_) => Verdict::Pass,
        Err(e) => Verdict::ParseError(e.to_string()),
    }
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

    #[test]
    fn verdicts() {
        assert!(matches!(check_line(b"  \r\n"), Verdict::Skip));
        assert!(matches!(check_line(b"{\"a\":1}\n"), Verdict::Pass));
        assert!(matches!(
            check_line(b"\xEF\xBB\xBF{\"a\":1}\n"),
            Verdict::Pass
        ));
        assert!(matches!(check_line(b"not json\n"), Verdict::ParseError(_)));
        assert!(matches!(check_line(b"{\"a\":\n"), Verdict::ParseError(_)));
    }
}
