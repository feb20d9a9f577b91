#!/usr/bin/env bash
# Reproduces the API figures of docs/performance.md: `ctxgate serve` over the 1M+ token corpus, loaded from a
# second process on loopback.
set -euo pipefail
cd "$(dirname "$0")/.."
corpus=$(bash scripts/bench-corpus.sh)
CTXGATE_BENCH_CORPUS="$corpus" cargo bench --locked --bench api
