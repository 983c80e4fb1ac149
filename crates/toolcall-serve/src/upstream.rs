//! Upstreams by model name: the default upstream, and `[[models]]` routes matched by glob,
//! each with its own key and family. Requests go out through `toolcall-run`'s transport
//! (timeouts, bounded retries honouring `Retry-After`), the same code `toolcall run` uses.

use std::borrow::Cow;
use std::sync::Arc;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use toolcall_run::client::{Url, endpoint};
use toolcall_run::{ClientError, Transport};
use toolcall_wire::Api;

use crate::config::{Config, ConfigError};
use crate::{ApiError, AppState, auth};

/// Where a model's requests go.
#[derive(Debug, Clone)]
pub struct Route {
    pub base_url: String,
    /// The upstream's own key, read from the environment; never the client's key.
    pub api_key: Option<String>,
    /// The family (or `auto`) configured for these models; `None` = by model name.
    pub format: Option<String>,
    /// Tools go into the prompt (see [`crate::emulate`]).
    pub emulate_tools: bool,
    /// Calls written inside reasoning; `None` = the family's default.
    pub reasoning_calls: Option<toolcall_parse::ReasoningCalls>,
    /// The decoding constraint sent with each request (see [`crate::constrain`]).
    pub constrain: crate::constrain::Constrain,
    /// Hosted tools in a request (see [`crate::tool_kinds`]).
    pub hosted_tools: crate::config::HostedTools,
    pub transport: Transport,
    /// The dialect this upstream speaks.
    pub api: Api,
    /// `base_url` as logged, credentials in it replaced ([`crate::error::without_userinfo`]),
    /// written once rather than per request.
    shown_url: String,
    /// A turn's upstream URL, whole then streamed, parsed once at load where the dialect's
    /// path does not name the model (all but Gemini's): parsing it per request cost about
    /// 7 k instructions. `None`: parsed per request ([`Route::turn_url`]).
    turn_urls: Option<Arc<[Url; 2]>>,
}

impl Route {
    /// The URL of `path` (`/chat/completions`, `/models`) on this upstream.
    pub fn url(&self, path: &str) -> String {
        endpoint(&self.base_url, path)
    }

    /// Where a turn's request for `model` goes, in this upstream's dialect: the URL parsed
    /// at load, or (a path naming the model) parsed now.
    pub fn turn_url(&self, model: &str, stream: bool) -> Result<Cow<'_, Url>, ClientError> {
        if let Some(urls) = &self.turn_urls {
            return Ok(Cow::Borrowed(&urls[usize::from(stream)]));
        }
        parse_turn_url(&self.base_url, self.api, model, stream)
            .map(Cow::Owned)
            .map_err(|(url, message)| ClientError::Transport { url, message })
    }

    /// The base URL as the logs show it: without credentials.
    pub fn shown_url(&self) -> &str {
        &self.shown_url
    }

    /// The upstream's key as its dialect sends it.
    pub fn auth_headers(&self) -> Vec<(&'static str, String)> {
        self.api_key
            .as_deref()
            .map(|k| self.api.dialect().auth_headers(k))
            .unwrap_or_default()
    }
}

/// A turn's endpoint for `model` on `base` in `api`'s dialect, parsed: an http or https URL
/// (reqwest sends nothing else). Else the URL as written and why it is not one.
fn parse_turn_url(
    base: &str,
    api: Api,
    model: &str,
    stream: bool,
) -> Result<Url, (String, String)> {
    let text = endpoint(base, &api.dialect().path(model, stream));
    match Url::parse(&text) {
        Ok(url) if matches!(url.scheme(), "http" | "https") => Ok(url),
        Ok(url) => {
            let message = format!(
                "invalid URL: the scheme {:?} is not http or https",
                url.scheme()
            );
            Err((text, message))
        }
        Err(e) => Err((text, format!("invalid URL: {e}"))),
    }
}

/// The route's parsed turn URLs ([`Route::turn_urls`]), or an invalid upstream URL as a
/// config error (for a dialect whose path names the model, checked with a stand-in name).
fn turn_urls(base: &str, api: Api) -> Result<Option<Arc<[Url; 2]>>, ConfigError> {
    let parse = |model: &str, stream: bool| {
        parse_turn_url(base, api, model, stream).map_err(|(_, message)| {
            ConfigError::Upstream(crate::error::without_userinfo(base), message)
        })
    };
    let urls = [parse("model", false)?, parse("model", true)?];
    let d = api.dialect();
    let by_model = [false, true]
        .iter()
        .any(|&stream| d.path("a", stream) != d.path("b", stream));
    Ok((!by_model).then(|| Arc::new(urls)))
}

/// Every configured upstream.
#[derive(Debug)]
pub struct Upstreams {
    default: Route,
    routes: Vec<(String, Route)>,
    pub client_keys: Vec<String>,
}

fn key_from_env(var: Option<&String>) -> Result<Option<String>, ConfigError> {
    match var {
        None => Ok(None),
        Some(v) => std::env::var(v)
            .map(Some)
            .map_err(|_| ConfigError::MissingKey(v.clone())),
    }
}

impl Upstreams {
    pub fn new(config: &Config) -> Result<Self, ConfigError> {
        config.check()?;
        let transport = Transport::new(config.timeouts(), config.retry_policy())
            .map_err(|e| ConfigError::Client(e.to_string()))?;
        let default_key = key_from_env(config.upstream_api_key_env.as_ref())?;
        let default = Route {
            turn_urls: turn_urls(&config.upstream, config.upstream_api)?,
            api: config.upstream_api,
            base_url: config.upstream.clone(),
            shown_url: crate::error::without_userinfo(&config.upstream),
            api_key: default_key.clone(),
            format: config.format.clone(),
            emulate_tools: config.emulate_tools,
            reasoning_calls: config.reasoning_calls,
            constrain: config.constrain,
            hosted_tools: config.hosted_tools,
            transport: transport.clone(),
        };
        let mut routes = Vec::new();
        for m in &config.models {
            let api_key = match &m.upstream_api_key_env {
                Some(_) => key_from_env(m.upstream_api_key_env.as_ref())?,
                // Another host never gets the default upstream's key.
                None if m.upstream.is_some() => None,
                None => default_key.clone(),
            };
            let base_url = m
                .upstream
                .clone()
                .unwrap_or_else(|| config.upstream.clone());
            let api = m.upstream_api.unwrap_or(config.upstream_api);
            routes.push((
                m.pattern.to_ascii_lowercase(),
                Route {
                    turn_urls: turn_urls(&base_url, api)?,
                    api,
                    shown_url: crate::error::without_userinfo(&base_url),
                    base_url,
                    api_key,
                    format: m.format.clone().or_else(|| config.format.clone()),
                    emulate_tools: m.emulate_tools.unwrap_or(config.emulate_tools),
                    reasoning_calls: m.reasoning_calls.or(config.reasoning_calls),
                    constrain: m.constrain.unwrap_or(config.constrain),
                    hosted_tools: m.hosted_tools.unwrap_or(config.hosted_tools),
                    transport: transport.clone(),
                },
            ));
        }
        Ok(Upstreams {
            default,
            routes,
            client_keys: config.client_keys(),
        })
    }

    /// The route of `model`: the first matching `[[models]]` entry, else the default.
    pub fn route(&self, model: &str) -> &Route {
        if self.routes.is_empty() {
            return &self.default;
        }
        let model = model.to_ascii_lowercase();
        self.routes
            .iter()
            .find(|(p, _)| glob_match(p, &model))
            .map_or(&self.default, |(_, r)| r)
    }

    pub fn default_route(&self) -> &Route {
        &self.default
    }
}

/// `*` matches any run, `?` one character; O(pattern × text) at worst, no recursion.
pub fn glob_match(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ti));
            pi += 1;
        } else if let Some((sp, st)) = star {
            pi = sp + 1;
            ti = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

/// `GET /v1/models`: the default upstream's list, passed through.
pub async fn models(State(state): State<AppState>, headers: HeaderMap) -> Response {
    if !auth::authorized(&headers, &state.upstreams.client_keys) {
        return ApiError::unauthorized().into_response();
    }
    let route = state.upstreams.default_route();
    let url = route.url("/models");
    let result: Result<String, ClientError> = route
        .transport
        .retrying(|| async {
            let r = route.transport.get(&url, route.api_key.as_deref()).await?;
            route.transport.read_bounded(r, &url).await
        })
        .await;
    match result {
        Ok(body) => ([(CONTENT_TYPE, "application/json")], body).into_response(),
        Err(e) => ApiError::upstream(&e).into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs() {
        assert!(glob_match("qwen*", "qwen3-coder"));
        assert!(glob_match("*coder*", "qwen3-coder-30b"));
        assert!(glob_match("llama-3.?", "llama-3.1"));
        assert!(!glob_match("qwen*", "llama"));
        assert!(glob_match("*", ""));
        assert!(!glob_match("a*b", "a"));
        let long = "a".repeat(2000);
        assert!(!glob_match("*a*a*a*a*b", &long));
    }

    #[test]
    fn routes_by_model_and_keys_stay_with_their_host() {
        // SAFETY-free: a variable name no other test sets.
        let config = Config::from_toml(
            r#"
            upstream = "http://default:1"
            [[models]]
            match = "qwen*"
            upstream = "http://qwen:2"
            format = "hermes"
            [[models]]
            match = "mistral*"
            format = "mistral"
            "#,
        )
        .unwrap();
        let u = Upstreams::new(&config).unwrap();
        assert_eq!(u.route("Qwen3-8B").base_url, "http://qwen:2");
        assert_eq!(u.route("Qwen3-8B").format.as_deref(), Some("hermes"));
        assert_eq!(u.route("mistral-small").base_url, "http://default:1");
        assert_eq!(u.route("gpt").format, None);
    }

    // The logged URL is worked out once per route, and never shows credentials.
    #[test]
    fn routes_show_their_url_without_credentials() {
        let config = Config::from_toml(
            r#"
            upstream = "http://user:pw-8c1@default:1/v1"
            [[models]]
            match = "qwen*"
            upstream = "https://k-2f9@qwen:2"
            "#,
        )
        .unwrap();
        let u = Upstreams::new(&config).unwrap();
        assert_eq!(u.route("gpt").shown_url(), "http://***@default:1/v1");
        assert_eq!(u.route("qwen3").shown_url(), "https://***@qwen:2");
        assert_eq!(u.route("qwen3").base_url, "https://k-2f9@qwen:2");
    }

    // Each route's turn URLs are parsed once at load: the same URLs as the endpoint text,
    // and for a dialect whose path names the model (Gemini), parsed per request.
    #[test]
    fn turn_urls_are_parsed_at_load_and_per_model_where_the_path_names_it() {
        let config = Config::from_toml(
            r#"
            upstream = "http://u:1/"
            [[models]]
            match = "gemini*"
            upstream = "https://g:2/v1beta"
            upstream_api = "gemini"
            "#,
        )
        .unwrap();
        let u = Upstreams::new(&config).unwrap();
        let url = |model: &str, stream: bool| u.route(model).turn_url(model, stream).unwrap();
        assert!(u.route("qwen3").turn_urls.is_some());
        assert!(u.route("gemini-2.5").turn_urls.is_none());
        for stream in [false, true] {
            assert_eq!(
                url("qwen3", stream).as_str(),
                "http://u:1/v1/chat/completions"
            );
            assert!(matches!(url("qwen3", stream), Cow::Borrowed(_)));
        }
        assert_eq!(
            url("gemini-2.5", false).as_str(),
            "https://g:2/v1beta/models/gemini-2.5:generateContent"
        );
        assert_eq!(
            url("gemini-2.5", true).as_str(),
            "https://g:2/v1beta/models/gemini-2.5:streamGenerateContent?alt=sse"
        );
    }

    // An upstream that is not an http(s) URL is refused when the config loads, not on each
    // request, and the error does not show credentials written in it.
    #[test]
    fn an_unusable_upstream_url_is_a_config_error_at_load() {
        let load = |toml: &str| Upstreams::new(&Config::from_toml(toml).unwrap()).map(|_| ());
        for bad in [
            r#"upstream = "localhost:8000""#,
            r#"upstream = "qwen:2""#,
            r#"upstream = "/v1""#,
            r#"upstream = "http://user:pw-5e1@[::1""#,
            "upstream = \"http://u:1\"\n[[models]]\nmatch = \"q*\"\nupstream = \"ftp://q:2\"",
            "[[models]]\nmatch = \"g*\"\nupstream = \"http://g:3:4\"\nupstream_api = \"gemini\"",
        ] {
            match load(bad) {
                Err(e @ ConfigError::Upstream(..)) => {
                    assert!(!e.to_string().contains("pw-5e1"), "{e}");
                }
                other => panic!("{bad}: {other:?}"),
            }
        }
        assert!(load(r#"upstream = "https://user:pw@h:443/v1""#).is_ok());
    }

    // `reasoning_calls` per route, inherited from the top level; absent: the family decides.
    #[test]
    fn reasoning_calls_per_route_and_inherited() {
        use toolcall_parse::ReasoningCalls;
        let config = Config::from_toml(
            r#"
            reasoning_calls = "ignore"
            [[models]]
            match = "qwen3.5*"
            reasoning_calls = "take_if_none_after"
            [[models]]
            match = "glm*"
            format = "glm"
            "#,
        )
        .unwrap();
        let u = Upstreams::new(&config).unwrap();
        let policy = |m: &str| u.route(m).reasoning_calls;
        assert_eq!(policy("Qwen3.5-27B"), Some(ReasoningCalls::TakeIfNoneAfter));
        assert_eq!(policy("GLM-4.6"), Some(ReasoningCalls::Ignore));
        assert_eq!(policy("other"), Some(ReasoningCalls::Ignore));
        let none = Upstreams::new(&Config::default()).unwrap();
        assert_eq!(none.route("x").reasoning_calls, None);
        assert!(Config::from_toml("reasoning_calls = \"sometimes\"").is_err());
    }
}
