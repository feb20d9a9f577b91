#!/usr/bin/env python3
"""Prints scored runs (scripts/fusion/run.py --out) side by side: FR / AG / LR per budget, for
the train and the held-out repositories, and held-out per repository at 8k and 32k.

Usage: table.py NAME=FILE.jsonl ...
"""
import json
import sys

from run import score


def main():
    runs = []
    for arg in sys.argv[1:]:
        name, path = arg.split("=", 1)
        runs.append((name, [json.loads(l) for l in open(path)]))
    budgets = sorted({r["budget"] for _, rows in runs for r in rows})
    print("| split | weights | " + " | ".join(f"{b // 1000}k FR / AG / LR" for b in budgets) + " |")
    print("|---|---|" + "---|" * len(budgets))
    for split in ("train", "held"):
        for name, rows in runs:
            cells = []
            for b in budgets:
                mine = [r for r in rows if r["split"] == split and r["budget"] == b]
                cells.append("%.3f / %.3f / %.3f" % score(mine))
            n = len({r["id"] for r in rows if r["split"] == split})
            print(f"| {split} ({n} queries) | {name} | " + " | ".join(cells) + " |")
    print()
    print("| held-out repository | " + " | ".join(f"{name} LR 8k / 32k" for name, _ in runs) + " |")
    print("|---|" + "---|" * len(runs))
    repos = sorted({r["repo"] for _, rows in runs for r in rows if r["split"] == "held"})
    for repo in repos:
        cells = []
        for _, rows in runs:
            lr = [score([r for r in rows if r["repo"] == repo and r["budget"] == b])[2] for b in (8000, 32000)]
            cells.append("%.3f / %.3f" % tuple(lr))
        n = len({r["id"] for _, rows in runs for r in rows if r["repo"] == repo})
        print(f"| {repo} ({n}) | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
