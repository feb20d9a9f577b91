#!/usr/bin/env bash
# The question benchmark: natural-language questions whose answer is a few known lines of code
# (scripts/questions/). Builds the corpora and the sets from the bare git mirrors, runs ctxgate
# and the chunk BM25 reference on them at 2k / 4k / 8k tokens, and prints both side by side.
#
# Env: BENCH_MIRROR_ROOT (default /work/.mirror), CTXGATE_BIN (default target/release/ctxgate,
# not built here), NAME (tag of ctxgate's run file, default ctxgate), CTXGATE_RANK_WEIGHTS
# (passed through), QUESTION_SETS (default hand,docstring,settings), BUDGETS (default
# 2000,4000,8000), SPLIT (held|train|all, default all), JOBS (default 2), KEEP_HOME=1 to reuse
# ctxgate's indexes of an earlier run of the same NAME.
# Writes target/questions/: corpora*/, {hand,docstring,settings}.jsonl, runs/<NAME>.jsonl,
# runs/bm25.jsonl, runs/<NAME>.md (the table).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=target/questions
MIRROR=${BENCH_MIRROR_ROOT:-/work/.mirror}
BIN=${CTXGATE_BIN:-target/release/ctxgate}
NAME=${NAME:-ctxgate}
SETS=${QUESTION_SETS:-hand,docstring,settings}
BUDGETS=${BUDGETS:-2000,4000,8000}
SPLIT=${SPLIT:-all}
JOBS=${JOBS:-2}
HERE=scripts/questions
mkdir -p "$OUT/runs"
stamp() { echo "[$(date +%T)] $*" >&2; }

# -- setup: tiktoken in a venv, its o200k_base ranks built from js-tiktoken (npm)
if ! "$OUT/venv/bin/python" -c 'import tiktoken' 2>/dev/null; then
  stamp "venv with tiktoken"
  python3 -m venv "$OUT/venv"
  "$OUT/venv/bin/pip" install -q tiktoken
fi
export TIKTOKEN_CACHE_DIR="$PWD/$OUT/tiktoken-cache"
if ! TIKTOKEN_CACHE_DIR="$TIKTOKEN_CACHE_DIR" "$OUT/venv/bin/python" -c \
  'import tiktoken; tiktoken.get_encoding("o200k_base")' 2>/dev/null; then
  stamp "o200k_base ranks from js-tiktoken"
  mkdir -p "$OUT/npm"
  (cd "$OUT/npm" && npm pack --silent js-tiktoken@1.0.21 >/dev/null && tar xzf js-tiktoken-1.0.21.tgz)
  python3 "$HERE/tiktoken_ranks.py" --js "$OUT/npm/package/dist/ranks/o200k_base.js" \
    --cache "$TIKTOKEN_CACHE_DIR"
fi
[[ -x "$BIN" ]] || { echo "no ctxgate binary at $BIN: build it (cargo build --release) or set CTXGATE_BIN" >&2; exit 1; }

stamp "build.py"
python3 "$HERE/build.py" --mirror-root "$MIRROR" --out "$OUT"

HOME_DIR="$OUT/home-$NAME"
[[ "${KEEP_HOME:-0}" == 1 ]] || rm -rf "$HOME_DIR"
stamp "ctxgate ($BIN) -> $OUT/runs/$NAME.jsonl"
python3 "$HERE/run.py" --data "$OUT" --bin "$BIN" --home "$HOME_DIR" --sets "$SETS" \
  --budgets "$BUDGETS" --split "$SPLIT" --jobs "$JOBS" \
  ${CTXGATE_RANK_WEIGHTS:+--weights "$CTXGATE_RANK_WEIGHTS"} --out "$OUT/runs/$NAME.jsonl" >/dev/null

stamp "bm25 -> $OUT/runs/bm25.jsonl"
"$OUT/venv/bin/python" "$HERE/bm25_baseline.py" --data "$OUT" --sets "$SETS" --budgets "$BUDGETS" \
  --split "$SPLIT" --out "$OUT/runs/bm25.jsonl" >/dev/null

stamp "done"
python3 "$HERE/table.py" "bm25=$OUT/runs/bm25.jsonl" "$NAME=$OUT/runs/$NAME.jsonl" | tee "$OUT/runs/$NAME.md"
