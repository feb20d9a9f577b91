#!/usr/bin/env bash
# History compaction benchmark: facts kept at 2k/8k/32k against truncation and drop-the-middle,
# and the time to compact 1,000 messages. The conversations are built from the commit histories
# of the retrieval benchmark's git mirrors (fetched with the `fetch` tool; see
# ../shared/bench/README.md): BENCH_MIRROR_ROOT=<folder holding owner+name/repo>.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${BENCH_MIRROR_ROOT:?set BENCH_MIRROR_ROOT to the folder holding the fetched mirrors}"
out=target/history-bench
mkdir -p "$out"
python3 scripts/history_dataset.py "$BENCH_MIRROR_ROOT" "$out/conversations.json" --commits "${COMMITS:-250}"
cargo bench --locked --bench history -- "$out/conversations.json" | tee "$out/results.md"
