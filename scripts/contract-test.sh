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
# The stateful phase chains the spec's links (order → payment → refund). It runs on its
# own: after the fuzzing phase in the same run it stops after ~20 scenarios whatever its
# budget, and rarely gets as far as a refund.
STATEFUL_EXAMPLES="${STATEFUL_EXAMPLES:-100}"
SEED="${SEED:-1}"
# One worker: schemathesis generates in threads, and CPython 3.11's ast.parse is not
# thread-safe (gh-106905: "SystemError: AST constructor recursion depth mismatch" from
# hypothesis describing a filter lambda), which aborts an operation with a runtime error.
WORKERS="${WORKERS:-1}"
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
pg_admin="" pg_db=""
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
    [ -n "$pg_db" ] && psql "$pg_admin" -qc "DROP DATABASE IF EXISTS $pg_db WITH (FORCE)" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

# Hooks for schemathesis (SCHEMATHESIS_HOOKS):
# - a check: `422 payment_mismatch` (amount or currency differ from the order's) depends
#   on the order's state, like 404 and 409, so schemathesis.toml lets createPayment
#   answer 422 to schema-valid data. The check keeps that narrow: a schema-valid payment
#   must never get any other 422 (`validation_failed` would mean the spec accepts what
#   the server refuses);
# - distinct Idempotency-Keys for distinct requests (see `before_call`).
cat >"$work/hooks.py" <<'PY'
import hashlib
import json
import re

import schemathesis


@schemathesis.check
def valid_payment_rejected_only_on_mismatch(ctx, response, case):
    meta = case.meta
    if meta is None or not meta.generation.mode.is_positive:
        return None
    if case.operation.label != "POST /payments" or response.status_code != 422:
        return None
    try:
        code = json.loads(response.content).get("code")
    except (ValueError, AttributeError):
        code = None
    if code != "payment_mismatch":
        raise AssertionError(
            f"Schema-valid payment rejected with 422 `{code}`; only `payment_mismatch` "
            "(a state conflict with the order) may answer a schema-valid payment with 422"
        )
    return None


@schemathesis.check
def only_documented_unavailability(ctx, response, case):
    """A 503 in a healthy run is only ever a processor outcome the test cards produce."""
    if response.status_code != 503:
        return None
    try:
        code = json.loads(response.content).get("code")
    except (ValueError, AttributeError):
        code = None
    allowed = {"processor_unavailable", "processor_timeout", "still_processing"}
    processor = ("POST /payments", "POST /payments/{id}/refunds")
    if code == "test_fault" and case.operation.method.upper() == "POST":
        return None  # asked for with Idempay-Test-Fault (fail-before, fail-after)
    if case.operation.label not in processor or code not in allowed:
        raise AssertionError(
            f"503 `{code}` on {case.operation.label}: a healthy server answers 503 only for "
            "a processor outcome of a payment or refund"
        )
    return None


def tame_test_fault(case):
    """Keep `Idempay-Test-Fault` within what an HTTP check can judge: `drop-response`
    (no answer at all, by design) is removed and a `delay=MS` shortened to 50 ms at most;
    `fail-before`, `fail-after` and malformed values are sent as generated. The HTTP
    tests (tests/api/test_faults.rs) cover every fault with a retry."""
    if not case.headers:
        return
    name = next((h for h in case.headers if h.lower() == "idempay-test-fault"), None)
    value = case.headers.get(name) if name else None
    if not isinstance(value, str):
        return
    positive = case.meta is not None and case.meta.generation.mode.is_positive
    if value == "drop-response":
        del case.headers[name]
    elif positive and not re.fullmatch(r"fail-before|fail-after|drop-response|delay=[0-9]{1,5}", value):
        # The coverage phase sends values that break the parameter's `pattern` (such as
        # "0") as positive cases; they are answered 400 invalid_test_fault, as documented.
        del case.headers[name]
    elif value.startswith("delay=") and value[6:].isdigit() and int(value[6:]) > 50:
        case.headers[name] = "delay=50"


@schemathesis.hook
def before_call(ctx, case, kwargs):
    """Give distinct requests distinct Idempotency-Keys.

    In the fuzzing and stateful phases, Hypothesis draws keys from the spec's examples
    and shrinks the rest toward a few short values, so different requests share a key
    and get `409 idempotency_key_reused`: a created order is then rarely paid, and a
    payment never refunded. The key of a positive case gets a suffix derived from the
    request (method, path, body), so an identical request still reuses its key (and is
    replayed) while different requests no longer collide. The examples and coverage
    phases send their keys unchanged (edge cases of the key syntax), and so does every
    negative case and a key too long to extend.
    """
    tame_test_fault(case)
    meta = case.meta
    if meta is None or meta.phase.name not in ("fuzzing", "stateful"):
        return
    if not meta.generation.mode.is_positive or not case.headers:
        return
    name = next((h for h in case.headers if h.lower() == "idempotency-key"), None)
    key = case.headers[name] if name else None
    if not isinstance(key, str) or not key:
        return
    body = case.body if isinstance(case.body, (dict, list, str, int, float, bool)) else None
    seed = json.dumps([case.method, case.formatted_path, body, key], sort_keys=True, default=str)
    suffix = "-" + hashlib.sha256(seed.encode()).hexdigest()[:16]
    quoted = len(key) >= 2 and key.startswith('"') and key.endswith('"')
    inner = key[1:-1] if quoted else key
    length = len(inner.replace("\\\\", "_").replace('\\"', "_")) if quoted else len(inner)
    if length + len(suffix) > 255:
        return
    case.headers[name] = f'"{inner}{suffix}"' if quoted else inner + suffix
PY

schemathesis() { # $1: base URL, $2: backend name, $3: phases, $4: max examples
    SCHEMATHESIS_HOOKS="$work/hooks.py" \
    "$venv/bin/schemathesis" --config-file scripts/schemathesis.toml run openapi.yaml --url "$1" \
        --header 'Authorization: Bearer sk_test_demo' \
        --checks all --phases "$3" --max-examples "$4" --workers "$WORKERS" --seed "$SEED" \
        --suppress-health-check too_slow,filter_too_much \
        --report junit --report-dir "target/contract-report/$2/${3//,/-}"
}

run_against() { # $1: backend name, $2: DATABASE_URL
    local name=$1 url=$2 log="$work/$1.log"
    target/debug/idempay serve --demo --bind 127.0.0.1:0 --database-url "$url" \
        --slow-processor-ms 200 --lease-secs 5 --reaper-interval-secs 1 \
        --auth-failures-per-minute 1000000 >"$log" 2>"$work/$name.err" &
    server_pid=$!
    for _ in $(seq 1 100); do grep -q '^idempay listening on ' "$log" && break; sleep 0.1; done
    local base
    base=$(sed -n 's/^idempay listening on //p' "$log" | head -n1)
    [ -n "$base" ] || { cat "$work/$name.err"; echo "server did not start" >&2; return 1; }
    echo "== schemathesis on $name ($base), up to $MAX_EXAMPLES examples per operation," \
        "$STATEFUL_EXAMPLES stateful scenarios"
    local rc=0
    schemathesis "$base" "$name" examples,coverage,fuzzing "$MAX_EXAMPLES" || rc=$?
    schemathesis "$base" "$name" stateful "$STATEFUL_EXAMPLES" || rc=$?
    kill "$server_pid"; wait "$server_pid" 2>/dev/null || true; server_pid=""
    # The server's own log, for what no response showed (a panic in a detached task, a
    # database error a retry hid) or what a check may not have sampled: any ERROR line,
    # 500 or panic fails the run.
    if sed 's/\x1b\[[0-9;]*m//g' "$work/$name.err" | grep -E 'panicked at|status=500| ERROR ' >"$work/$name.faults"; then
        echo "server log on $name: errors, 500s or panics:" >&2
        head -n 20 "$work/$name.faults" >&2
        rc=1
    fi
    return "$rc"
}

# Both backends always run; the script fails if either does. (`set -e` does not apply
# inside a function called as `f || …`, so the status is carried explicitly.)
failed=""
run_against sqlite "sqlite://$work/contract.db" || failed="$failed sqlite"
if [ -n "${TEST_DATABASE_URL:-}" ]; then
    pg_admin="$TEST_DATABASE_URL" pg_db="idempay_contract_$$"
    psql "$pg_admin" -qc "CREATE DATABASE $pg_db" >/dev/null
    run_against postgres "${pg_admin%/*}/$pg_db" || failed="$failed postgres"
    psql "$pg_admin" -qc "DROP DATABASE $pg_db WITH (FORCE)" >/dev/null
    pg_db=""
fi
if [ -n "$failed" ]; then
    echo "contract tests FAILED on:$failed" >&2
    exit 1
fi
echo "contract tests passed"
