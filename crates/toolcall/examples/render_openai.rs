//! Renders typed tools as OpenAI Chat Completions `tools`, ready for a request body.
//!
//! ```sh
//! cargo run -p toolcall --example render_openai
//! ```
//!
//! Ids that providers refuse (`calendar.events::create`) travel as aliases; the name map
//! turns an alias in the model's reply back into the tool id.

use serde::Deserialize;
use toolcall::{Provider, Registry, render_tools, tool};

#[derive(Deserialize, schemars::JsonSchema)]
struct Weather {
    /// City name, e.g. "Paris".
    city: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
enum Reminder {
    /// At a time of day, "HH:MM".
    At(String),
    /// After this many minutes.
    InMinutes(u32),
}

#[derive(Deserialize, schemars::JsonSchema)]
struct Event {
    title: String,
    reminder: Option<Reminder>,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut registry = Registry::new();
    registry.add_tool(std::sync::Arc::new(tool(
        "get_weather",
        "Current weather for a city",
        |w: Weather| async move { Ok(w.city) },
    )))?;
    registry.add_tool(std::sync::Arc::new(tool(
        "calendar.events::create",
        "Create a calendar event",
        |e: Event| async move {
            Ok(match e.reminder {
                Some(Reminder::At(time)) => format!("{} at {time}", e.title),
                Some(Reminder::InMinutes(m)) => format!("{} in {m} minutes", e.title),
                None => e.title,
            })
        },
    )))?;
    let (tools, names) = render_tools(&registry, Provider::OPENAI_CHAT);
    println!("{}", serde_json::to_string_pretty(&tools)?);
    for id in registry.names() {
        println!("{id} travels as {}", names.to_provider(id));
    }
    Ok(())
}
