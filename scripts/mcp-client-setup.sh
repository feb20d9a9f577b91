#!/usr/bin/env bash
# Installs the official MCP Python SDK into target/mcp-venv (idempotent) for the MCP client test.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/mcp-venv
if [ -x "$venv/bin/python" ] && "$venv/bin/python" -c 'import mcp' 2>/dev/null; then
  exit 0
fi
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet 'mcp==1.30.0'
