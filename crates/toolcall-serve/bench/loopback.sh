#!/usr/bin/env bash
# Requests per second through the gateway beside the stand-in model server directly and
# the bare proxy (examples/bare_proxy.rs: the same HTTP stack relaying bytes, reading
# nothing), over loopback, with wrk (apt-get install wrk; gateway.sh needs oha). For a
# loaded machine: the three targets are measured in turn, ROUNDS times, each row in the
# same rounds, and the table gives the median of each with the ratios of the medians; the
# CPU each server process used (utime + stime from /proc) is divided by the requests it
# answered, which does not depend on what else runs. Prints the load average before and
# after. Not run in CI.
#   crates/toolcall-serve/bench/loopback.sh [seconds per measurement, default 5]
#   ROUNDS=5 (rounds), CLIENTS="1 16 64" (concurrent connections per row),
#   PIN=1 (pin wrk and the stand-in to CPU 0, the bare proxy and the gateway each to CPU 1:
#   each proxy then runs one tokio worker on the same one core),
#   PROFILE=release (the cargo profile whose binaries are run: release or profiling),
#   NO_BUILD=1 (skip the builds), BIN=DIR (run DIR/toolcall, DIR/examples/standin and
#   DIR/examples/bare_proxy, built earlier), TOOLCALL_LOG=off|info (the gateway's log filter; its log
#   goes to /dev/null, so `info` counts formatting one JSON line per request and per call).
set -euo pipefail
cd "$(dirname "$0")/../../.."
SECS=${1:-5}
ROUNDS=${ROUNDS:-5}
CLIENTS=${CLIENTS:-1 16 64}
PROFILE=${PROFILE:-release}
if [ -z "${NO_BUILD:-}" ]; then
    cargo build --profile "$PROFILE" -q -p toolcall-cli --bin toolcall
    cargo build --profile "$PROFILE" -q -p toolcall-serve --example standin --example bare_proxy
fi
TARGET=${BIN:-${CARGO_TARGET_DIR:-target}/$PROFILE}
# `$(on N) command...`: the command pinned to CPU N when PIN=1 (taskset execs it: same pid).
on() { if [ -n "${PIN:-}" ]; then echo "taskset -c $1"; fi; }
$(on 0) "$TARGET/examples/standin" 127.0.0.1:9121 >/dev/null &
STANDIN=$!
TOOLCALL_LOG=${TOOLCALL_LOG:-info} $(on 1) "$TARGET/toolcall" serve --upstream http://127.0.0.1:9121 \
    --listen 127.0.0.1:9122 --archive "$(mktemp -d)/sessions.sqlite" >/dev/null 2>&1 &
GATEWAY=$!
# Without a bare_proxy binary its column reads 0 (the gateway and direct are still measured).
BARE=$STANDIN
if [ -x "$TARGET/examples/bare_proxy" ]; then
    $(on 1) "$TARGET/examples/bare_proxy" 127.0.0.1:9123 http://127.0.0.1:9121 >/dev/null &
    BARE=$!
fi
LUA=$(mktemp --suffix .lua)
trap 'kill $STANDIN $GATEWAY $BARE 2>/dev/null || true; rm -f "$LUA"' EXIT
cat >"$LUA" <<'LUA'
wrk.method = "POST"
wrk.headers["content-type"] = "application/json"
wrk.body = os.getenv("BODY")
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format("RESULT %.0f %d %d %.3f\n", summary.requests / (summary.duration / 1e6),
    summary.requests, e.connect + e.read + e.write + e.status + e.timeout,
    latency:percentile(99) / 1000))
end
LUA
sleep 1
TOOL='{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"city":{"type":"string"},"unit":{"type":"string"}},"required":["city"]}}}'
body() { echo "{\"model\":\"qwen3-8b\",\"messages\":[{\"role\":\"user\",\"content\":\"weather?\"}],\"tools\":[$TOOL],\"stream\":$1}"; }
cpu() { awk '{print $14 + $15}' "/proc/$1/stat"; } # clock ticks
TICK=$(getconf CLK_TCK)
run() { # port stream clients -> "rps requests errors p99_ms"
    local threads=$(($3 < 2 ? 1 : 2))
    BODY="$(body "$2")" $(on 0) wrk -t"$threads" -c"$3" -d"${SECS}s" -s "$LUA" "http://127.0.0.1:$1/v1/chat/completions" |
        awk '/^RESULT/ {print $2, $3, $4, $5}'
}
# A first round warms the connection pools, the tools cache and the allocator.
for port in 9121 9122 $([ "$BARE" != "$STANDIN" ] && echo 9123); do SECS=1 run $port false 1 >/dev/null; done
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores; ${SECS}s per measurement, $ROUNDS rounds${PIN:+; pinned}"
printf '| mode | clients | direct req/s | bare proxy req/s | gateway req/s | gateway / direct | bare / direct | gateway / bare | p99 ms: direct / bare / gateway | CPU µs per request: stand-in / bare proxy / gateway | errors |\n|---|---|---|---|---|---|---|---|---|---|---|\n'
median() { tr ' ' '\n' | sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
for stream in false true; do
    for c in $CLIENTS; do
        d=() b=() g=() dp=() bp=() gp=() errors=0
        sc=0 sr=0 bc=0 br=0 gc=0 gr=0
        for _ in $(seq "$ROUNDS"); do
            s0=$(cpu $STANDIN)
            read -r rps n e p99 < <(run 9121 $stream "$c")
            d+=("$rps") dp+=("$p99") sr=$((sr + n)) errors=$((errors + e)) sc=$((sc + $(cpu $STANDIN) - s0))
            if [ "$BARE" != "$STANDIN" ]; then
                b0=$(cpu $BARE)
                read -r rps n e p99 < <(run 9123 $stream "$c")
                b+=("$rps") bp+=("$p99") br=$((br + n)) errors=$((errors + e)) bc=$((bc + $(cpu $BARE) - b0))
            else
                b+=(0) bp+=(0)
            fi
            g0=$(cpu $GATEWAY)
            read -r rps n e p99 < <(run 9122 $stream "$c")
            g+=("$rps") gp+=("$p99") gr=$((gr + n)) errors=$((errors + e)) gc=$((gc + $(cpu $GATEWAY) - g0))
        done
        dm=$(echo "${d[*]}" | median) bm=$(echo "${b[*]}" | median) gm=$(echo "${g[*]}" | median)
        dpm=$(echo "${dp[*]}" | median) bpm=$(echo "${bp[*]}" | median) gpm=$(echo "${gp[*]}" | median)
        mode=$([ $stream = true ] && echo streamed || echo whole)
        python3 -c "
t=$TICK
print('| $mode | $c | $dm | $bm | $gm | %.2f | %.2f | %.2f | $dpm / $bpm / $gpm | %.0f / %.0f / %.0f | $errors |' % (
    $gm/$dm, $bm/$dm, $gm/max($bm,1), $sc/t/max($sr,1)*1e6, $bc/t/max($br,1)*1e6, $gc/t/max($gr,1)*1e6))"
        echo "<!-- rounds, req/s: direct ${d[*]}; bare ${b[*]}; gateway ${g[*]}; p99 ms: direct ${dp[*]}; bare ${bp[*]}; gateway ${gp[*]} -->"
    done
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
