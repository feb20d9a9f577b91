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

step "architecture: edge and indexer depend on the core only (natively and in wasm32); the core does no I/O; no module circle in any crate"
bash scripts/architecture-check.sh

step "long steps: no file over 600 lines of code, no function over 120, beyond those listed in scripts/long-steps-allow.txt"
python3 scripts/long-steps.py --self-test
python3 scripts/long-steps.py

step "docs: every relative link and #anchor of README.md and docs/ holds in a clone"
python3 scripts/doc-links.py --self-test
python3 scripts/doc-links.py

step "core builds for wasm32-unknown-unknown (what runs at the edge)"
cargo build --release --locked -p ctxgate-core --no-default-features --target wasm32-unknown-unknown

step "test tools: the official MCP client (Python SDK, into target/mcp-venv)"
bash scripts/mcp-client-setup.sh

step "Worker toolchain: wrangler, binaryen, worker-build, wasm-bindgen-cli (into target/tools)"
eval "$(scripts/worker-toolchain.sh)"

step "build the Worker (edge/ as wasm32 via worker-build, into target/worker-build)"
scripts/worker-build.sh

step "wrangler deploy --dry-run: the bundle and wrangler.toml are deployable"
scripts/worker-dry-run.sh

step "AWS test tools: moto (S3/DynamoDB server) and cfn-lint (into target/aws-venv)"
bash scripts/aws-tools-setup.sh

step "cfn-lint: infra/template.yaml"
bash scripts/cfn-lint.sh

step "linters (into target/lint-venv): hadolint on the Dockerfile, openapi-spec-validator on the API's OpenAPI document"
bash scripts/container-lint.sh
bash scripts/openapi-check.sh

step "API contract tool: schemathesis (into target/contract-venv), run by the API suite against both hosts"
bash scripts/contract-tools-setup.sh

step "console test tools: Debian's chromium and Playwright for Python (into target/console-venv)"
bash scripts/console-tools-setup.sh

step "build the ctxgate binary"
cargo build --release --locked

step "cargo install --locked --path . (as the README shows; reuses this build) and the installed binary runs"
cargo install --quiet --locked --path . --root target/install-check --target-dir target --force
target/install-check/bin/ctxgate --version
target/install-check/bin/ctxgate count --format json README.md >/dev/null

step "tests: unit, property, CLI and API integration tests (the API suite also runs against the Worker under workerd)"
CTXGATE_REQUIRE_WORKER=1 CTXGATE_REQUIRE_AWS=1 cargo test --release --locked --workspace

step "all tests passed"
