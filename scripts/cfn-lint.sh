#!/usr/bin/env bash
# Lints infra/template.yaml with cfn-lint from target/aws-venv (installed by scripts/aws-tools-setup.sh).
# Fails on any error or warning; informational findings are printed but do not fail.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/aws-tools-setup.sh
template=infra/template.yaml
[ -f "$template" ] || { echo "cfn-lint.sh: $template not found" >&2; exit 1; }
# cfn-lint's exit code is a bit mask: 2 = error, 4 = warning, 8 = informational, 1 = cfn-lint itself failed.
set +e
target/aws-venv/bin/cfn-lint --format parseable "$template"
rc=$?
set -e
if [ $((rc & 7)) -ne 0 ]; then
  echo "cfn-lint.sh: $template has errors or warnings (cfn-lint exit code $rc)" >&2
  exit 1
fi
echo "cfn-lint.sh: $template: no errors, no warnings"
