#!/usr/bin/env bash
# Derives spec/openapi-3.0.yaml from openapi.yaml (the one source, OpenAPI 3.1) for
# generators that read only 3.0 (progenitor among them), with @apiture/openapi-down-convert
# (pinned, installed under target/npm-tools). The converter leaves one 3.1 form behind,
# `anyOf: [{$ref}, {type: 'null'}]` (a nullable reference); scripts/clients/nullable_refs.py
# rewrites it as 3.0 says it: `allOf: [{$ref}]` with `nullable: true`.
#
#   scripts/clients/openapi-3.0.sh           # rewrite spec/openapi-3.0.yaml
#   scripts/clients/openapi-3.0.sh --check   # fail if it is not what openapi.yaml gives
set -euo pipefail
cd "$(dirname "$0")/../.."
tools=target/npm-tools
if [ ! -x "$tools/node_modules/.bin/openapi-down-convert" ]; then
    npm install --silent --prefix "$tools" --no-audit --no-fund @apiture/openapi-down-convert@0.14.2
fi
venv=target/contract-venv
if [ ! -x "$venv/bin/openapi-spec-validator" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet 'schemathesis==4.32.5' 'openapi-spec-validator==0.9.0'
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
"$tools/node_modules/.bin/openapi-down-convert" -i openapi.yaml -o "$out"
"$venv/bin/python" scripts/clients/nullable_refs.py "$out"
"$venv/bin/openapi-spec-validator" "$out" >/dev/null
if [ "${1:-}" = "--check" ]; then
    if ! cmp -s "$out" spec/openapi-3.0.yaml; then
        diff -u spec/openapi-3.0.yaml "$out" | head -n 40 >&2
        echo "spec/openapi-3.0.yaml is stale: run scripts/clients/openapi-3.0.sh" >&2
        exit 1
    fi
    echo "spec/openapi-3.0.yaml matches openapi.yaml and is valid OpenAPI 3.0"
else
    cp "$out" spec/openapi-3.0.yaml
    echo "wrote spec/openapi-3.0.yaml"
fi
