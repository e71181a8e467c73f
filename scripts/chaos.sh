#!/usr/bin/env bash
# The chaos suite (see examples/chaos/main.rs): storms, a PostgreSQL outage, SIGKILLs on
# PostgreSQL and on SQLite, each ended by an audit of the money. Needs PostgreSQL's
# binaries (initdb, pg_ctl): it makes a throwaway cluster of its own and never touches
# another server. Takes about a minute and a half once built.
#
#   scripts/chaos.sh                 # every scenario
#   scripts/chaos.sh outage sqlite   # some of them
#
# Prints a markdown table and writes it to target/chaos-results.md; exits 1 on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --quiet --bins --example chaos
mkdir -p target
./target/debug/examples/chaos "$@" | tee target/chaos-results.md
