#!/usr/bin/env bash
# The dependency graph the design promises (../shared/ARCHITECTURE.md): the edge (API) and the
# indexer (batch) each depend on the core only, natively and in wasm32; the core does no I/O;
# and inside each crate no two modules import each other (scripts/module-cycles.py). Fails with
# the offending path when a dependency breaks it. Part of scripts/test.sh.
set -euo pipefail
cd "$(dirname "$0")/.."
fail=0
tree() { cargo tree --locked -e normal --prefix none "$@" 2>/dev/null | awk '{print $1}' | sort -u; }
refuse() { # crate, what it must not reach, the tree's arguments
  local crate=$1 banned=$2; shift 2
  local found
  found=$(tree -p "$crate" "$@" | grep -Ex "$banned" || true)
  if [ -n "$found" ]; then
    echo "architecture: $crate ($*) depends on: $(echo "$found" | tr '\n' ' ')" >&2
    cargo tree --locked -e normal -p "$crate" "$@" -i "$(echo "$found" | head -1)" 2>/dev/null | head -20 >&2
    fail=1
  fi
}
refuse ctxgate-edge 'ctxgate-indexer'
refuse ctxgate-edge 'ctxgate-indexer' --target wasm32-unknown-unknown
refuse ctxgate-indexer 'ctxgate-edge'
# The core: no runtime, socket, database, cloud SDK or file watcher, in any of its features.
refuse ctxgate-core 'tokio|reqwest|hyper|ureq|rusqlite|aws-.*|worker|notify|gix|lambda_runtime' --all-features
# Inside each crate: no two modules (each with everything under it) import each other, directly
# or around a circle; the checker first checks itself on small crates.
python3 scripts/module-cycles.py --self-test || fail=1
python3 scripts/module-cycles.py shared indexer edge . || fail=1
[ "$fail" = 0 ] && echo "architecture: edge and indexer independent, core without I/O, no module circles"
exit "$fail"
