//! The SGLang gateway's `tool-parser` (crates.io), driven like [`crate::ours`]: one-shot
//! through `parse_complete`, streamed through `parse_incremental` the way the gateway calls it.
//!
//! Its API is async; a parser does no I/O, so `futures::executor::block_on` drives each call
//! on the current thread (a few tens of nanoseconds per call, negligible next to a parse).

use std::time::Instant;

use futures::executor::block_on;
use openai_protocol::common::Tool;
use tool_parser::parsers::{QwenXmlParser, SarashinaParser};
use tool_parser::{
    CohereParser, DeepSeek31Parser, DeepSeekDsmlParser, DeepSeekParser, Gemma4Parser,
    Glm4MoeParser, HyV4Parser, InklingParser, JsonParser, KimiK2Parser, KimiK3Parser, LlamaParser,
    MinimaxM2Parser, MinimaxM3Parser, MistralParser, PythonicParser, QwenParser, Step3Parser,
    ToolParser,
};

use crate::corpus;

/// A `tool-parser` parser by its registry name (`json`, `qwen`, `mistral`, `llama`,
/// `pythonic`, and the model families: `deepseek`, `deepseek31`, `deepseek_dsml` (V3.2),
/// `kimik2`, `glm45`, `qwen_xml`, `minimax_m2`, `step3`, `cohere`, `gemma4`, and the
/// 2026–27 ones: `kimi_k3`, `minimax_m3`, `hy_v4` (Hunyuan), `inkling`, `sarashina`).
pub fn make(name: &str) -> Option<Box<dyn ToolParser>> {
    Some(match name {
        "json" => Box::new(JsonParser::new()),
        "qwen" => Box::new(QwenParser::new()),
        "mistral" => Box::new(MistralParser::new()),
        "llama" => Box::new(LlamaParser::new()),
        "pythonic" => Box::new(PythonicParser::new()),
        "deepseek" => Box::new(DeepSeekParser::new()),
        "deepseek31" => Box::new(DeepSeek31Parser::new()),
        "deepseek_dsml" => Box::new(DeepSeekDsmlParser::v32()),
        "kimik2" => Box::new(KimiK2Parser::new()),
        "glm45" => Box::new(Glm4MoeParser::glm45()),
        "qwen_xml" => Box::new(QwenXmlParser::new()),
        "minimax_m2" => Box::new(MinimaxM2Parser::new()),
        "step3" => Box::new(Step3Parser::new()),
        "cohere" => Box::new(CohereParser::new()),
        "gemma4" => Box::new(Gemma4Parser::new()),
        "kimi_k3" => Box::new(KimiK3Parser::new()),
        "minimax_m3" => Box::new(MinimaxM3Parser::new()),
        "hy_v4" => Box::new(HyV4Parser::new()),
        "inkling" => Box::new(InklingParser::new()),
        "sarashina" => Box::new(SarashinaParser::new()),
        _ => return None,
    })
}

/// The corpus tools in the OpenAI shape `parse_incremental` checks names against.
pub fn tools() -> Vec<Tool> {
    corpus::registry()
        .specs()
        .filter_map(|s| {
            serde_json::from_value(serde_json::json!({
                "type": "function",
                "function": {"name": s.name, "description": s.description, "parameters": s.parameters}
            }))
            .ok()
        })
        .collect()
}

/// One-shot parse; returns the number of calls, 0 on a parser error.
pub fn one_shot(parser: &dyn ToolParser, text: &str) -> usize {
    block_on(parser.parse_complete(text))
        .map(|(_, calls)| calls.len())
        .unwrap_or(0)
}

/// Streams `pushes` into a fresh parser; returns the number of calls it announced (items
/// carrying a name), including arguments it only hands out at the end of the stream.
pub fn stream(name: &str, pushes: &[&str], tools: &[Tool]) -> usize {
    stream_until(name, pushes, tools, None).unwrap_or(0)
}

/// [`stream`], giving up at `deadline`: `Err(pushes done)` then. Its streaming re-scans the
/// buffered call on every push, so a 1 MB call can take minutes; the table caps it.
pub fn stream_until(
    name: &str,
    pushes: &[&str],
    tools: &[Tool],
    deadline: Option<Instant>,
) -> Result<usize, usize> {
    let Some(mut parser) = make(name) else {
        return Ok(0);
    };
    let mut calls = 0;
    for (i, p) in pushes.iter().enumerate() {
        // tool-parser 1.10's Step-3 streaming panics on a closing tag split across pushes
        // (a byte index past a slice's end): the stream stops there, counting the calls
        // announced so far.
        let step = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            block_on(parser.parse_incremental(p, tools))
        }));
        match step {
            Ok(Ok(r)) => calls += r.calls.iter().filter(|c| c.name.is_some()).count(),
            Ok(Err(_)) => {}
            Err(_) => return Ok(calls),
        }
        if i % 64 == 0 && i + 1 < pushes.len() && deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(i + 1);
        }
    }
    if let Some(rest) = parser.get_unstreamed_tool_args() {
        calls += rest.iter().filter(|c| c.name.is_some()).count();
    }
    Ok(calls)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::corpus::{Shape, case};

    // The peer must find the same calls as toolcall on the shared formats, or its speed
    // figures would compare different work.
    #[test]
    fn peer_reads_the_shared_formats() {
        let tools = tools();
        assert_eq!(tools.len(), 5);
        for f in ["json", "hermes", "mistral", "llama", "pythonic"] {
            for shape in [Shape::Small, Shape::Many] {
                let c = case(f, shape);
                let name = c.peer().unwrap();
                let p = make(name).unwrap();
                assert_eq!(
                    one_shot(p.as_ref(), &c.text),
                    c.expected_calls,
                    "{}",
                    c.name
                );
                // 4- and 64-byte pushes; 1-byte pushes lose calls in its mistral parser
                // (reported in BENCHMARKS.md, shown per cell by bench_table).
                for n in [4, 64] {
                    let pushes = corpus::chunks(&c.text, n);
                    assert_eq!(
                        stream(name, &pushes, &tools),
                        c.expected_calls,
                        "{} {n}",
                        c.name
                    );
                }
            }
        }
    }
}
