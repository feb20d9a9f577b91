#!/usr/bin/env bash
# The indexer on AWS protocols, measured: the real Lambda binary publishing to moto's S3 and
# DynamoDB (a full index of the 1.7M-token corpus, then scheduled passes over 100 projects).
# CTXGATE_LAMBDA_CORPUS=<folder> also indexes a large repository through the function (e.g. the
# deno snapshot scripts/bench-scale.sh exports to target/bench-scale/deno), then one changed file
# in it: wall time, the function's peak RSS and what each job uploaded.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/aws-tools-setup.sh
[ -d target/bench-corpus ] || bash scripts/bench-corpus.sh >/dev/null
cargo bench --locked -p ctxgate-indexer --bench aws
