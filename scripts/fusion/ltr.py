#!/usr/bin/env python3
"""A learned ranker that is not a weighted sum: LightGBM's lambdarank (boosted trees) over the
candidate dumps of mined queries (scripts/fusion/run.py --dump), trained on the train
repositories, scored on the held-out ones (and on the visible benchmark when its dumps are
given) in the same simulation of selection as fit.py: file decay under 32k, then greedy
packing into the budget less the frame. It compares the shipped score with the trees' score
and with blends log(shipped) + a x trees. --export writes the trees in the form
shared/src/rank/learned.rs evaluates (the `learned` ranking weight: 0.5 under 32k). --oracle adds
the ceiling of re-ordering these candidates (knowing the gold lines); --knapsack-power P packs by
a knapsack over score^P instead of greedily; --extra-queries/--extra-dumps add training queries
(an earlier window of the train repositories, scripts/fusion/repos-earlier.json); --questions DIR
adds the question benchmark's records of the train split (scripts/questions/run.py --dump DIR:
DIR/queries.jsonl and the dumps) to the training queries, and reports answer-line recall at
2k / 4k / 8k on them. --cv K chooses settings on the train repositories only: leave-repos-out
cross-validation (K folds of repositories, a repository's commits and questions in one fold)
over a grid of --cv-trees x --cv-file-boost, with and without the questions, each scored at the
shipped blend (log(shipped) + 0.5 x trees, the `learned` weight under 8k); held-out rows play
no part in it.

Features per candidate: its signals, the shipped score and its share of the best, its rank,
size, test/doc flags, and its file's best lexical signal, candidate count, best share and the
chunk's rank in the file. Label (graded): 0 not in a gold file, 1 in a gold file without gold
lines, 2 / 3 / 4 holding under a quarter / under 0.6 / more of the query's gold lines;
--file-boost K raises each gold file's first candidate to at least K (weighs files against
lines).

Usage: ltr.py --queries Q.jsonl --dumps DIR [--visible-queries Q --visible-dumps DIR]
              [--trees 100] [--blends 0.1,0.25,0.5] [--file-boost 0] [--oracle]
              [--knapsack-power P] [--extra-queries Q --extra-dumps DIR] [--questions DIR]
              [--cv K [--cv-trees 50,100,200] [--cv-file-boost 0,3]] [--export FILE]
"""
import argparse
import collections
import json
import math
import os

import lightgbm as lgb
import numpy as np

FEATURES = ["lexical", "file", "symbol", "reference", "mention", "path", "graph", "prior",
            "score", "share", "rank", "log_tokens", "test", "doc", "file_max_lexical",
            "file_candidates", "file_rank", "file_share", "lines"]


def query_rows(q, dump, file_boost):
    gold = {(f, x) for f, rs in q["gold_ranges"].items() for a, b in rs for x in range(a, b + 1)}
    total = max(1, len(gold))
    cands = dump["candidates"]
    best = max((c["score"] for c in cands), default=1.0) or 1.0
    max_lex, count, file_best = collections.defaultdict(float), collections.Counter(), {}
    for c in cands:
        max_lex[c["path"]] = max(max_lex[c["path"]], c["signals"]["lexical"])
        count[c["path"]] += 1
        file_best[c["path"]] = max(file_best.get(c["path"], 0.0), c["score"])
    seen = collections.Counter()
    x, y, meta = [], [], []
    for i, c in enumerate(cands):
        s = c["signals"]
        in_file = seen[c["path"]]
        seen[c["path"]] += 1
        x.append([s["lexical"], s["file"], s["symbol"], s["reference"], s["mention"], s["path"],
                  s["graph"], s["prior"], c["score"], c["score"] / best, i / len(cands),
                  math.log1p(c["tokens"]), float(c["test"]), float(c["doc"]), max_lex[c["path"]],
                  count[c["path"]], in_file, file_best[c["path"]] / best,
                  c["end_line"] - c["start_line"] + 1])
        lines = frozenset(n for n in range(c["start_line"], c["end_line"] + 1)
                          if (c["path"], n) in gold)
        rel = 0
        if c["path"] in q["gold_ranges"]:
            frac = len(lines) / total
            rel = 1 if not lines else 2 if frac < 0.25 else 3 if frac < 0.6 else 4
            if file_boost and in_file == 0:
                rel = max(rel, file_boost)
        y.append(rel)
        # What packing charges for the piece: its tokens and a header.
        meta.append((c["path"], c["tokens"] + 12 + len(c["path"]) // 3, lines))
    return np.array(x, dtype=np.float32), np.array(y), meta


def parity(x, cands):
    """The largest relative difference between the features computed here and those ctxgate
    wrote into the dump (shared/src/rank/learned.rs computes them when it serves), and the rows
    compared; dumps of older builds carry none."""
    theirs = [c["features"] for c in cands if "features" in c]
    if len(theirs) != len(cands):
        return 0.0, 0
    t = np.array(theirs, dtype=np.float64)
    d = np.abs(t - x.astype(np.float64)) / np.maximum(1.0, np.abs(t))
    return float(d.max()), len(theirs)


# Past this relative difference the trees would be trained on other features than they serve.
PARITY_TOLERANCE = 1e-4


def load(queries, dumps, file_boost):
    out = []
    worst, rows = 0.0, 0
    for line in open(queries):
        q = json.loads(line)
        path = os.path.join(dumps, q["id"] + ".json")
        if os.path.exists(path):
            dump = json.load(open(path))
            if dump["candidates"]:
                row = (q, *query_rows(q, dump, file_boost))
                d, n = parity(row[1], dump["candidates"])
                worst, rows = max(worst, d), rows + n
                out.append(row)
    print(f"feature parity with ctxgate ({dumps}): {rows} candidates, "
          f"largest relative difference {worst:.2g}")
    if worst > PARITY_TOLERANCE:
        raise SystemExit("the features computed here differ from shared/src/rank/learned.rs")
    return out


def simulate(q, meta, scores, budget, decay, power=0.0):
    """(file recall, all gold, line recall) of greedy packing in score order, or with `power`
    above 0 of a 0/1 knapsack over the best KNAPSACK_TOP candidates that maximizes the sum of
    their (decayed) scores raised to `power`."""
    gold_files = set(q["gold_ranges"])
    total = sum(b - a + 1 for rs in q["gold_ranges"].values() for a, b in rs)
    order = sorted(range(len(scores)), key=lambda i: -scores[i])
    strength = min(1.0, max(0.0, math.log2(32000 / budget) / 2))
    d = 1 - (1 - decay) * strength
    seen, decayed = collections.Counter(), {}
    for i in order:
        decayed[i] = scores[i] * d ** seen[meta[i][0]]
        seen[meta[i][0]] += 1
    room = budget - 40 - len(q["query"]) // 3
    ranked = sorted(order, key=lambda i: -decayed[i])
    chosen = knapsack(ranked[:KNAPSACK_TOP], meta, decayed, room, power) if power > 0 else []
    if power <= 0:
        for i in ranked:
            if meta[i][1] <= room:
                room -= meta[i][1]
                chosen.append(i)
                if room < 20:
                    break
    files, lines = set(), set()
    for i in chosen:
        path, _, gold = meta[i]
        if path in gold_files:
            files.add(path)
        lines |= {(path, n) for n in gold}
    return len(files) / len(gold_files), float(files == gold_files), len(lines) / max(1, total)


# How many of the best candidates the knapsack packing weighs, and its unit of tokens.
KNAPSACK_TOP, KNAPSACK_UNIT = 80, 16


def knapsack(ranked, meta, value, room, power):
    """The candidates of `ranked` that fit in `room` tokens with the largest sum of
    value ** power (dynamic programming in units of KNAPSACK_UNIT tokens)."""
    cap = room // KNAPSACK_UNIT
    weight = [-(-meta[i][1] // KNAPSACK_UNIT) for i in ranked]
    best = np.zeros(cap + 1)
    took = np.zeros((len(ranked), cap + 1), dtype=bool)
    for k, i in enumerate(ranked):
        w = weight[k]
        if w > cap:
            continue
        with_it = best[:cap + 1 - w] + max(value[i], 0.0) ** power
        better = with_it > best[w:]
        took[k, w:] = better
        best[w:] = np.where(better, with_it, best[w:])
    chosen, c = [], cap
    for k in range(len(ranked) - 1, -1, -1):
        if took[k, c]:
            chosen.append(ranked[k])
            c -= weight[k]
    return chosen


def oracle(x, meta):
    """Scores that know the answer: each candidate's gold lines per token (the shipped score
    breaks ties), for the ceiling of re-ordering these candidates."""
    return np.array([len(g) / t + 1e-9 * x[i, 8] for i, (_, t, g) in enumerate(meta)])


def evaluate(data, scorer, power=0.0):
    sums, n = [0.0] * 4, 0
    for q, x, _, meta in data:
        s = scorer(x, meta)
        fr, ag, lr8 = simulate(q, meta, s, 8000, 0.9, power)
        lr32 = simulate(q, meta, s, 32000, 0.9, power)[2]
        for k, v in enumerate((fr, ag, lr8, lr32)):
            sums[k] += v
        n += 1
    return "8k FR {:.3f} AG {:.3f} LR {:.3f} | 32k LR {:.3f} ({} queries)".format(
        *(v / max(1, n) for v in sums), n)


def evaluate_questions(data, scorer):
    """Answer-line recall at 2k / 4k / 8k of question records in the simulation."""
    sums, n = [0.0] * 3, 0
    for q, x, _, meta in data:
        s = scorer(x, meta)
        for k, b in enumerate((2000, 4000, 8000)):
            sums[k] += simulate(q, meta, s, b, 0.9)[2]
        n += 1
    return [v / max(1, n) for v in sums], n


PARAMS = dict(objective="lambdarank", learning_rate=0.05, num_leaves=15, min_data_in_leaf=50,
              feature_fraction=0.8, bagging_fraction=0.8, bagging_freq=1,
              lambdarank_truncation_level=60, label_gain=[0, 1, 3, 7, 15], verbose=-1,
              seed=1, deterministic=True, num_threads=2)

# The `learned` weight ctxgate serves under 8k (shared/src/rank/weights.rs, LEARNED_WEIGHT).
SHIPPED_BLEND = 0.5


def fit(train, trees):
    ds = lgb.Dataset(np.vstack([t[1] for t in train]), np.concatenate([t[2] for t in train]),
                     group=[len(t[2]) for t in train], feature_name=FEATURES)
    return lgb.train(PARAMS, ds, trees)


def blended(model, a=SHIPPED_BLEND):
    return lambda x, _: np.exp(np.log(np.maximum(x[:, 8], 1e-6)) + a * model.predict(x))


def cross_validate(args):
    """Leave-repos-out cross-validation over the train repositories: for each setting, the
    out-of-fold commit rows (8k FR / AG / LR) and question rows (LR 2k / 4k / 8k)."""
    grids = {}
    for boost in (int(v) for v in args.cv_file_boost.split(",")):
        commits = [t for t in load(args.queries, args.dumps, boost) if t[0]["split"] == "train"]
        if args.extra_queries and args.extra_dumps:
            commits += load(args.extra_queries, args.extra_dumps, boost)
        questions = [t for t in load(os.path.join(args.questions, "queries.jsonl"),
                                     args.questions, boost) if t[0]["split"] == "train"]
        grids[boost] = (commits, questions)
    repos = sorted({t[0]["repo"] for c, q in grids.values() for t in c + q})
    fold = {r: i % args.cv for i, r in enumerate(repos)}
    print(f"leave-repos-out cross-validation, {args.cv} folds over {len(repos)} train "
          f"repositories: " + "; ".join(
              ",".join(r for r in repos if fold[r] == k) for k in range(args.cv)))
    print("setting                                   | commits 8k FR / AG / LR  | "
          "questions LR 2k / 4k / 8k (mean)")

    def row(label, commit_scores, question_scores):
        c = [np.mean([v[k] for v in commit_scores]) for k in range(3)]
        qv = [np.mean([v[k] for v in question_scores]) for k in range(3)]
        print(f"{label:42}| {c[0]:.3f} / {c[1]:.3f} / {c[2]:.3f}    | "
              f"{qv[0]:.3f} / {qv[1]:.3f} / {qv[2]:.3f} ({np.mean(qv):.3f})")

    def score_rows(data, scorer, questions):
        out = []
        for q, x, _, meta in data:
            s = scorer(x, meta)
            if questions:
                out.append([simulate(q, meta, s, b, 0.9)[2] for b in (2000, 4000, 8000)])
            else:
                out.append(list(simulate(q, meta, s, 8000, 0.9)))
        return out

    commits, questions = grids[min(grids)]
    row("shipped score (no trees)", score_rows(commits, lambda x, _: x[:, 8], False),
        score_rows(questions, lambda x, _: x[:, 8], True))
    for boost, (commits, questions) in grids.items():
        for trees in (int(v) for v in args.cv_trees.split(",")):
            for with_q in (False, True):
                cs, qs = [], []
                for k in range(args.cv):
                    train = [t for t in commits if fold[t[0]["repo"]] != k]
                    if with_q:
                        train += [t for t in questions if fold[t[0]["repo"]] != k]
                    model = fit(train, trees)
                    cs += score_rows([t for t in commits if fold[t[0]["repo"]] == k],
                                     blended(model), False)
                    qs += score_rows([t for t in questions if fold[t[0]["repo"]] == k],
                                     blended(model), True)
                row(f"{'commits+questions' if with_q else 'commits only':17} boost {boost} "
                    f"{trees:3} trees", cs, qs)


def export(model, path, probes):
    """The trees as flat arrays (shared/src/rank/learned.rs reads them): per tree, each split
    node's feature, threshold and children (a child below 0 is leaf -child-1), and the leaves'
    values; a split sends x to the left when x <= threshold."""
    trees = []
    for info in model.dump_model()["tree_info"]:
        t = {"feature": [], "threshold": [], "left": [], "right": [], "leaf": []}

        def walk(node):
            if "leaf_value" in node:
                t["leaf"].append(node["leaf_value"])
                return -len(t["leaf"])
            assert node["decision_type"] == "<=", node["decision_type"]
            at = len(t["feature"])
            for k in ("feature", "threshold", "left", "right"):
                t[k].append(0)
            t["feature"][at] = node["split_feature"]
            t["threshold"][at] = node["threshold"]
            t["left"][at] = walk(node["left_child"])
            t["right"][at] = walk(node["right_child"])
            return at

        root = walk(info["tree_structure"])
        if root < 0:  # a tree of one leaf
            t = {"feature": [0], "threshold": [0.0], "left": [root], "right": [root], "leaf": t["leaf"]}
        trees.append(t)
    with open(path, "w") as f:
        # A few rows with LightGBM's own predictions: the Rust evaluator's test checks it
        # gives the same.
        check = [{"x": [float(v) for v in row], "y": float(model.predict(row[None, :])[0])}
                 for row in probes]
        json.dump({"features": FEATURES, "trees": trees, "check": check}, f,
                  separators=(",", ":"))
        f.write("\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--queries", required=True)
    ap.add_argument("--dumps", required=True)
    ap.add_argument("--visible-queries", default="")
    ap.add_argument("--visible-dumps", default="")
    ap.add_argument("--extra-queries", default="",
                    help="more training queries, all trained on: an earlier window of the train "
                         "repositories (mine.py --config scripts/fusion/repos-earlier.json)")
    ap.add_argument("--extra-dumps", default="")
    ap.add_argument("--questions", default="",
                    help="question records and dumps (scripts/questions/run.py --dump DIR): "
                         "the train split's are trained on")
    ap.add_argument("--cv", type=int, default=0,
                    help="leave-repos-out cross-validation over the train repositories in K "
                         "folds, over a grid of settings, instead of one model")
    ap.add_argument("--cv-trees", default="50,100,200")
    ap.add_argument("--cv-file-boost", default="0,3")
    ap.add_argument("--knapsack-power", type=float, default=0.0,
                    help="pack by a knapsack over score ** P instead of greedily (0)")
    ap.add_argument("--oracle", action="store_true",
                    help="add a row that orders the candidates knowing the gold lines")
    ap.add_argument("--trees", type=int, default=100)
    ap.add_argument("--blends", default="0.1,0.25,0.5")
    ap.add_argument("--file-boost", type=int, default=0)
    ap.add_argument("--export", default="", help="write the trees as ctxgate's model JSON")
    args = ap.parse_args()
    if args.cv:
        if not args.questions:
            raise SystemExit("--cv needs --questions")
        cross_validate(args)
        return
    mined = load(args.queries, args.dumps, args.file_boost)
    sets = {"train": [t for t in mined if t[0]["split"] == "train"],
            "held out": [t for t in mined if t[0]["split"] == "held"]}
    if args.visible_queries and args.visible_dumps:
        sets["visible"] = load(args.visible_queries, args.visible_dumps, args.file_boost)
    if args.extra_queries and args.extra_dumps:
        sets["earlier"] = load(args.extra_queries, args.extra_dumps, args.file_boost)
    questions = {}
    if args.questions:
        rows = load(os.path.join(args.questions, "queries.jsonl"), args.questions, args.file_boost)
        questions = {"questions train": [t for t in rows if t[0]["split"] == "train"],
                     "questions held": [t for t in rows if t[0]["split"] == "held"]}
    train = sets["train"] + sets.get("earlier", []) + questions.get("questions train", [])
    model = fit(train, args.trees)
    scorers = [("shipped score", lambda x, _: x[:, 8]),
               ("trees alone", lambda x, _: np.exp(model.predict(x)))]
    for a in (float(v) for v in args.blends.split(",") if v):
        scorers.append((f"log(shipped) + {a:g} x trees", lambda x, _, a=a: np.exp(
            np.log(np.maximum(x[:, 8], 1e-6)) + a * model.predict(x))))
    if args.oracle:
        scorers.append(("oracle (gold lines per token)", oracle))
    packing = f"knapsack over score^{args.knapsack_power:g}" if args.knapsack_power > 0 else "greedy"
    print(f"file boost {args.file_boost}, {args.trees} trees; simulated selection, {packing} packing")
    for name, data in sets.items():
        for label, scorer in scorers:
            print(f"{name:9} {label:28} {evaluate(data, scorer, args.knapsack_power)}")
    for name, data in questions.items():
        if data:
            for label, scorer in scorers:
                lr, n = evaluate_questions(data, scorer)
                print(f"{name:15} {label:28} LR 2k / 4k / 8k {lr[0]:.3f} / {lr[1]:.3f} / "
                      f"{lr[2]:.3f} ({n} queries)")
    if args.export:
        export(model, args.export, np.vstack([t[1] for t in train[:3]])[::7][:12])
    gains = sorted(zip(model.feature_importance("gain"), FEATURES), reverse=True)
    print("feature gain:", ", ".join(f"{f} {g:.0f}" for g, f in gains[:8]))


if __name__ == "__main__":
    main()
