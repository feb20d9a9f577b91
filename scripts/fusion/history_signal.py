#!/usr/bin/env python3
"""Measures, in simulation, the signal ctxgate's `history` ranking is built on (it was measured
here first; indexer/src/history.rs and shared/src/rank/history.rs ship it): the project's own
commit history read line by line. Each candidate chunk's lines are blamed at the snapshot;
the messages of the commits that wrote them are its history, scored against the request
(idf-weighted shared words, idf over the repository's messages, damped for long messages). A request that resembles the messages of the
commits that wrote a chunk ("Fix double-bracketing in synopsis" after earlier "synopsis" work on
the same lines) points at that chunk even when it shares no word with its code.

Simulated like ltr.py (same candidate dumps, same greedy packing): the shipped score and the
trees blend (log(shipped) + 0.5 x trees, trained here as ltr.py trains them), each multiplied
by 1 + w x history (history scaled to the query's best), and trees trained with the history as
one more feature. The mined queries and the benchmark's are later commits than their snapshots,
so no query sees its own commit. Blame uses the git binary on the fetched mirrors (the
experiment only; cached in --cache).

Usage: history_signal.py --mirrors /work/.mirror [--cache target/fusion/history]
       (defaults read target/fusion and target/retrieval-bench as learn-ranker.sh leaves them)
"""
import argparse
import collections
import json
import math
import os
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor

import lightgbm as lgb
import numpy as np

import ltr

STOP = set("a an the of to in for on and or is be with by from as at it this that fix fixes "
           "fixed add adds added use when not into".split())


def words(text):
    """Lower-cased words, identifiers split at case changes, stop words and one-letter parts
    dropped."""
    out = []
    for w in re.findall(r"[A-Za-z][A-Za-z0-9]*", text):
        for p in re.findall(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])", w):
            p = p.lower()
            if len(p) > 1 and p not in STOP:
                out.append(p)
    return out


def git(mirror, *args):
    return subprocess.run(["git", "-C", mirror, *args], capture_output=True, text=True,
                          errors="replace").stdout


FIRST_PARENT = []


def blame(mirror, snapshot, path):
    """Per line of `path` at `snapshot` (index 0 = line 1), the commit that wrote it."""
    by_line = {}
    for line in git(mirror, "blame", "--porcelain", *FIRST_PARENT, snapshot, "--", path).split("\n"):
        parts = line.split(" ")
        if len(parts) >= 3 and len(parts[0]) == 40 and all(c in "0123456789abcdef" for c in parts[0]):
            by_line[int(parts[2])] = parts[0]
    return [by_line.get(n, "") for n in range(1, max(by_line, default=0) + 1)]


def history_of(repo, mirrors, cache, paths):
    """{'blame': path -> per-line commits, 'msgs': commit -> message} for the candidates' files,
    computed once per repository."""
    out = os.path.join(cache, repo["name"] + ".json")
    if not os.path.exists(out):
        mirror = os.path.join(mirrors, repo["slug"].replace("/", "+"), "repo")
        with ThreadPoolExecutor(2) as pool:
            lines = dict(zip(sorted(paths), pool.map(
                lambda p: blame(mirror, repo["snapshot"], p), sorted(paths))))
        msgs = {}
        for rec in git(mirror, "log", "--format=%H%x00%s%n%b%x01", *FIRST_PARENT,
                       repo["snapshot"]).split("\x01"):
            rec = rec.strip("\n")
            if "\x00" in rec:
                sha, message = rec.split("\x00", 1)
                msgs[sha] = message
        with open(out, "w") as f:
            json.dump({"blame": lines, "msgs": msgs}, f)
    with open(out) as f:
        return json.load(f)


class History:
    def __init__(self, data):
        self.blame = data["blame"]
        self.msgs = {h: collections.Counter(words(m)) for h, m in data["msgs"].items()}
        df = collections.Counter()
        for c in self.msgs.values():
            df.update(c.keys())
        n = len(self.msgs)
        self.idf = {w: math.log(1 + (n - k + 0.5) / (k + 0.5)) for w, k in df.items()}

    def scores(self, query, cands, mode):
        """Per candidate: the best (`max`) or the damped sum (`sum`) of its commits' similarity
        to the query, scaled to the query's best."""
        qw = set(words(query))
        sim, out = {}, []
        for c in cands:
            lines = self.blame.get(c["path"], [])
            shas = {lines[n - 1] for n in range(c["start_line"], min(c["end_line"], len(lines)) + 1)
                    if lines[n - 1]}
            for s in shas:
                if s not in sim:
                    m = self.msgs.get(s, {})
                    sim[s] = sum(self.idf.get(w, 0) for w in qw if w in m) / (1 + 0.02 * sum(m.values()))
            v = [sim[s] for s in shas]
            out.append(max(v, default=0.0) if mode == "max" else sum(v) / math.sqrt(1 + len(v)))
        out = np.array(out)
        top = out.max() if len(out) else 0.0
        return out / top if top > 0 else out


MODES = ("max", "sum")


def load(queries, dumps, repos, mirrors, cache):
    rows, paths = [], collections.defaultdict(set)
    for line in open(queries):
        q = json.loads(line)
        p = os.path.join(dumps, q["id"] + ".json")
        if os.path.exists(p):
            dump = json.load(open(p))
            if dump["candidates"]:
                rows.append((q, dump))
                paths[q["repo"]].update(c["path"] for c in dump["candidates"])
    histories = {name: History(history_of(repos[name], mirrors, cache, ps))
                 for name, ps in paths.items()}
    out = []
    for q, dump in rows:
        x, y, meta = ltr.query_rows(q, dump, 3)
        h = {m: histories[q["repo"]].scores(q["query"], dump["candidates"], m) for m in MODES}
        out.append((q, x, y, meta, h))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mirrors", required=True, help="folder of owner+name/repo git mirrors")
    ap.add_argument("--cache", default="target/fusion/history")
    ap.add_argument("--fusion", default="target/fusion")
    ap.add_argument("--bench", default="target/retrieval-bench")
    ap.add_argument("--first-parent", action="store_true",
                    help="blame along first parents only (a merge writes what it merged), as an "
                         "indexer walking HEAD's first-parent chain would")
    args = ap.parse_args()
    if args.first_parent:
        FIRST_PARENT.append("--first-parent")
    os.makedirs(args.cache, exist_ok=True)
    here = os.path.dirname(os.path.abspath(__file__))
    fusion_repos = {r["name"]: r for r in json.load(open(os.path.join(here, "repos.json")))["repos"]}
    bench_repos = {r["name"]: r for r in json.load(open(os.path.join(args.bench, "repos.json")))["repos"]}
    mined = load(os.path.join(args.fusion, "queries.jsonl"), os.path.join(args.fusion, "ltr-dumps"),
                 fusion_repos, args.mirrors, args.cache)
    sets = {"train": [t for t in mined if t[0]["split"] == "train"],
            "held out": [t for t in mined if t[0]["split"] == "held"],
            "visible": load(os.path.join(args.bench, "queries.jsonl"),
                            os.path.join(args.fusion, "ltr-visible"), bench_repos, args.mirrors,
                            args.cache)}
    params = dict(objective="lambdarank", learning_rate=0.05, num_leaves=15, min_data_in_leaf=50,
                  feature_fraction=0.8, bagging_fraction=0.8, bagging_freq=1,
                  lambdarank_truncation_level=60, label_gain=[0, 1, 3, 7, 15], verbose=-1,
                  seed=1, deterministic=True, num_threads=2)
    train = sets["train"]

    def fit(features):
        ds = lgb.Dataset(np.vstack([features(t) for t in train]), np.concatenate([t[2] for t in train]),
                         group=[len(t[2]) for t in train])
        return lgb.train(params, ds, 100)

    trees = fit(lambda t: t[1])
    with_history = {m: fit(lambda t, m=m: np.hstack([t[1], t[4][m][:, None]])) for m in MODES}

    def blend(t):
        return np.exp(np.log(np.maximum(t[1][:, 8], 1e-6)) + 0.5 * trees.predict(t[1]))

    scorers = [("shipped score", lambda t: t[1][:, 8]), ("trees blend", blend)]
    for m in MODES:
        for w in (0.25, 0.5, 1.0):
            scorers.append((f"shipped x (1 + {w:g} {m})", lambda t, w=w, m=m: t[1][:, 8] * (1 + w * t[4][m])))
            scorers.append((f"blend x (1 + {w:g} {m})", lambda t, w=w, m=m: blend(t) * (1 + w * t[4][m])))
        scorers.append((f"trees with {m} as a feature", lambda t, m=m: np.exp(
            np.log(np.maximum(t[1][:, 8], 1e-6))
            + 0.5 * with_history[m].predict(np.hstack([t[1], t[4][m][:, None]])))))
    print("simulated selection, greedy packing; history = blamed commits' messages")
    for name, data in sets.items():
        for label, scorer in scorers:
            print(f"{name:9} {label:30} {evaluate(data, scorer)}")


def evaluate(data, scorer):
    sums = [0.0] * 4
    for t in data:
        q, _, _, meta, _ = t
        s = scorer(t)
        fr, ag, lr8 = ltr.simulate(q, meta, s, 8000, 0.9)
        lr32 = ltr.simulate(q, meta, s, 32000, 0.9)[2]
        for k, v in enumerate((fr, ag, lr8, lr32)):
            sums[k] += v
    n = max(1, len(data))
    return "8k FR {:.3f} AG {:.3f} LR {:.3f} | 32k LR {:.3f} ({} queries)".format(
        *(v / n for v in sums), len(data))


if __name__ == "__main__":
    main()
