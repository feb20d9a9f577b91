#!/usr/bin/env python3
"""The chunk BM25 reference system for the question benchmark, scored like ctxgate
(scripts/questions/run.py, same rows, same qlib table).

Each record's corpus (<data>/<corpus>/<repo>) is cut into windows: every text file (binary files
and files over 1 MB skipped) in runs of whole lines of about --window o200k_base tokens (a
window closes at the first line that brings it to --window or more; a longer single line is a
window of its own). Windows are ranked by BM25 (k1 1.2, b 0.75; idf log(1 + (N - df + 0.5) /
(df + 0.5))) over a simple code tokenizer: split on non-alphanumerics, then camelCase /
PascalCase / digits, lowercased; each query term counts once. The answer is the windows taken
best first (score > 0) until the next one does not fit the budget; the budget counts the
windows' own o200k_base tokens only (no prompt, headers or query, which ctxgate's budget holds).

Tokens are counted with tiktoken's o200k_base: run with the venv of scripts/bench-questions.sh
(TIKTOKEN_CACHE_DIR set to the ranks it builds from js-tiktoken).

Usage: bm25_baseline.py --data DIR [--sets hand,docstring,settings] [--budgets 2000,4000,8000]
                        [--split held|train|all] [--window 400] --out FILE.jsonl
"""
import argparse
import collections
import json
import math
import os
import re
import sys
import time

import qlib

MAX_BYTES = 1 << 20
WORD = re.compile(r"[A-Za-z0-9]+")
PART = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|[0-9]+")


def code_tokens(text):
    out = []
    for w in WORD.findall(text):
        out.extend(p.lower() for p in PART.findall(w))
    return out


def encoding():
    try:
        import tiktoken
    except ImportError:
        sys.exit("bm25_baseline.py needs tiktoken: run it with target/questions/venv/bin/python "
                 "(scripts/bench-questions.sh sets it up)")
    return tiktoken.get_encoding("o200k_base")


class Index:
    """The windows of one corpus and their BM25 postings."""

    def __init__(self, root, enc, window, k1, b):
        self.k1, self.b = k1, b
        self.windows = []  # (path, first line, last line, tokens)
        lengths, postings = [], collections.defaultdict(list)
        for d, dirs, files in os.walk(root):
            dirs.sort()
            for name in sorted(files):
                full = os.path.join(d, name)
                rel = os.path.relpath(full, root).replace(os.sep, "/")
                if os.path.getsize(full) > MAX_BYTES:
                    continue
                raw = open(full, "rb").read()
                if b"\0" in raw[:8192]:
                    continue
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError:
                    continue
                lines = text.splitlines(keepends=True)
                if not lines:
                    continue
                counts = [len(t) for t in enc.encode_ordinary_batch(lines)]
                cuts, start, acc = [], 0, 0
                for i, c in enumerate(counts):
                    acc += c
                    if acc >= window:
                        cuts.append((start, i))
                        start, acc = i + 1, 0
                if start < len(lines):
                    cuts.append((start, len(lines) - 1))
                texts = ["".join(lines[a:z + 1]) for a, z in cuts]
                for (a, z), t, n_tok in zip(cuts, texts, enc.encode_ordinary_batch(texts)):
                    w = len(self.windows)
                    toks = code_tokens(t)
                    self.windows.append((rel, a + 1, z + 1, len(n_tok)))
                    lengths.append(len(toks))
                    for term, tf in collections.Counter(toks).items():
                        postings[term].append((w, tf))
        self.lengths = lengths
        self.avg = sum(lengths) / max(1, len(lengths))
        self.postings = postings

    def search(self, query):
        n = len(self.windows)
        scores = collections.defaultdict(float)
        for term in set(code_tokens(query)):
            post = self.postings.get(term)
            if not post:
                continue
            idf = math.log(1 + (n - len(post) + 0.5) / (len(post) + 0.5))
            for w, tf in post:
                norm = self.k1 * (1 - self.b + self.b * self.lengths[w] / self.avg)
                scores[w] += idf * tf * (self.k1 + 1) / (tf + norm)
        return sorted(scores.items(), key=lambda ws: (-ws[1], ws[0]))

    def answer(self, ranked, budget):
        pieces, used = [], 0
        for w, s in ranked:
            path, a, z, tokens = self.windows[w]
            if s <= 0 or used + tokens > budget:
                break
            used += tokens
            pieces.append(dict(path=path, start_line=a, end_line=z, score=s, tokens=tokens))
        return pieces, used


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True)
    ap.add_argument("--sets", default="hand,docstring,settings")
    ap.add_argument("--budgets", default="2000,4000,8000")
    ap.add_argument("--split", default="all", choices=("held", "train", "all"))
    ap.add_argument("--window", type=int, default=400)
    ap.add_argument("--k1", type=float, default=1.2)
    ap.add_argument("--b", type=float, default=0.75)
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    queries, budgets = qlib.records_and_budgets(args)
    enc = encoding()
    t0 = time.monotonic()
    rows = []
    for corpus, repo in sorted({(q.get("corpus", "corpora"), q["repo"]) for q in queries}):
        t1 = time.monotonic()
        index = Index(os.path.join(args.data, corpus, repo), enc, args.window, args.k1, args.b)
        built = time.monotonic() - t1
        for q in (q for q in queries if q.get("corpus", "corpora") == corpus and q["repo"] == repo):
            t2 = time.monotonic()
            ranked = index.search(q["query"])
            secs = time.monotonic() - t2
            for budget in budgets:
                pieces, used = index.answer(ranked, budget)
                spans = [[p["path"], p["start_line"], p["end_line"], round(p["score"], 4)]
                         for p in pieces]
                rows.append(qlib.make_row(q, budget, pieces, True, tokens=used,
                                          secs=round(secs, 4), spans=spans))
        print(f"{corpus}/{repo}: {len(index.windows)} windows, indexed in {built:.1f}s",
              file=sys.stderr)
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps(r) + "\n")
    print(qlib.table([("bm25", rows)], budgets))
    print(f"{len(rows)} rows, {time.monotonic() - t0:.0f}s", file=sys.stderr)


if __name__ == "__main__":
    main()
