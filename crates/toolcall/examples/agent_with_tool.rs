//! One agent turn with a typed tool against any OpenAI-compatible server.
//!
//! ```sh
//! cargo run -p toolcall --example agent_with_tool -- http://127.0.0.1:11434 qwen2.5:7b
//! ```
//!
//! The tool's schema comes from its argument type; the model's call is validated against it,
//! run, and its result goes back under the call's id until the model answers in words.

use std::error::Error;

use serde::{Deserialize, Serialize};
use toolcall::{Agent, OpenAi, TurnReport, tool};

#[derive(Deserialize, schemars::JsonSchema)]
struct Weather {
    /// City name, e.g. "Paris".
    city: String,
}

#[derive(Serialize)]
struct Forecast {
    city: String,
    celsius: i32,
    sky: &'static str,
}

async fn run(url: &str, model: &str, question: &str) -> Result<TurnReport, Box<dyn Error>> {
    let get_weather = tool(
        "get_weather",
        "Current weather for a city",
        |w: Weather| async move {
            Ok(Forecast {
                celsius: if w.city == "Paris" { 21 } else { 15 },
                sky: "clear",
                city: w.city,
            })
        },
    );
    let mut agent = Agent::builder()
        .model(OpenAi::chat(url, model))
        .tool(get_weather)
        .max_rounds(5)
        .temperature(0.2)
        .build()?;
    Ok(agent.run(question).await?)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let mut args = std::env::args().skip(1);
    let url = args
        .next()
        .unwrap_or_else(|| "http://127.0.0.1:11434".into());
    let model = args.next().unwrap_or_else(|| "qwen2.5:7b".into());
    let report = run(&url, &model, "What is the weather in Paris?").await?;
    for round in &report.rounds {
        for (call, result) in round.calls.iter().zip(&round.results) {
            println!("{}({}) -> {}", call.name, call.arguments, result.to_json());
        }
    }
    println!("{}", report.final_text.unwrap_or_default());
    Ok(())
}

#[cfg(test)]
#[path = "support/stand_in.rs"]
mod stand_in;

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::stand_in::StandIn;

    #[tokio::test]
    async fn the_example_runs_a_turn_against_a_stand_in_model_server() {
        let server = StandIn::start("get_weather", json!({"city": "Paris"})).await;
        let report = super::run(&server.url, "stand-in", "What is the weather in Paris?")
            .await
            .unwrap();
        let round = &report.rounds[0];
        assert_eq!(round.calls[0].name, "get_weather");
        let result = round.results[0].to_json();
        assert_eq!(
            result["data"],
            json!({"city": "Paris", "celsius": 21, "sky": "clear"})
        );
        let answer = report.final_text.unwrap();
        assert!(answer.contains("\"celsius\":21"), "{answer}");

        let requests = server.requests();
        assert_eq!(requests.len(), 2);
        let offered = &requests[0]["tools"][0]["function"];
        assert_eq!(offered["name"], "get_weather");
        assert_eq!(offered["parameters"]["required"], json!(["city"]));
        assert_eq!(requests[0]["temperature"], 0.2);
        let tool_message = requests[1]["messages"].as_array().unwrap().last().unwrap();
        assert_eq!(tool_message["role"], "tool");
        assert_eq!(tool_message["tool_call_id"], "call_standin_1");
    }
}
