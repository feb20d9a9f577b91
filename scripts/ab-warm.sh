#!/usr/bin/env bash
# Native warm-call time of two or more builds, alternating fresh servers on the same data so that
# they compare on the same machine state. Run on purpose (never part of the test command).
#
#   bash scripts/ab-warm.sh OUT_DIR ROUNDS BIN...
#
# OUT_DIR is a folder `scripts/count-instructions.sh` filled (OUT_DIR/home with the corpus indexed
# as a project named after it, OUT_DIR/key); CTXGATE_COUNT_CORPUS names the project as there
# (default deno). Each round starts `BIN serve` for each BIN in turn, makes 30 warm calls, then
# times 300 (`scripts/profile_stages.py drive`: 32k `POST /v1/context` over its five queries) and
# prints one line per build: the label, then the app's own time (median and mean, ms, from the
# `Server-Timing` header) and the process CPU per call.
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 3 ] || { echo "usage: $0 OUT_DIR ROUNDS BIN..." >&2; exit 2; }
out=$(realpath "$1")
rounds=$2
shift 2
[ -s "$out/key" ] || { echo "no $out/key: run scripts/count-instructions.sh BIN $out first" >&2; exit 1; }
export CTXGATE_HOME=$out/home PROFILE_PROJECT=${CTXGATE_COUNT_CORPUS:-deno}
key=$(head -n1 "$out/key")
listening=$(mktemp)
trap 'rm -f "$listening"' EXIT
for round in $(seq "$rounds"); do
  for bin in "$@"; do
    : >"$listening"
    "$bin" serve --addr 127.0.0.1:0 --format json >"$listening" 2>/dev/null &
    pid=$!
    for _ in $(seq 600); do [ -s "$listening" ] && break; sleep 0.1; done
    url=$(python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["listening"])' <"$listening")
    python3 scripts/profile_stages.py drive "$url" "$key" "$pid" 30 >/dev/null
    echo "round=$round build=$(basename "$bin") $(python3 scripts/profile_stages.py drive "$url" "$key" "$pid" 300)"
    kill "$pid"
    wait "$pid" 2>/dev/null || true
  done
done
