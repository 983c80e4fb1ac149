//! Parses a model reply as it streams in, printing each event as a JSON line.
//!
//! ```sh
//! cargo run -p toolcall --example parse_stream                 # a built-in reply
//! echo '[get_weather(city="Paris")]' | cargo run -p toolcall --example parse_stream -- -
//! ```
//!
//! The reply is fed in 7-byte pieces, as a server's stream would deliver it: prose comes
//! out as `text` events, a call as `call_started`, `arguments_delta`s and `call_finished`.

use std::io::Read;

use toolcall::{ParseOptions, StreamParser};

const REPLY: &str = r#"<think>The user wants the weather.</think>Let me look that up. <tool_call>{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius",}}</tool_call>"#;

fn main() -> std::io::Result<()> {
    let reply = if std::env::args().nth(1).as_deref() == Some("-") {
        let mut input = String::new();
        std::io::stdin().read_to_string(&mut input)?;
        input
    } else {
        REPLY.to_owned()
    };
    let mut parser = StreamParser::new(ParseOptions::default());
    let mut rest = reply.as_str();
    while !rest.is_empty() {
        let mut cut = rest.len().min(7);
        while !rest.is_char_boundary(cut) {
            cut += 1;
        }
        let (piece, tail) = rest.split_at(cut);
        rest = tail;
        for event in parser.push(piece) {
            println!("{}", serde_json::to_string(&event)?);
        }
    }
    for event in parser.finish() {
        println!("{}", serde_json::to_string(&event)?);
    }
    Ok(())
}
