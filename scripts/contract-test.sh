#!/usr/bin/env bash
# Contract tests: validate openapi.yaml, then run schemathesis (all checks, every phase,
# stateful over the spec's links) against a live `idempay serve --demo` on SQLite and,
# when TEST_DATABASE_URL names a PostgreSQL server, on PostgreSQL too.
#
#   scripts/contract-test.sh                 # SQLite (+ PostgreSQL if TEST_DATABASE_URL)
#   MAX_EXAMPLES=100 scripts/contract-test.sh
#
# Python tools live in a venv under target/, so nothing is installed system-wide.
set -euo pipefail
cd "$(dirname "$0")/.."

MAX_EXAMPLES="${MAX_EXAMPLES:-25}"
venv=target/contract-venv
if [ ! -x "$venv/bin/schemathesis" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet 'schemathesis==4.32.5' 'openapi-spec-validator==0.9.0'
fi

echo "== openapi-spec-validator"
"$venv/bin/openapi-spec-validator" openapi.yaml

cargo build --quiet
work=$(mktemp -d)
server_pid=""
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

run_against() { # $1: backend name, $2: DATABASE_URL
    local name=$1 url=$2 log="$work/$1.log"
    target/debug/idempay serve --demo --bind 127.0.0.1:0 --database-url "$url" \
        --slow-processor-ms 200 --lease-secs 5 --reaper-interval-secs 1 >"$log" 2>"$work/$name.err" &
    server_pid=$!
    for _ in $(seq 1 100); do grep -q '^idempay listening on ' "$log" && break; sleep 0.1; done
    local base
    base=$(sed -n 's/^idempay listening on //p' "$log" | head -n1)
    [ -n "$base" ] || { cat "$work/$name.err"; echo "server did not start" >&2; return 1; }
    echo "== schemathesis on $name ($base), up to $MAX_EXAMPLES examples per operation"
    "$venv/bin/schemathesis" --config-file scripts/schemathesis.toml run openapi.yaml --url "$base" \
        --header 'Authorization: Bearer sk_test_demo' \
        --checks all --phases examples,coverage,fuzzing,stateful \
        --max-examples "$MAX_EXAMPLES" --workers 2 --seed 1 \
        --suppress-health-check too_slow,filter_too_much \
        --report junit --report-dir "target/contract-report/$name"
    kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=""
}

run_against sqlite "sqlite://$work/contract.db"
if [ -n "${TEST_DATABASE_URL:-}" ]; then
    db="idempay_contract_$$"
    admin="$TEST_DATABASE_URL"
    psql "$admin" -qc "CREATE DATABASE $db" >/dev/null
    pg_url="${admin%/*}/$db"
    run_against postgres "$pg_url" || { psql "$admin" -qc "DROP DATABASE $db WITH (FORCE)"; exit 1; }
    psql "$admin" -qc "DROP DATABASE $db WITH (FORCE)" >/dev/null
fi
echo "contract tests passed"
