//! A tool carried out by an HTTP endpoint: the call's arguments are POSTed as a JSON body
//! with the configured headers; a 2xx response's JSON body is the result data.
//!
//! A non-2xx status, a body that is not JSON or larger than the limit are `tool_failed`
//! results with the status and the tail of the body. Header values may name environment
//! variables as `${NAME}` (for example `Authorization: Bearer ${SEARCH_API_KEY}`), so secrets
//! stay out of tools files; they are resolved once, when the tool is built.
//!
//! Redirects: only to the same origin (scheme, host and port) as the configured URL, at most
//! [`MAX_REDIRECTS`] of them. A redirect elsewhere is not followed (the 3xx answer is a
//! `tool_failed` result), so neither the arguments nor the configured headers ever reach
//! another host. [`HttpToolClient`] is the only client an [`HttpTool`] accepts, so the rule
//! holds for every HTTP tool.

use std::time::Duration;

use async_trait::async_trait;
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue};
use serde_json::{Value, json};
use toolcall_core::{Backend, Tool, ToolContext, ToolError, ToolOutput, ToolSpec};

use super::{BackendError, tail};

/// Largest response body accepted by default.
pub const DEFAULT_MAX_RESPONSE: usize = 4 * 1024 * 1024;
/// Bytes of a failing response's body kept for the error message.
pub const BODY_TAIL: usize = 2048;

/// Redirects an HTTP tool follows for one call, all within the configured URL's origin.
pub const MAX_REDIRECTS: usize = 5;

/// The HTTP client of HTTP tools (shared by them for connection reuse): follows only
/// same-origin redirects, at most [`MAX_REDIRECTS`].
#[derive(Debug, Clone)]
pub struct HttpToolClient(reqwest::Client);

impl HttpToolClient {
    pub fn new() -> Result<Self, BackendError> {
        reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .user_agent(concat!("toolcall/", env!("CARGO_PKG_VERSION")))
            .redirect(reqwest::redirect::Policy::custom(|attempt| {
                // `previous` starts with the URL the request was sent to.
                let same_origin = attempt
                    .previous()
                    .first()
                    .is_some_and(|first| first.origin() == attempt.url().origin());
                if same_origin && attempt.previous().len() <= MAX_REDIRECTS {
                    attempt.follow()
                } else {
                    attempt.stop()
                }
            }))
            .build()
            .map(HttpToolClient)
            .map_err(|e| BackendError::Client(e.to_string()))
    }

    /// The underlying client, for transports that take a `reqwest::Client` (MCP over HTTP)
    /// and must keep the same redirect policy.
    pub fn reqwest(&self) -> &reqwest::Client {
        &self.0
    }
}

/// The client HTTP tools share ([`HttpToolClient::new`]).
pub fn default_client() -> Result<HttpToolClient, BackendError> {
    HttpToolClient::new()
}

pub struct HttpTool {
    spec: ToolSpec,
    url: reqwest::Url,
    headers: HeaderMap,
    client: reqwest::Client,
    max_response: usize,
}

impl HttpTool {
    /// Builds the tool from a spec whose backend is `http`.
    pub fn new(spec: ToolSpec, client: HttpToolClient) -> Result<Self, BackendError> {
        Self::with_env(spec, client, |name| std::env::var(name).ok())
    }

    /// As [`HttpTool::new`], resolving `${NAME}` in header values with `lookup`.
    pub fn with_env(
        spec: ToolSpec,
        HttpToolClient(client): HttpToolClient,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, BackendError> {
        let Some(Backend::Http { url, headers }) = spec.backend.clone() else {
            return Err(BackendError::config(&spec.name, "backend is not http"));
        };
        let bad = |m: String| BackendError::config(&spec.name, m);
        let url = reqwest::Url::parse(&url).map_err(|e| bad(format!("bad url {url:?}: {e}")))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(bad(format!("url scheme {:?} is not http(s)", url.scheme())));
        }
        let mut map = HeaderMap::new();
        for (k, v) in &headers {
            let name = HeaderName::from_bytes(k.as_bytes())
                .map_err(|e| bad(format!("bad header name {k:?}: {e}")))?;
            let value = expand_env(v, &lookup).map_err(bad)?;
            let mut value = HeaderValue::from_str(&value)
                .map_err(|e| bad(format!("bad value for header {k:?}: {e}")))?;
            value.set_sensitive(true);
            map.insert(name, value);
        }
        Ok(HttpTool {
            spec,
            url,
            headers: map,
            client,
            max_response: DEFAULT_MAX_RESPONSE,
        })
    }

    /// Changes the response size limit.
    pub fn with_max_response(mut self, bytes: usize) -> Self {
        self.max_response = bytes;
        self
    }
}

/// Replaces each `${NAME}` with the variable's value; a missing variable is an error.
fn expand_env(s: &str, lookup: &impl Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(start) = rest.find("${") {
        out.push_str(rest.get(..start).unwrap_or_default());
        let after = rest.get(start + 2..).unwrap_or_default();
        let end = after
            .find('}')
            .ok_or_else(|| format!("unclosed \"${{\" in header value {s:?}"))?;
        let name = after.get(..end).unwrap_or_default();
        let value =
            lookup(name).ok_or_else(|| format!("environment variable {name:?} is not set"))?;
        out.push_str(&value);
        rest = after.get(end + 1..).unwrap_or_default();
    }
    out.push_str(rest);
    Ok(out)
}

#[async_trait]
impl Tool for HttpTool {
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    async fn call(&self, ctx: &ToolContext, arguments: Value) -> Result<ToolOutput, ToolError> {
        let name = &self.spec.name;
        let mut req = self
            .client
            .post(self.url.clone())
            .headers(self.headers.clone())
            .header(CONTENT_TYPE, "application/json")
            .header("x-toolcall-tool", name.as_str())
            .body(arguments.to_string());
        if let Some(id) = &ctx.call_id {
            req = req.header("x-toolcall-call-id", id.as_str());
        }
        let mut resp = req
            .send()
            .await
            .map_err(|e| ToolError::failed(format!("tool {name:?}: request failed: {e}")))?;
        let status = resp.status();
        let too_large = || {
            ToolError::failed(format!(
                "tool {name:?}: response is larger than {} bytes",
                self.max_response
            ))
        };
        if resp
            .content_length()
            .is_some_and(|n| n > self.max_response as u64)
            && status.is_success()
        {
            return Err(too_large());
        }
        let mut body = Vec::new();
        let mut truncated = false;
        loop {
            let chunk = resp.chunk().await.map_err(|e| {
                ToolError::failed(format!("tool {name:?}: reading the response failed: {e}"))
            })?;
            let Some(chunk) = chunk else { break };
            body.extend_from_slice(&chunk);
            if body.len() > self.max_response {
                truncated = true;
                break;
            }
        }
        if status.is_redirection() {
            let to = resp
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .chars()
                .take(300)
                .collect::<String>();
            return Err(ToolError::failed(format!(
                "tool {name:?}: endpoint answered HTTP {status} redirecting to {to:?}, which \
                 was not followed: an HTTP tool follows at most {MAX_REDIRECTS} redirects, \
                 all to the origin of its URL"
            ))
            .with_details(json!({"status": status.as_u16(), "location": to})));
        }
        if !status.is_success() {
            let body_tail = tail(&body, BODY_TAIL);
            return Err(ToolError::failed(format!(
                "tool {name:?}: endpoint answered HTTP {status}: {body_tail}"
            ))
            .with_details(json!({"status": status.as_u16(), "body": body_tail})));
        }
        if truncated {
            return Err(too_large());
        }
        let text = String::from_utf8_lossy(&body);
        if text.trim().is_empty() {
            return Ok(Value::Null.into());
        }
        serde_json::from_str::<Value>(text.trim())
            .map(ToolOutput::from)
            .map_err(|e| {
                ToolError::failed(format!(
                    "tool {name:?}: response is not JSON ({e}): {}",
                    tail(&body, BODY_TAIL)
                ))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // covers X-7 (secrets stay out of tools files)
    #[test]
    fn env_expansion() {
        let env = |n: &str| (n == "KEY").then(|| "s3cret".to_owned());
        assert_eq!(expand_env("Bearer ${KEY}", &env).unwrap(), "Bearer s3cret");
        assert_eq!(expand_env("plain", &env).unwrap(), "plain");
        assert_eq!(expand_env("${KEY}-${KEY}", &env).unwrap(), "s3cret-s3cret");
        assert!(
            expand_env("${MISSING}", &env)
                .unwrap_err()
                .contains("MISSING")
        );
        assert!(expand_env("${KEY", &env).is_err());
    }
}
