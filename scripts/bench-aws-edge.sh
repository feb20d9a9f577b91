#!/usr/bin/env bash
# The edge's cold load of an index the indexer published to S3 + DynamoDB (moto): the Worker
# under workerd reading it over SigV4-signed fetches. Figures in docs/aws.md.
set -euo pipefail
cd "$(dirname "$0")/.."
corpus=$(bash scripts/bench-corpus.sh)
bash scripts/aws-tools-setup.sh
eval "$(scripts/worker-toolchain.sh)"
scripts/worker-build.sh
CTXGATE_REQUIRE_WORKER=1 CTXGATE_BENCH_CORPUS="$corpus" cargo bench --locked --bench aws_edge
