#!/usr/bin/env bash
# Installs what the console's browser test needs (tests/api/console.rs): Debian's `chromium`
# (apt, when it is missing and we are root) and Playwright for Python into target/console-venv
# (PyPI; it drives the system Chromium, so `playwright install` never downloads a browser).
# Idempotent and quiet on re-run.
set -euo pipefail
cd "$(dirname "$0")/.."

want="playwright==1.65.2"
venv=target/console-venv
stamp="$venv/.ctxgate-console-tools"

if [ ! -x /usr/lib/chromium/chromium ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
  else
    echo "console-tools-setup: install Debian's chromium package (sudo apt-get install chromium)" >&2
    exit 1
  fi
fi
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$venv/bin/python" ]; then
  exit 0
fi
command -v python3 >/dev/null 2>&1 || { echo "console-tools-setup: python3 not found" >&2; exit 1; }
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
rm -f "$stamp"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$want"
printf '%s' "$want" >"$stamp"
echo "console-tools-setup: installed $want into $venv ($(/usr/lib/chromium/chromium --version 2>/dev/null))"
