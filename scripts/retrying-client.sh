#!/usr/bin/env bash
# Runs examples/retrying_client.rs against a live `idempay serve --demo` (SQLite): with
# the lost response (`drop-response`), the answer replaced by a 503 (`fail-after`), the
# test card that fails once (`pm_card_flaky`) and the one whose answer is lost
# (`pm_card_timeout`), each must end in one succeeded payment; a declined card must stop
# at once (exit 1, one attempt). The README walkthrough shows the same runs.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --quiet --bin idempay --example retrying_client
work=$(mktemp -d)
server_pid=""
cleanup() { [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

target/debug/idempay serve --demo --bind 127.0.0.1:0 --database-url "sqlite://$work/demo.db" \
    >"$work/out" 2>"$work/err" &
server_pid=$!
for _ in $(seq 1 100); do grep -q '^idempay listening on ' "$work/out" && break; sleep 0.1; done
base=$(sed -n 's/^idempay listening on //p' "$work/out" | head -n1)
[ -n "$base" ] || { cat "$work/err"; echo "server did not start" >&2; exit 1; }

client() { target/debug/examples/retrying_client --base "$base" "$@"; }
for run in "--fault drop-response" "--fault fail-after" "--fault fail-before" \
    "--card pm_card_flaky" "--card pm_card_timeout"; do
    echo "== retrying_client $run"
    # shellcheck disable=SC2086
    client $run
done
echo "== retrying_client --card pm_card_declined (must stop after one attempt)"
if client --card pm_card_declined >"$work/declined"; then
    cat "$work/declined"; echo "a declined payment reported success" >&2; exit 1
fi
cat "$work/declined"
grep -q 'attempt 2' "$work/declined" && { echo "a permanent error was retried" >&2; exit 1; }
echo "retrying client: every run ended as it must"
