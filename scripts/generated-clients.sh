#!/usr/bin/env bash
# Clients generated from the spec, as people who test against it generate them:
# 1. spec/openapi-3.0.yaml is what openapi.yaml gives (scripts/clients/openapi-3.0.sh);
# 2. openapi-python-client (pinned, in the contract-test venv) generates a client from
#    openapi.yaml; against a live demo server a 201, its replay, a 409 and a 402 must
#    parse into their typed models (scripts/clients/python_smoke.py);
# 3. progenitor (cargo-progenitor, pinned, cached) generates a Rust client
#    from the 3.0 rendition, which must compile.
# What it installs or builds stays under target/, or in $IDEMPAY_CI_CACHE (default
# ~/.cache/idempay-ci) for the Rust generator, so a second run is quick.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/clients/openapi-3.0.sh --check

venv=target/contract-venv
"$venv/bin/pip" show openapi-python-client >/dev/null 2>&1 ||
    "$venv/bin/pip" install --quiet 'openapi-python-client==0.29.1'
out=target/generated
rm -rf "$out/python" && mkdir -p "$out/python"
"$venv/bin/openapi-python-client" generate --path openapi.yaml --meta none \
    --output-path "$out/python/idempay_client" >"$out/python.log" 2>&1 ||
    { cat "$out/python.log"; exit 1; }
# The only part a generator may leave out is the YAML body of the spec routes.
if grep -E 'Unable to process schema|Cannot parse response' "$out/python.log" | grep -v 'application/yaml'; then
    echo "openapi-python-client dropped a schema or a response (above)" >&2
    exit 1
fi

cargo build --quiet --bin idempay
# shellcheck source=scripts/lib/demo-server.sh
. scripts/lib/demo-server.sh
start_demo_server
echo "== the generated Python client against $base"
PYTHONPATH="$out/python" "$venv/bin/python" scripts/clients/python_smoke.py "$base"

# cargo-progenitor takes about 10 minutes to build on 2 cores: it and the generated
# crate's build are cached outside the clone (CI starts from a clean clone each time).
cache="${IDEMPAY_CI_CACHE:-$HOME/.cache/idempay-ci}"
tools="$cache/tools"
[ -x "$tools/bin/cargo-progenitor" ] ||
    cargo install --locked --quiet --root "$tools" cargo-progenitor@0.15.1
rm -rf "$out/rust"
"$tools/bin/cargo-progenitor" progenitor -i spec/openapi-3.0.yaml -o "$out/rust" \
    -n idempay-client -v 0.1.0 >"$out/rust.log" 2>&1 || { cat "$out/rust.log"; exit 1; }
echo "== the progenitor client compiles"
CARGO_TARGET_DIR="$cache/generated-rust-target" cargo build --quiet --manifest-path "$out/rust/Cargo.toml"
echo "generated clients: Python (openapi-python-client 0.29.1) and Rust (progenitor) work"
