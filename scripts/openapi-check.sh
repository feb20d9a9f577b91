#!/usr/bin/env bash
# Validates the API's OpenAPI document (served at /openapi.json; edge/src/openapi/openapi.json,
# derived from the request and answer types) as OpenAPI 3.1 with openapi-spec-validator (from
# target/lint-venv, scripts/lint-tools-setup.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/lint-tools-setup.sh
target/lint-venv/bin/openapi-spec-validator edge/src/openapi/openapi.json
