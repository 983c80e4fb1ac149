//! Tools from async functions.
//!
//! [`tool`] derives the JSON Schema from the argument type (`serde::Deserialize` +
//! `schemars::JsonSchema`) and hands the function the typed value; [`tool_json`] takes a
//! hand-written schema and hands the function the arguments as a [`Value`]. Both give a
//! [`FnTool`], which implements [`Tool`] like any other, so registries, packs and tools
//! files mix with them freely.

use std::future::Future;
use std::marker::PhantomData;
use std::time::Duration;

use async_trait::async_trait;
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use toolcall_core::{ErrorCode, Tool, ToolContext, ToolError, ToolKind, ToolOutput, ToolSpec};

/// A tool backed by an async function of its arguments.
pub struct FnTool<A, F> {
    spec: ToolSpec,
    function: F,
    arguments: PhantomData<fn(A)>,
}

/// A tool whose schema comes from `A` and whose function receives `A`.
///
/// The schema is inlined (no `$ref`s except for recursive types), without `$schema` and
/// `title`, so every provider accepts it. Doc comments on `A`'s fields become the
/// properties' descriptions, which the model reads.
///
/// ```
/// use toolcall::tool;
///
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Weather {
///     /// City name, e.g. "Paris".
///     city: String,
/// }
///
/// let get_weather = tool("get_weather", "Current weather for a city", |args: Weather| async move {
///     Ok(serde_json::json!({"city": args.city, "celsius": 21}))
/// });
/// # use toolcall::Tool;
/// assert_eq!(get_weather.spec().parameters["required"], serde_json::json!(["city"]));
/// ```
pub fn tool<A, F, Fut, R>(
    name: impl Into<String>,
    description: impl Into<String>,
    function: F,
) -> FnTool<A, F>
where
    A: DeserializeOwned + JsonSchema + Send + 'static,
    F: Fn(A) -> Fut + Send + Sync,
    Fut: Future<Output = Result<R, ToolError>> + Send,
    R: Serialize,
{
    FnTool {
        spec: ToolSpec::new(name, description, schema_of::<A>()),
        function,
        arguments: PhantomData,
    }
}

/// A tool with a hand-written JSON Schema whose function receives the arguments object.
pub fn tool_json<F, Fut, R>(
    name: impl Into<String>,
    description: impl Into<String>,
    parameters: Value,
    function: F,
) -> FnTool<Value, F>
where
    F: Fn(Value) -> Fut + Send + Sync,
    Fut: Future<Output = Result<R, ToolError>> + Send,
    R: Serialize,
{
    FnTool {
        spec: ToolSpec::new(name, description, parameters),
        function,
        arguments: PhantomData,
    }
}

/// The JSON Schema of `A` as tool parameters.
pub fn schema_of<A: JsonSchema>() -> Value {
    let generator = SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator();
    let mut schema = generator.into_root_schema_for::<A>().to_value();
    if let Value::Object(map) = &mut schema {
        map.remove("title");
    }
    schema
}

impl<A, F> FnTool<A, F> {
    /// Runs as a job: the call is answered at once and the result delivered later.
    pub fn job(mut self) -> Self {
        self.spec.kind = ToolKind::Job;
        self
    }

    /// This tool's timeout instead of the executor's default.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.spec.timeout = Some(timeout);
        self
    }

    /// Runs only when the executor's approver agrees.
    pub fn requires_approval(mut self) -> Self {
        self.spec.requires_approval = true;
        self
    }
}

#[async_trait]
impl<A, F, Fut, R> Tool for FnTool<A, F>
where
    A: DeserializeOwned + Send + 'static,
    F: Fn(A) -> Fut + Send + Sync,
    Fut: Future<Output = Result<R, ToolError>> + Send,
    R: Serialize,
{
    fn spec(&self) -> ToolSpec {
        self.spec.clone()
    }

    async fn call(&self, _: &ToolContext, arguments: Value) -> Result<ToolOutput, ToolError> {
        // The schema already passed; serde can still be stricter than the schema (a custom
        // deserializer, an integer range), and the model must hear why.
        let typed: A = serde_json::from_value(arguments).map_err(|e| {
            ToolError::new(
                ErrorCode::InvalidArguments,
                format!("the arguments do not fit {}: {e}", self.spec.name),
            )
        })?;
        let output = (self.function)(typed).await?;
        let data = serde_json::to_value(output).map_err(|e| {
            ToolError::failed(format!(
                "the tool's output is not serialisable as JSON: {e}"
            ))
        })?;
        Ok(data.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Deserialize, JsonSchema)]
    struct Move {
        /// Where to go.
        to: Place,
        #[serde(default)]
        steps: Option<u8>,
    }

    #[derive(Deserialize, JsonSchema)]
    #[serde(rename_all = "snake_case")]
    enum Place {
        Cave,
        Forest,
    }

    fn mover() -> FnTool<Move, impl Fn(Move) -> std::future::Ready<Result<Value, ToolError>>> {
        tool("move_to", "Move", |m: Move| {
            std::future::ready(Ok(json!({
                "to": match m.to { Place::Cave => "cave", Place::Forest => "forest" },
                "steps": m.steps.unwrap_or(1),
            })))
        })
    }

    #[test]
    fn the_schema_comes_from_the_type_inlined_and_without_meta_keys() {
        let p = mover().spec().parameters;
        assert_eq!(p["type"], "object");
        assert_eq!(p["required"], json!(["to"]));
        assert_eq!(p["properties"]["to"]["enum"], json!(["cave", "forest"]));
        assert_eq!(p["properties"]["to"]["description"], "Where to go.");
        for key in ["$schema", "title", "$defs"] {
            assert!(p.get(key).is_none(), "{key} in {p}");
        }
    }

    #[tokio::test]
    async fn the_function_receives_the_typed_value() {
        let out = mover()
            .call(&ToolContext::default(), json!({"to": "cave", "steps": 3}))
            .await
            .unwrap();
        assert_eq!(out.data, json!({"to": "cave", "steps": 3}));
    }

    #[tokio::test]
    async fn arguments_serde_refuses_are_invalid_arguments_not_a_panic() {
        let err = mover()
            .call(&ToolContext::default(), json!({"to": "cave", "steps": 300}))
            .await
            .unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidArguments);
        assert!(err.message.contains("move_to"), "{}", err.message);
    }

    #[tokio::test]
    async fn untyped_tools_get_the_arguments_object() {
        let echo = tool_json(
            "echo",
            "Echo",
            json!({"type": "object"}),
            |v: Value| async move { Ok(v) },
        )
        .requires_approval()
        .timeout(Duration::from_secs(2));
        assert!(echo.spec().requires_approval);
        assert_eq!(echo.spec().timeout, Some(Duration::from_secs(2)));
        let out = echo
            .call(&ToolContext::default(), json!({"a": 1}))
            .await
            .unwrap();
        assert_eq!(out.data, json!({"a": 1}));
    }
}
