#!/usr/bin/env bash
# Mutation testing of the core with cargo-mutants (installed under target/tools; never
# part of CI's time budget): every mutant of the idempotency engine, the payment and
# refund phases, the simulator, the reaper and the refund reservation must make some
# test fail.
#
#   scripts/mutants.sh                      # the whole core (hours on 2 cores)
#   scripts/mutants.sh -f src/idempotency/finish.rs   # one file
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
if [ "$#" -eq 0 ]; then
    set -- -f 'src/idempotency/*.rs' -f 'src/payments/*.rs' -f 'src/refunds/*.rs' \
        -f src/processor/simulator.rs -f 'src/reaper/*.rs' -f src/db/payments.rs
fi
"$tools/bin/cargo-mutants" mutants --output target/mutants --test-tool nextest \
    --timeout 300 --build-timeout 600 "$@"
