#!/usr/bin/env bash
# Runs every test of ctxgate, installing what the tests need first. `.ci/run` calls exactly this.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n==> %s\n' "$*"; }

step "toolchain: wasm32 target and rustfmt"
rustup target add wasm32-unknown-unknown
rustup component add rustfmt >/dev/null 2>&1 || true

if cargo fmt --version >/dev/null 2>&1; then
  step "format check"
  cargo fmt --all -- --check
fi

step "core builds for wasm32-unknown-unknown (what runs at the edge)"
cargo build --release --locked -p ctxgate-core --no-default-features --target wasm32-unknown-unknown

step "test tools: the official MCP client (Python SDK, into target/mcp-venv)"
bash scripts/mcp-client-setup.sh

step "build the ctxgate binary"
cargo build --release --locked

step "tests: unit, property and CLI integration tests"
cargo test --release --locked --workspace

step "all tests passed"
