#!/usr/bin/env bash
# The benchmark: idempay in release against its ceilings, in one run, on PostgreSQL and
# on SQLite. Loads (wrk, 2 threads, BENCH_SECONDS each, default 10):
#   A  new-key POST /orders at 8 and 32 connections
#   B  replays of one finished key at 32 connections
#   C  90 % new keys, 10 % retries of earlier keys, 32 connections
#   D  POST /payments with pm_card_visa (processor latency 0), 32 connections
#   A32 again with 1,000,000 finished records in the table, and one reaper pass
#   deleting them once expired (records/s)
# Ceilings, measured in the same run on the same machine:
#   pgbench running the statements the server issues for A and B (scripts/bench/*.sql)
#   for SQLite, the statements of A from one Rust thread (`bench ceiling`)
#   a trivial actix-web route (GET / → "ok") for the HTTP ceiling
# Prints one markdown table (and writes it to target/bench-results.md).
#
#   scripts/bench.sh                      # both backends
#   BENCH_BACKENDS=sqlite scripts/bench.sh
#   BENCH_SKIP_FILL=1 scripts/bench.sh    # without the 1M-record run
set -euo pipefail
cd "$(dirname "$0")/.."
SECONDS_PER_LOAD="${BENCH_SECONDS:-10}"
BACKENDS="${BENCH_BACKENDS:-postgres sqlite}"
PG_ADMIN="${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
export BENCH_LUA="$PWD/scripts/bench" BENCH_RUN="r$$" BENCH_ORDERS_PER_THREAD=200000

if ! command -v wrk >/dev/null; then
    [ "$(id -u)" = 0 ] || { echo "install wrk (apt-get install wrk)" >&2; exit 1; }
    apt-get install -y -qq wrk >/dev/null
fi
cargo build --release --quiet --bins --example bench
bin=target/release/idempay helper=target/release/examples/bench
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
ms() { # wrk's "1.23ms" / "456.00us" / "1.20s" → milliseconds, two decimals
    local value
    case "$1" in
        *us) value=$(echo "scale=3; ${1%us} / 1000" | bc) ;;
        *ms) value=${1%ms} ;;
        *s) value=$(echo "scale=3; ${1%s} * 1000" | bc) ;;
    esac
    printf '%.2f' "$value"
}
# wrk_load CONNECTIONS SCRIPT URL → "req/s p50 p99 errors"
wrk_load() {
    local out
    out=$(wrk -t2 -c"$1" -d"${SECONDS_PER_LOAD}s" --latency ${2:+-s "$2"} "$3")
    echo "$(awk '/^Requests\/sec/ {print $2}' <<<"$out") $(ms "$(awk '$1 == "50%" {print $2}' <<<"$out")")" \
        "$(ms "$(awk '$1 == "99%" {print $2}' <<<"$out")") $(awk '/Non-2xx/ {print $5}' <<<"$out" | grep . || echo 0)"
}
pgbench_tps() { # CLIENTS SCRIPT URL → transactions/s; its mean latency in $work/latency
    pgbench -n -M prepared -c "$1" -j 2 -T "$SECONDS_PER_LOAD" -f "$2" "$3" 2>/dev/null |
        awk -v out="$work/latency" '/^latency average/ {print $4 > out} /^tps/ {print $3; exit}'
}
start_server() { # DATABASE_URL
    local port
    port=$(free_port)
    "$bin" serve --demo --bind "127.0.0.1:$port" --database-url "$1" --reaper-interval-secs 0 \
        >"$work/server.out" 2>"$work/server.log" &
    server_pid=$!
    pids+=("$server_pid")
    for _ in $(seq 1 100); do grep -q '^idempay listening' "$work/server.out" && break; sleep 0.1; done
    base="http://127.0.0.1:$port"
}
stop_server() { kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; }
peak_rss() { awk '/VmHWM/ {printf "%.0f MB", $2 / 1024}' "/proc/$server_pid/status"; }
ratio() { [ -n "$2" ] && [ "$2" != "0" ] && echo "scale=2; $1 / $2" | bc | sed 's/^\./0./' || echo "—"; }

rows=()
row() { # LABEL "rps p50 p99 errors" CEILING-LABEL CEILING
    local rps p50 p99 errors
    read -r rps p50 p99 errors <<<"$2"
    last_rps=$rps
    echo "bench: $1: $2" >&2
    rows+=("| $1 | $(printf '%.0f' "$rps") | $p50 | $p99 | $errors | $(peak_rss) | $3 $(printf '%.0f' "${4:-0}") | $(ratio "$rps" "${4:-}") |")
}

trivial_port=$(free_port)
"$helper" trivial "$trivial_port" "$(nproc)" & pids+=("$!")
sleep 1
# The trivial route is measured again right before each B (the machine is shared and
# noisy: a ratio compares loads of the same minute).
trivial() { read -r trivial_rps _ _ _ <<<"$(wrk_load 32 "" "http://127.0.0.1:$trivial_port/")"; }

for backend in $BACKENDS; do
    if [ "$backend" = postgres ]; then
        url="${PG_ADMIN%/*}/idempay_bench"
        psql "$PG_ADMIN" -qc "DROP DATABASE IF EXISTS idempay_bench WITH (FORCE)" -c "CREATE DATABASE idempay_bench" >/dev/null
    else
        url="sqlite://$work/bench.db"
    fi
    start_server "$url"
    curl -s -o /dev/null "$base/orders" -H 'Authorization: Bearer sk_test_demo' \
        -H 'Content-Type: application/json' -H 'Idempotency-Key: bench-replay' \
        -d '{"amount":1999,"currency":"EUR","metadata":{"cart":"c_1"}}'
    if [ "$backend" = postgres ]; then
        a8=$(pgbench_tps 8 scripts/bench/pg_new_order.sql "$url")
        label8="pgbench (mean $(cat "$work/latency") ms)"
        a32=$(pgbench_tps 32 scripts/bench/pg_new_order.sql "$url")
        label="pgbench (mean $(cat "$work/latency") ms)"
        b32=$(pgbench_tps 32 scripts/bench/pg_replay.sql "$url")
    else
        a8=$("$helper" ceiling "$url" "$SECONDS_PER_LOAD") a32=$a8 b32="" label="one thread" label8="one thread"
    fi
    row "$backend A new keys, 8 conns" "$(wrk_load 8 scripts/bench/new_order.lua "$base")" "$label8" "$a8"
    row "$backend A new keys, 32 conns" "$(wrk_load 32 scripts/bench/new_order.lua "$base")" "$label" "$a32"
    empty_a32=$(printf '%.0f' "$last_rps")
    trivial
    row "$backend B replays, 32 conns" "$(wrk_load 32 scripts/bench/replay.lua "$base")" "trivial route" "$trivial_rps"
    [ -n "$b32" ] && rows+=("| $backend B's lookup on a cache miss, alone (pgbench, 32 clients) | $(printf '%.0f' "$b32") | | | | | | |")
    row "$backend C 90 % new, 10 % retries" "$(wrk_load 32 scripts/bench/mixed.lua "$base")" "$label" "$a32"
    "$helper" orders "$url" $((2 * BENCH_ORDERS_PER_THREAD))
    row "$backend D payments, 32 conns" "$(wrk_load 32 scripts/bench/pay.lua "$base")" "" ""
    if [ -z "${BENCH_SKIP_FILL:-}" ]; then
        "$helper" fill "$url" 1000000
        row "$backend A, 32 conns, 1M records" "$(wrk_load 32 scripts/bench/new_order.lua "$base")" "A on an empty table" "$empty_a32"
        stop_server
        read -r purged purge_rate <<<"$("$helper" purge "$url")"
        rows+=("| $backend reaper: delete $purged expired records | $purge_rate records/s | | | | | A at 32 conns $empty_a32 | $(ratio "$purge_rate" "$empty_a32") |")
    else
        stop_server
    fi
done

{
    echo "Machine: $(nproc) cores ($(awk -F': ' '/model name/ {print $2; exit}' /proc/cpuinfo)), $(awk '/MemTotal/ {printf "%.0f GiB", $2 / 1048576}' /proc/meminfo); ${SECONDS_PER_LOAD} s per load, wrk -t2"
    echo
    echo "| load | req/s | p50 ms | p99 ms | errors | peak RSS | ceiling | ratio |"
    echo "|---|---|---|---|---|---|---|---|"
    printf '%s\n' "${rows[@]}"
} | tee target/bench-results.md
