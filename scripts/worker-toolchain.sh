#!/usr/bin/env bash
# Installs what building and running the Worker needs, under target/tools/ (never globally),
# and prints the environment to use it. Idempotent: each tool is skipped when the wanted version
# is already there, so the test command can call it every time.
#
#   eval "$(scripts/worker-toolchain.sh)"    # installs if needed, then exports PATH and friends
#
# - wrangler + workerd and binaryen's wasm-opt: npm, pinned by edge/worker-tools/package-lock.json
# - worker-build: cargo install
# - wasm-bindgen-cli: exactly the wasm-bindgen version in Cargo.lock (the CLI and the library
#   must match, and worker-build would otherwise try to download it, which fails offline)
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
tools=$root/target/tools
mkdir -p "$tools"
log() { printf '  [worker-toolchain] %s\n' "$*" >&2; }
fail() { printf '  [worker-toolchain] FAILED: %s\n' "$*" >&2; exit 1; }

# Versions that must agree with the workspace.
bindgen_version=$(awk '/^name = "wasm-bindgen"$/ { getline; gsub(/version = |"/, ""); print; exit }' Cargo.lock)
[ -n "$bindgen_version" ] || fail "no wasm-bindgen in Cargo.lock (is the worker dependency of edge/ gone?)"
worker_build_version=0.8.6

rustup target add wasm32-unknown-unknown >/dev/null 2>&1 || fail "rustup target add wasm32-unknown-unknown"

# Cargo-installed tools go to target/tools/cargo/bin.
cargo_root=$tools/cargo
have_version() { [ -x "$cargo_root/bin/$1" ] && "$cargo_root/bin/$1" --version 2>/dev/null | grep -q -- "$2"; }
if ! have_version wasm-bindgen "$bindgen_version"; then
  log "cargo install wasm-bindgen-cli $bindgen_version (a few minutes, once)"
  cargo install --quiet --root "$cargo_root" --version "=$bindgen_version" wasm-bindgen-cli >&2 \
    || fail "cargo install wasm-bindgen-cli $bindgen_version"
fi
if ! have_version worker-build "$worker_build_version"; then
  log "cargo install worker-build $worker_build_version (a few minutes, once)"
  cargo install --quiet --root "$cargo_root" --version "=$worker_build_version" worker-build >&2 \
    || fail "cargo install worker-build $worker_build_version"
fi

# npm tools, from the committed lock, reinstalled only when the lock changes.
npm_dir=$tools/npm
lock=edge/worker-tools/package-lock.json
stamp=$npm_dir/.installed-lock
if ! { [ -f "$stamp" ] && cmp -s "$lock" "$stamp" && [ -x "$npm_dir/node_modules/.bin/wrangler" ]; }; then
  command -v npm >/dev/null || fail "npm is not installed (Node.js >= 20.3 is needed for wrangler)"
  log "npm ci wrangler + binaryen into $npm_dir"
  mkdir -p "$npm_dir"
  cp edge/worker-tools/package.json "$lock" "$npm_dir/"
  (cd "$npm_dir" && npm ci --no-audit --no-fund --loglevel=error >&2) || fail "npm ci in $npm_dir"
  cp "$lock" "$stamp"
fi
"$npm_dir/node_modules/.bin/wrangler" --version >/dev/null 2>&1 || fail "wrangler does not start"

cat <<EOF
export PATH="$cargo_root/bin:$npm_dir/node_modules/.bin:\$PATH"
export WASM_BINDGEN_BIN="$cargo_root/bin/wasm-bindgen"
export WASM_OPT_BIN="$npm_dir/node_modules/.bin/wasm-opt"
export WRANGLER_SEND_METRICS=false
export WRANGLER_SEND_ERROR_REPORTS=false
export CLOUDFLARE_CF_FETCH_ENABLED=false
export WRANGLER_LOG_PATH="$tools/wrangler-logs"
EOF
