#!/usr/bin/env python3
"""Prints scored question-benchmark runs (scripts/questions/run.py or bm25_baseline.py --out)
side by side: answer-line recall, answered rate and MRR of the first answering piece at each
budget, per set and repository, with held and train lines (scripts/questions/qlib.py).

Usage: table.py NAME=FILE.jsonl ...
"""
import sys

import qlib


def main():
    runs = []
    for arg in sys.argv[1:]:
        name, path = arg.split("=", 1)
        runs.append((name, qlib.load_rows(path)))
    if not runs:
        sys.exit(__doc__)
    print(qlib.table(runs))


if __name__ == "__main__":
    main()
