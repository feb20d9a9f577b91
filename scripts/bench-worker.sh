#!/usr/bin/env bash
# Reproduces the Worker figures of docs/performance.md: the WASM Worker under `wrangler dev --local` (workerd)
# over the 1M+ token corpus of scripts/bench-corpus.sh, plus the deployable bundle's size.
set -euo pipefail
cd "$(dirname "$0")/.."
corpus=$(bash scripts/bench-corpus.sh)
eval "$(scripts/worker-toolchain.sh)"
scripts/worker-build.sh
scripts/worker-dry-run.sh
CTXGATE_REQUIRE_WORKER=1 CTXGATE_BENCH_CORPUS="$corpus" cargo bench --locked --bench worker
