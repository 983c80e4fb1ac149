//! The DNS-rebinding guard: which `Host` a request may name.
//!
//! A page on `http://rebind.evil.example` whose name the attacker re-points at 127.0.0.1 can
//! reach a loopback listener from the victim's browser; only its `Host` header gives it away.
//! So a loopback listener (and any listener given `allowed_hosts`) answers only requests
//! naming a loopback name, the address it listens on, or a configured name; anything else is
//! a `403` before any route runs. A listener on another address without configured names
//! keeps accepting any `Host` (clients reach it by names it cannot know; its client keys
//! guard it). [`allowed_hosts`] is the one list: `toolcall mcp serve --http` hands the same
//! to its MCP transport.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{StatusCode, Uri, header::HOST, uri::Authority};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// The `Host` values accepted by a listener on `local`: the loopback names, the address it
/// listens on, and `extra` (names as `host` for any port, or `host:port`).
pub fn allowed_hosts(local: SocketAddr, extra: &[String]) -> Vec<String> {
    let mut hosts = vec![
        "localhost".to_owned(),
        "127.0.0.1".to_owned(),
        "::1".to_owned(),
    ];
    hosts.push(local.ip().to_string());
    hosts.push(local.to_string());
    hosts.extend(extra.iter().cloned());
    hosts
}

/// A host and, when given, its port, normalised for comparison.
#[derive(Debug, Clone, PartialEq, Eq)]
struct HostPort {
    host: String,
    port: Option<u16>,
}

impl HostPort {
    fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        if text.is_empty() {
            return None;
        }
        let authority = Authority::try_from(text).ok()?;
        Some(Self::new(authority.host(), authority.port_u16()))
    }

    fn new(host: &str, port: Option<u16>) -> Self {
        let host = host.trim_start_matches('[').trim_end_matches(']');
        // `localhost.` is `localhost`.
        let host = host.strip_suffix('.').unwrap_or(host);
        HostPort {
            host: host.to_ascii_lowercase(),
            port,
        }
    }

    /// Whether a request naming `self` is allowed by the entry `allowed`.
    fn matches(&self, allowed: &HostPort) -> bool {
        self.host == allowed.host && allowed.port.is_none_or(|p| self.port == Some(p))
    }
}

/// The guard's list for one listener.
#[derive(Debug, Clone)]
pub struct HostCheck {
    /// `None`: any `Host` is accepted.
    allowed: Option<Vec<HostPort>>,
    /// `Host` texts that `allowed` accepts (each allowed name alone and with its port, or
    /// the listener's), compared byte for byte before any parsing: the parse (an
    /// `Authority` and a lowercased copy) cost about 2.4 k instructions a request, a
    /// fiftieth of the gateway's own work on a small one (session 39). Each was checked
    /// by the parse when the check was built, so this never lets in a name it refuses.
    exact: Vec<String>,
}

impl HostCheck {
    /// The check for a listener on `local` with the configured names `extra`: enforced on a
    /// loopback listener or when names are configured.
    pub fn new(local: SocketAddr, extra: &[String]) -> Self {
        let enforced = local.ip().is_loopback() || !extra.is_empty();
        let mut check = HostCheck {
            allowed: enforced.then(|| {
                allowed_hosts(local, extra)
                    .iter()
                    .filter_map(|h| HostPort::parse(h).or_else(|| Some(HostPort::new(h, None))))
                    .collect()
            }),
            exact: Vec::new(),
        };
        let mut exact: Vec<String> = Vec::new();
        for a in check.allowed.iter().flatten() {
            let name = if a.host.contains(':') {
                format!("[{}]", a.host)
            } else {
                a.host.clone()
            };
            let port = format!("{name}:{}", a.port.unwrap_or(local.port()));
            for text in [name, port] {
                if !exact.contains(&text) && check.allows(Some(&text), &Uri::default()) {
                    exact.push(text);
                }
            }
        }
        check.exact = exact;
        check
    }

    /// Whether a request with this `Host` header (or, without one, this URI's authority, as
    /// HTTP/2 sends it) is allowed.
    pub fn allows(&self, host: Option<&str>, uri: &Uri) -> bool {
        let Some(allowed) = &self.allowed else {
            return true;
        };
        if let Some(h) = host
            && self.exact.iter().any(|e| e == h)
        {
            return true;
        }
        let named = match host {
            Some(h) => HostPort::parse(h),
            None => uri
                .authority()
                .map(|a| HostPort::new(a.host(), a.port_u16())),
        };
        named.is_some_and(|n| allowed.iter().any(|a| n.matches(a)))
    }
}

/// The middleware: a request naming a foreign `Host` gets `403`.
pub async fn check_host(
    State(check): State<Arc<HostCheck>>,
    request: Request,
    next: Next,
) -> Response {
    let host = request.headers().get(HOST).map(|h| h.to_str().ok());
    let allowed = match host {
        // A Host header that is not text names nothing allowed.
        Some(None) => false,
        Some(Some(h)) => check.allows(Some(h), request.uri()),
        None => check.allows(None, request.uri()),
    };
    if allowed {
        return next.run(request).await;
    }
    tracing::warn!(host = ?request.headers().get(HOST), "a request naming a foreign Host (DNS rebinding?) refused");
    (
        StatusCode::FORBIDDEN,
        "the Host header names no host this gateway answers to (allowed_hosts in the config)\n",
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_loopback_listener_answers_only_its_own_names() {
        let local: SocketAddr = "127.0.0.1:8090".parse().unwrap();
        let check = HostCheck::new(local, &[]);
        let uri = Uri::from_static("/v1/models");
        for ok in [
            "localhost",
            "localhost:8090",
            "LOCALHOST.:8090",
            "127.0.0.1:8090",
            "[::1]:8090",
        ] {
            assert!(check.allows(Some(ok), &uri), "{ok}");
        }
        for bad in ["rebind.evil.example", "evil.example:8090", "", "127.0.0.2"] {
            assert!(!check.allows(Some(bad), &uri), "{bad}");
        }
        assert!(!check.allows(None, &uri));
        let h2 = Uri::from_static("http://localhost:8090/v1/models");
        assert!(check.allows(None, &h2));
        // A configured name, with or without its port.
        let named = HostCheck::new(local, &["gw.example:443".into(), "gw.internal".into()]);
        assert!(named.allows(Some("gw.example:443"), &uri));
        assert!(!named.allows(Some("gw.example:80"), &uri));
        assert!(named.allows(Some("gw.internal:1"), &uri));
    }

    #[test]
    fn the_texts_compared_whole_are_the_names_the_parse_allows() {
        let local: SocketAddr = "127.0.0.1:8090".parse().unwrap();
        let uri = Uri::from_static("/");
        for extra in [
            vec![],
            vec!["gw.example:443".to_owned(), "GW.internal".to_owned()],
        ] {
            let check = HostCheck::new(local, &extra);
            assert!(check.exact.contains(&"127.0.0.1:8090".to_owned()));
            assert!(check.exact.contains(&"localhost:8090".to_owned()));
            assert!(check.exact.contains(&"[::1]:8090".to_owned()));
            let parsed_only = HostCheck {
                exact: Vec::new(),
                ..check.clone()
            };
            for text in &check.exact {
                assert!(parsed_only.allows(Some(text), &uri), "{text}");
            }
        }
        let named = HostCheck::new(local, &["gw.example:443".into()]);
        assert!(!named.exact.contains(&"gw.example:8090".to_owned()));
        assert!(!named.allows(Some("gw.example:8090"), &uri));
    }

    #[test]
    fn a_listener_on_every_address_accepts_any_host_unless_names_are_configured() {
        let local: SocketAddr = "0.0.0.0:8090".parse().unwrap();
        let uri = Uri::from_static("/");
        assert!(HostCheck::new(local, &[]).allows(Some("gw.example"), &uri));
        let named = HostCheck::new(local, &["gw.example".into()]);
        assert!(named.allows(Some("gw.example"), &uri));
        assert!(!named.allows(Some("rebind.evil.example"), &uri));
    }
}
