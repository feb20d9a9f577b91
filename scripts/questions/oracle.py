#!/usr/bin/env python3
"""The ceiling of a re-ranker on the `Rerank` seam, for the question benchmark: how much of the
gold a re-ranking of the first K candidates could reach at most. It reads the dumps that
`scripts/questions/run.py --dump DIR` writes (each record's ranked candidates at the run's
largest budget). For each K it prints three figures over the chosen set, each the mean share of
gold ranges covered:
  ranked   whole candidates taken in their ranked order while they fit the budget;
  oracle   the same after moving the first K's gold-holding candidates to the front, smallest
           first (a perfect re-ranker of the first K);
  held     the gold ranges some candidate among the first K holds at all.

Like `resim.py` it approximates the product: no excerpts, signposts or summaries. It needs the
gold, so it measures a ceiling and tunes nothing. Running it on the held-out split is fair.

Usage: oracle.py --dump DIR [--set hand] [--budget 4000] [--ks 10,30,50,100,200]
"""
import argparse
import json
import os

from resim import covered, holds


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dump", required=True)
    ap.add_argument("--set", default="hand")
    ap.add_argument("--budget", type=int, default=4000)
    ap.add_argument("--ks", default="10,30,50,100,200")
    args = ap.parse_args()
    with open(os.path.join(args.dump, "queries.jsonl"), encoding="utf-8") as f:
        records = [q for q in map(json.loads, f) if q.get("set") == args.set]
    rows = []
    for q in records:
        with open(os.path.join(args.dump, q["id"] + ".json"), encoding="utf-8") as f:
            cands = json.load(f)["candidates"]
        gold = [(p, a, b) for p, rs in q["gold_ranges"].items() for a, b in rs]
        rows.append((cands, [holds(c, gold) for c in cands], len(gold)))
    n = len(rows) or 1
    print(f"set {args.set} ({len(rows)}), budget {args.budget}: ranked / oracle / held")
    for k in (int(x) for x in args.ks.split(",")):
        ranked = oracle = held_k = 0.0
        for cands, held, ngold in rows:
            order = list(range(len(cands)))
            ranked += covered(order, cands, held, ngold, args.budget)
            front = sorted((i for i in order[:k] if any(held[i])), key=lambda i: cands[i]["tokens"])
            moved = set(front)
            rest = [i for i in order if i not in moved]
            oracle += covered(front + rest, cands, held, ngold, args.budget)
            held_k += sum(any(h[j] for h in held[:k]) for j in range(ngold)) / max(ngold, 1)
        print(f"  K={k}: {ranked / n:.3f} / {oracle / n:.3f} / {held_k / n:.3f}")


if __name__ == "__main__":
    main()
