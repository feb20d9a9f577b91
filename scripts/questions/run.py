#!/usr/bin/env python3
"""Runs `ctxgate assemble` on the question benchmark's records (scripts/questions/build.py) at
each budget and scores the pieces it returns (scripts/questions/qlib.py): answer-line recall,
answered (every gold line covered) and the rank of the first piece holding a gold line, pieces
ordered by their score. Each record runs against its own corpus: <data>/<corpus>/<repo>
(docstring questions against corpora-nodoc, where comments and docstrings are blanked).
Writes one row per (record, budget) and prints the table.

With --dump DIR, each record's call at its largest budget also writes every ranked candidate with
its signals to DIR/<id>.json (CTXGATE_DUMP_CANDIDATES, as scripts/fusion/run.py --dump), and the
records run go to DIR/queries.jsonl in the form scripts/fusion/ltr.py reads as queries (id, repo,
split, query, gold_ranges with paths relative to the corpus root, as in the dumps): training
queries for the learned ranker (scripts/learn-ranker.sh --questions).

Usage: run.py --data DIR --bin CTXGATE --home DIR [--sets hand,docstring,settings]
              [--budgets 2000,4000,8000] [--split held|train|all] [--weights SPEC]
              [--dump DIR] [--jobs 2] --out FILE.jsonl
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import qlib


def call(args, q, budget, dump_to=None):
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, encoding="utf-8") as f:
        f.write(q["query"])
        qfile = f.name
    env = dict(os.environ)
    env.pop("CTXGATE_DUMP_CANDIDATES", None)
    if args.weights:
        env["CTXGATE_RANK_WEIGHTS"] = args.weights
    if dump_to:
        env["CTXGATE_DUMP_CANDIDATES"] = dump_to
    cmd = [args.bin, "--data-dir", args.home, "-q", "assemble", "--repo",
           os.path.join(args.data, q.get("corpus", "corpora"), q["repo"]), "--query-file", qfile,
           "--budget", str(budget), "--format", "json"]
    t0 = time.monotonic()
    error, tokens, prompt = "", None, None
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                           timeout=600)
        ok = p.returncode == 0
        if ok:
            report = json.loads(p.stdout)
            pieces, tokens = report.get("pieces", []), report.get("tokens_total")
            prompt = report.get("prompt", "")
        else:
            pieces = []
            error = p.stderr.decode("utf-8", "replace").strip().splitlines()[-1:] or ["?"]
            error = error[0][:300]
    except (subprocess.TimeoutExpired, json.JSONDecodeError) as e:
        pieces, ok, error = [], False, type(e).__name__
    finally:
        os.unlink(qfile)
    secs = round(time.monotonic() - t0, 3)
    spans = [[qlib.norm_path(p.get("path", "")), p.get("start_line"), p.get("end_line"),
              p.get("score")] for p in qlib.ordered(pieces)]
    extra = dict(tokens=tokens, secs=secs, spans=spans)
    if error:
        extra["error"] = error
    root = os.path.join(args.data, q.get("corpus", "corpora"), q["repo"])
    shown = qlib.visible_lines(prompt) if prompt is not None else None
    return qlib.make_row(q, budget, pieces, ok, shown, lambda path, n: file_line(root, path, n),
                         **extra)


_FILES = {}


def file_line(root, path, n):
    """Line n (1-based) of the indexed file, "" past its end."""
    key = os.path.join(root, path)
    if key not in _FILES:
        with open(key, encoding="utf-8", errors="replace") as f:
            _FILES[key] = f.read().splitlines()
    lines = _FILES[key]
    return lines[n - 1] if 0 < n <= len(lines) else ""


def write_queries(dump, queries):
    """The records as scripts/fusion/ltr.py reads queries: DIR/queries.jsonl, gold paths
    normalized as ctxgate writes candidate paths (relative to the corpus root)."""
    os.makedirs(dump, exist_ok=True)
    with open(os.path.join(dump, "queries.jsonl"), "w", encoding="utf-8") as f:
        for q in queries:
            gold = {}
            for path, rs in q["gold_ranges"].items():
                gold.setdefault(qlib.norm_path(path), []).extend(rs)
            f.write(json.dumps(dict(id=q["id"], repo=q["repo"], split=q["split"], set=q["set"],
                                    corpus=q.get("corpus", "corpora"), query=q["query"],
                                    gold_ranges=gold)) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--bin", required=True)
    ap.add_argument("--home", required=True)
    ap.add_argument("--sets", default="hand,docstring,settings")
    ap.add_argument("--budgets", default="2000,4000,8000")
    ap.add_argument("--split", default="all", choices=("held", "train", "all"))
    ap.add_argument("--weights", default="")
    ap.add_argument("--dump", default="",
                    help="write candidate dumps (at the largest budget) and queries.jsonl here")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    queries, budgets = qlib.records_and_budgets(args)
    os.makedirs(args.home, exist_ok=True)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    if args.dump:
        write_queries(args.dump, queries)
    t0 = time.monotonic()
    # One corpus at a time, its first call alone: that call indexes it.
    rows = []
    for corpus, repo in sorted({(q.get("corpus", "corpora"), q["repo"]) for q in queries}):
        mine = [q for q in queries if q.get("corpus", "corpora") == corpus and q["repo"] == repo]
        jobs = [(q, b, os.path.join(args.dump, q["id"] + ".json")
                 if args.dump and b == max(budgets) else None) for q in mine for b in budgets]
        t1 = time.monotonic()
        rows.append(call(args, *jobs[0]))
        with ThreadPoolExecutor(args.jobs) as pool:
            rows.extend(pool.map(lambda j: call(args, *j), jobs[1:]))
        print(f"{corpus}/{repo}: {len(jobs)} calls, first {rows[-len(jobs)]['secs']:.1f}s, "
              f"all {time.monotonic() - t1:.1f}s", file=sys.stderr)
    with open(args.out, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    failed = [r for r in rows if not r["ok"]]
    print(qlib.table([("ctxgate", rows)], budgets))
    print(f"{len(rows)} calls, {len(failed)} failed, {time.monotonic() - t0:.0f}s"
          + (f"; first failure: {failed[0]['id']}: {failed[0].get('error')}" if failed else ""),
          file=sys.stderr)


if __name__ == "__main__":
    main()
