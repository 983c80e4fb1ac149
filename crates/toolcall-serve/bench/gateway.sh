#!/usr/bin/env bash
# Added latency and throughput of `toolcall serve` (BENCHMARKS.md): oha against the stand-in
# model server directly, through a bare proxy (examples/bare_proxy.rs: the same hyper server
# and reqwest client relaying bytes, reading nothing: the cost of the second hop alone) and
# through the gateway, side by side in one run, whole and streamed, at 1, 64 and 256
# concurrent requests, unpaced; then paced streams; then the gateway's memory per open
# stream. Prints the load average before the run.
# Not run in CI. oha is installed into $TOOLS (outside the repository) on first use.
#   crates/toolcall-serve/bench/gateway.sh [requests per level, default 2000]
set -euo pipefail
cd "$(dirname "$0")/../../.."
N=${1:-2000}
TOOLS=${TOOLS:-$HOME/.cache/toolcall-bench-tools}
OHA="$TOOLS/bin/oha"
if [ ! -x "$OHA" ]; then
    cargo install --locked --root "$TOOLS" oha
fi
# Two builds: a target flag such as --example limits a build to those targets.
cargo build --release -q -p toolcall-cli --bin toolcall
cargo build --release -q -p toolcall-serve --example standin --example bare_proxy
TARGET=${CARGO_TARGET_DIR:-target}/release
"$TARGET/examples/standin" 127.0.0.1:9101 >/dev/null &
STANDIN=$!
"$TARGET/toolcall" serve --upstream http://127.0.0.1:9101 --listen 127.0.0.1:9102 >/dev/null 2>&1 &
GATEWAY=$!
"$TARGET/examples/bare_proxy" 127.0.0.1:9103 http://127.0.0.1:9101 >/dev/null &
BARE=$!
trap 'kill $STANDIN $GATEWAY $BARE 2>/dev/null || true' EXIT
sleep 1
TOOLS_JSON='[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string"}},"required":["city"]}}}]'
body() { echo "{\"model\":\"qwen3-8b\",\"messages\":[{\"role\":\"user\",\"content\":\"weather?\"}],\"tools\":$TOOLS_JSON,\"stream\":$1}"; }
run() { # url stream concurrency -> "p50_ms p99_ms rps"
    "$OHA" --no-tui --output-format json -n "$N" -c "$3" -m POST -H 'content-type: application/json' \
        -d "$(body "$2")" "$1/v1/chat/completions" |
        python3 -c 'import json,sys; d=json.load(sys.stdin); p=d["latencyPercentiles"]; s=d["summary"]; print("%.3f %.3f %.0f %.4f" % (p["p50"]*1000, p["p99"]*1000, s["requestsPerSec"], s["successRate"]))'
}
echo "load average before the run: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '| mode | concurrency | direct p50 / p99 ms | bare proxy p50 / p99 ms | gateway p50 / p99 ms | direct req/s | bare proxy req/s | gateway req/s | bare / direct | gateway / direct | gateway / bare |\n|---|---|---|---|---|---|---|---|---|---|---|\n'
for stream in false true; do
    for c in 1 64 256; do
        read -r dp50 dp99 drps dok < <(run http://127.0.0.1:9101 $stream $c)
        read -r bp50 bp99 brps bok < <(run http://127.0.0.1:9103 $stream $c)
        read -r gp50 gp99 grps gok < <(run http://127.0.0.1:9102 $stream $c)
        mode=$([ $stream = true ] && echo streamed || echo whole)
        python3 -c "print('| $mode | $c | $dp50 / $dp99 | $bp50 / $bp99 | $gp50 / $gp99 | $drps | $brps | $grps | %.2f | %.2f | %.2f |' % ($brps/$drps, $grps/$drps, $grps/$brps))"
        [ "$dok" = "1.0000" ] && [ "$bok" = "1.0000" ] && [ "$gok" = "1.0000" ] || echo "(success rates: direct $dok, bare proxy $bok, gateway $gok)"
    done
done
echo "load average after the unpaced run: $(cut -d' ' -f1-3 /proc/loadavg)"
# Streams paced like a model server: a model writes tokens at a pace (10 ms between chunks is
# 100 tokens/s, faster than most servers give one stream), so what counts for a client is
# the throughput of paced streams, not how fast a proxy can relay a reply written at once.
kill $STANDIN; wait $STANDIN 2>/dev/null || true
"$TARGET/examples/standin" 127.0.0.1:9101 10 >/dev/null &
STANDIN=$!
sleep 1
for c in 64 256; do
    read -r dp50 dp99 drps dok < <(run http://127.0.0.1:9101 true $c)
    read -r gp50 gp99 grps gok < <(run http://127.0.0.1:9102 true $c)
    python3 -c "print('| streamed, 10 ms between chunks | $c | $dp50 / $dp99 | $gp50 / $gp99 | %.3f / %.3f | $drps | $grps | %.2f |' % ($gp50-$dp50, $gp99-$dp99, $grps/$drps))"
    [ "$dok" = "1.0000" ] && [ "$gok" = "1.0000" ] || echo "(success rates: direct $dok, gateway $gok)"
done
# Memory per open stream: 256 streams held open by a slow stand-in (50 ms between chunks).
kill $STANDIN; wait $STANDIN 2>/dev/null || true
"$TARGET/examples/standin" 127.0.0.1:9101 50 >/dev/null &
STANDIN=$!
sleep 1
rss() { awk '/VmRSS/ {print $2}' /proc/$GATEWAY/status; }
streams() {
    "$OHA" --no-tui -n 256 -c 256 -m POST -H 'content-type: application/json' -d "$(body true)" \
        http://127.0.0.1:9102/v1/chat/completions >/dev/null
}
# A first round warms the upstream connection pool and the allocator; the second is measured.
streams
idle=$(rss)
streams &
LOAD=$!
sleep 2
busy=$(rss)
wait $LOAD
echo
echo "gateway RSS: idle ${idle} KiB, with 256 open streams ${busy} KiB: $(( (busy - idle) / 256 )) KiB per open stream"
