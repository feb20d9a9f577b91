#!/usr/bin/env bash
# Instructions per warm 32k `POST /v1/context` on deno, natively, counted by callgrind; and the
# answers to compare builds by. Run on purpose (needs valgrind; never part of the test command).
#
#   bash scripts/count-instructions.sh BIN [OUT_DIR]
#
# Indexes target/bench-scale/deno (as scripts/bench-scale.sh exports it) into OUT_DIR/home once,
# then for BIN:
#   - OUT_DIR/answers-<label>/: 32 answers of `BIN serve` (8 queries, three of them questions, at
#     2k / 8k / 32k / 128k), without the signed continuation token; `diff -r` two labels' folders
#     to check that a change leaves answers byte-identical;
#   - callgrind over `BIN serve`: 20 warm calls (the five queries of scripts/profile_stages.py in
#     turn), counters zeroed, 50 calls, dumped; prints `instructions_per_call=` (the dump's total
#     over 50) and leaves the dump in OUT_DIR/callgrind-<label>.out for callgrind_annotate.
# <label> is BIN's file name; copy each build aside under its own name to compare builds.
# CTXGATE_COUNT_CORPUS=mono counts over target/bench-scale/mono instead (any folder name there that
# scripts/bench-scale.sh exported; give each corpus its own OUT_DIR).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=$(realpath "$1")
out=$(realpath -m "${2:-target/count-instructions}")
label=$(basename "$bin")
name=${CTXGATE_COUNT_CORPUS:-deno}
corpus=$PWD/target/bench-scale/$name
export PROFILE_PROJECT=$name
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 1; }
[ -d "$corpus" ] || { echo "no $corpus: run scripts/bench-scale.sh once (it exports deno)" >&2; exit 1; }
mkdir -p "$out"
export CTXGATE_HOME=$out/home
if [ ! -s "$out/key" ]; then
  rm -rf "$CTXGATE_HOME"
  "$bin" org create acme >/dev/null
  "$bin" key create --org acme 2>/dev/null | head -n1 >"$out/key"
  "$bin" project add --org acme --name "$name" "$corpus" >/dev/null
fi
key=$(head -n1 "$out/key")

wait_listening() { # FILE: the first line `serve --format json` prints, once it is there
  for _ in $(seq 600); do [ -s "$1" ] && break; sleep 0.2; done
  python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["listening"])' <"$1"
}

# The answers.
rm -f "$out/serve.out"
"$bin" serve --addr 127.0.0.1:0 --format json >"$out/serve.out" 2>/dev/null &
pid=$!
url=$(wait_listening "$out/serve.out")
python3 - "$url" "$key" "$out/answers-$label" "$name" <<'PY'
import http.client, json, os, sys
url, key, folder, project = sys.argv[1:5]
os.makedirs(folder, exist_ok=True)
queries = [
    "where are command line arguments parsed and validated",
    "how is a file read from disk and its errors reported",
    "where is the HTTP server started and requests routed",
    "how are tests for the module loader organised",
    "where is configuration loaded and merged with defaults",
    "what is the default timeout for fetch",
    "fix panic when permission prompt is denied",
    "add support for node:sqlite in the npm compatibility layer",
]
conn = http.client.HTTPConnection(url.split("//", 1)[1])
for i, q in enumerate(queries):
    for budget in (2000, 8000, 32000, 128000):
        conn.request("POST", "/v1/context", json.dumps({"project": project, "query": q, "budget": budget}),
                     {"authorization": f"Bearer {key}", "content-type": "application/json"})
        answer = json.loads(conn.getresponse().read())
        answer.pop("continuation", None)
        with open(f"{folder}/{i}-{budget}.json", "w") as f:
            json.dump(answer, f, indent=1, sort_keys=True)
PY
kill "$pid"; wait "$pid" 2>/dev/null || true

# The instructions.
rm -f "$out/callgrind-$label.out"* "$out/serve.out"
valgrind --tool=callgrind --callgrind-out-file="$out/callgrind-$label.out" \
  "$bin" serve --addr 127.0.0.1:0 --format json >"$out/serve.out" 2>"$out/valgrind.err" &
pid=$!
url=$(wait_listening "$out/serve.out")
python3 scripts/profile_stages.py drive "$url" "$key" "$pid" 20 >/dev/null
callgrind_control --zero "$pid" >/dev/null 2>&1
python3 scripts/profile_stages.py drive "$url" "$key" "$pid" 50 >/dev/null
callgrind_control --dump "$pid" >/dev/null 2>&1
kill "$pid"; wait "$pid" 2>/dev/null || true
dump=$out/callgrind-$label.out.1
total=$(sed -n 's/^summary: //p' "$dump")
echo "$label instructions_per_call=$(python3 -c "print(f'{$total / 50 / 1e6:.3f} M')") dump=$dump answers=$out/answers-$label"
