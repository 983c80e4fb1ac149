//! Validates calls against a typed tool's schema: what is fixed, what is refused and why.
//!
//! ```sh
//! cargo run -p toolcall --example validate
//! ```

use serde::Deserialize;
use serde_json::json;
use toolcall::{Registry, ToolCall, tool};

#[derive(Deserialize, schemars::JsonSchema)]
struct Forecast {
    /// City name.
    city: String,
    /// How many days ahead, 1 to 7.
    #[schemars(range(min = 1, max = 7))]
    days: u8,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut registry = Registry::new();
    registry.add_tool(std::sync::Arc::new(tool(
        "get_forecast",
        "Forecast for a city",
        |f: Forecast| async move { Ok(format!("{} in {} days: sunny", f.city, f.days)) },
    )))?;
    let calls = [
        json!({"city": "Paris", "days": 3}),
        // A model slip with one reading: the number as a string.
        json!({"city": "Paris", "days": "3"}),
        // Refused: out of range and a required field missing.
        json!({"days": 30}),
    ];
    for arguments in calls {
        let mut call = ToolCall::new("get_forecast", arguments.clone(), "json");
        match registry.validate_call(&mut call) {
            Ok(()) => println!(
                "{arguments} -> ok {} repairs: {:?}",
                call.arguments,
                call.origin
                    .repairs
                    .iter()
                    .map(|r| &r.kind)
                    .collect::<Vec<_>>()
            ),
            Err(error) => println!(
                "{arguments} -> {}: {} {}",
                error.code,
                error.message,
                error.details.unwrap_or_default()
            ),
        }
    }
    // An unknown tool is answered with the names on offer.
    let mut unknown = ToolCall::new("get_weather", json!({}), "json");
    if let Err(error) = registry.validate_call(&mut unknown) {
        println!("get_weather -> {}: {}", error.code, error.message);
    }
    Ok(())
}
