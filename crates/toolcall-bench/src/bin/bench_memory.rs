//! Peak heap bytes while parsing the 1 MB-argument cases, against `serde_json` on the same
//! JSON bytes (and `tool-parser` with `--features peers`). Uses the counting allocator, so it
//! is a separate binary from the timing ones.

use serde_json::Value;
use toolcall_bench::alloc::{CountingAlloc, peak_during};
use toolcall_bench::corpus::{self, Shape};
use toolcall_bench::ours;

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

fn mb(n: usize) -> String {
    format!("{:.2} MB", n as f64 / 1e6)
}

fn main() {
    let registry = corpus::registry();
    #[cfg(feature = "peers")]
    let tools = toolcall_bench::peers::tools();
    println!("### Peak memory, one call with 1 MB of arguments\n");
    println!(
        "Peak heap bytes allocated during the parse (input excluded); `×` = peak ÷ input size.\n"
    );
    print!("| case | input | one-shot | × | stream 64 B | × | serde_json on the bare JSON | × |");
    #[cfg(feature = "peers")]
    print!(" tool-parser one-shot | tool-parser stream 64 B |");
    println!();
    print!("|---|--:|--:|--:|--:|--:|--:|--:|");
    #[cfg(feature = "peers")]
    print!("--:|--:|");
    println!();
    for case in corpus::corpus() {
        if case.shape != Shape::Large(corpus::LARGE_ARGS) {
            continue;
        }
        let opts = case.options(&registry);
        let text = case.text.as_str();
        let input = text.len();
        let pushes = corpus::chunks(text, 64);
        let (one, _) = peak_during(|| ours::one_shot(text, &opts));
        let (stream, _) = peak_during(|| ours::stream(&pushes, &opts));
        let serde = if case.json.is_empty() {
            None
        } else {
            Some(
                peak_during(|| {
                    case.json
                        .iter()
                        .filter(|d| serde_json::from_str::<Value>(d).is_ok())
                        .count()
                })
                .0,
            )
        };
        let x = |n: usize| format!("{:.2}×", n as f64 / input as f64);
        print!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |",
            case.name,
            mb(input),
            mb(one),
            x(one),
            mb(stream),
            x(stream),
            serde.map_or("–".into(), mb),
            serde.map_or("–".into(), x)
        );
        #[cfg(feature = "peers")]
        {
            use toolcall_bench::peers;
            match case.peer().and_then(|n| peers::make(n).map(|p| (n, p))) {
                Some((name, parser)) => {
                    let (po, _) = peak_during(|| peers::one_shot(parser.as_ref(), text));
                    let (ps, _) = peak_during(|| peers::stream(name, &pushes, &tools));
                    print!(" {} | {} |", mb(po), mb(ps));
                }
                None => print!(" – | – |"),
            }
        }
        println!();
    }
}
