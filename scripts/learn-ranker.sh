#!/usr/bin/env bash
# A learned ranker that is not a weighted sum (issue 25, part 2): boosted trees (LightGBM's
# lambdarank, from PyPI into target/fusion/ltr-venv) trained on the candidate dumps of the
# `train` repositories of scripts/fusion/repos.json and scored, in a simulation of selection,
# on the held-out ones and, when the visible benchmark has been built
# (scripts/bench-retrieval.sh), on it too (scripts/fusion/ltr.py). It prints rows; with
# `--file-boost 3 --export shared/models/learned_trees.json` it writes again the model ctxgate
# ships (the `learned` ranking weight, 0.5 under 32k; docs/retrieval.md). Needs the mirrors, as
# scripts/learn-fusion.sh does:
#   BENCH_MIRROR_ROOT=<folder holding owner+name/repo> bash scripts/learn-ranker.sh [--questions] [ltr.py options]
# With --questions (first), the question benchmark's train split (target/questions, built by
# scripts/questions/build.py; held-out repositories never) is dumped too and trained on with the
# mined commits (issue 50, item 4); add `--cv 4` to choose settings by leave-repos-out
# cross-validation within the train repositories.
# About 3 minutes on two cores after the release build; writes only under target/fusion.
set -euo pipefail
cd "$(dirname "$0")/.."
with_questions=0
if [ "${1:-}" = "--questions" ]; then
  with_questions=1
  shift
fi
: "${BENCH_MIRROR_ROOT:?set BENCH_MIRROR_ROOT to the folder holding the fetched mirrors}"
out=target/fusion
bin=target/release/ctxgate
cargo build --release --locked
[ -f "$out/queries.jsonl" ] || python3 scripts/fusion/mine.py --mirror-root "$BENCH_MIRROR_ROOT" --out "$out"
venv="$out/ltr-venv"
[ -x "$venv/bin/python" ] || { python3 -m venv "$venv" && "$venv/bin/pip" install -q "lightgbm==4.7.0" "numpy<3"; }
# Dumps of the shipped defaults at 8k (the candidate list comes before the budget's steps), the
# trees themselves off: they learn to re-order the weighted sum's ranking.
rm -rf "$out/ltr-dumps"
python3 scripts/fusion/run.py --data "$out" --bin "$bin" --home "$out/home" --budgets 8000 --weights learned=0 \
  --dump "$out/ltr-dumps" --out "$out/ltr-calls.jsonl"
visible=()
bench=target/retrieval-bench
if [ -f "$bench/queries.jsonl" ]; then
  rm -rf "$out/ltr-visible"
  mkdir -p "$out/ltr-visible"
  python3 - "$bench" "$out/ltr-visible" "$bin" <<'PY'
import concurrent.futures, json, os, subprocess, sys
bench, out, binary = sys.argv[1:4]
queries = [json.loads(l) for l in open(os.path.join(bench, "queries.jsonl"))]
def dump(q):
    qf = os.path.join(out, q["id"] + ".q")
    open(qf, "w").write(q["query"])
    env = dict(os.environ, CTXGATE_DUMP_CANDIDATES=os.path.join(out, q["id"] + ".json"),
               CTXGATE_RANK_WEIGHTS="learned=0")
    subprocess.run([binary, "--data-dir", os.path.join(bench, "ctxgate-home"), "-q", "assemble",
                    "--repo", os.path.join(bench, "corpora", q["repo"]), "--query-file", qf,
                    "--budget", "8000", "--format", "json"], env=env, check=True,
                   stdout=subprocess.DEVNULL)
with concurrent.futures.ThreadPoolExecutor(2) as pool:
    list(pool.map(dump, queries))
PY
  visible=(--visible-queries "$bench/queries.jsonl" --visible-dumps "$out/ltr-visible")
fi
questions=()
if [ "$with_questions" = 1 ]; then
  [ -f target/questions/hand.jsonl ] || { echo "no target/questions: run scripts/questions/build.py" >&2; exit 1; }
  rm -rf "$out/ltr-questions"
  python3 scripts/questions/run.py --data target/questions --bin "$bin" --home "$out/questions-home" \
    --sets hand,docstring,settings --split train --budgets 8000 --weights learned=0 \
    --dump "$out/ltr-questions" --out "$out/ltr-questions-calls.jsonl" >/dev/null
  questions=(--questions "$out/ltr-questions")
fi
"$venv/bin/python" scripts/fusion/ltr.py --queries "$out/queries.jsonl" --dumps "$out/ltr-dumps" \
  "${visible[@]}" "${questions[@]}" "$@"
