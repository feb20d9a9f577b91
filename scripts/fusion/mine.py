#!/usr/bin/env python3
"""Mines commit -> changed-lines queries from bare git mirrors, for fitting ctxgate's ranking
weights on repositories that are not in the visible benchmark (scripts/learn-fusion.sh).

For each repository of the config (scripts/fusion/repos.json):
  * the snapshot S and the end commit E are pinned in the config; a repository without them
    gets them here (E = the default branch's tip, S = the first-parent ancestor with at least
    `back` non-merge commits in S..E), and the config is rewritten, so a later run is the same;
  * the corpus is `git archive S` (regular files only) under <out>/corpora/<name>;
  * every non-merge commit in S..E (oldest first, at most `max_queries` kept) that modifies
    1-4 existing non-test source files, deletes or renames none of S's, is no revert, and has
    a cleaned message of at least 6 words becomes a query: the message is the query, the
    modified files are the gold, and the old-side lines the commit touched, carried back into
    S's version of each file, are the gold lines.
Writes <out>/queries.jsonl. Needs only Python 3 and git.

Usage: mine.py --mirror-root DIR [--config FILE] [--out DIR] [--only a,b]
"""
import argparse
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile

CODE = (".rs .py .pyi .go .js .mjs .cjs .jsx .ts .tsx .mts .cts .java .c .h .cc .cpp .cxx "
        ".hpp .hh .hxx .ipp").split()
TEST_PARTS = {"test", "tests", "testing", "__tests__", "spec", "specs", "testdata", "test-data",
              "test_data", "fixtures", "__fixtures__", "__snapshots__", "e2e", "benchmark",
              "benchmarks", "bench", "benches", "examples", "example", "docs"}
VENDORED = {"vendor", "node_modules", "third_party", "third-party", "deps", "external"}


def is_code(path):
    low = path.lower()
    if low.endswith((".d.ts", ".d.mts", ".d.cts", ".min.js")):
        return False
    if not low.endswith(tuple(CODE)):
        return False
    return not any(p in VENDORED for p in low.split("/")[:-1])


def is_test(path):
    parts = path.lower().split("/")
    name = parts[-1]
    if any(p in TEST_PARTS for p in parts[:-1]):
        return True
    return bool(re.search(r"(^test_.*\.py$|_tests?\.py$|^conftest\.py$|_test\.go$|"
                          r"\.(test|spec)\.[cm]?[jt]sx?$|^tests?\.rs$|Tests?\.java$|_test\.cc?$|"
                          r"_unittest\.cc$|^test_.*\.c$)", name))


def git(gitdir, *args, raw=False):
    out = subprocess.run(["git", "--git-dir", gitdir, *args], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, check=True).stdout
    return out if raw else out.decode("utf-8", "replace")


def has(gitdir, commit, path):
    return subprocess.run(["git", "--git-dir", gitdir, "cat-file", "-e", f"{commit}:{path}"],
                          stderr=subprocess.DEVNULL).returncode == 0


# -- messages: the subject and body without trailers, links and issue numbers
TRAILER = re.compile(r"^\s*[A-Za-z][A-Za-z-]*-[A-Za-z-]+\s*:|^\s*(cc|signed-off-by|change-id)\s*:", re.I)
URL = re.compile(r"\(?<?https?://\S+")
ISSUE = re.compile(r"\b(?:(?:fix(?:es|ed)?|close[sd]?|resolve[sd]?|refs?|see)\s*:?\s*)?"
                   r"(?:[\w.-]+/[\w.-]+)?#\d+|\bGH-\d+\b|\bPR\s*#?\d+\b", re.I)


def cleaned(message):
    keep = []
    for line in message.splitlines():
        if TRAILER.match(line) or re.match(r"^\s*\(?cherry[- ]picked from", line, re.I):
            continue
        if re.match(r"^\s*this reverts commit", line, re.I) or re.match(r"^\s*[-=]{3,}\s*$", line):
            continue
        line = ISSUE.sub("", URL.sub("", line))
        line = re.sub(r"\[(skip ci|ci skip)\]", "", line, flags=re.I)
        line = re.sub(r"\(\s*\)|\[\s*\]", "", line)
        line = re.sub(r"\s+", " ", line).strip()
        keep.append(line if re.search(r"[A-Za-z0-9]", line) else "")
    return re.sub(r"\n{3,}", "\n\n", "\n".join(keep)).strip()


# -- diffs
HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@", re.M)


def hunks(diff):
    return [(int(a), int(b or 1), int(c), int(d or 1)) for a, b, c, d in HUNK.findall(diff)]


def old_lines(hs):
    """Old-side lines of -U0 hunks; an insertion after line a counts as line a."""
    out = set()
    for start, count, _, _ in hs:
        out.update(range(start, start + count) if count else [max(start, 1)])
    return out


def back_to_snapshot(lines, hs):
    """Carries lines of a later version back into S through the -U0 hunks of diff(S, later):
    a line the later version added stands for the S lines it replaced (or the insertion point)."""
    out = set()
    for line in lines:
        shift, replaced = 0, None
        for s_start, s_count, l_start, l_count in hs:
            if l_count and l_start <= line < l_start + l_count:
                replaced = range(s_start, s_start + s_count) if s_count else [max(s_start, 1)]
                break
            if (l_count and l_start + l_count <= line) or (not l_count and l_start < line):
                shift += l_count - s_count
            else:
                break
        out.update(replaced if replaced is not None else [line - shift])
    return out


def ranges(lines):
    out = []
    for n in sorted(lines):
        if out and n == out[-1][1] + 1:
            out[-1][1] = n
        else:
            out.append([n, n])
    return out


def pin(gitdir, repo):
    end = git(gitdir, "rev-parse", "HEAD").strip()
    chain = git(gitdir, "rev-list", "--first-parent", "-n", str(repo["back"] * 4 + 10), end).split()
    for c in chain[1:]:
        n = int(git(gitdir, "rev-list", "--count", "--no-merges", f"{c}..{end}"))
        if n >= repo["back"]:
            return c, end
    return chain[-1], end


def mine(gitdir, repo):
    snap, end = repo["snapshot"], repo["end"]
    queries, seen, line_counts = [], set(), {}
    for c in git(gitdir, "rev-list", "--reverse", "--date-order", "--no-merges", f"{snap}..{end}").split():
        if len(queries) >= repo["max_queries"]:
            break
        parents, message = git(gitdir, "log", "-1", "--format=%P%x00%B", c).split("\x00", 1)
        parents = parents.split()
        if len(parents) != 1 or re.match(r"\s*revert\b", message, re.I):
            continue
        parent = parents[0]
        modified, removed = [], False
        for row in git(gitdir, "diff-tree", "-r", "-M", "--no-commit-id", "--name-status", parent, c).splitlines():
            f = row.split("\t")
            paths = f[1:]
            if not any(is_code(p) and not is_test(p) for p in paths):
                continue
            if f[0] == "M":
                modified.append(paths[0])
            elif f[0][0] in "DR" and has(gitdir, snap, paths[0]):
                removed = True
        if removed or not 1 <= len(modified) <= 4 or not all(has(gitdir, snap, p) for p in modified):
            continue
        query = cleaned(message)
        words = [w for w in query.split() if re.search(r"[A-Za-z]", w)]
        if len(words) < 6 or query.lower() in seen:
            continue
        gold = {}
        for p in modified:
            touched = old_lines(hunks(git(gitdir, "diff", "-U0", "--no-color", "--no-ext-diff", parent, c, "--", p)))
            if not touched:
                continue
            if git(gitdir, "rev-parse", f"{snap}:{p}") != git(gitdir, "rev-parse", f"{parent}:{p}"):
                touched = back_to_snapshot(
                    touched, hunks(git(gitdir, "diff", "-U0", "--no-color", "--no-ext-diff", snap, parent, "--", p)))
            if (snap, p) not in line_counts:
                line_counts[(snap, p)] = git(gitdir, "cat-file", "-p", f"{snap}:{p}").count("\n") + 1
            n = line_counts[(snap, p)]
            kept = {x for x in touched if 1 <= x <= n} or {min(max(1, min(touched)), n)}
            gold[p] = ranges(kept)
        if not gold:
            continue
        seen.add(query.lower())
        queries.append(dict(id=f"{repo['name']}-{c[:10]}", repo=repo["name"], lang=repo["lang"],
                            split=repo["split"], commit=c, query=query, gold_ranges=gold))
    return queries


def export(gitdir, snap, dest):
    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(dest)
    with tarfile.open(fileobj=io.BytesIO(git(gitdir, "archive", "--format=tar", snap, raw=True))) as tar:
        tar.extractall(dest, members=[m for m in tar.getmembers() if m.isfile() or m.isdir()])


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser()
    ap.add_argument("--mirror-root", default=os.environ.get("BENCH_MIRROR_ROOT", ""))
    ap.add_argument("--config", default=os.path.join(here, "repos.json"))
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    cfg = json.load(open(args.config))
    only = set(filter(None, args.only.split(",")))
    everything, pinned_now = [], False
    for repo in cfg["repos"]:
        if only and repo["name"] not in only:
            continue
        gitdir = os.path.join(args.mirror_root, repo["slug"].replace("/", "+"), "repo")
        if not os.path.isdir(gitdir):
            sys.exit(f"no mirror of {repo['slug']} at {gitdir}: bring it with `fetch github:{repo['slug']}`")
        if not repo.get("snapshot"):
            repo["snapshot"], repo["end"] = pin(gitdir, repo)
            pinned_now = True
        qs = mine(gitdir, repo)
        export(gitdir, repo["snapshot"], os.path.join(args.out, "corpora", repo["name"]))
        print(f"{repo['name']:10} {repo['lang']:10} {repo['split']:5} S={repo['snapshot'][:10]} "
              f"queries={len(qs)}", file=sys.stderr)
        everything.extend(qs)
    if pinned_now:
        with open(args.config, "w") as f:
            json.dump(cfg, f, indent=2)
            f.write("\n")
    with open(os.path.join(args.out, "queries.jsonl"), "w") as f:
        for q in everything:
            f.write(json.dumps(q) + "\n")
    print(f"{len(everything)} queries", file=sys.stderr)


if __name__ == "__main__":
    main()
