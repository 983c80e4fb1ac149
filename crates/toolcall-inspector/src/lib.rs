//! The inspector: a web page where a person watches tools at work and switches them on and
//! off (W-INSP).
//!
//! | module | owns |
//! |---|---|
//! | [`hub`] | the live calls by `call_id`, fed by agent events, pushed to open pages |
//! | [`follow`] | other replicas' calls, read from a shared archive into the hub |
//! | [`switches`] | per-tool enable/disable choices, persisted (a file, or a shared archive), applied to a registry |
//! | [`html`] | the server-rendered pages (readable without JavaScript) |
//!
//! [`Inspector::router`] serves, relative to where it is nested (normally [`BASE`]):
//!
//! | route | what |
//! |---|---|
//! | `GET /` | live calls: tool, surface, status, duration, arguments and result (redacted), repairs, diagnostics, the call's bytes highlighted in the raw reply |
//! | `GET /events` | the live page's Server-Sent Events: `call` (`{"key","call_id","status","html"}`), `turn`, `reload` |
//! | `GET /sessions`, `GET /sessions/{id}` | the archive's sessions; one session's calls by round, conversation and pack states (the world as a tree) |
//! | `GET /tools`, `POST /tools/{name}` (form `enabled=true\|false`) | every tool with its schema and switch |
//! | `GET /api/calls`, `GET /api/tools` | the same data as JSON |
//!
//! The page is plain HTML plus one small script served from here (no CDN). Access control
//! is the embedding server's: `toolcall serve` mounts it open on loopback and behind the
//! client API key otherwise. A switch is changed only by a same-origin form post, so another
//! site cannot flip tools through a person's browser.

pub mod follow;
pub mod html;
pub mod hub;
pub mod switches;

use std::convert::Infallible;
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use axum::{Form, Json, Router};
use futures::Stream;
use serde::Deserialize;
use serde_json::json;
use tokio::sync::broadcast::error::RecvError;
use toolcall_core::Registry;
use toolcall_run::Archive;
use toolcall_run::archive::ArchiveError;

pub use hub::{CallStatus, Hub, LiveCall, Update};
pub use switches::{SwitchError, ToolSwitches};

/// Where the inspector is mounted; its pages link under it.
pub const BASE: &str = "/inspector";
/// Sessions listed on the sessions page.
pub const MAX_SESSIONS_LISTED: usize = 500;

const SCRIPT: &str = include_str!("../assets/inspector.js");

/// What the inspector shows: the live hub, the server's tools and their switches, and the
/// session archive.
#[derive(Clone)]
pub struct Inspector {
    hub: Arc<Hub>,
    switches: Arc<ToolSwitches>,
    tools: Arc<Registry>,
    archive: Option<Arc<Archive>>,
}

impl Inspector {
    pub fn new(
        hub: Arc<Hub>,
        switches: Arc<ToolSwitches>,
        tools: Arc<Registry>,
        archive: Option<Arc<Archive>>,
    ) -> Self {
        Inspector {
            hub,
            switches,
            tools,
            archive,
        }
    }

    pub fn hub(&self) -> &Arc<Hub> {
        &self.hub
    }

    pub fn switches(&self) -> &Arc<ToolSwitches> {
        &self.switches
    }

    /// The routes, to nest at [`BASE`]: `Router::new().nest(BASE, inspector.router())`.
    pub fn router(&self) -> Router {
        Router::new()
            .route("/", get(live))
            .route("/inspector.js", get(script))
            .route("/events", get(events))
            .route("/api/calls", get(api_calls))
            .route("/api/tools", get(api_tools))
            .route("/sessions", get(sessions))
            .route("/sessions/{id}", get(session))
            .route("/tools", get(tools))
            .route("/tools/{name}", post(switch_tool))
            .with_state(self.clone())
    }

    /// Each tool with whether it is on and whether a person switched it.
    fn tool_states(&self) -> Vec<(toolcall_core::ToolSpec, bool, bool)> {
        self.tools
            .specs()
            .map(|s| {
                let set = self.switches.get(&s.name);
                (s.clone(), set.unwrap_or(s.enabled), set.is_some())
            })
            .collect()
    }
}

async fn live(State(i): State<Inspector>) -> Html<String> {
    Html(html::live_page(&i.hub.calls()))
}

async fn script() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        SCRIPT,
    )
}

async fn api_calls(State(i): State<Inspector>) -> Json<Vec<LiveCall>> {
    Json(i.hub.calls())
}

/// Reads the switches again from their store (another replica, or another process on the
/// file, may have flipped one); an error page when the store cannot be read.
async fn refresh_switches(i: &Inspector) -> Result<(), Response> {
    let switches = i.switches.clone();
    match tokio::task::spawn_blocking(move || switches.refresh()).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => Err((
            StatusCode::SERVICE_UNAVAILABLE,
            Html(html::error_page(
                "Tool switches unavailable",
                &e.to_string(),
            )),
        )
            .into_response()),
        Err(_) => Err(StatusCode::INTERNAL_SERVER_ERROR.into_response()),
    }
}

async fn api_tools(State(i): State<Inspector>) -> Response {
    if let Err(r) = refresh_switches(&i).await {
        return r;
    }
    let tools: Vec<_> = i
        .tool_states()
        .into_iter()
        .map(|(spec, enabled, switched)| {
            json!({"name": spec.name, "description": spec.description,
                   "parameters": spec.parameters, "enabled": enabled, "switched": switched})
        })
        .collect();
    Json(json!({ "tools": tools })).into_response()
}

fn call_event(call: &LiveCall) -> Event {
    Event::default().event("call").data(
        json!({
            "key": html::call_key(call),
            "call_id": call.call_id,
            "status": call.status,
            "html": html::live_call(call),
        })
        .to_string(),
    )
}

fn update_event(update: &Update) -> Event {
    match update {
        Update::Call { call } => call_event(call),
        Update::Turn { .. } => Event::default()
            .event("turn")
            .data(serde_json::to_string(update).unwrap_or_default()),
    }
}

/// The live stream: first every call as it stands (a page rendered just before it
/// subscribed misses nothing), then each change. A page that falls behind is told to reload.
async fn events(State(i): State<Inspector>) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let rx = i.hub.subscribe();
    let current: Vec<Result<Event, Infallible>> =
        i.hub.calls().iter().map(|c| Ok(call_event(c))).collect();
    let live = futures::stream::unfold(rx, |mut rx| async move {
        match rx.recv().await {
            Ok(update) => Some((Ok(update_event(&update)), rx)),
            Err(RecvError::Lagged(_)) => {
                Some((Ok(Event::default().event("reload").data("behind")), rx))
            }
            Err(RecvError::Closed) => None,
        }
    });
    use futures::StreamExt as _;
    Sse::new(futures::stream::iter(current).chain(live)).keep_alive(KeepAlive::default())
}

fn archive_error(e: ArchiveError) -> Response {
    match e {
        ArchiveError::NoSession(id) => (
            StatusCode::NOT_FOUND,
            Html(html::error_page(
                "No such session",
                &format!("There is no session {id:?} in the archive."),
            )),
        )
            .into_response(),
        other => (
            StatusCode::INTERNAL_SERVER_ERROR,
            Html(html::error_page("Archive error", &other.to_string())),
        )
            .into_response(),
    }
}

/// Runs blocking archive work off the async runtime's threads.
async fn with_archive<T: Send + 'static>(
    archive: Arc<Archive>,
    f: impl FnOnce(&Archive) -> Result<T, ArchiveError> + Send + 'static,
) -> Result<T, Response> {
    match tokio::task::spawn_blocking(move || f(&archive)).await {
        Ok(r) => r.map_err(archive_error),
        Err(_) => Err(StatusCode::INTERNAL_SERVER_ERROR.into_response()),
    }
}

async fn sessions(State(i): State<Inspector>) -> Response {
    let Some(archive) = i.archive.clone() else {
        return Html(html::sessions_page(&[], false)).into_response();
    };
    match with_archive(archive, |a| a.list_sessions()).await {
        Ok(mut list) => {
            list.truncate(MAX_SESSIONS_LISTED);
            Html(html::sessions_page(&list, true)).into_response()
        }
        Err(r) => r,
    }
}

async fn session(State(i): State<Inspector>, Path(id): Path<String>) -> Response {
    let Some(archive) = i.archive.clone() else {
        return archive_error(ArchiveError::NoSession(id));
    };
    match with_archive(archive, move |a| a.show_session(&id)).await {
        Ok(rec) => Html(html::session_page(&rec)).into_response(),
        Err(r) => r,
    }
}

async fn tools(State(i): State<Inspector>) -> Response {
    if let Err(r) = refresh_switches(&i).await {
        return r;
    }
    Html(html::tools_page(&i.tool_states())).into_response()
}

#[derive(Deserialize)]
struct SwitchForm {
    enabled: String,
}

/// Whether a state-changing request comes from the inspector's own page: browsers send
/// `Sec-Fetch-Site` and `Origin` on cross-site posts; tools like curl send neither.
fn same_origin(headers: &HeaderMap) -> bool {
    let get = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(site) = get("sec-fetch-site")
        && !matches!(site, "same-origin" | "none")
    {
        return false;
    }
    match (get("origin"), get("host")) {
        (Some(origin), Some(host)) => {
            let origin_host = origin.split_once("://").map(|(_, h)| h).unwrap_or(origin);
            origin_host.eq_ignore_ascii_case(host)
        }
        (Some(_), None) => false,
        (None, _) => true,
    }
}

async fn switch_tool(
    State(i): State<Inspector>,
    Path(name): Path<String>,
    headers: HeaderMap,
    Form(form): Form<SwitchForm>,
) -> Response {
    if !same_origin(&headers) {
        return (
            StatusCode::FORBIDDEN,
            Html(html::error_page(
                "Refused",
                "Tools can be switched only from the inspector's own page.",
            )),
        )
            .into_response();
    }
    let enabled = match form.enabled.as_str() {
        "true" | "on" => true,
        "false" | "off" => false,
        _ => {
            return (
                StatusCode::BAD_REQUEST,
                Html(html::error_page(
                    "Bad request",
                    "enabled must be true or false.",
                )),
            )
                .into_response();
        }
    };
    if !i.tools.contains(&name) {
        return (
            StatusCode::NOT_FOUND,
            Html(html::error_page(
                "No such tool",
                &format!("No tool named {name:?} is registered on this server."),
            )),
        )
            .into_response();
    }
    let switches = i.switches.clone();
    let saved = tokio::task::spawn_blocking(move || switches.set(&name, enabled)).await;
    match saved {
        Ok(Ok(())) => Redirect::to(&format!("{BASE}/tools")).into_response(),
        Ok(Err(e)) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            Html(html::error_page("Not saved", &e.to_string())),
        )
            .into_response(),
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cross_site_posts_are_refused_and_tools_without_browsers_allowed() {
        let h = |pairs: &[(&'static str, &'static str)]| {
            let mut m = HeaderMap::new();
            for (k, v) in pairs {
                m.insert(*k, v.parse().unwrap());
            }
            m
        };
        assert!(same_origin(&h(&[])));
        assert!(same_origin(&h(&[
            ("host", "127.0.0.1:8080"),
            ("origin", "http://127.0.0.1:8080"),
            ("sec-fetch-site", "same-origin"),
        ])));
        assert!(!same_origin(&h(&[
            ("host", "127.0.0.1:8080"),
            ("origin", "http://evil.example"),
        ])));
        assert!(!same_origin(&h(&[("sec-fetch-site", "cross-site")])));
    }
}
