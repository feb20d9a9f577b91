#!/usr/bin/env bash
# The indexer on AWS protocols, measured: the real Lambda binary publishing to moto's S3 and
# DynamoDB (a full index of the 1.7M-token corpus, then scheduled passes over 100 projects).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/aws-tools-setup.sh
[ -d target/bench-corpus ] || bash scripts/bench-corpus.sh >/dev/null
cargo bench --locked -p ctxgate-indexer --bench aws
