#!/usr/bin/env bash
# Runs examples/retrying_client.rs against a live `idempay serve --demo` (SQLite): with
# the lost response (`drop-response`), the answer replaced by a 503 (`fail-after`), the
# test card that fails once (`pm_card_flaky`) and the one whose answer is lost
# (`pm_card_timeout`), each must end in one succeeded payment; a declined card must stop
# at once (exit 1, one attempt). The README walkthrough shows the same runs.
set -euo pipefail
cd "$(dirname "$0")/.."

cargo build --quiet --bin idempay --example retrying_client
# shellcheck source=scripts/lib/demo-server.sh
. scripts/lib/demo-server.sh
start_demo_server
work=$demo_work

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
