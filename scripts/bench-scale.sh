#!/usr/bin/env bash
# The large-repository figures (one `scale:` line per corpus): the deno snapshot and a synthetic
# monorepo of several repositories side by side, indexed natively, served by `ctxgate serve` and
# by the Worker under workerd. Run on purpose; nothing here is a test.
#
# The corpora are public repositories brought by the workplace's fetch tool as bare mirrors
# (never committed): deno at $CTXGATE_DENO_MIRROR (default /work/.mirror/denoland+deno/repo), the
# monorepo from the mirrors listed in $CTXGATE_MONO_MIRRORS (space-separated; skipped when
# unset). Blobs a mirror lacks are skipped (scripts/export_tree.py).
set -euo pipefail
cd "$(dirname "$0")/.."
deno=${CTXGATE_DENO_MIRROR:-/work/.mirror/denoland+deno/repo}
out=target/bench-scale
mkdir -p "$out"
corpora=()
if [ -d "$deno" ]; then
  if [ ! -d "$out/deno" ]; then
    python3 scripts/export_tree.py "$deno" HEAD "$out/deno"
  fi
  corpora+=("deno=$PWD/$out/deno")
else
  echo "no deno mirror at $deno: fetch denoland/deno first" >&2
fi
if [ -n "${CTXGATE_MONO_MIRRORS:-}" ]; then
  if [ ! -d "$out/mono" ]; then
    for m in $CTXGATE_MONO_MIRRORS; do
      name=$(basename "$(dirname "$m")")
      python3 scripts/export_tree.py "$m" HEAD "$out/mono/$name"
    done
  fi
  corpora+=("mono=$PWD/$out/mono")
fi
[ ${#corpora[@]} -gt 0 ] || { echo "no corpus" >&2; exit 1; }
eval "$(scripts/worker-toolchain.sh)"
scripts/worker-build.sh >/dev/null
CTXGATE_REQUIRE_WORKER=1 CTXGATE_SCALE_CORPORA=$(IFS=,; echo "${corpora[*]}") \
  cargo bench --locked --bench scale
