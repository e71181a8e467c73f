#!/usr/bin/env bash
# Mutation testing of the core with cargo-mutants (installed under target/tools; never
# part of CI's time budget): every mutant of the idempotency engine, the payment and
# refund phases, the simulator, the reaper and the refund reservation must make some
# test fail.
#
#   scripts/mutants.sh                 # the whole core (about 10 hours on 2 cores)
#   scripts/mutants.sh fencing         # the claim, fencing, finish, refund reservation
#   scripts/mutants.sh recovery        # payment phases, reaper, simulator
#
# The tests run against SQLite and PostgreSQL (TEST_DATABASE_URL, default the local
# server). Results: target/mutants/mutants.out/{caught,missed,timeout,unviable}.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
tools=target/tools
if [ ! -x "$tools/bin/cargo-mutants" ]; then
    cargo install --locked --quiet --root "$tools" cargo-mutants@27.1.0
fi
export TEST_DATABASE_URL="${TEST_DATABASE_URL:-postgres://postgres@127.0.0.1:5432/postgres}"
# The HTTP tests mostly wait on the network and the database: six at a time on two
# cores take a third of the time of two. nextest stops a mutant's run at its first
# failing test.
export NEXTEST_TEST_THREADS="${NEXTEST_TEST_THREADS:-6}"
# The core, in two sets: `fencing` (the claim, the fenced writes, the decision, and the
# refund reservation) first, then `recovery` (the payment phases, the reaper, the
# simulator). Parsing (fingerprint, key) and the replay cache are left to their unit
# tests here (mutants there die in under a second but cost a build each).
mutate() { # OUTPUT-NAME ARGS…
    local name=$1
    shift
    "$tools/bin/cargo-mutants" mutants --output "target/mutants-$name" \
        --test-tool nextest --timeout 300 --build-timeout 600 "$@"
}
case "${1:-all}" in
    fencing)
        mutate fencing -f src/idempotency/finish.rs -f src/idempotency/record.rs \
            -f src/idempotency/decide.rs -f src/idempotency/engine.rs -f 'src/refunds/*.rs'
        mutate reservation -f src/db/payments.rs --re 'reserve|end_reservation|refundable' ;;
    recovery)
        mutate recovery -f src/idempotency/recovery.rs -f 'src/payments/*.rs' \
            -f src/movement.rs -f src/processor/simulator.rs -f 'src/reaper/*.rs' ;;
    all) "$0" fencing; "$0" recovery ;;
    *) mutate custom "$@" ;;
esac
