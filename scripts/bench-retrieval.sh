#!/usr/bin/env bash
# Scores `ctxgate assemble` on the visible retrieval benchmark in ../shared/bench (real commit
# queries over five repositories). Needs the repositories' git mirrors, brought with the `fetch`
# tool (see ../shared/bench/README.md): BENCH_MIRROR_ROOT=<folder holding owner+name/repo>.
# Nothing is written into ../shared; the bench is copied to target/retrieval-bench.
# Runs ctxgate on all 420 queries and the benchmark's BM25 baselines, then prints them side by
# side. With PROBE_BIN=<path to probe> (cargo install probe-code) it also runs that peer and
# ctxgate on the first 20 queries of each repository (probe takes ~5 s a call).
# CTXGATE_ARGS adds options to every `assemble` call (e.g. `--compression medium`; give NAME too,
# so the results are kept apart). With `--dense ...` each corpus is embedded once before the run.
# WITH_HISTORY=1 gives each corpus its git history up to the snapshot (a `.git` whose objects are
# the mirror's, by alternates, HEAD at the snapshot commit), so ctxgate's recency signal has
# something to read; the queries are later commits, so nothing of their future leaks in. The
# `.git` folders are removed again before the baselines run.
# Each call's pieces are kept in target/retrieval-bench/results/$NAME.jsonl (--keep-pieces), for
# diagnostics such as scripts/fusion/skeleton_ceiling.py.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${BENCH_MIRROR_ROOT:?set BENCH_MIRROR_ROOT to the folder holding the fetched mirrors}"
root=$(pwd)
bench="$root/target/retrieval-bench"
cargo build --release --locked
rm -rf "$bench"
cp -r ../shared/bench "$bench"
chmod -R u+w "$bench"
cd "$bench"
python3 build.py --mirror-root "$BENCH_MIRROR_ROOT"
./setup_env.sh
if [ "${WITH_HISTORY:-0}" = 1 ]; then
  python3 - "$BENCH_MIRROR_ROOT" <<'PY'
import json, os, subprocess, sys
root = sys.argv[1]
for r in json.load(open("repos.json"))["repos"]:
    corpus = os.path.join("corpora", r["name"])
    mirror = os.path.join(root, r["slug"].replace("/", "+"), "repo")
    subprocess.run(["git", "-C", corpus, "init", "-q"], check=True)
    with open(os.path.join(corpus, ".git", "objects", "info", "alternates"), "w") as f:
        f.write(os.path.join(os.path.abspath(mirror), "objects") + "\n")
    subprocess.run(["git", "-C", corpus, "update-ref", "HEAD", r["snapshot"]], check=True)
PY
fi
# BENCH_HOME keeps the data directory (indexes, the embedding cache) across runs.
home="${BENCH_HOME:-$bench/ctxgate-home}"
case " ${CTXGATE_ARGS:-} " in
  *" --dense "*)
    # Embed each corpus once, serially, before the timed calls (two parallel first calls would
    # embed the same chunks twice).
    for corpus in corpora/*/; do
      "$root/target/release/ctxgate" --data-dir "$home" assemble --repo "$corpus" \
        --query "warm up" --budget 8000 --format json ${CTXGATE_ARGS} > /dev/null
    done
    ;;
esac
.venv/bin/python run_product.py --name "${NAME:-ctxgate}" --jobs 2 --timeout 300 --fresh --keep-pieces \
  --cmd "$root/target/release/ctxgate --data-dir $home -q assemble --repo {repo_dir} --query-file {query_file} --budget {budget} --format json ${CTXGATE_ARGS:-}"
rm -rf corpora/*/.git
.venv/bin/python baseline_bm25.py > results/baselines.log
names=("${NAME:-ctxgate}")
if [ -n "${PROBE_BIN:-}" ]; then
  .venv/bin/python run_product.py --name "${NAME:-ctxgate}-100" --jobs 2 --limit 20 --fresh \
    --cmd "$root/target/release/ctxgate --data-dir $home -q assemble --repo {repo_dir} --query-file {query_file} --budget {budget} --format json ${CTXGATE_ARGS:-}"
  .venv/bin/python run_product.py --name probe-code --jobs 2 --limit 20 --timeout 300 --fresh \
    --cmd "python3 $root/scripts/peers/probe_adapter.py $PROBE_BIN {repo_dir} {query_file} {budget}"
  names+=("${NAME:-ctxgate}-100" probe-code)
fi
echo
python3 "$root/scripts/bench_table.py" results "${names[@]}"
