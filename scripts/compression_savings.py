#!/usr/bin/env python3
"""Tokens saved by `--compression light` on every 20th query of the retrieval benchmark.

Run after scripts/bench-retrieval.sh (it builds target/retrieval-bench and the release binary):
    python3 scripts/compression_savings.py [BUDGET]
"""
import json
import subprocess
import sys
from pathlib import Path

root = Path(__file__).resolve().parent.parent
bench = root / "target" / "retrieval-bench"
budget = sys.argv[1] if len(sys.argv) > 1 else "8000"
queries = [json.loads(line) for line in open(bench / "queries.jsonl")][::20]
before = after = compressed = pieces = 0
for q in queries:
    out = subprocess.run(
        [str(root / "target" / "release" / "ctxgate"), "--data-dir", str(bench / "ctxgate-home"), "-q",
         "assemble", "--repo", str(bench / "corpora" / q["repo"]), "--query", q["query"],
         "--budget", budget, "--compression", "light", "--format", "json"],
        capture_output=True, text=True, check=True)
    for p in json.loads(out.stdout)["pieces"]:
        pieces += 1
        before += p.get("original_tokens") or p["tokens"]
        after += p["tokens"]
        compressed += "original_tokens" in p
print(f"{len(queries)} queries at {budget}: {pieces} pieces, {compressed} compressed; "
      f"their code {after} tokens instead of {before} (-{100 * (1 - after / before):.1f}%)")
