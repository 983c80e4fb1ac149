#!/usr/bin/env bash
# Added latency of the gateway's Anthropic Messages front end beside its Chat Completions one
# (for BENCHMARKS.md): wrk against the stand-in model server directly (Chat) and through the
# gateway on /v1/chat/completions and /v1/messages, side by side in one run, whole and
# streamed, at 1 and 64 concurrent connections. The same question each way: one user message,
# one tool, the stand-in's Qwen3 reply with a think block and one <tool_call>.
# Not run in CI. Needs wrk (apt-get install wrk).
#   crates/toolcall-serve/bench/dialects.sh [seconds per row, default 10]
#   NO_BUILD=1 skips the release builds.
set -euo pipefail
cd "$(dirname "$0")/../../.."
SECS=${1:-10}
if [ -z "${NO_BUILD:-}" ]; then
    cargo build --release -q -p toolcall-cli --bin toolcall
    cargo build --release -q -p toolcall-serve --example standin
fi
TARGET=${CARGO_TARGET_DIR:-target}/release
"$TARGET/examples/standin" 127.0.0.1:9111 >/dev/null &
STANDIN=$!
"$TARGET/toolcall" serve --upstream http://127.0.0.1:9111 --listen 127.0.0.1:9112 >/dev/null 2>&1 &
GATEWAY=$!
LUA=$(mktemp --suffix .lua)
trap 'kill $STANDIN $GATEWAY 2>/dev/null || true; rm -f "$LUA"' EXIT
cat >"$LUA" <<'LUA'
wrk.method = "POST"
wrk.headers["content-type"] = "application/json"
wrk.body = os.getenv("BODY")
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("RESULT %.3f %.3f %.0f %d\n", latency:percentile(50) / 1000,
    latency:percentile(99) / 1000, summary.requests / (summary.duration / 1e6),
    e.connect + e.read + e.write + e.status + e.timeout))
end
LUA
sleep 1
CHAT_TOOL='{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string"}},"required":["city"]}}}'
MSG_TOOL='{"name":"get_weather","input_schema":{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string"}},"required":["city"]}}'
chat() { echo "{\"model\":\"qwen3-8b\",\"messages\":[{\"role\":\"user\",\"content\":\"weather?\"}],\"tools\":[$CHAT_TOOL],\"stream\":$1}"; }
messages() { echo "{\"model\":\"qwen3-8b\",\"max_tokens\":256,\"messages\":[{\"role\":\"user\",\"content\":\"weather?\"}],\"tools\":[$MSG_TOOL],\"stream\":$1}"; }
run() { # url body concurrency -> "p50_ms p99_ms rps errors"
    local threads=$(($3 < 2 ? 1 : 2))
    BODY="$2" wrk -t"$threads" -c"$3" -d"${SECS}s" -s "$LUA" "$1" | awk '/^RESULT/ {print $2, $3, $4, $5}'
}
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '| mode | concurrency | direct Chat p50 / p99 ms | gateway Chat p50 / p99 ms | added p50 / p99 ms | gateway Messages p50 / p99 ms | added p50 / p99 ms | errors |\n|---|---|---|---|---|---|---|---|\n'
for stream in false true; do
    for c in 1 64; do
        read -r dp50 dp99 _ de < <(run http://127.0.0.1:9111/v1/chat/completions "$(chat $stream)" $c)
        read -r cp50 cp99 _ ce < <(run http://127.0.0.1:9112/v1/chat/completions "$(chat $stream)" $c)
        read -r mp50 mp99 _ me < <(run http://127.0.0.1:9112/v1/messages "$(messages $stream)" $c)
        mode=$([ $stream = true ] && echo streamed || echo whole)
        python3 -c "print('| $mode | $c | $dp50 / $dp99 | $cp50 / $cp99 | %.3f / %.3f | $mp50 / $mp99 | %.3f / %.3f | $de / $ce / $me |' % ($cp50-$dp50, $cp99-$dp99, $mp50-$dp50, $mp99-$dp99))"
    done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
