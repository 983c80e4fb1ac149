#!/usr/bin/env bash
# Instructions per request of the gateway and of the bare proxy (examples/bare_proxy.rs),
# each run under `valgrind --tool=callgrind` in front of the stand-in, with one keep-alive
# client sending N whole (or streamed) requests: (count after N requests − count after 0) / N.
# Load-independent, for a shared machine; the callgrind files stay in $OUT for
# callgrind_annotate. Not run in CI. Needs the profiling build (symbols):
#   cargo build --profile profiling -p toolcall-cli --bin toolcall
#   cargo build --profile profiling -p toolcall-serve --example standin --example bare_proxy
#   crates/toolcall-serve/bench/instructions.sh [N, default 500] [stream: false|true]
#   TARGETS="gateway bare" (which to count), OUT=/tmp/gw-callgrind, BIN=DIR (binaries built earlier, as loopback.sh), TOOLCALL_LOG=info (the gateway's log filter, logging to /dev/null)
set -euo pipefail
cd "$(dirname "$0")/../../.."
N=${1:-500}
STREAM=${2:-false}
OUT=${OUT:-/tmp/gw-callgrind}
mkdir -p "$OUT"
TARGET=${BIN:-${CARGO_TARGET_DIR:-target}/profiling}
"$TARGET/examples/standin" 127.0.0.1:9131 >/dev/null &
STANDIN=$!
trap 'kill $STANDIN 2>/dev/null || true' EXIT
TOOL='{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string"}},"required":["city"]}}}'
BODY="{\"model\":\"qwen3-8b\",\"messages\":[{\"role\":\"user\",\"content\":\"weather?\"}],\"tools\":[$TOOL],\"stream\":$STREAM}"
client() { # port n: n requests on one keep-alive connection, after one warm-up request
    python3 - "$1" "$2" "$BODY" <<'PY'
import http.client, sys, time
port, n, body = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
for _ in range(600):  # the server starts slowly under valgrind
    try:
        c = http.client.HTTPConnection("127.0.0.1", port); c.connect(); break
    except OSError:
        time.sleep(0.1)
for i in range(n + 1):
    c.request("POST", "/v1/chat/completions", body, {"content-type": "application/json"})
    r = c.getresponse(); r.read()
    assert r.status == 200, r.status
PY
}
measure() { # name port n command...
    local name=$1 port=$2 n=$3
    shift 3
    valgrind --tool=callgrind --callgrind-out-file="$OUT/$name-$n.out" "$@" >/dev/null 2>"$OUT/$name-$n.log" &
    local pid=$!
    client "$port" "$n"
    # TERM, not INT: a background job of a script starts with SIGINT ignored, and the bare
    # proxy installs no handler of its own (the gateway stops on either).
    kill -TERM $pid
    wait $pid 2>/dev/null || true
    awk '/Collected/ {gsub(",", "", $4); print $4}' "$OUT/$name-$n.log"
}
for target in ${TARGETS:-gateway $([ -x "$TARGET/examples/bare_proxy" ] && echo bare)}; do
    counts=()
    for n in 0 "$N"; do
        if [ $target = gateway ]; then
            counts+=("$(TOOLCALL_LOG=${TOOLCALL_LOG:-info} measure gateway 9132 "$n" "$TARGET/toolcall" serve \
                --upstream http://127.0.0.1:9131 --listen 127.0.0.1:9132 --archive "$(mktemp -d)/s.sqlite")")
        else
            counts+=("$(measure bare 9133 "$n" "$TARGET/examples/bare_proxy" 127.0.0.1:9133 http://127.0.0.1:9131)")
        fi
    done
    echo "$target stream=$STREAM: $(( (counts[1] - counts[0]) / N )) instructions per request (${counts[*]} for 0 and $N requests; each after one warm-up request)"
done
