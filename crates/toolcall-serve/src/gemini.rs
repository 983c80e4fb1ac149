//! Gemini `POST /{v1,v1beta}/models/{model}:generateContent` and
//! `:streamGenerateContent?alt=sse`, also without `models/` (the AI SDK's form for a model
//! name holding `/`): the Gemini front end of the one turn driver ([`crate::front`]), for apps
//! on `google-genai`, `@ai-sdk/google` and Gemini CLI. The dialect's mapping is
//! `toolcall_wire::gemini`. The model is the path between the version and the last `:`, `/`
//! included. Clients send their key as `x-goog-api-key` (or `?key=`, or Bearer); errors come
//! back in Google's shape (`{"error":{"code","message","status"}}`). `countTokens` is refused
//! clearly (no tokenizer for the upstream's model).

use axum::body::Bytes;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::Map;
use toolcall_wire::Api;

use crate::metrics::Metrics;
use crate::{ApiError, AppState, auth, front};

/// The Gemini dialect.
fn api() -> Api {
    Api::from_name("gemini").unwrap_or_default()
}

/// The model and method of a path after the version: `models/{model}:{method}` or
/// `{model}:{method}`.
pub fn model_and_method(rest: &str) -> Option<(&str, &str)> {
    let rest = rest.strip_prefix("models/").unwrap_or(rest);
    let (model, method) = rest.rsplit_once(':')?;
    (!model.is_empty()).then_some((model, method))
}

pub async fn handle(
    State(state): State<AppState>,
    Path(rest): Path<String>,
    Query(query): Query<Vec<(String, String)>>,
    mut headers: HeaderMap,
    mut body: Bytes,
) -> Response {
    Metrics::add(&state.metrics.gemini_requests, 1);
    // `?key=` is how the REST API documents the key; treat it like the header.
    if let Some((_, key)) = query.iter().find(|(k, _)| k == "key")
        && let Ok(v) = HeaderValue::from_str(key)
    {
        headers.insert("x-goog-api-key", v);
    }
    let result = async {
        if !auth::authorized_any(&headers, &state.upstreams.client_keys) {
            return Err(ApiError::unauthorized());
        }
        let Some((model, method)) = model_and_method(&rest) else {
            return Err(not_found(format!("no such method: {rest}")));
        };
        let stream = match method {
            "generateContent" => false,
            "streamGenerateContent" => true,
            "countTokens" => {
                return Err(not_found(
                    "countTokens is not supported by this gateway: it has no tokenizer for \
                     the upstream's model, so it cannot count honestly"
                        .into(),
                ));
            }
            other => return Err(not_found(format!("no such method: {other}"))),
        };
        // The bytes go once decoded: a body is several copies of itself on its way.
        let mut decoded = front::decode(api(), &std::mem::take(&mut body))?;
        decoded.request.model = model.to_owned();
        decoded.request.stream = stream.then_some(true);
        front::run(&state, &headers, api(), decoded, Map::new()).await
    }
    .await;
    result.unwrap_or_else(|e| {
        Metrics::add(&state.metrics.errors, 1);
        e.response_in(api()).into_response()
    })
}

fn not_found(message: String) -> ApiError {
    ApiError {
        status: StatusCode::NOT_FOUND,
        kind: "invalid_request_error",
        code: None,
        message,
        retry_after: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dialect_is_registered() {
        assert_eq!(api().name(), "gemini");
    }

    #[test]
    fn paths_name_the_model_with_its_slashes() {
        assert_eq!(
            model_and_method("models/gemini-2.5-flash:generateContent"),
            Some(("gemini-2.5-flash", "generateContent"))
        );
        assert_eq!(
            model_and_method("Qwen/Qwen3-Coder-30B-A3B-Instruct:streamGenerateContent"),
            Some(("Qwen/Qwen3-Coder-30B-A3B-Instruct", "streamGenerateContent"))
        );
        assert_eq!(
            model_and_method("models/org/m:v1:generateContent"),
            Some(("org/m:v1", "generateContent"))
        );
        assert_eq!(model_and_method("models/x"), None);
        assert_eq!(model_and_method(":generateContent"), None);
    }
}
