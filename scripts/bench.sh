#!/usr/bin/env bash
# Reproduces the figures of docs/performance.md: builds the corpus (crates pinned in Cargo.lock,
# from the cargo registry) and runs the foundation benchmark against the release binary.
set -euo pipefail
cd "$(dirname "$0")/.."
corpus=$(bash scripts/bench-corpus.sh)
CTXGATE_BENCH_CORPUS="$corpus" cargo bench --locked --bench foundation
