#!/usr/bin/env python3
"""Prints one side-by-side table (ALL queries, file recall / all-gold rate / line recall per
budget) from the result summaries the retrieval benchmark's drivers wrote.

usage: bench_table.py RESULTS_DIR PRODUCT_NAME...   (product summaries: <name>_summary.json;
the BM25 baselines' bm25_summary.json is added when present)
"""
import json
import os
import sys


def cells(agg):
    out = []
    for budget in sorted(agg, key=int):
        a = agg[budget]["ALL"]
        out.append("%.3f / %.3f / %.3f" % (a["file_recall"], a["all_gold"], a["line_recall"]))
    return agg[sorted(agg, key=int)[0]]["ALL"]["n"], out


def main():
    results, names = sys.argv[1], sys.argv[2:]
    rows = []
    for name in names:
        path = os.path.join(results, "%s_summary.json" % name)
        if os.path.exists(path):
            with open(path) as f:
                rows.append((name,) + cells(json.load(f)["enforced"]))
    path = os.path.join(results, "bm25_summary.json")
    if os.path.exists(path):
        with open(path) as f:
            base = json.load(f)
        for variant, label in (("chunk", "baseline: chunk BM25"), ("file", "baseline: whole-file BM25")):
            if variant in base:
                rows.append((label,) + cells(base[variant]["metrics"]))
    if not rows:
        sys.exit("no result summaries in %s" % results)
    budgets = sorted(json.load(open(os.path.join(results, "%s_summary.json" % names[0])))["enforced"], key=int)
    print("| system | queries | " + " | ".join("%dk FR / AG / LR" % (int(b) // 1000) for b in budgets) + " |")
    print("|---|---:|" + "---|" * len(budgets))
    for name, n, cs in rows:
        print("| %s | %d | %s |" % (name, n, " | ".join(cs)))


if __name__ == "__main__":
    main()
