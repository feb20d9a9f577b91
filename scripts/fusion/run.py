#!/usr/bin/env python3
"""Runs `ctxgate assemble` on mined queries (scripts/fusion/mine.py) and scores the pieces it
returns against the gold lines: file recall (FR), all-gold rate (AG) and line recall (LR) per
budget, as in the visible benchmark, but over ctxgate's own counts (its prompt, headers and
query included, is within the budget) rather than an outside re-count.

With --dump DIR, each query's first call also writes every ranked candidate with its signals
to DIR/<id>.json (CTXGATE_DUMP_CANDIDATES), for scripts/fusion/fit.py.

Usage: run.py --data DIR --bin CTXGATE --home DIR [--weights SPEC] [--budgets 8000,32000]
              [--split train|held|all] [--dump DIR] [--jobs 2] --out FILE.jsonl
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor


def covered(pieces, gold):
    """(files hit, gold files, lines hit, gold lines) of one answer."""
    by_path = {}
    for p in pieces:
        path = p.get("path", "").lstrip("./")
        by_path.setdefault(path, []).append((p.get("start_line", 0), p.get("end_line", -1)))
    files_hit, lines_hit, lines_all = 0, 0, 0
    for path, rs in gold.items():
        spans = by_path.get(path, [])
        files_hit += bool(spans)
        for a, b in rs:
            for line in range(a, b + 1):
                lines_all += 1
                lines_hit += any(s <= line <= e for s, e in spans)
    return files_hit, len(gold), lines_hit, lines_all


def score(rows):
    """Mean FR / AG / LR of scored rows."""
    n = max(1, len(rows))
    fr = sum(r["files_hit"] / r["files"] for r in rows) / n
    ag = sum(r["files_hit"] == r["files"] for r in rows) / n
    lr = sum(r["lines_hit"] / max(1, r["lines"]) for r in rows) / n
    return fr, ag, lr


def call(args, q, budget, dump_to):
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write(q["query"])
        qfile = f.name
    env = dict(os.environ)
    env.pop("CTXGATE_DUMP_CANDIDATES", None)
    if args.weights:
        env["CTXGATE_RANK_WEIGHTS"] = args.weights
    if dump_to:
        env["CTXGATE_DUMP_CANDIDATES"] = dump_to
    cmd = [args.bin, "--data-dir", args.home, "-q", "assemble", "--repo",
           os.path.join(args.data, "corpora", q["repo"]), "--query-file", qfile,
           "--budget", str(budget), "--format", "json"]
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=600)
        pieces = json.loads(p.stdout).get("pieces", []) if p.returncode == 0 else []
        ok = p.returncode == 0
    except (subprocess.TimeoutExpired, json.JSONDecodeError):
        pieces, ok = [], False
    finally:
        os.unlink(qfile)
    fh, fa, lh, la = covered(pieces, q["gold_ranges"])
    return dict(id=q["id"], repo=q["repo"], split=q["split"], budget=budget, ok=ok,
                files_hit=fh, files=fa, lines_hit=lh, lines=la)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--home", required=True)
    ap.add_argument("--weights", default="")
    ap.add_argument("--budgets", default="8000,32000,128000")
    ap.add_argument("--split", default="all")
    ap.add_argument("--dump", default="")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    queries = [json.loads(l) for l in open(os.path.join(args.data, "queries.jsonl"))]
    queries = [q for q in queries if args.split == "all" or q["split"] == args.split]
    budgets = [int(b) for b in args.budgets.split(",")]
    if args.dump:
        os.makedirs(args.dump, exist_ok=True)
    # One repository at a time, its first call alone: that call indexes it.
    rows = []
    for repo in sorted({q["repo"] for q in queries}):
        mine = [q for q in queries if q["repo"] == repo]
        jobs = [(q, b, os.path.join(args.dump, q["id"] + ".json") if args.dump and i == 0 else None)
                for q in mine for i, b in enumerate(budgets)]
        rows.append(call(args, *jobs[0]))
        with ThreadPoolExecutor(args.jobs) as pool:
            rows.extend(pool.map(lambda j: call(args, *j), jobs[1:]))
    with open(args.out, "w") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    failed = sum(not r["ok"] for r in rows)
    for b in budgets:
        fr, ag, lr = score([r for r in rows if r["budget"] == b])
        print(f"{b // 1000}k FR/AG/LR {fr:.3f} / {ag:.3f} / {lr:.3f}", file=sys.stderr)
    print(f"{len(rows)} calls, {failed} failed", file=sys.stderr)


if __name__ == "__main__":
    main()
