//! Who may talk to a surface: `ntdbg mcp --http`'s defaults. A loopback address unless
//! `--unsafe-http`, which needs tokens; on loopback, `Host` must be a loopback name (so a web
//! page cannot reach the server through DNS rebinding); secrets compared in constant time.

use axum::http::{header, HeaderMap};
use base64::Engine;
use std::net::SocketAddr;

/// Where a surface listens and how far it is exposed.
#[derive(Clone, Debug)]
pub struct Exposure {
    /// The address.
    pub addr: SocketAddr,
    /// A non-loopback address is allowed (tokens are then required).
    pub unsafe_http: bool,
}

impl Exposure {
    /// Refuses a non-loopback address without `unsafe_http`, and `unsafe_http` without
    /// tokens (`has_tokens`; `what` names them in the message).
    pub fn validate(&self, has_tokens: bool, what: &str) -> Result<(), String> {
        if self.unsafe_http && !has_tokens {
            return Err(format!("--unsafe-http requires {what}"));
        }
        if !self.addr.ip().is_loopback() && !self.unsafe_http {
            return Err(format!(
                "refusing to listen on {}: it is not a loopback address (use 127.0.0.1 or [::1], or --unsafe-http with {what})",
                self.addr
            ));
        }
        Ok(())
    }

    /// Whether `Host` may be anything: only when exposed on purpose.
    pub fn any_host(&self) -> bool {
        self.unsafe_http
    }
}

/// Whether the request's `Host` names this machine's loopback (`localhost`, `127.0.0.1`,
/// `[::1]`, any port). A request without `Host` (HTTP/1.0) passes: browsers always send one.
pub fn loopback_host(headers: &HeaderMap) -> bool {
    let Some(host) = headers.get(header::HOST).and_then(|h| h.to_str().ok()) else {
        return true;
    };
    let name = match host.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    name.eq_ignore_ascii_case("localhost")
        || name
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// The secret a request carries: `Authorization: Bearer TOKEN`, the password of
/// `Authorization: Basic` (what a browser's login prompt sends), or `token=` in the query.
pub fn presented_token(headers: &HeaderMap, query: Option<&str>) -> Option<String> {
    if let Some(auth) = headers
        .get(header::AUTHORIZATION)
        .and_then(|h| h.to_str().ok())
    {
        if let Some(token) = auth.strip_prefix("Bearer ") {
            return Some(token.trim().to_string());
        }
        if let Some(basic) = auth.strip_prefix("Basic ") {
            let decoded = base64::engine::general_purpose::STANDARD
                .decode(basic.trim())
                .ok()?;
            let text = String::from_utf8(decoded).ok()?;
            return text
                .split_once(':')
                .map(|(_, password)| password.to_string());
        }
    }
    query.and_then(|q| {
        form_pairs(q)
            .into_iter()
            .find(|(k, _)| k == "token")
            .map(|(_, v)| v)
    })
}

/// `a == b` without stopping at the first difference, so timing does not reveal a secret.
pub fn same_secret(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut diff = a.len() ^ b.len();
    for (i, x) in b.iter().enumerate() {
        diff |= usize::from(a.get(i).copied().unwrap_or(0) ^ x);
    }
    diff == 0
}

/// The `name=value` pairs of a query string or form body, percent-decoded.
pub fn form_pairs(query: &str) -> Vec<(String, String)> {
    form_urlencoded::parse(query.as_bytes())
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    fn headers(pairs: &[(header::HeaderName, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn loopback_only_unless_exposed_with_tokens() {
        let e = |addr: &str, unsafe_http| Exposure {
            addr: addr.parse().unwrap(),
            unsafe_http,
        };
        assert!(e("127.0.0.1:0", false).validate(false, "x").is_ok());
        assert!(e("[::1]:0", false).validate(false, "x").is_ok());
        assert!(e("0.0.0.0:80", false).validate(true, "x").is_err());
        assert!(e("0.0.0.0:80", true).validate(false, "x").is_err());
        assert!(e("0.0.0.0:80", true).validate(true, "x").is_ok());
    }

    #[test]
    fn hosts() {
        for ok in ["localhost:8080", "127.0.0.1", "[::1]:9", "LOCALHOST"] {
            assert!(loopback_host(&headers(&[(header::HOST, ok)])), "{ok}");
        }
        for bad in ["evil.example:8080", "10.0.0.1", "[2001:db8::1]:80"] {
            assert!(!loopback_host(&headers(&[(header::HOST, bad)])), "{bad}");
        }
    }

    #[test]
    fn tokens_from_headers_or_query() {
        let bearer = headers(&[(header::AUTHORIZATION, "Bearer s3cret")]);
        assert_eq!(presented_token(&bearer, None).as_deref(), Some("s3cret"));
        // "user:s3cret"
        let basic = headers(&[(header::AUTHORIZATION, "Basic dXNlcjpzM2NyZXQ=")]);
        assert_eq!(presented_token(&basic, None).as_deref(), Some("s3cret"));
        let none = HeaderMap::new();
        assert_eq!(
            presented_token(&none, Some("prod=a&token=t%2B1")).as_deref(),
            Some("t+1")
        );
        assert_eq!(presented_token(&none, Some("prod=a")), None);
        assert!(same_secret("abc", "abc"));
        assert!(!same_secret("abd", "abc"));
        assert!(!same_secret("ab", "abc"));
    }

    #[test]
    fn form_decoding() {
        assert_eq!(
            form_pairs("a=1+2&b=%41%zz&c"),
            [
                ("a".to_string(), "1 2".to_string()),
                ("b".to_string(), "A%zz".to_string()),
                ("c".to_string(), String::new())
            ]
        );
    }
}
