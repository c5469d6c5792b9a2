//! The private loopback link between ntdbg's GDB client and the stub thread.
//!
//! The stub thread opens the debuggee first (so a failure is reported before any connection),
//! then listens on `127.0.0.1:0`, and accepts exactly the connection this side made: the
//! accepted peer address must equal the client socket's local address, so another local
//! program that races to the port is turned away.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::backend::Backend;
use crate::server::Server;

/// How often a non-blocking accept looks for the connection.
const ACCEPT_POLL: Duration = Duration::from_millis(10);

/// Starts a stub thread: it runs `open` (which attaches or starts the debuggee and waits for
/// its first stop), then serves the GDB remote protocol to the connection made here. Returns
/// the connected client stream; every wait is bounded by `timeout` (plus `open`'s own).
pub(crate) fn serve_on_loopback<B, F>(open: F, timeout: Duration) -> Result<TcpStream, String>
where
    B: Backend,
    F: FnOnce() -> Result<B, String> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0")
        .map_err(|e| format!("cannot listen on the loopback interface: {e}"))?;
    let addr = listener
        .local_addr()
        .map_err(|e| format!("cannot read the loopback address: {e}"))?;
    let (opened_tx, opened_rx) = mpsc::channel::<Result<(), String>>();
    let (client_tx, client_rx) = mpsc::channel::<SocketAddr>();
    std::thread::Builder::new()
        .name("ntdbg-win32-stub".into())
        .spawn(move || {
            let backend = match open() {
                Ok(b) => b,
                Err(e) => {
                    let _ = opened_tx.send(Err(e));
                    return;
                }
            };
            if opened_tx.send(Ok(())).is_err() {
                // Nobody waits any more: let the process go on.
                let mut backend = backend;
                let _ = backend.detach(false);
                return;
            }
            match accept_client(&listener, &client_rx, timeout) {
                Some(stream) => Server::new(backend).serve(stream),
                None => {
                    let mut backend = backend;
                    let _ = backend.detach(false);
                }
            }
        })
        .map_err(|e| format!("cannot start the debugger thread: {e}"))?;
    // `open` has its own bound (the first stop); this one only guards against a thread that
    // never reports.
    match opened_rx.recv_timeout(timeout + timeout + Duration::from_secs(5)) {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(e),
        Err(_) => return Err("the debugger thread did not report within the timeout".into()),
    }
    let stream = TcpStream::connect_timeout(&addr, timeout)
        .map_err(|e| format!("cannot connect to the debugger thread: {e}"))?;
    let local = stream
        .local_addr()
        .map_err(|e| format!("cannot read the client address: {e}"))?;
    client_tx
        .send(local)
        .map_err(|_| "the debugger thread ended before the connection".to_string())?;
    Ok(stream)
}

/// Accepts the connection whose peer is the address sent on `client`; other connections are
/// closed. `None` after `timeout`.
fn accept_client(
    listener: &TcpListener,
    client: &mpsc::Receiver<SocketAddr>,
    timeout: Duration,
) -> Option<TcpStream> {
    let expected = client.recv_timeout(timeout).ok()?;
    listener.set_nonblocking(true).ok()?;
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        match listener.accept() {
            Ok((stream, peer)) if peer == expected => {
                stream.set_nonblocking(false).ok()?;
                return Some(stream);
            }
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => std::thread::sleep(ACCEPT_POLL),
            Err(_) => return None,
        }
    }
    None
}
