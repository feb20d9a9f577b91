#!/usr/bin/env bash
# Load and soak (docs/performance.md): `POST /v1/context` at 16 and 64 concurrent clients for 60 s
# each, on `ctxgate serve` and on the Worker under workerd, over the corpus of
# scripts/bench-corpus.sh. Prints one `load:` line per run (throughput, p50/p99, errors, server
# RSS before/after against the growth bound, whether the quota counted exactly what was
# delivered). CTXGATE_LOAD_HOSTS=native|worker, CTXGATE_LOAD_CLIENTS=16,64 and
# CTXGATE_LOAD_SECONDS=60 narrow it.
set -euo pipefail
cd "$(dirname "$0")/.."
corpus=$(bash scripts/bench-corpus.sh)
if [[ "${CTXGATE_LOAD_HOSTS:-native,worker}" == *worker* ]]; then
  eval "$(scripts/worker-toolchain.sh)"
  scripts/worker-build.sh
fi
CTXGATE_BENCH_CORPUS="$corpus" cargo bench --locked --bench load
