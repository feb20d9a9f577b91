#!/usr/bin/env python3
"""Fails when a link in README.md or docs/*.md does not hold in a clone of the repository.

Every relative link (Markdown inline, reference definition, image, or HTML `href`/`src`) must
name a file or folder of the repository, reached without leaving it through `../`; every
`#anchor` must match a heading of the page it points into, slugged as GitHub slugs headings
(lower case, punctuation dropped, spaces to hyphens, `-1`, `-2` ... for repeats), or an explicit
`id`/`name` in its HTML. Links with a scheme (`https:`, `mailto:`) are not followed. Code
blocks and code spans are not links. Usage: doc-links.py [FILE ...] (default: README.md and
docs/*.md); `--self-test` checks the checker.
"""
import glob
import os
import re
import sys
import unicodedata
from urllib.parse import unquote

ROOT = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^>]*>|[^\s)]*(?:\([^\s)]*\)[^\s)]*)*)(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)")
REFERENCE = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
HTML_LINK = re.compile(r"<(?:a|img|source)\b[^>]*?\b(?:href|src)\s*=\s*[\"']([^\"']*)[\"']", re.I)
HTML_ID = re.compile(r"<[a-z][^>]*?\b(?:id|name)\s*=\s*[\"']([^\"']*)[\"']", re.I)


def prose_lines(text):
    """(line number, line) for every line outside fenced code blocks."""
    fence = None
    for n, line in enumerate(text.split("\n"), 1):
        m = FENCE.match(line)
        if fence is None and m:
            fence = m.group(1)
            continue
        if fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line.strip()[len(m.group(1)):].strip():
                fence = None
            continue
        yield n, line


def without_code_spans(line):
    """`line` with each code span's text blanked (its length kept)."""
    return re.sub(r"(`+)(.+?)\1", lambda m: " " * len(m.group(0)), line)


def heading_text(raw):
    """The text GitHub renders for a heading's Markdown source."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", raw)  # links and images: their text
    text = re.sub(r"!?\[([^\]]*)\]\[[^\]]*\]", r"\1", text)
    text = re.sub(r"<[^>]+>", "", text)  # HTML tags
    text = re.sub(r"(`+)(.+?)\1", lambda m: m.group(2).strip(), text)
    text = re.sub(r"(\*\*|__|\*|_|~~)(?=\S)(.+?)(?<=\S)\1", r"\2", text)
    return text.strip()


def slug(text):
    """GitHub's anchor for a heading whose rendered text is `text` (before de-duplication)."""
    out = []
    for ch in text.lower():
        cat = unicodedata.category(ch)
        if ch in " -" or ch == "_" or cat[0] in "LNM":
            out.append("-" if ch == " " else ch)
    return "".join(out)


def anchors(text):
    """Every anchor a page offers: its headings' slugs (numbered on repeats) and HTML ids."""
    found, seen, previous = set(), {}, ""
    for _, line in prose_lines(text):
        raw = None
        atx = ATX.match(line)
        if atx:
            raw = atx.group(2) or ""
        elif previous.strip() and SETEXT.match(line):
            raw = previous.strip()
        if raw is not None:
            base = slug(heading_text(raw))
            k = seen.get(base, 0)
            seen[base] = k + 1
            found.add(base if k == 0 else f"{base}-{k}")
        found.update(m.group(1) for m in HTML_ID.finditer(line))
        # A heading's line is not the text of a setext heading underneath it.
        previous = "" if raw is not None else line
    return found


def paragraphs(text):
    """(first line number, text) of each run of prose lines, code spans blanked: a link's text
    may wrap onto the next line."""
    block, first, last = [], None, None
    for n, line in prose_lines(text):
        if block and (not line.strip() or n != last + 1):
            yield first, "\n".join(block)
            block = []
        if line.strip():
            if not block:
                first = n
            block.append(without_code_spans(line))
        last = n
    if block:
        yield first, "\n".join(block)


def links(text):
    """(line number, target) for every link written in `text`."""
    for first, block in paragraphs(text):
        found = [(m.start(), m.group(1).strip("<>")) for m in INLINE.finditer(block)]
        found += [(m.start(), m.group(1)) for m in HTML_LINK.finditer(block)]
        at = 0
        for line in block.split("\n"):
            m = REFERENCE.match(line)
            if m:
                found.append((at, m.group(1).strip("<>")))
            at += len(line) + 1
        for offset, target in sorted(found):
            yield first + block.count("\n", 0, offset), target


def check(page, cache):
    """The problems of `page`'s links, as `page:line: ...` lines."""
    text = open(page, encoding="utf-8").read()
    here = os.path.dirname(os.path.realpath(page))
    problems = []
    for n, target in links(text):
        where = f"{os.path.relpath(page, ROOT)}:{n}"
        if not target or re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target) or target.startswith("//"):
            continue
        path, _, anchor = target.partition("#")
        path = unquote(path.split("?", 1)[0])
        if path:
            base = ROOT if path.startswith("/") else here
            resolved = os.path.realpath(os.path.join(base, path.lstrip("/")))
            if os.path.commonpath([resolved, ROOT]) != ROOT:
                problems.append(f"{where}: `{target}` leaves the repository")
                continue
            if not os.path.exists(resolved):
                problems.append(f"{where}: `{target}`: no {os.path.relpath(resolved, ROOT)} in the repository")
                continue
        else:
            resolved = os.path.realpath(page)
        if not anchor:
            continue
        if os.path.isdir(resolved):
            problems.append(f"{where}: `{target}`: an anchor into a folder")
        elif resolved.endswith((".md", ".markdown")):
            if resolved not in cache:
                cache[resolved] = anchors(open(resolved, encoding="utf-8").read())
            if unquote(anchor) not in cache[resolved]:
                near = sorted(a for a in cache[resolved] if a[:12] == anchor[:12])
                hint = f" (did you mean #{near[0]}?)" if near else ""
                problems.append(f"{where}: `{target}`: no heading `#{anchor}` in {os.path.relpath(resolved, ROOT)}{hint}")
        elif not re.fullmatch(r"L\d+(-L\d+)?", anchor):
            problems.append(f"{where}: `{target}`: `#{anchor}` is not a line of {os.path.relpath(resolved, ROOT)}")
    return problems


def self_test():
    """The slug rules and link forms on examples whose GitHub anchors are known."""
    cases = {
        "Quick start": "quick-start",
        "`ctxgate serve --local-root DIR`": "ctxgate-serve---local-root-dir",
        "Local folders under the operator's roots": "local-folders-under-the-operators-roots",
        "Dense retrieval (measured, off by default)": "dense-retrieval-measured-off-by-default",
        "Questions (2026-11-28)": "questions-2026-11-28",
        "What's *new* in [v2](x.md)?": "whats-new-in-v2",
        "snake_case & Ünïcode": "snake_case--ünïcode",
    }
    for text, want in cases.items():
        got = slug(heading_text(text))
        assert got == want, f"slug of {text!r}: {got!r}, GitHub writes {want!r}"
    page = "# A\n## A\nB\n---\n```\n# not a heading\n[x](nowhere.md)\n```\n<a id=\"here\"></a>\n"
    assert anchors(page) == {"a", "a-1", "b", "here"}, anchors(page)
    found = list(links("[a](b.md#c) `[d](e.md)` ![i](p.png \"t\")\n[r]: <s.md>\n<a href=\"h.md\">\n\n[wrapped\ntext](w.md)"))
    assert found == [(1, "b.md#c"), (1, "p.png"), (2, "s.md"), (3, "h.md"), (5, "w.md")], found
    print(f"doc-links self-test: {len(cases)} slugs and the link forms hold")


def main():
    if sys.argv[1:] == ["--self-test"]:
        self_test()
        return
    pages = sys.argv[1:] or [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
    cache, problems, count = {}, [], 0
    for page in pages:
        problems.extend(check(page, cache))
        count += sum(1 for _ in links(open(page, encoding="utf-8").read()))
    for p in problems:
        print(p, file=sys.stderr)
    if problems:
        print(f"doc links: {len(problems)} broken in {len(pages)} pages", file=sys.stderr)
        sys.exit(1)
    print(f"doc links: {count} links in {len(pages)} pages hold")


if __name__ == "__main__":
    main()
