#!/usr/bin/env bash
# Installs schemathesis (the property-based API tester the API suite's contract test runs against
# /openapi.json on both hosts, tests/api/contract.rs) into target/contract-venv. Idempotent and
# quiet on re-run; its own venv, apart from target/lint-venv, as its dependencies pin their own
# jsonschema.
set -euo pipefail
cd "$(dirname "$0")/.."

want="schemathesis==4.32.5"
venv=target/contract-venv
stamp="$venv/.ctxgate-contract-tools"

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$venv/bin/schemathesis" ]; then
  exit 0
fi
command -v python3 >/dev/null 2>&1 || { echo "contract-tools-setup: python3 not found" >&2; exit 1; }
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
rm -f "$stamp"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$want"
printf '%s' "$want" >"$stamp"
echo "contract-tools-setup: installed $want into $venv"
