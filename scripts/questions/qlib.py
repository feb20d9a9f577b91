"""Shared code of the question benchmark: loading records, scoring one answer, and the tables
(scripts/questions/run.py for ctxgate, bm25_baseline.py for the reference, table.py for both).

An answer is a list of pieces {path, start_line, end_line, score?} from one system. Scores:
  * answer-line recall: the fraction of gold lines inside some returned piece's line range;
  * answered: every gold line is covered;
  * rank: 1-based position, best first, of the first piece holding a gold line (None if
    none); pieces are ordered by their `score` when they carry one (highest first, ties in
    listed order), else as listed. MRR averages 1/rank, 0 for none.
"""
import json
import os
import re
import sys

SETS = ("hand", "docstring", "settings")


def load_records(data, sets, split="all"):
    """The records of the named sets (<data>/<set>.jsonl), of one split or all."""
    out = []
    for s in sets:
        path = os.path.join(data, f"{s}.jsonl")
        if not os.path.exists(path):
            raise SystemExit(f"no {path}: run scripts/questions/build.py first")
        for line in open(path, encoding="utf-8"):
            if line.strip():
                r = json.loads(line)
                if split == "all" or r["split"] == split:
                    out.append(r)
    return out


def records_and_budgets(args):
    """The records and budgets a runner's parsed arguments ask for (--data, --sets, --split,
    --budgets); without hand.jsonl the hand set is left out with a note."""
    sets = [s for s in args.sets.split(",") if s]
    if "hand" in sets and not os.path.exists(os.path.join(args.data, "hand.jsonl")):
        print("no hand.jsonl: running without the hand set", file=sys.stderr)
        sets.remove("hand")
    queries = load_records(args.data, sets, args.split)
    return queries, [int(b) for b in args.budgets.split(",")]


def norm_path(p):
    p = p.replace("\\", "/")
    while p.startswith("./"):
        p = p[2:]
    return p


def ordered(pieces):
    """Pieces best first: by score when every piece has one, else as listed."""
    if pieces and all(isinstance(p.get("score"), (int, float)) for p in pieces):
        return [p for _, p in sorted(enumerate(pieces), key=lambda ip: (-ip[1]["score"], ip[0]))]
    return list(pieces)


def visible_lines(prompt):
    """What a prompt shows of each file: {path: [(start, end, {stripped line, ...})]}, read from
    its `### path:start-end` sections and its one-line signposts. Compression keeps a piece's line range but replaces lines
    with markers, so a range alone over-counts; a gold line counts only when its text is there."""
    out, cur, fence = {}, None, None
    for line in prompt.splitlines():
        if fence is not None:
            if line == fence:
                cur, fence = None, None
            else:
                cur.add(line.strip())
            continue
        m = SIGNPOST.match(line)
        if m:
            n = int(m.group(2))
            out.setdefault(norm_path(m.group(1)), []).append((n, n, {m.group(3).strip()}))
            continue
        m = HEADER.match(line)
        if m:
            cur = set()
            out.setdefault(norm_path(m.group(1)), []).append((int(m.group(2)), int(m.group(3)), cur))
        elif cur is not None and line.startswith("```"):
            fence = line[:len(line) - len(line.lstrip("`"))]
    return out


HEADER = re.compile(r"^### (.+):(\d+)-(\d+)(?: \(.*\))?$")
# A signpost: one line of a further file, listed after the code (`- path:line `text``).
SIGNPOST = re.compile(r"^- (.+):(\d+) `(.*)`$")


def _trivial(text):
    return not any(c.isalnum() for c in text)


def score_answer(pieces, gold, shown=None, file_line=None):
    """(lines hit, gold lines, rank of the first answering piece or None) of one answer.
    With `shown` (visible_lines of the prompt) and `file_line(path, n)` (the indexed file's line
    n), a gold line is hit only when its text is in a section covering it; gold lines without a
    letter or digit (a closing brace, a blank) are left out of the count then."""
    pieces = ordered(pieces)
    spans = {}
    for p in pieces:
        spans.setdefault(norm_path(p.get("path", "")), []).append(
            (p.get("start_line", 0), p.get("end_line", -1)))
    gold_lines = {(norm_path(path), line) for path, rs in gold.items()
                  for a, b in rs for line in range(a, b + 1)}
    if shown is not None and file_line is not None:
        texts = {(path, n): file_line(path, n).strip() for path, n in gold_lines}
        kept = {g for g in gold_lines if not _trivial(texts[g])}
        gold_lines = kept or gold_lines

        def hit_line(path, n):
            t = texts[(path, n)]
            return any(a <= n <= b and (t in seen or (_trivial(t) and not kept))
                       for a, b, seen in shown.get(path, ()))
    else:
        def hit_line(path, n):
            return any(s <= n <= e for s, e in spans.get(path, ()))
    hit = sum(hit_line(path, line) for path, line in gold_lines)
    rank = None
    for i, p in enumerate(pieces, 1):
        path, s, e = norm_path(p.get("path", "")), p.get("start_line", 0), p.get("end_line", -1)
        if any(gp == path and s <= line <= e and hit_line(gp, line) for gp, line in gold_lines):
            rank = i
            break
    return hit, len(gold_lines), rank


def make_row(q, budget, pieces, ok, shown=None, file_line=None, **extra):
    hit, total, rank = score_answer(pieces, q["gold_ranges"], shown, file_line)
    row = dict(id=q["id"], repo=q["repo"], split=q["split"], set=q["set"],
               corpus=q.get("corpus", "corpora"), budget=budget, ok=ok, lines_hit=hit,
               lines=total, recall=hit / max(1, total), answered=total > 0 and hit == total,
               rank=rank, pieces=len(pieces))
    row.update(extra)
    return row


def load_rows(path):
    return [json.loads(line) for line in open(path, encoding="utf-8") if line.strip()]


# -- tables ----------------------------------------------------------------------------------------

def summary(rows):
    """(answer-line recall, answered rate, MRR) of rows; None for no rows."""
    if not rows:
        return None
    n = len(rows)
    return (sum(r["recall"] for r in rows) / n, sum(bool(r["answered"]) for r in rows) / n,
            sum(1 / r["rank"] for r in rows if r["rank"]) / n)


def _cells(rows, budgets):
    """Three cells, 'a / b / c' over the budgets: recall, answered, MRR."""
    out = []
    for k in range(3):
        vals = []
        for b in budgets:
            s = summary([r for r in rows if r["budget"] == b])
            vals.append("-" if s is None else f"{s[k]:.2f}")
        out.append(" / ".join(vals))
    return out


def table(runs, budgets=None, repo_order=None):
    """A markdown table of named runs [(name, rows)] side by side: for each set, one line per
    repository and a held and a train line; then held and train over all sets. Each run gets
    answer-line recall, answered rate and MRR of the first answering piece, at each budget."""
    budgets = budgets or sorted({r["budget"] for _, rows in runs for r in rows})
    bk = "/".join(f"{b // 1000}k" if b % 1000 == 0 else str(b) for b in budgets)
    all_rows = [r for _, rows in runs for r in rows]
    split_of = {r["repo"]: r["split"] for r in all_rows}
    repos = repo_order or sorted(split_of, key=lambda x: (split_of[x] != "held", x))
    sets = [s for s in SETS if any(r["set"] == s for r in all_rows)]
    head = ["set", "repository (queries)"]
    for name, _ in runs:
        head += [f"{name} recall {bk}", f"{name} answered {bk}", f"{name} MRR {bk}"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]

    def line(label_set, label, pick):
        ids = {r["id"] for r in all_rows if pick(r)}
        if not ids:
            return
        cells = [label_set, f"{label} ({len(ids)})"]
        for _, rows in runs:
            cells += _cells([r for r in rows if pick(r)], budgets)
        lines.append("| " + " | ".join(cells) + " |")

    for s in sets:
        for repo in repos:
            line(s, repo, lambda r, s=s, repo=repo: r["set"] == s and r["repo"] == repo)
        for split in ("held", "train"):
            line(s, f"**{split}**", lambda r, s=s, split=split: r["set"] == s and
                 r["split"] == split)
    for split in ("held", "train"):
        line("all", f"**{split}**", lambda r, split=split: r["split"] == split)
    return "\n".join(lines)
