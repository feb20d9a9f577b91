#!/usr/bin/env python3
"""The most a file skeleton could add to line recall: of the gold lines a run
missed in files its prompt already shows (whole, compressed or as a signpost), the share that
are declaration lines (which a skeleton, the signatures of a file's other definitions, would
show), and what showing every such line of the prompt's files would cost in tokens. An upper
bound on the gain (the skeleton taken as free, declarations found by a loose pattern that also
matches some lines inside bodies), so an idea whose ceiling is below the gap to a target is not
worth building for that target.

Reads a run of the benchmark's driver made with --keep-pieces (each call's pieces as
[path, first line, last line, tokens]).

Usage: skeleton_ceiling.py --queries Q.jsonl --corpora DIR --run RUN.jsonl [--budgets 8000,32000]
"""
import argparse
import collections
import json
import re
import statistics

# A line that opens a definition in one of the chunked languages (loose on purpose: a ceiling).
DECLARATION = re.compile(
    r"^\s*(export\s+)?(default\s+)?(pub(\([^)]*\))?\s+)?(async\s+)?"
    r"(def|fn|func|function|class|struct|enum|trait|impl|interface|type|const|static|"
    r"public|private|protected|module|mod)\b")


def file_lines(corpora, repo, path, cache):
    key = (repo, path)
    if key not in cache:
        try:
            with open(f"{corpora}/{repo}/{path}", errors="replace") as f:
                cache[key] = f.read().split("\n")
        except OSError:
            cache[key] = []
    return cache[key]


def covered(spans, line):
    return any(a <= line <= b for a, b in spans)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", required=True)
    ap.add_argument("--corpora", required=True)
    ap.add_argument("--run", required=True)
    ap.add_argument("--budgets", default="8000,32000")
    args = ap.parse_args()
    queries = {}
    with open(args.queries) as f:
        for line in f:
            q = json.loads(line)
            queries[q["id"]] = q
    with open(args.run) as f:
        rows = [json.loads(line) for line in f]
    cache = {}
    for budget in (int(b) for b in args.budgets.split(",")):
        calls, missed, declarations, costs = 0, 0.0, 0.0, []
        for row in rows:
            if row["budget"] != budget:
                continue
            q = queries[row["id"]]
            calls += 1
            spans = collections.defaultdict(list)
            for path, a, b, _tokens in row.get("pieces", []):
                spans[path].append((a, b))
            gold = {p: {n for a, b in rs for n in range(a, b + 1)}
                    for p, rs in q["gold_ranges"].items()}
            total = sum(len(s) for s in gold.values()) or 1
            for path, lines in gold.items():
                if path not in spans:
                    continue
                text = file_lines(args.corpora, q["repo"], path, cache)
                lost = [n for n in lines if not covered(spans[path], n)]
                missed += len(lost) / total
                declarations += sum(1 for n in lost if 0 < n <= len(text)
                                    and DECLARATION.match(text[n - 1])) / total
            cost = 0
            for path, path_spans in spans.items():
                text = file_lines(args.corpora, q["repo"], path, cache)
                cost += sum(len(line.strip()) // 4 + 1 for n, line in enumerate(text, 1)
                            if DECLARATION.match(line) and not covered(path_spans, n))
            costs.append(cost)
        if not calls:
            continue
        costs.sort()
        print(f"{budget // 1000}k ({calls} calls): line recall missed in files the prompt shows "
              f"{missed / calls:.3f}, of it declaration lines {declarations / calls:.3f} "
              f"(the ceiling of a skeleton); every other declaration line of the prompt's files "
              f"costs about {statistics.median(costs):.0f} tokens (median), "
              f"{costs[int(len(costs) * 0.9)]} (p90)")


if __name__ == "__main__":
    main()
