#!/usr/bin/env bash
# Lints the Dockerfile with hadolint (from target/lint-venv, scripts/lint-tools-setup.sh). No
# registry of base images is reachable here, so the image itself is built only when
# CTXGATE_DOCKER_BUILD=1 and a docker daemon answers.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/lint-tools-setup.sh
target/lint-venv/bin/hadolint --failure-threshold warning Dockerfile
echo "container-lint.sh: Dockerfile: no warnings or errors ($(target/lint-venv/bin/hadolint --version))"

if [ "${CTXGATE_DOCKER_BUILD:-0}" = 1 ]; then
  docker build -t ctxgate:test .
  docker run --rm ctxgate:test --version
fi
