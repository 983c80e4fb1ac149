//! A stand-in model server for the examples' tests: a real OpenAI-compatible
//! `/v1/chat/completions` endpoint on loopback that behaves like a dependable model. Asked
//! by the user, it calls the tool it was given; shown a tool result, it answers in words
//! quoting it. Every request body is kept for the test to inspect.

use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{Value, json};

#[derive(Clone)]
struct Model {
    tool: String,
    arguments: Value,
    requests: Arc<Mutex<Vec<Value>>>,
}

/// A running stand-in; its server task ends with the test's runtime.
pub struct StandIn {
    pub url: String,
    requests: Arc<Mutex<Vec<Value>>>,
}

impl StandIn {
    /// Serves on 127.0.0.1 (a free port); the model calls `tool` with `arguments`.
    pub async fn start(tool: &str, arguments: Value) -> StandIn {
        let requests = Arc::new(Mutex::new(Vec::new()));
        let model = Model {
            tool: tool.to_owned(),
            arguments,
            requests: requests.clone(),
        };
        let app = Router::new()
            .route("/v1/chat/completions", post(complete))
            .with_state(model);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        StandIn { url, requests }
    }

    /// The request bodies received so far.
    pub fn requests(&self) -> Vec<Value> {
        self.requests.lock().unwrap().clone()
    }
}

async fn complete(State(model): State<Model>, Json(body): Json<Value>) -> Json<Value> {
    model.requests.lock().unwrap().push(body.clone());
    let last = body["messages"].as_array().and_then(|m| m.last()).cloned();
    let last = last.unwrap_or(Value::Null);
    let offered = body["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|t| t["function"]["name"] == model.tool.as_str());
    let message = if last["role"] == "user" && offered {
        json!({"role": "assistant", "content": null, "tool_calls": [{
            "id": "call_standin_1", "type": "function",
            "function": {"name": model.tool, "arguments": model.arguments.to_string()}
        }]})
    } else {
        let content = last["content"].as_str().unwrap_or_default();
        json!({"role": "assistant", "content": format!("The tool says: {content}")})
    };
    Json(json!({
        "id": "chatcmpl-standin", "object": "chat.completion", "model": body["model"],
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}]
    }))
}
