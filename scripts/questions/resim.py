#!/usr/bin/env python3
"""Tries a re-ranking signal on the question benchmark offline, in seconds, before any Rust is
written: re-orders the candidates that `scripts/questions/run.py --dump DIR` wrote (each record's
ranked candidates with their scores, at the run's largest budget) by `score × (1 + w × signal)`,
and prints, per set and weight, the mean reciprocal rank of the first candidate holding a gold
line and the share of gold ranges covered when whole candidates are taken best first while they
fit a token budget.

It is an approximation of the product, to rule ideas out cheaply: no excerpts, no signposts, no
summaries, and the signals below split terms as `shared/src/lexical/terms.rs` does only roughly
(identifiers, their snake and camel parts, the light stemmer), with inverse document frequency
over the corpus's files, not its chunks. A signal that moves nothing here is not worth building;
one that moves something must still be built and measured with `run.py`.

Signals (values in 0-1):
  proximity  the best line's weight of distinct question terms on it and within two lines,
             over twice the question's whole weight (what `assemble/excerpts.rs` picks windows by)
  coverage   the share of the question's weight (idf) the candidate holds anywhere
  examples   1 for a candidate under an examples/, demo/ or samples/ folder (use w < 0)
  raises     for a question about failure or edge behaviour ("what happens", "error", "fail",
             "invalid", "too many"...), 1 for a candidate whose lines raise, throw, panic,
             reject, abort or build an error value; 0 for every other question
  docids     how many code names (backticked, snake_case, camelCase, --flags) of the best
             `--docs` documentation candidates the candidate holds, over three, at most 1
  facets     not a re-scoring but an order: among the first `--facet-top` candidates, each
             step takes the one whose score × (1 + w × the share of the question's weight that
             no earlier pick holds) is largest (marginal coverage, for questions that ask two
             things); the rest follow in their order

Usage: resim.py --dump DIR --data target/questions [--sets hand,settings] [--signal proximity|raises|...]
                [--weights 0,0.5,1] [--budgets 3000,6000] [--top 200] [--docs 2] [--facet-top 40]
"""
import argparse
import json
import math
import os
import re
from collections import Counter

STOPWORDS = set("""about after again all also am an and any are as at be been before being both
but by can could did do does don during each eg etc few for from had has have he her here his how
ie if in into is it its just me more most my no not now of on once only or other our out over own
same she should so some such than that the their them then there these they this those through to
too under until up us very was we were what when where which while who whom why will with would
you your""".split())

IDENT = re.compile(r"[A-Za-z0-9_\x80-\uffff]+")
PARTS = re.compile(r"_|(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
BACKTICKED = re.compile(r"`([^`\n]{2,60})`")
CODE_NAME = re.compile(r"--?[A-Za-z][\w-]+|[A-Za-z_][A-Za-z0-9_]*")
FAILURE_QUESTION = re.compile(
    r"what happens|error|fail|invalid|wrong|reject|exit code|too many|not found")
RAISES = re.compile(r"\b(throw|raise|panic!?|reject|abort|Abort|Err\(|Errorf|errors\.New|exit"
                    r"|\w*Error\(|\w*Exception\()")
EXAMPLES = re.compile(r"(^|/)(examples?|_examples|demos?|samples?)/", re.I)


def stem(w):
    """The light stemmer of shared/src/lexical/terms.rs, for lowercase ASCII words."""
    if len(w) < 5 or not re.fullmatch(r"[a-z]+", w):
        return w
    if w.endswith("ies"):
        return w[:-3]
    if w.endswith("sses"):
        w = w[:-2]
    elif w.endswith("s") and not w.endswith(("ss", "us", "is")):
        w = w[:-1]
    stripped = False
    for suffix in ("ing", "ed"):
        base = w[: -len(suffix)]
        if (w.endswith(suffix) and len(base) >= 3 and any(c in "aeiouy" for c in base)
                and not w.endswith("eed")):
            w, stripped = base, True
            break
    if stripped and len(w) >= 4 and w[-1] == w[-2] and w[-1] not in "lsz":
        return w[:-1]
    if len(w) >= 5 and w[-1] in "ey":
        return w[:-1]
    return w


def terms(text):
    out = []
    for m in IDENT.finditer(text):
        t = m.group(0)
        if t.isdigit() or len(t) > 64:
            continue
        t = t.strip("_")
        if len(t) < 2:
            continue
        out.append(stem(t.lower()))
        parts = [p for p in PARTS.split(t) if len(p) >= 2]
        if len(parts) > 1:
            out.extend(stem(p.lower()) for p in parts)
    return out


def query_terms(query):
    stops = {stem(w) for w in STOPWORDS}
    seen = []
    for t in terms(query):
        if t not in stops and t not in seen:
            seen.append(t)
    return seen


class Corpus:
    def __init__(self, root):
        self.root = root
        self.files = {}
        self.df = Counter()
        self.n = 0
        for dirpath, _, names in os.walk(root):
            if "/.git" in dirpath:
                continue
            for name in names:
                try:
                    with open(os.path.join(dirpath, name), encoding="utf-8") as f:
                        text = f.read()
                except (OSError, UnicodeDecodeError):
                    continue
                if len(text) <= 400_000:
                    self.n += 1
                    self.df.update(set(terms(text)))

    def idf(self, t):
        d = self.df.get(t, 0)
        return math.log(1 + (self.n - d + 0.5) / (d + 0.5))

    def lines(self, c):
        path = c["path"]
        if path not in self.files:
            try:
                with open(os.path.join(self.root, path), encoding="utf-8", errors="replace") as f:
                    self.files[path] = f.read().split("\n")
            except OSError:
                self.files[path] = []
        return self.files[path][c["start_line"] - 1:c["end_line"]]


def proximity(lines, qt, idf):
    per_line = [set(terms(l)) if len(l) <= 240 else set() for l in lines]
    best = 0.0
    for k, own in enumerate(per_line):
        hit = [t for t in qt if t in own]
        if not hit:
            continue
        near = set().union(*per_line[max(0, k - 2):k + 3])
        best = max(best, sum(idf[t] for t in hit) + sum(idf[t] for t in qt if t in near))
    whole = sum(idf.values())
    return best / (2 * whole) if whole else 0.0


def coverage(lines, qt, idf):
    seen = set()
    for l in lines:
        if len(l) <= 240:
            seen.update(terms(l))
    whole = sum(idf.values())
    return sum(idf[t] for t in qt if t in seen) / whole if whole else 0.0


def code_names(text):
    out = set()
    for m in BACKTICKED.finditer(text):
        out.update(t for t in CODE_NAME.findall(m.group(1)) if len(t) >= 3)
    for t in CODE_NAME.findall(text):
        if len(t) >= 4 and ("_" in t.strip("_") or re.search(r"[a-z][A-Z]", t)
                            or t.startswith("--")):
            out.add(t)
    return out


def signals(name, q, cands, corpus, docs):
    qt = [t for t in query_terms(q["query"]) if corpus.df.get(t, 0) > 0]
    idf = {t: corpus.idf(t) for t in qt}
    if name == "raises":
        if not FAILURE_QUESTION.search(q["query"].lower()):
            return [0.0] * len(cands)
        return [1.0 if RAISES.search("\n".join(corpus.lines(c))) else 0.0 for c in cands]
    if name == "examples":
        return [1.0 if EXAMPLES.search(c["path"]) else 0.0 for c in cands]
    if name == "docids":
        asked = {w.lower() for w in re.findall(r"\w+", q["query"])}
        names = set()
        for c in [c for c in cands if c.get("doc")][:docs]:
            names |= code_names("\n".join(corpus.lines(c)))
        names = {n.lower().lstrip("-") for n in names if n.lower() not in asked}
        out = []
        for c in cands:
            if c.get("doc") or not names:
                out.append(0.0)
                continue
            held = {t.lower().lstrip("-") for t in CODE_NAME.findall("\n".join(corpus.lines(c)))}
            out.append(min(1.0, len(held & names) / 3))
        return out
    if name == "facets":
        # Per candidate, the question terms it holds and their weights: the ordering below
        # raises a candidate by the share of the question's weight no earlier pick holds.
        whole = sum(idf.values()) or 1.0
        return [{t: idf[t] / whole for t in qt if t in held}
                for held in (set(terms("\n".join(l for l in corpus.lines(c) if len(l) <= 240)))
                             for c in cands)]
    f = {"proximity": proximity, "coverage": coverage}[name]
    return [f(corpus.lines(c), qt, idf) for c in cands]


def facet_order(cands, held, w, top):
    """Greedy: each step takes the candidate whose score times (1 + w × the weight of question
    terms no earlier pick holds) is largest, among the first `top`; the rest keep their order."""
    head = list(range(min(top, len(cands))))
    covered, order = set(), []
    while head:
        best = max(head, key=lambda i: cands[i]["score"]
                   * (1 + w * sum(v for t, v in held[i].items() if t not in covered)))
        head.remove(best)
        order.append(best)
        covered.update(held[best])
    return order + list(range(len(order), len(cands)))


def holds(c, gold):
    return [c["path"] == p and c["start_line"] <= b and c["end_line"] >= a for p, a, b in gold]


def covered(order, cands, held, ngold, budget):
    """The share of the `ngold` gold ranges covered when whole candidates are taken in `order`
    while they fit `budget` tokens (`held[i]`: which ranges candidate i holds)."""
    used, got = 0, [False] * ngold
    for i in order:
        if used + cands[i]["tokens"] <= budget:
            used += cands[i]["tokens"]
            got = [g or h for g, h in zip(got, held[i])]
    return sum(got) / max(ngold, 1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dump", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--sets", default="hand,settings")
    ap.add_argument("--signal", default="proximity",
                    choices=["proximity", "coverage", "examples", "docids", "facets", "raises"])
    ap.add_argument("--weights", default="0,0.25,0.5,1,2")
    ap.add_argument("--budgets", default="3000,6000")
    ap.add_argument("--top", type=int, default=200)
    ap.add_argument("--docs", type=int, default=2)
    ap.add_argument("--facet-top", type=int, default=40)
    args = ap.parse_args()
    sets = args.sets.split(",")
    weights = [float(w) for w in args.weights.split(",")]
    budgets = [int(b) for b in args.budgets.split(",")]
    with open(os.path.join(args.dump, "queries.jsonl"), encoding="utf-8") as f:
        records = [json.loads(l) for l in f]
    corpora = {}
    prepared = []
    for q in records:
        if q.get("set") not in sets:
            continue
        root = os.path.join(args.data, q.get("corpus", "corpora"), q["repo"])
        if root not in corpora:
            corpora[root] = Corpus(root)
        with open(os.path.join(args.dump, q["id"] + ".json"), encoding="utf-8") as f:
            cands = json.load(f)["candidates"][:args.top]
        gold = [(p, a, b) for p, rs in q["gold_ranges"].items() for a, b in rs]
        sig = signals(args.signal, q, cands, corpora[root], args.docs)
        prepared.append((q["set"], cands, sig, [holds(c, gold) for c in cands], len(gold)))
    print(f"signal {args.signal}; MRR of the first gold candidate, then gold ranges covered at "
          + " / ".join(str(b) for b in budgets) + " tokens")
    for s in sets:
        rows = [p for p in prepared if p[0] == s]
        if not rows:
            continue
        for w in weights:
            mrr, cov = 0.0, [0.0] * len(budgets)
            for _, cands, sig, held, ngold in rows:
                if args.signal == "facets":
                    order = facet_order(cands, sig, w, args.facet_top)
                else:
                    score = [c["score"] * (1 + w * x) for c, x in zip(cands, sig)]
                    order = sorted(range(len(cands)), key=lambda i: -score[i])
                first = next((k for k, i in enumerate(order) if any(held[i])), None)
                mrr += 0 if first is None else 1 / (first + 1)
                for b, budget in enumerate(budgets):
                    cov[b] += covered(order, cands, held, ngold, budget)
            n = len(rows)
            print(f"  {s} ({n}) w={w:g}: MRR {mrr / n:.3f}, covered "
                  + " / ".join(f"{c / n:.3f}" for c in cov))


if __name__ == "__main__":
    main()
