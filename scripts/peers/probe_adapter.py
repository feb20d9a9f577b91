#!/usr/bin/env python3
"""Runs probe-code (crates.io `probe-code`) the way a user would, with the query text as its
search pattern and the budget as --max-tokens, and prints its results in the retrieval
benchmark's JSON piece format: {"pieces": [{"path", "start_line", "end_line"}]}.

usage: probe_adapter.py PROBE_BIN REPO_DIR QUERY_FILE BUDGET
"""
import json
import subprocess
import sys


def main():
    probe, repo, query_file, budget = sys.argv[1:5]
    query = open(query_file, encoding="utf-8").read().strip()
    out = subprocess.run(
        [probe, "search", query, repo, "--max-tokens", budget, "--format", "json"],
        capture_output=True, text=True, timeout=280,
    )
    if out.returncode != 0:
        sys.stderr.write(out.stderr)
        sys.exit(out.returncode)
    text = out.stdout
    start = text.find("{")
    # probe prints a header before the JSON and a summary after it.
    data = json.JSONDecoder().raw_decode(text[start:])[0] if start >= 0 else {"results": []}
    pieces = []
    for r in data.get("results", []):
        lines = r.get("lines") or []
        if len(lines) != 2:
            continue
        path = r.get("file", "")
        if path.startswith("./"):
            path = path[2:]
        pieces.append({"path": path, "start_line": int(lines[0]), "end_line": int(lines[1])})
    json.dump({"pieces": pieces}, sys.stdout)


if __name__ == "__main__":
    main()
