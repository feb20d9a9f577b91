#!/usr/bin/env bash
# Builds the Worker (edge/ for wasm32, wasm-bindgen, wasm-opt) into target/worker-build/, the
# module wrangler.toml points at. Run scripts/worker-toolchain.sh first, or let this call it.
#   scripts/worker-build.sh            optimised with binaryen's wasm-opt
#   WORKER_BUILD_NO_OPT=1 scripts/...  skips wasm-opt (faster, larger)
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(scripts/worker-toolchain.sh)"
opt=()
[ "${WORKER_BUILD_NO_OPT:-0}" = 1 ] && opt=(--no-opt)
cd edge
worker-build --release "${opt[@]}" -d ../target/worker-build -- --locked >&2 \
  || { echo "worker-build failed (see above)" >&2; exit 1; }
test -f ../target/worker-build/index.js || { echo "worker-build wrote no target/worker-build/index.js" >&2; exit 1; }
