#!/usr/bin/env bash
# CPU per whole request of two gateway builds side by side, for a loaded machine: both
# gateways up at once, each pinned to CPU 1, in front of one stand-in (CPU 0, wrk on CPU 0),
# measured in turn (A then B, ROUNDS times) so that each pair sees about the same load. CPU
# from /proc/PID/stat (user + system, and user alone) divided by the requests answered.
# Needs wrk and the binaries built earlier (profiling or release). Not run in CI.
#   crates/toolcall-serve/bench/pair.sh DIR_A DIR_B   (DIR/toolcall; DIR_A/examples/standin)
#   C=16 (clients), ROUNDS=5, SECS=3, ENV_A="NAME=VALUE" (an environment variable for A only)
set -euo pipefail
A_DIR=$1 B_DIR=$2
C=${C:-16} ROUNDS=${ROUNDS:-5} SECS=${SECS:-3}
taskset -c 0 "$A_DIR/examples/standin" 127.0.0.1:9151 >/dev/null &
S=$!
env ${ENV_A:-TOOLCALL_PAIR=A} TOOLCALL_LOG=info taskset -c 1 "$A_DIR/toolcall" serve --upstream http://127.0.0.1:9151 \
    --listen 127.0.0.1:9152 --archive "$(mktemp -d)/s.sqlite" >/dev/null 2>&1 &
A=$!
TOOLCALL_LOG=info taskset -c 1 "$B_DIR/toolcall" serve --upstream http://127.0.0.1:9151 \
    --listen 127.0.0.1:9153 --archive "$(mktemp -d)/s.sqlite" >/dev/null 2>&1 &
B=$!
LUA=$(mktemp --suffix .lua)
trap 'kill $S $A $B 2>/dev/null || true; rm -f "$LUA"' EXIT
sleep 1
TOOL='{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string"}},"required":["city"]}}}'
export BODY="{\"model\":\"qwen3-8b\",\"messages\":[{\"role\":\"user\",\"content\":\"weather?\"}],\"tools\":[$TOOL],\"stream\":false}"
cat >"$LUA" <<'LUA'
wrk.method = "POST"
wrk.headers["content-type"] = "application/json"
wrk.body = os.getenv("BODY")
done = function(summary, latency, requests)
  io.write(string.format("RESULT %.0f %d\n", summary.requests / (summary.duration / 1e6), summary.requests))
end
LUA
ticks() { awk '{print $14 + $15, $14}' "/proc/$1/stat"; } # user + system, user
TICK=$(getconf CLK_TCK)
one() { # pid port -> "req/s cpu_us (user user_us)"
    local c0 u0 c1 u1 rps n
    read -r c0 u0 < <(ticks "$1")
    read -r rps n < <(taskset -c 0 wrk -t2 -c"$C" -d"${SECS}s" -s "$LUA" "http://127.0.0.1:$2/v1/chat/completions" |
        awk '/^RESULT/ {print $2, $3}')
    read -r c1 u1 < <(ticks "$1")
    python3 -c "print('$rps', round(($c1-$c0)/$TICK/$n*1e6), '(user %d)' % round(($u1-$u0)/$TICK/$n*1e6))"
}
SECS=1 one $A 9152 >/dev/null
SECS=1 one $B 9153 >/dev/null
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); $C clients; A = $A_DIR ${ENV_A:-}, B = $B_DIR"
for r in $(seq "$ROUNDS"); do
    echo "round $r: A $(one $A 9152) | B $(one $B 9153)   (req/s, CPU µs per request (user µs))"
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
