//! The route setting `constrain`: the upstream request carries a decoding constraint
//! ([`toolcall_constrain`]) for the route's family and the request's tools, in the field the
//! upstream's engine reads:
//!
//! | setting | engine | field |
//! |---|---|---|
//! | `structural_tag` | vLLM, SGLang | `response_format: {"type": "structural_tag", …}` (tools still sent) |
//! | `gbnf` | llama.cpp server | `grammar`, with the tools rendered into the prompt (llama.cpp refuses a grammar with `tools`) |
//! | `json_schema` | Ollama, LM Studio, llama.cpp | `response_format: {"type": "json_schema", …}` (`json`/`xlam` families, forced calls) |
//!
//! A client's own `response_format` (or `grammar`) wins and is left untouched. `auto`
//! constrains only when some tool says `strict: true` (then only inside a call: prose runs
//! free until the opener). Whatever happens is said in the `x-toolcall-constrain` response
//! header: the dialect sent, `client` (the client's own constraint kept), or `off: why`
//! (the family cannot be expressed, no single family, ...). The reply is parsed, validated
//! and repaired as ever: the constraint is a guide, parse-and-repair the safety net.
//!
//! Built constraints are kept with the compiled tools ([`ConstraintMemo`] in
//! [`crate::tools_cache::CompiledTools`]), so a conversation's later requests reuse them.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use toolcall_constrain::{
    Body, ConstrainError, Constraint, Dialect, InputGrammar, Options, ToolChoice,
};
use toolcall_parse::FormatSelection;
use toolcall_wire::chat::ChatRequest;

use crate::tools_cache::CompiledTools;

/// The response header saying what constraint went upstream.
pub const CONSTRAIN_HEADER: &str = "x-toolcall-constrain";

/// The per-route `constrain` setting.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Constrain {
    #[default]
    Off,
    StructuralTag,
    Gbnf,
    JsonSchema,
}

impl Constrain {
    fn dialect(self) -> Option<Dialect> {
        match self {
            Constrain::Off => None,
            Constrain::StructuralTag => Some(Dialect::StructuralTag),
            Constrain::Gbnf => Some(Dialect::Gbnf),
            Constrain::JsonSchema => Some(Dialect::JsonSchema),
        }
    }
}

/// Most constraints kept per tool declaration (one per family × dialect × choice).
const MEMO_ENTRIES: usize = 16;

/// Constraints built for one tool declaration.
#[derive(Debug, Default)]
pub struct ConstraintMemo {
    built: Mutex<HashMap<String, Arc<Result<Constraint, ConstrainError>>>>,
}

impl ConstraintMemo {
    fn get(
        &self,
        tools: &CompiledTools,
        family: &str,
        dialect: Dialect,
        options: &Options,
        inputs: &[(String, InputGrammar)],
    ) -> Arc<Result<Constraint, ConstrainError>> {
        // A per-request trigger makes every constraint new: those are not kept.
        let key = options.trigger.is_none().then(|| {
            format!(
                "{family}\u{0}{dialect}\u{0}{:?}\u{0}{}",
                options.choice, options.parallel
            )
        });
        if let Some(k) = &key
            && let Ok(built) = self.built.lock()
            && let Some(hit) = built.get(k)
        {
            return hit.clone();
        }
        let specs: Vec<_> = tools.registry.specs().cloned().collect();
        // The custom tools' grammars are in their declarations (their `input`'s
        // description), so one declaration always comes with the same grammars.
        let made = Arc::new(toolcall_constrain::build_with_inputs(
            family, &specs, dialect, options, inputs,
        ));
        if let Ok(c) = made.as_ref() {
            for note in &c.notes {
                tracing::warn!(family, %dialect, "{note}");
            }
        }
        if let Some(k) = key
            && let Ok(mut built) = self.built.lock()
        {
            if built.len() >= MEMO_ENTRIES {
                built.clear();
            }
            built.insert(k, made.clone());
        }
        made
    }
}

/// The family a constraint is written for: the one the route reads replies with.
pub fn family_of(selection: &FormatSelection) -> Option<&str> {
    match selection {
        FormatSelection::Only(one) => Some(one),
        FormatSelection::Priority(list) => list.first().map(String::as_str),
        FormatSelection::Auto => None,
    }
}

/// What the client's request asks of a constraint (read before the request is rewritten).
#[derive(Debug, Clone)]
pub struct Asked {
    choice: ToolChoice,
    parallel: bool,
    strict: bool,
    /// The client sent a constraint of its own.
    own: bool,
}

impl Asked {
    pub fn of(client: &ChatRequest) -> Asked {
        Asked {
            choice: client
                .tool_choice
                .as_ref()
                .and_then(ToolChoice::from_openai)
                .unwrap_or_default(),
            parallel: client.parallel_tool_calls.unwrap_or(true),
            strict: any_strict(client),
            own: CLIENT_FIELDS.iter().any(|k| client.extra.contains_key(*k)),
        }
    }
}

/// Request fields through which a client constrains decoding itself.
const CLIENT_FIELDS: [&str; 5] = [
    "response_format",
    "grammar",
    "json_schema",
    "structured_outputs",
    "guided_json",
];

/// Puts the route's constraint into `upstream` (the request as the upstream gets it) for
/// what the client `asked`; `inputs`: the custom tools' grammars, which constrain their
/// input inside it. The `x-toolcall-constrain` value; `None` when the route is off.
pub fn apply(
    setting: Constrain,
    asked: &Asked,
    upstream: &mut ChatRequest,
    family: Option<&str>,
    tools: &CompiledTools,
    trigger: Option<&str>,
    inputs: &[(String, InputGrammar)],
) -> Option<String> {
    let dialect = setting.dialect()?;
    if asked.own {
        return Some("client".into());
    }
    let Some(family) = family else {
        return Some("off: no single family for this model (set format)".into());
    };
    if asked.choice == ToolChoice::Auto && !asked.strict {
        return Some("off: tool_choice auto without strict tools".into());
    }
    let options = Options {
        choice: asked.choice.clone(),
        parallel: asked.parallel,
        trigger: trigger.map(str::to_owned),
    };
    let built = tools
        .constraints
        .get(tools, family, dialect, &options, inputs);
    let constraint = match built.as_ref() {
        Ok(c) => c,
        Err(e) => return Some(format!("off: {e}")),
    };
    match (dialect, &constraint.body) {
        (Dialect::Gbnf, Body::Grammar(g)) => {
            upstream
                .extra
                .insert("grammar".into(), Value::String(g.clone()));
        }
        _ => {
            let Some(rf) = constraint.response_format() else {
                return Some("off: nothing to send".into());
            };
            upstream.extra.insert("response_format".into(), rf);
        }
    }
    Some(dialect.as_str().to_owned())
}

fn any_strict(request: &ChatRequest) -> bool {
    request
        .tools
        .iter()
        .flatten()
        .any(|t| t.function.extra.get("strict") == Some(&Value::Bool(true)))
}
