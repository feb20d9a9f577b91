#!/usr/bin/env bash
# `wrangler deploy --dry-run`: bundles the built Worker and checks wrangler.toml without
# uploading anything, then prints the bundle's raw and gzipped size (the platform's limits are
# on the gzipped size: 3 MiB on the free plan, 10 MiB on paid).
set -euo pipefail
cd "$(dirname "$0")/.."
eval "$(scripts/worker-toolchain.sh)"
out=target/worker-dry-run
rm -rf "$out"
wrangler deploy --dry-run --outdir "$out" >"$out.log" 2>&1 \
  || { cat "$out.log" >&2; echo "wrangler deploy --dry-run failed" >&2; exit 1; }
grep -E "Total Upload|gzip" "$out.log" || true
raw=$(find "$out" -type f \( -name '*.wasm' -o -name '*.js' \) -printf '%s\n' | awk '{s+=$1} END {print s}')
gz=$(find "$out" -type f \( -name '*.wasm' -o -name '*.js' \) -exec cat {} + | gzip -9 | wc -c)
printf 'bundle: %s bytes raw, %s bytes gzipped (files in %s)\n' "$raw" "$gz" "$out"
