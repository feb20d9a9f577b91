#!/usr/bin/env bash
# Scores `ctxgate assemble` on the visible retrieval benchmark in ../shared/bench (real commit
# queries over five repositories). Needs the repositories' git mirrors, brought with the `fetch`
# tool (see ../shared/bench/README.md): BENCH_MIRROR_ROOT=<folder holding owner+name/repo>.
# Nothing is written into ../shared; the bench is copied to target/retrieval-bench.
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
home="$bench/ctxgate-home"
.venv/bin/python run_product.py --name "${NAME:-ctxgate}" --jobs 2 --timeout 300 --fresh \
  --cmd "$root/target/release/ctxgate --data-dir $home -q assemble --repo {repo_dir} --query-file {query_file} --budget {budget} --format json"
