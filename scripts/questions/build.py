#!/usr/bin/env python3
"""Builds the question benchmark's corpora and automatic question sets from bare git mirrors.

For each repository of scripts/questions/repos.json:
  * <out>/corpora/<name>: `git archive <snapshot>` (regular files only);
  * <out>/corpora-nodoc/<name>: the same files with every comment and docstring of the scanned
    languages (Rust, Python, Go, JavaScript, TypeScript, Java) blanked, line numbers unchanged
    (scripts/questions/scan.py); other files as they are.
Then three sets, every record {id, repo, lang, split, set, query, gold_ranges, corpus, ...}:
  * docstring.jsonl (the CodeSearchNet method): documented functions of non-test, non-example,
    non-vendored source; the query is the doc's first sentence, the gold the function from its
    signature line to its last line; run against corpora-nodoc, where the doc is gone;
  * settings.jsonl: named constants and default values whose name carries a settings word; the
    query is made from the name by a few templates, the gold is the defining line(s); run
    against corpora;
  * hand.jsonl: scripts/questions/hand-*.jsonl as they are, run against corpora.
At most --docstring-per-repo / --settings-per-repo records a repository, picked by a sha1 of
(repository, path, line, query): the same input gives the same sets. Needs Python 3 and git.

Usage: build.py --mirror-root DIR --out DIR [--config FILE] [--only a,b]
                [--docstring-per-repo 25] [--settings-per-repo 15]
"""
import argparse
import collections
import glob
import hashlib
import html
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile

import scan

HERE = os.path.dirname(os.path.abspath(__file__))
MAX_FUNCTION_LINES = 80
MAX_SETTING_LINES = 15


def git(gitdir, *args):
    return subprocess.run(["git", "--git-dir", gitdir, *args], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, check=True).stdout


def export(gitdir, snap, dest):
    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(dest)
    with tarfile.open(fileobj=io.BytesIO(git(gitdir, "archive", "--format=tar", snap))) as tar:
        tar.extractall(dest, members=[m for m in tar.getmembers() if m.isfile() or m.isdir()])


def walk(root):
    """Relative paths of the regular files under root, sorted."""
    out = []
    for d, dirs, files in os.walk(root):
        dirs.sort()
        for f in sorted(files):
            out.append(os.path.relpath(os.path.join(d, f), root).replace(os.sep, "/"))
    return out


def read_text(path):
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8")
    except (UnicodeDecodeError, OSError):
        return None


def make_nodoc(src, dest):
    """Copies src to dest with comments and docstrings blanked; returns the files left as
    they were because they could not be scanned."""
    shutil.rmtree(dest, ignore_errors=True)
    kept = []
    for rel in walk(src):
        a, b = os.path.join(src, rel), os.path.join(dest, rel)
        os.makedirs(os.path.dirname(b), exist_ok=True)
        lang = scan.lang_of(rel)
        text = read_text(a) if lang else None
        blanked = scan.blank_comments(text, lang) if text is not None else None
        if blanked is None or blanked.count("\n") != text.count("\n"):
            if lang:
                kept.append(rel)
            shutil.copyfile(a, b)
            continue
        with open(b, "w", encoding="utf-8", newline="") as f:
            f.write(blanked)
    return kept


def h(*parts):
    return hashlib.sha1("|".join(str(p) for p in parts).encode()).hexdigest()


# -- docstring queries -----------------------------------------------------------------------------

STOP_AT = re.compile(r"^(@\w+|:param\b|:returns?\b|:raises?\b|:type\b|:rtype\b|\.\. |#+ |>>>|"
                     r"(Args|Arguments|Parameters|Params|Returns|Return|Raises|Yields|Example|"
                     r"Examples|Note|Notes|Warning|Panics|Errors|Safety|See also)\s*:?\s*$)",
                     re.I)
JUNK_START = re.compile(r"^(todo|fixme|xxx|hack|deprecated|@|see\b|see:|internal\b|"
                        r"{@inheritdoc|copyright|license|private\b|nolint|eslint|istanbul|"
                        r"noinspection|-|\*|\d+\.)", re.I)


def clean_markup(s):
    s = re.sub(r"\{@(?:link|linkplain)\s+([^}\s]+)\s+([^}]+)\}", r"\2", s)
    s = re.sub(r"\{@(?:link|linkplain|code|literal|value)\s*([^}]*)\}",
               lambda m: m.group(1).replace("#", ".").strip("."), s)
    s = re.sub(r":[\w:]+:`([^`<]+?)\s*<[^`>]*>`", r"\1", s)  # :class:`Text <target>`
    s = re.sub(r":[\w:]+:`~([^`]+)`", lambda m: m.group(1).split(".")[-1], s)
    s = re.sub(r":[\w:]+:`([^`]+)`", r"\1", s)
    s = re.sub(r"\[([^\]]+)\]\([^)]*\)", r"\1", s)  # [text](url)
    s = re.sub(r"\[([^\]]+)\]\[[^\]]*\]", r"\1", s)  # [text][ref]
    s = re.sub(r"\[`([^`\]]+)`\]", r"\1", s)  # [`Name`]
    s = re.sub(r"<[^>\s][^>]*>", "", s)  # html tags
    s = html.unescape(s).replace("`", "").replace("**", "")
    s = re.sub(r"https?://\S+", "", s)
    return re.sub(r"\s+([.,;:!?])(?=\s|$)", r"\1", re.sub(r"\s+", " ", s)).strip()


def first_sentence(doc, lang, name):
    """The query made from a doc: its first sentence, markup cleaned; None for junk."""
    doc = re.split(r"<(?:p|ul|ol|pre|table|blockquote|dl|h\d)\b", doc, maxsplit=1, flags=re.I)[0]
    rows = []
    for row in doc.split("\n"):
        s = row.strip()
        if not s:
            if rows:
                break
            continue
        if STOP_AT.match(s) or (rows and re.match(r"[-*+] |\d+[.)] ", s)):
            break
        if rows and re.search(r"\w$", rows[-1]) and re.match(r"[A-Z][a-z]+ ", s) and len(
                rows[-1].split()) >= 3:
            break  # a line-comment doc with no full stop: the next line starts a sentence
        rows.append(s)
    text = clean_markup(" ".join(rows))
    if lang == "python":  # Google style `Type: description` of properties
        text = re.sub(r"^[A-Za-z_][\w.]*(\[[^\]]*\])?:\s+", "", text)
    if not text or JUNK_START.match(text):
        return None
    for m in re.finditer(r"[.!?](?=\s|$)", text):
        before = text[:m.start()]
        if re.search(r"(\be\.g|\bi\.e|\betc|\bvs|\bapprox|\bcf|\bex|\b[A-Za-z])$", before):
            continue
        text = text[:m.end()]
        break
    if lang == "go":  # Go's `// Name does X`: the name alone is a symbol lookup, not a question
        first, _, rest = text.partition(" ")
        if first.strip(",.:") == name and rest:
            text = rest[0].upper() + rest[1:]
    text = text.strip()
    n_words = len(re.findall(r"[A-Za-z][A-Za-z'-]*", text))
    if n_words < 4 or text.endswith(":") or len(text) > 400:
        return None
    if re.search(r"\b(todo|fixme|deprecated)\b", text, re.I) and n_words < 8:
        return None
    return text


def sample(cands, per_repo, per_file, key):
    """Up to per_repo candidates in `key` order, at most per_file from one file while others
    are left."""
    ordered = sorted(cands, key=key)
    taken, count, rest = [], collections.Counter(), []
    for c in ordered:
        if len(taken) < per_repo and count[c["path"]] < per_file:
            taken.append(c)
            count[c["path"]] += 1
        else:
            rest.append(c)
    return taken + rest[:per_repo - len(taken)]


def docstring_records(repo, root, nodoc_root, per_repo):
    cands = []
    for rel in walk(root):
        if not scan.is_source(rel):
            continue
        lang = scan.lang_of(rel)
        text = read_text(os.path.join(root, rel))
        if text is None:
            continue
        for name, doc, a, b in scan.doc_functions(text, lang):
            if b - a + 1 > MAX_FUNCTION_LINES:
                continue
            query = first_sentence(doc, lang, name)
            if query:
                cands.append(dict(path=rel, lang=lang, name=name, a=a, b=b, query=query))
    by_query = collections.defaultdict(set)
    for c in cands:
        by_query[c["query"].lower()].add((c["path"], c["a"]))
    nodoc_cache = {}
    kept = []
    for c in cands:
        if len(by_query[c["query"].lower()]) > 1:
            continue  # the same words document several functions: no single answer
        # the doc must be gone from the copy the query runs against
        if c["path"] not in nodoc_cache:
            nodoc_cache[c["path"]] = read_text(os.path.join(nodoc_root, c["path"])) or ""
        probe = re.sub(r"\s+", " ", c["query"])[:40]
        flat = re.sub(r"\s+", " ", nodoc_cache[c["path"]])
        if probe in flat:
            continue
        kept.append(c)
    out = []
    for c in sample(kept, per_repo, 3, lambda c: h(repo["name"], c["path"], c["a"], c["query"])):
        out.append(dict(id=f"{repo['name']}-doc-{h(repo['name'], c['path'], c['a'])[:8]}",
                        repo=repo["name"], lang=repo["lang"], split=repo["split"], set="docstring",
                        query=c["query"], gold_ranges={c["path"]: [[c["a"], c["b"]]]},
                        corpus="corpora-nodoc", symbol=c["name"]))
    out.sort(key=lambda r: (r["repo"], *next(iter(r["gold_ranges"].items()))))
    return out, len(cands), len(kept)


# -- settings queries ------------------------------------------------------------------------------

DEFAULT_TEMPLATES = ["what is the default {w}{o}?", "what is the {w}{o} set to by default?",
                     "where is the default {w}{o} defined?"]
CONST_TEMPLATES = ["what is the {w}{o} set to?", "what value does the {w}{o} have?",
                   "where is the {w}{o} defined?"]
DROP = {"default", "defaults", "def"}
FUNCTION_VALUE = re.compile(r"^(async\s+)?(function\b|lambda\b|fn\b|func\b|\(?[\w, ]*\)?\s*=>|"
                            r"move\s*\|)|^\|")


def name_words(name):
    ws = scan.words(name)
    if len(ws) > 1 and ws[0] == "k" and re.match(r"k[A-Z]", name):
        ws = ws[1:]
    return [w for w in ws if w not in DROP]


GENERIC_OWNER = {"options", "option", "opts", "config", "configuration", "settings", "values",
                 "props", "params"}
PLAIN_FILES = {"index", "mod", "lib", "main", "__init__", "utils", "util", "common", "types",
               "constants", "consts", "defaults", "config", "options"}


def context_words(path):
    """Words naming where a definition lives: the file's stem, or its folder's for plain names."""
    parts = path.split("/")
    stem = parts[-1].rsplit(".", 1)[0]
    if stem.lower() in PLAIN_FILES and len(parts) > 1:
        stem = parts[-2]
    return [w for w in scan.words(stem) if w not in DROP]


# names of header keys, MIME types, status codes, errors and flags rather than settings
NOT_A_SETTING = re.compile(r"(?i)^_?(header|mime|status|err|error|x_|has_|is_)|^(Has|Is)[A-Z]")
PLAIN_LITERAL = re.compile(r"""-?[\d_.]+|true|false|True|False|"[^"]*"|'[^']*'|`[^`$]*`|"""
                           r"""\[[^\[\]()]*\]|[\w.:]+""")


def informative(value):
    """A value worth asking about: a literal, a name, or a call with a literal in it."""
    if re.search(r"=>|->|\blambda\b|\bfunction\b|\bfunc\b", value):
        return False
    if "(" not in value:
        return True
    return bool(re.search(r"\d|[\"'`]|\btrue\b|\bfalse\b|\bTrue\b|\bFalse\b", value))


def settings_query(rec, key, path):
    ws = name_words(rec["name"])
    if not ws or (len(scan.words(rec["name"])) < 2 and not rec["owner"]):
        return None  # one bare word (`SIZE`): no single answer
    owner_ws = name_words(rec["owner"]) if rec["owner"] else []
    if rec["kind"] == "default-field" and not [w for w in owner_ws if w not in GENERIC_OWNER]:
        owner_ws = context_words(path)
    owner = " ".join(owner_ws)
    o = f" for the {owner}" if owner else ""
    is_default = rec["kind"] in ("default-field", "kwarg") or "default" in scan.words(
        rec["name"]) or "default" in scan.words(rec["owner"] or "")
    templates = DEFAULT_TEMPLATES if is_default else CONST_TEMPLATES
    return templates[int(key, 16) % len(templates)].format(w=" ".join(ws), o=o)


def settings_records(repo, root, per_repo):
    cands = []
    for rel in walk(root):
        if not scan.is_source(rel):
            continue
        lang = scan.lang_of(rel)
        text = read_text(os.path.join(root, rel))
        if text is None:
            continue
        for s in scan.settings(text, lang):
            value = s["value"].strip()
            if not value or FUNCTION_VALUE.match(value) or s["end"] - s["start"] + 1 > \
                    MAX_SETTING_LINES:
                continue
            if re.fullmatch(r"(Default::default\(\)|\w+::default\(\)|\w+::new\(\)|None|null|"
                            r"undefined|nil|\{\}|\[\]|\"\"|''|Vec::new\(\)|String::new\(\))",
                            value):
                continue
            if re.fullmatch(r"_?[A-Z_]*(NO_CHANGE|UNSET|MISSING|NOT_GIVEN|SENTINEL)[A-Z_]*",
                            value):
                continue  # a sentinel for "not given", not a value
            if not informative(value) or (s["kind"] != "default-field" and
                                          NOT_A_SETTING.match(s["name"])):
                continue
            if s["kind"] == "default-field" and not scan.has_setting_word(s["name"]) and \
                    not PLAIN_LITERAL.fullmatch(value):
                continue
            key = h(repo["name"], rel, s["start"], s["name"])
            query = settings_query(s, key, rel)
            if query:
                cands.append(dict(path=rel, query=query, key=key, **s))
    by_query = collections.defaultdict(set)
    for c in cands:
        by_query[c["query"].lower()].add((c["path"], c["start"]))
    # the same words for different definitions: no single answer; the same name and value in
    # three places or more: boilerplate (`Skipper: DefaultSkipper`)
    boiler = collections.Counter((c["name"], c["value"]) for c in cands)
    kept = [c for c in cands if len(by_query[c["query"].lower()]) == 1 and
            boiler[(c["name"], c["value"])] < 3]
    seen = set()
    unique = []
    for c in kept:
        if (c["path"], c["start"]) not in seen:
            seen.add((c["path"], c["start"]))
            unique.append(c)
    out = []
    for c in sample(unique, per_repo, 4, lambda c: c["key"]):
        out.append(dict(id=f"{repo['name']}-set-{c['key'][:8]}", repo=repo["name"],
                        lang=repo["lang"], split=repo["split"], set="settings", query=c["query"],
                        gold_ranges={c["path"]: [[c["start"], c["end"]]]}, corpus="corpora",
                        symbol=c["name"], owner=c["owner"], kind=c["kind"],
                        value=c["value"][:200]))
    out.sort(key=lambda r: (r["repo"], *next(iter(r["gold_ranges"].items()))))
    return out, len(cands), len(unique)


# -- the hand-written set --------------------------------------------------------------------------

def hand_records(cfg, out_dir):
    splits = {r["name"]: r["split"] for r in cfg["repos"]}
    records, problems = [], []
    for path in sorted(glob.glob(os.path.join(HERE, "hand-*.jsonl"))):
        for n, line in enumerate(open(path, encoding="utf-8"), 1):
            if not line.strip():
                continue
            where = f"{os.path.basename(path)}:{n}"
            try:
                r = json.loads(line)
            except json.JSONDecodeError as e:
                problems.append(f"{where}: not JSON ({e})")
                continue
            missing = [k for k in ("id", "repo", "query", "gold_ranges") if k not in r]
            if missing or r["repo"] not in splits:
                problems.append(f"{where}: missing {missing} or unknown repo {r.get('repo')}")
                continue
            for p, ranges in r["gold_ranges"].items():
                text = read_text(os.path.join(out_dir, "corpora", r["repo"], p))
                if text is None:
                    problems.append(f"{where} {r['id']}: no file {p} in the snapshot")
                    continue
                n_lines = text.count("\n") + (not text.endswith("\n"))
                for a, b in ranges:
                    if not 1 <= a <= b <= n_lines:
                        problems.append(f"{where} {r['id']}: {p} [{a}, {b}] outside 1..{n_lines}")
            rec = dict(r)
            rec.update(set="hand", corpus="corpora", split=r.get("split") or splits[r["repo"]])
            if rec["split"] != splits[r["repo"]]:
                problems.append(f"{where} {r['id']}: split {rec['split']} but repos.json says "
                                f"{splits[r['repo']]}")
            records.append(rec)
    ids = collections.Counter(r["id"] for r in records)
    problems += [f"duplicate id {i}" for i, c in ids.items() if c > 1]
    return records, problems


def write(path, records):
    with open(path, "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, ensure_ascii=False) + "\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mirror-root", default=os.environ.get("BENCH_MIRROR_ROOT", "/work/.mirror"))
    ap.add_argument("--config", default=os.path.join(HERE, "repos.json"))
    ap.add_argument("--out", required=True)
    ap.add_argument("--only", default="")
    ap.add_argument("--docstring-per-repo", type=int, default=25)
    ap.add_argument("--settings-per-repo", type=int, default=15)
    args = ap.parse_args()
    cfg = json.load(open(args.config))
    only = set(filter(None, args.only.split(",")))
    os.makedirs(args.out, exist_ok=True)
    docs, sets = [], []
    for repo in cfg["repos"]:
        if only and repo["name"] not in only:
            continue
        gitdir = os.path.join(args.mirror_root, repo["slug"].replace("/", "+"), "repo")
        if not os.path.isdir(gitdir):
            sys.exit(f"no mirror of {repo['slug']} at {gitdir}")
        root = os.path.join(args.out, "corpora", repo["name"])
        nodoc = os.path.join(args.out, "corpora-nodoc", repo["name"])
        export(gitdir, repo["snapshot"], root)
        unscanned = make_nodoc(root, nodoc)
        d, d_cands, d_kept = docstring_records(repo, root, nodoc, args.docstring_per_repo)
        s, s_cands, s_kept = settings_records(repo, root, args.settings_per_repo)
        docs += d
        sets += s
        print(f"{repo['name']:9} {repo['lang']:10} {repo['split']:5} docstring {len(d):2} "
              f"(of {d_kept} usable, {d_cands} found)  settings {len(s):2} (of {s_kept} usable, "
              f"{s_cands} found)" + (f"  comments kept in {len(unscanned)} unparsable files: "
                                     f"{unscanned[:3]}" if unscanned else ""), file=sys.stderr)
    write(os.path.join(args.out, "docstring.jsonl"), docs)
    write(os.path.join(args.out, "settings.jsonl"), sets)
    hand, problems = hand_records(cfg, args.out) if not only else ([], [])
    for p in problems:
        print(f"hand: {p}", file=sys.stderr)
    if not only:
        write(os.path.join(args.out, "hand.jsonl"), hand)
    print(f"{len(hand)} hand, {len(docs)} docstring, {len(sets)} settings records", file=sys.stderr)


if __name__ == "__main__":
    main()
