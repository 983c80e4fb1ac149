//! A closed-loop load client for bench/replicas.sh: `CONNECTIONS` workers each send one
//! request after another for `SECONDS` (after one second of warm-up that is not counted),
//! spreading them over the URLs in turn (two gateway replicas behind no balancer: the client
//! alternates). One "request" is the JSON bodies of `BODIES` (a JSON array) POSTed in
//! sequence, timed as a whole; a non-200 answer counts as an error, not a latency.
//! Prints one JSON line: `{"requests", "errors", "per_second", "p50_ms", "p99_ms"}`.
//!
//! `turn_load SECONDS CONNECTIONS BODIES URL [URL...]`

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

fn usage() -> ! {
    eprintln!("usage: turn_load SECONDS CONNECTIONS BODIES_JSON URL [URL...]");
    std::process::exit(2)
}

/// The `q`-quantile of sorted `v`, in ms.
fn quantile(v: &[Duration], q: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    let i = ((v.len() as f64 - 1.0) * q).round() as usize;
    v[i.min(v.len() - 1)].as_secs_f64() * 1000.0
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() < 4 {
        usage()
    }
    let (Ok(seconds), Ok(connections)) = (args[0].parse::<f64>(), args[1].parse::<usize>()) else {
        usage()
    };
    let Ok(Value::Array(bodies)) = serde_json::from_str::<Value>(&args[2]) else {
        usage()
    };
    let bodies: Arc<Vec<String>> = Arc::new(bodies.iter().map(Value::to_string).collect());
    let urls: Arc<Vec<String>> = Arc::new(args[3..].to_vec());
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(connections)
        .timeout(Duration::from_secs(60))
        .build()
        .unwrap_or_else(|e| {
            eprintln!("cannot make the client: {e}");
            std::process::exit(1)
        });
    let warm_until = Instant::now() + Duration::from_secs(1);
    let stop_at = warm_until + Duration::from_secs_f64(seconds);
    let next = Arc::new(AtomicUsize::new(0));
    let mut workers = Vec::new();
    for _ in 0..connections {
        let (client, bodies, urls, next) = (
            client.clone(),
            Arc::clone(&bodies),
            Arc::clone(&urls),
            Arc::clone(&next),
        );
        workers.push(tokio::spawn(async move {
            let (mut times, mut errors) = (Vec::new(), 0usize);
            loop {
                let start = Instant::now();
                if start >= stop_at {
                    break;
                }
                let url = &urls[next.fetch_add(1, Ordering::Relaxed) % urls.len()];
                let mut ok = true;
                for body in bodies.iter() {
                    let sent = client
                        .post(url)
                        .header("content-type", "application/json")
                        .body(body.clone())
                        .send()
                        .await;
                    ok = match sent {
                        Ok(r) if r.status() == 200 => r.bytes().await.is_ok(),
                        Ok(r) => {
                            let status = r.status();
                            let text = r.text().await.unwrap_or_default();
                            eprintln!("{status}: {}", text.chars().take(300).collect::<String>());
                            false
                        }
                        Err(e) => {
                            eprintln!("{e}");
                            false
                        }
                    };
                    if !ok {
                        break;
                    }
                }
                if start < warm_until {
                    continue;
                }
                if ok {
                    times.push(start.elapsed());
                } else {
                    errors += 1;
                }
            }
            (times, errors)
        }));
    }
    let (mut times, mut errors) = (Vec::new(), 0);
    for w in workers {
        if let Ok((t, e)) = w.await {
            times.extend(t);
            errors += e;
        }
    }
    times.sort();
    println!(
        "{}",
        json!({"requests": times.len(), "errors": errors,
               "per_second": times.len() as f64 / seconds,
               "p50_ms": quantile(&times, 0.50), "p99_ms": quantile(&times, 0.99)})
    );
}
