//! Who a tool call comes from, so that sessions and outputs belong to the client that opened
//! them (issue 35, item 4).
//!
//! A client is known by the strongest identity its transport gives:
//!
//! - stdio: the one client of the process;
//! - HTTP on a server that requires a bearer token: the token holder (one token, one principal:
//!   every holder of it sees the same sessions, over any MCP session or none, so an agent whose
//!   HTTP session dropped finds its sessions again);
//! - HTTP without a token, with an MCP session (2025-11-25): its `Mcp-Session-Id`;
//! - stateless HTTP (2026-07-28) without a token: nothing identifies the client. Such a call is
//!   [`ClientId::Anonymous`]: what it opens is reachable by its id alone (96 random bits for a
//!   session, 64 for an output), never listed, never handed out again by `open_dump` of the same
//!   file; the ids are capabilities, and the README says to use a token to group them.
//!
//! Sessions the server opened itself (the start-up target of `--dump` or `--attach`) belong to
//! [`ClientId::Server`] and are shared by every client. A session of another client answers
//! exactly as an id that was never issued.
//!
//! The identity is set once per `tools/call` ([`ClientId::scope`], in the server's `call_tool`)
//! and read where a tool looks a session or an output up ([`ClientId::current`]); work outside
//! a call (the idle sweeper, shutdown, start-up) is the server's own.

use rmcp::service::RequestContext;
use rmcp::RoleServer;
use std::future::Future;
use std::sync::Arc;

/// Who a tool call comes from; see the module docs.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ClientId {
    /// The server itself: start-up targets, the idle sweeper, shutdown. Sees every session;
    /// what it opens every client may use.
    Server,
    /// The client of a stdio server.
    Stdio,
    /// An MCP session of streamable HTTP on a server without a token, by its `Mcp-Session-Id`.
    HttpSession(Arc<str>),
    /// An HTTP request carrying the server's bearer token.
    TokenHolder,
    /// A stateless HTTP request on a server without a token: no identity.
    Anonymous,
}

tokio::task_local! {
    static CURRENT: ClientId;
}

/// Marks an HTTP request whose bearer token the server checked (set by the token layer).
#[derive(Debug, Clone, Copy)]
pub struct TokenChecked;

impl ClientId {
    /// The client of the request `context` belongs to.
    pub fn of(context: &RequestContext<RoleServer>) -> ClientId {
        let Some(parts) = context.extensions.get::<axum::http::request::Parts>() else {
            return ClientId::Stdio;
        };
        if parts.extensions.get::<TokenChecked>().is_some() {
            return ClientId::TokenHolder;
        }
        match parts
            .headers
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
        {
            Some(session) => ClientId::HttpSession(Arc::from(session)),
            None => ClientId::Anonymous,
        }
    }

    /// Runs `work` as a call of this client.
    pub async fn scope<F: Future>(self, work: F) -> F::Output {
        CURRENT.scope(self, work).await
    }

    /// The client of the tool call running now; [`ClientId::Server`] outside one.
    pub fn current() -> ClientId {
        CURRENT
            .try_with(ClientId::clone)
            .unwrap_or(ClientId::Server)
    }

    /// Whether this client may use what `owner` opened (knowing its id).
    pub fn may_use(&self, owner: &ClientId) -> bool {
        matches!(self, ClientId::Server) || matches!(owner, ClientId::Server) || self == owner
    }

    /// Whether this client sees what `owner` opened in listings (and in `open_dump`'s reuse
    /// of an open file): what an anonymous client opened is listed to none but the server.
    pub fn lists(&self, owner: &ClientId) -> bool {
        self.may_use(owner) && !(matches!(owner, ClientId::Anonymous) && self != &ClientId::Server)
    }
}

/// A fresh unguessable id: `prefix`, then `bytes` random bytes in hex.
///
/// # Panics
/// When the operating system's random source fails (it does not on supported systems; an id
/// that could be guessed is worse than no id).
pub fn random_id(prefix: &str, bytes: usize) -> String {
    let mut random = vec![0u8; bytes];
    getrandom::fill(&mut random).expect("the operating system's random source works");
    let mut id = String::with_capacity(prefix.len() + 2 * bytes);
    id.push_str(prefix);
    for b in random {
        id.push_str(&format!("{b:02x}"));
    }
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn who_may_use_and_list_what() {
        let a = ClientId::HttpSession(Arc::from("a"));
        let b = ClientId::HttpSession(Arc::from("b"));
        assert!(a.may_use(&a) && a.lists(&a));
        assert!(!a.may_use(&b) && !a.lists(&b));
        assert!(a.may_use(&ClientId::Server) && a.lists(&ClientId::Server));
        assert!(ClientId::Server.may_use(&a) && ClientId::Server.lists(&ClientId::Anonymous));
        let anonymous = ClientId::Anonymous;
        assert!(anonymous.may_use(&anonymous), "by knowing the id");
        assert!(!anonymous.lists(&anonymous), "never listed");
        assert!(!a.may_use(&anonymous) && !ClientId::TokenHolder.may_use(&anonymous));
        assert!(!ClientId::Stdio.may_use(&ClientId::TokenHolder));
    }

    #[tokio::test]
    async fn the_current_client_is_the_scope_s() {
        assert_eq!(ClientId::current(), ClientId::Server);
        let seen = ClientId::Stdio.scope(async { ClientId::current() }).await;
        assert_eq!(seen, ClientId::Stdio);
    }

    #[test]
    fn random_ids_differ_and_have_their_length() {
        let (x, y) = (random_id("s-", 12), random_id("s-", 12));
        assert_ne!(x, y);
        assert_eq!(x.len(), 2 + 24);
        assert!(x[2..].bytes().all(|b| b.is_ascii_hexdigit()));
    }
}
