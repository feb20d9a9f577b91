#!/usr/bin/env python3
"""Tries answering a two-part question by its parts, offline: splits each hand-written question
of a `run.py --dump DIR` run into clauses (", and …", ", or …", "; …", "… and when …"), asks
ctxgate each clause on its own (with CTXGATE_DUMP_CANDIDATES, at --budget), fuses the whole
question's ranked candidates with the clauses' by reciprocal rank (1 / (60 + rank), the clauses
weighted w), and prints the share of gold ranges covered when whole candidates are taken best
first while they fit each of --budgets, for every question and for the split ones alone. Like
resim.py it leaves out excerpts and signposts: a way to rule the idea out before any Rust.

Usage: clauses.py --dump DIR --data target/questions --bin target/release/ctxgate --home DIR
                  [--weights 0,0.25,0.5,1] [--budgets 3000,6000] [--budget 4000]
"""
import argparse
import json
import os
import re
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor

from resim import holds, query_terms

SPLIT = re.compile(r",\s*(?:and|or|but)\s+|;\s*"
                   r"|\s+and\s+(?=(?:when|what|how|where|which|why|whether|if)\b)"
                   r"|\s+or\s+(?=(?:when|what|how|where|which)\b)", re.I)
RRF_K = 60


def clauses(question):
    """The question's clauses with at least two content terms; none for a one-part question."""
    parts = [p.strip(" ?") for p in SPLIT.split(question)]
    parts = [p for p in parts if len(query_terms(p)) >= 2]
    return parts if len(parts) > 1 else []


def ask(args, q, text, out):
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, encoding="utf-8") as f:
        f.write(text)
    env = dict(os.environ, CTXGATE_DUMP_CANDIDATES=out)
    subprocess.run([args.bin, "--data-dir", args.home, "-q", "assemble", "--repo",
                    os.path.join(args.data, q.get("corpus", "corpora"), q["repo"]),
                    "--query-file", f.name, "--budget", str(args.budget), "--format", "json"],
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=True)
    os.unlink(f.name)


def covered(order, gold, budget):
    used, got = 0, [False] * len(gold)
    for c in order:
        if used + c["tokens"] <= budget:
            used += c["tokens"]
            got = [g or h for g, h in zip(got, holds(c, gold))]
    return sum(got) / max(len(gold), 1)


def main():
    ap = argparse.ArgumentParser()
    for name in ("--dump", "--data", "--bin", "--home"):
        ap.add_argument(name, required=True)
    ap.add_argument("--weights", default="0,0.25,0.5,1")
    ap.add_argument("--budgets", default="3000,6000")
    ap.add_argument("--budget", type=int, default=4000)
    args = ap.parse_args()
    budgets = [int(b) for b in args.budgets.split(",")]
    with open(os.path.join(args.dump, "queries.jsonl"), encoding="utf-8") as f:
        qs = [q for q in map(json.loads, f) if q["set"] == "hand"]
    parts_dir = os.path.join(args.dump, "clauses")
    os.makedirs(parts_dir, exist_ok=True)
    jobs = [(q, c, os.path.join(parts_dir, f"{q['id']}~{k}.json"))
            for q in qs for k, c in enumerate(clauses(q["query"]))]
    with ThreadPoolExecutor(2) as ex:
        list(ex.map(lambda j: ask(args, *j), [j for j in jobs if not os.path.exists(j[2])]))

    def load(path):
        with open(path, encoding="utf-8") as f:
            return json.load(f)["candidates"][:200]

    print("gold ranges covered at " + " / ".join(map(str, budgets))
          + " tokens (whole candidates, best first)")
    for w in (float(x) for x in args.weights.split(",")):
        every, split, n_split = [0.0] * len(budgets), [0.0] * len(budgets), 0
        for q in qs:
            gold = [(p, a, b) for p, rs in q["gold_ranges"].items() for a, b in rs]
            parts = clauses(q["query"])
            lists = [(1.0, load(os.path.join(args.dump, q["id"] + ".json")))]
            lists += [(w, load(os.path.join(parts_dir, f"{q['id']}~{k}.json")))
                      for k in range(len(parts))]
            score, cand = {}, {}
            for weight, ranked in lists:
                for r, c in enumerate(ranked):
                    key = (c["path"], c["start_line"], c["end_line"])
                    score[key] = score.get(key, 0.0) + weight / (RRF_K + r + 1)
                    cand.setdefault(key, c)
            order = [cand[k] for k in sorted(cand, key=lambda k: -score[k])]
            for i, b in enumerate(budgets):
                v = covered(order, gold, b)
                every[i] += v
                split[i] += v if parts else 0.0
            n_split += bool(parts)
        print(f"  w={w:g}: hand ({len(qs)}) " + " / ".join(f"{x / len(qs):.3f}" for x in every)
              + f"; split questions ({n_split}) "
              + " / ".join(f"{x / max(n_split, 1):.3f}" for x in split))


if __name__ == "__main__":
    main()
