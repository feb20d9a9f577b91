#!/usr/bin/env bash
# Installs the AWS test tools into target/aws-venv (idempotent, quiet on re-run):
#   moto[server]  - a local S3 + DynamoDB server for the integration tests (see scripts/moto_server.py)
#   cfn-lint      - checks infra/template.yaml (see scripts/cfn-lint.sh). Pinned to 1.53.x, the last
#                   line that runs the real SAM transform (aws-sam-translator) and lints the
#                   CloudFormation it produces; from 1.54 on cfn-lint only checks AWS::Serverless::*
#                   resources against a schema and misses, e.g., a wrong property in an event source.
# The venv is made with the machine's python3; the packages come from PyPI at pinned versions.
# A stamp file records what was installed, so a re-run only checks the stamp and that the venv
# still has the packages.
set -euo pipefail
cd "$(dirname "$0")/.."

MOTO_VERSION=5.2.5
CFN_LINT_VERSION=1.53.3
SAM_TRANSLATOR_VERSION=1.115.0

venv=target/aws-venv
stamp="$venv/.ctxgate-aws-tools"
want="moto[server]==$MOTO_VERSION cfn-lint==$CFN_LINT_VERSION aws-sam-translator==$SAM_TRANSLATOR_VERSION"

# Finds the packages without importing them (importing moto and cfnlint takes about a second).
have_modules='import importlib.util as u, sys; sys.exit(0 if all(u.find_spec(m) for m in ("moto", "flask", "werkzeug", "boto3", "cfnlint", "samtranslator")) else 1)'

fail() { printf 'aws-tools-setup: %s\n' "$*" >&2; exit 1; }

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$venv/bin/python" ] && [ -x "$venv/bin/cfn-lint" ] \
  && "$venv/bin/python" -c "$have_modules" >/dev/null 2>&1; then
  exit 0
fi

command -v python3 >/dev/null 2>&1 || fail "python3 not found; install Python 3 (with the venv module) first"

if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import sys' >/dev/null 2>&1; then
  rm -rf "$venv"
  python3 -m venv "$venv" || fail "could not create the venv $venv with python3 -m venv (on Debian: apt-get install python3-venv)"
fi

rm -f "$stamp"
log="$venv/pip-install.log"
# shellcheck disable=SC2086 # $want is a list of requirement specifiers
if ! "$venv/bin/python" -m pip install --quiet --disable-pip-version-check $want >"$log" 2>&1; then
  tail -n 30 "$log" >&2
  fail "pip install of $want into $venv failed (last lines above; full log: $log)"
fi
"$venv/bin/python" -c 'import moto.server, werkzeug.serving, boto3, cfnlint, samtranslator' \
  || fail "packages installed but moto.server / werkzeug / boto3 / cfnlint / samtranslator do not import in $venv"
[ -x "$venv/bin/cfn-lint" ] || fail "cfn-lint entry point missing from $venv/bin after install"

printf '%s' "$want" >"$stamp"
echo "aws-tools-setup: installed $want into $venv"
