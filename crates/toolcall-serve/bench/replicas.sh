#!/usr/bin/env bash
# Server-side turns per archive backend (BENCHMARKS.md, issue 24): real `toolcall serve`
# processes with the world pack in front of a stand-in model server (examples/
# standin_turns.rs: a turn is two model requests and one `set_attribute` call), on loopback,
# all started at once and measured in turn by a closed-loop client (examples/turn_load.rs):
#   memory     --archive :memory:           (SQLite in RAM: the no-archive baseline)
#   sqlite     --archive FILE               (one replica; SQLite's defaults, WAL)
#   pg1        --archive postgres://…/one   (one replica)
#   pg2        --archive postgres://…/two   (two replicas, the client alternates requests)
#   direct     the turn's two model requests sent straight to the stand-in (no gateway)
# Every request starts a new session. PostgreSQL is a throwaway cluster (Debian's initdb /
# pg_ctl, as the `postgres` user under root) in a temp dir, with its default durability
# (fsync on). Prints the load average before and after, and one table row per round.
# Not run in CI; loopback only; bounded: ROUNDS x 2 concurrencies x 5 targets x (SECONDS + 1) s.
#   crates/toolcall-serve/bench/replicas.sh [SECONDS per measurement, default 5] [ROUNDS, default 2]
#   NO_BUILD=1 skips the release builds.
set -euo pipefail
cd "$(dirname "$0")/../../.."
SECONDS_EACH=${1:-5}
ROUNDS=${2:-2}
if [ -z "${NO_BUILD:-}" ]; then
    cargo build --release -q -p toolcall-cli --bin toolcall
    cargo build --release -q -p toolcall-serve --example standin_turns --example turn_load
fi
TARGET=${CARGO_TARGET_DIR:-target}/release
PG_BIN=${TOOLCALL_PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -1)}
WORK=$(mktemp -d /tmp/toolcall-replicas-XXXXXX)
chmod 755 "$WORK"
PIDS=()
as_pg() { if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi; }
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    [ -d "$WORK/pg" ] && as_pg "$PG_BIN/pg_ctl" -D "$WORK/pg" -m immediate -w stop >/dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap cleanup EXIT

"$TARGET/examples/standin_turns" 127.0.0.1:9201 &
PIDS+=($!)
[ "$(id -u)" = 0 ] && chown postgres:postgres "$WORK"
as_pg "$PG_BIN/initdb" -D "$WORK/pg" -U postgres -A trust -E UTF8 --locale=C >/dev/null
as_pg "$PG_BIN/pg_ctl" -D "$WORK/pg" -l "$WORK/pg.log" -w -t 60 \
    -o "-k $WORK -h 127.0.0.1 -p 9250 -c max_connections=200" start >/dev/null
for db in one two; do as_pg "$PG_BIN/createdb" -h 127.0.0.1 -p 9250 -U postgres "$db"; done
PG=postgres://postgres@127.0.0.1:9250

gateway() { # port archive
    "$TARGET/toolcall" serve --upstream http://127.0.0.1:9201 --listen "127.0.0.1:$1" \
        --pack world --pack-opt world.world=examples/world/world.json \
        --tool-switches "$WORK/switches-$1.json" --archive "$2" >"$WORK/gw-$1.log" 2>&1 &
    PIDS+=($!)
}
gateway 9211 :memory:
gateway 9212 "$WORK/sessions.sqlite"
gateway 9213 "$PG/one"
gateway 9214 "$PG/two"
gateway 9215 "$PG/two"
for port in 9211 9212 9213 9214 9215; do
    for _ in $(seq 100); do grep -q "listening on" "$WORK/gw-$port.log" && break; sleep 0.2; done
    grep -q "listening on" "$WORK/gw-$port.log" || { cat "$WORK/gw-$port.log"; exit 1; }
done

USER_MSG='{"role":"user","content":"Set Jack'"'"'s mood."}'
TURN="[{\"model\":\"qwen3-8b\",\"messages\":[$USER_MSG]}]"
# The two model requests of a turn as the gateway sends them (a call, then its result).
CALL='{"role":"assistant","content":null,"tool_calls":[{"id":"call_0","type":"function","function":{"name":"set_attribute","arguments":"{}"}}]}'
RESULT='{"role":"tool","tool_call_id":"call_0","content":"{\"status\":\"ok\"}"}'
DIRECT="[{\"model\":\"qwen3-8b\",\"messages\":[$USER_MSG]},{\"model\":\"qwen3-8b\",\"messages\":[$USER_MSG,$CALL,$RESULT]}]"
url() { echo "http://127.0.0.1:$1/v1/chat/completions"; }
measure() { # concurrency name -> table row
    local c=$1 name=$2 out
    case $name in
        direct) out=$("$TARGET/examples/turn_load" "$SECONDS_EACH" "$c" "$DIRECT" "$(url 9201)") ;;
        memory) out=$("$TARGET/examples/turn_load" "$SECONDS_EACH" "$c" "$TURN" "$(url 9211)") ;;
        sqlite) out=$("$TARGET/examples/turn_load" "$SECONDS_EACH" "$c" "$TURN" "$(url 9212)") ;;
        pg1) out=$("$TARGET/examples/turn_load" "$SECONDS_EACH" "$c" "$TURN" "$(url 9213)") ;;
        pg2) out=$("$TARGET/examples/turn_load" "$SECONDS_EACH" "$c" "$TURN" "$(url 9214)" "$(url 9215)") ;;
    esac
    python3 -c "import json,sys; d=json.loads(sys.argv[1]); print('| %s | %s | %.0f | %.1f | %.1f | %d |' % (sys.argv[2], sys.argv[3], d['per_second'], d['p50_ms'], d['p99_ms'], d['errors']))" "$out" "$name" "$c"
}
echo "load average before the run: $(cut -d' ' -f1-3 /proc/loadavg) ($(nproc) cores)"
echo "| archive | connections | turns/s | p50 ms | p99 ms | errors |"
echo "|---|---|---|---|---|---|"
for round in $(seq "$ROUNDS"); do
    for c in 1 16; do
        for name in direct memory sqlite pg1 pg2; do measure "$c" "$name"; done
    done
done
echo "load average after the run: $(cut -d' ' -f1-3 /proc/loadavg)"
# Every turn archived its call with one result: counted in the PostgreSQL databases.
for db in one two; do
    echo "$db: $(as_pg "$PG_BIN/psql" -X -q -A -t -h 127.0.0.1 -p 9250 -U postgres -d "$db" -c \
        "SELECT (SELECT count(*) FROM sessions) || ' sessions, ' || (SELECT count(*) FROM calls) || ' calls, ' || (SELECT count(*) FROM results) || ' results'")"
done
